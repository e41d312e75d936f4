"""The strong simple baseline for long messages: BM25+ over 600-character chunks, each hit
with its neighbours, priced as pack lines.

Long messages (code, plans, step lists) cut into chunks of at most CHUNK_CHARS characters,
at a line end when one is in the chunk's second half, else at a space, else anywhere.
Each chunk is one document of `locomo_baselines.Bm25WindowBaseline` (BM25+ over the
project's own stemmed terms, each hit best first with the chunk before and after it in
the conversation), and costs what the pack pays for a dated line of the same text
(`pack_line_tokens`: "- 2024-03-15: User: ..."). A message counts as found when any of its
chunks is taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from mnemobot_tooling.evals.locomo_baselines import Bm25WindowBaseline, pack_line_tokens

CHUNK_CHARS = 600


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of one message, as the baselines see a turn."""

    dia_id: str
    message_id: int
    line: str
    at: datetime


class ChunkedMessage(Protocol):
    """What the chunk baseline needs of a message."""

    @property
    def id(self) -> int: ...

    @property
    def author(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def at(self) -> datetime: ...


def split_chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """`text` in pieces of at most `size` characters (see the module docstring)."""
    rest = text.strip()
    pieces: list[str] = []
    while len(rest) > size:
        cut = rest.rfind("\n", size // 2, size + 1)
        if cut <= 0:
            cut = rest.rfind(" ", size // 2, size + 1)
        if cut <= 0:
            cut = size
        piece, rest = rest[:cut].strip(), rest[cut:].strip()
        if piece:
            pieces.append(piece)
    if rest:
        pieces.append(rest)
    return pieces


def message_chunks(messages: Iterable[ChunkedMessage], size: int = CHUNK_CHARS) -> list[Chunk]:
    chunks: list[Chunk] = []
    for message in messages:
        for number, piece in enumerate(split_chunks(message.text, size)):
            chunks.append(
                Chunk(
                    f"{message.id}#{number}",
                    message.id,
                    f"{message.author}: {piece}",
                    message.at,
                )
            )
    return chunks


class ChunkWindowBaseline:
    """BM25+ over the chunks of a conversation's messages, hits with their neighbours."""

    def __init__(self, messages: Sequence[ChunkedMessage], size: int = CHUNK_CHARS) -> None:
        self.chunks = message_chunks(messages, size)
        self._chunk = {chunk.dia_id: chunk for chunk in self.chunks}
        self._windows = Bm25WindowBaseline(self.chunks)

    def retrieve(self, question: str, budget: int) -> tuple[set[int], int]:
        """The ids of the messages of the chunks taken within `budget` tokens, best first,
        and the tokens those chunks cost."""
        taken = [self._chunk[dia_id] for dia_id in self._windows.retrieve(question, budget)]
        return {chunk.message_id for chunk in taken}, sum(pack_line_tokens(c) for c in taken)
