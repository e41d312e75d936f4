"""Where a long recording is cut into pieces for the local speech model (pure functions).

Each piece is its own job in the one speech reader (`Transcriber._local`), so another
chat's note waits for at most one piece rather than a whole long note. A piece ends in
the longest pause of the second half of its span, so no word is cut in two and the text
of the pieces joins into one transcript.
"""

from __future__ import annotations

from collections.abc import Sequence

# Seconds of audio in one piece at most. Measured with `python -m
# mnemobot_tooling.bench.piece_length --seconds 300 --pieces 30 60 0` (2-core AMD EPYC,
# Python 3.11.7, idle, tiny.en int8, a 256.5 s espeak-ng note): whole in one job 11.7 s,
# 91.4% of its words heard; 60 s pieces: 6 pieces, the longest held the model 2.5 s,
# 12.2 s in all, 90.7%; 30 s pieces: 10, 1.5 s, 13.5 s, 85.6% (more cuts, more words
# lost at them). 60 s keeps the whole note's text as good and makes another chat's note
# wait a fifth as long.
PIECE_SECONDS = 60.0
# A piece ends no earlier than this share of PIECE_SECONDS into it: a pause near its
# start would make many short pieces, each paying for decoding the note again.
EARLIEST_CUT_SHARE = 0.5
# How many words of the text heard so far the next piece is given as its prompt, as
# Whisper conditions each 30 s window on the text before it: the joined text keeps one
# style (capitals, punctuation, spelling of names).
PROMPT_WORDS = 40
# A language detected in a piece is kept for the note's later pieces (one transcript, one
# language) only when faster-whisper gave it at least this probability; below it the next
# piece detects its own. Measured with faster-whisper 1.2.1, Whisper base int8, the
# reader's own vad_filter, on espeak-ng clips: English speech (en, en-gb, en-us at 200
# words a minute, a 2 s sentence, 12 s after 33 s of silence) en 0.91-0.94; what holds no
# words: 45 s of silence, white noise or tones (the voice detector drops them) en
# 0.54-0.57, reversed speech (babble) up to fi 0.70 and en 0.63; speech Whisper takes for
# the wrong language: Korean as th 0.78, Greek as es 0.73, German as en 0.36. So 0.8:
# above every guess that was wrong, below all real English. Right detections of weaker
# voices fall below it too (espeak-ng's Spanish es 0.77, French fr 0.42): those pieces
# each detect their own language, as if nothing was kept, which costs at worst one
# transcript in two spellings, where a wrong language kept loses every later word.
CONFIDENT_LANGUAGE = 0.8


def cut_window(start: float, total: float, piece_seconds: float) -> tuple[float, float] | None:
    """The span (seconds) in which the piece that starts at `start` may end; None when
    the rest of the recording fits in one piece."""
    if total - start <= piece_seconds:
        return None
    return start + piece_seconds * EARLIEST_CUT_SHARE, start + piece_seconds


def pauses(
    speech: Sequence[tuple[float, float]], window: tuple[float, float]
) -> list[tuple[float, float]]:
    """The silences in `window` between the `speech` spans (seconds, in order, from a
    voice-activity detector run on that window)."""
    low, high = window
    gaps, edge = [], low
    for begin, end in speech:
        if begin > edge:
            gaps.append((edge, min(begin, high)))
        edge = max(edge, end)
    if edge < high:
        gaps.append((edge, high))
    return [(a, b) for a, b in gaps if b > a]


def piece_end(window: tuple[float, float], gaps: Sequence[tuple[float, float]]) -> float:
    """Where a piece ends: in the middle of the longest pause in `window` (the later one
    of two as long: fewer pieces), or at the window's end when no pause was found there
    (speech without a break, or noise the detector takes for speech)."""
    low, high = window
    inside = [(max(a, low), min(b, high)) for a, b in gaps if min(b, high) > max(a, low)]
    if not inside:
        return high
    begin, end = max(inside, key=lambda gap: (gap[1] - gap[0], gap[0]))
    return (begin + end) / 2


def prompt_tail(text: str, words: int = PROMPT_WORDS) -> str | None:
    """The last `words` words of what was heard so far, the next piece's prompt."""
    tail = text.split()[-words:]
    return " ".join(tail) if tail else None


def piece_language(
    given: str | None, detected: str | None, probability: float | None
) -> str | None:
    """The language the note's next piece is heard in, after a piece heard in `given`
    (configured, or kept from an earlier piece; None: detected) where faster-whisper
    detected `detected` with `probability`: `given` stays; else a confident detection is
    kept; else None, and the next piece detects its own."""
    if given:
        return given
    if detected and probability is not None and probability >= CONFIDENT_LANGUAGE:
        return detected
    return None
