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
