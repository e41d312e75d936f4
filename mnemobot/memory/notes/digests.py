"""A conversation's dated digests: what they are, how a question finds and shows them.

"In what order did I bring up ...", "summarize how my project went": such questions span
the whole history, and a pack of the few best-matching messages has nothing to stand on.
A digest is an episode per day of a scope (type DIGEST, tagged `digest`, `day:YYYY-MM-DD`
and the day's bounds in epoch seconds) listing one line per turn of that day, in order:
`- [refs] Speaker: lead / Assistant: the reply's lead`, perhaps under a model's
`Summary: ...` of the day. They are written in the background
(`memory.upkeep.digest_days`).

The pack uses digests only for a question that spans the history (`is_span_question`:
order, progress, summaries, "so far", in the extraction's languages; any other question
would pay twice for what its matching turns say). Digests are kept out of the scope's word
index and vectors (a day's list of everything matches more words than the turns it lists,
and took their places among a pack's candidates: LoCoMo dev at 1800 tokens fell from
0.816 to 0.809 with them in it); they have a word index of their own, built at the first
such question (`matching_digests`). The lines that match the question most, across the
best days, are shown per day in order, named by their refs (`pick_lines`,
`shown_digest`); a line names only messages it shows something of.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from weakref import WeakKeyDictionary

from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import ItemType, MemoryItem, said_order
from mnemobot.memory.text.terms import languages, terms, terms_in

# (query terms, how many at most) -> the best-matching digests, oldest day first: what a
# pack asks of the scope's digests (`matching_digests` on its store).
DigestSearch = Callable[[list[str], int], list[MemoryItem]]

DIGEST_TAG = "digest"
DAY_TAG_PREFIX = "day:"
SPAN_TAG_PREFIX = "span:"
EXTRACTIVE_TAG = "extractive"
SUMMARIZED_TAG = "summarized"
SUMMARY_MARK = "Summary: "
_LINE_REFS = re.compile(r"^\s*- \[([^\]]+)\] ")
_COUNT = re.compile(r"\((\d+) turns?\b")
# What showing a digest costs beside its lines' text (in characters): the list marks and
# indent of a line, and the day's line with its header.
_LINE_OVERHEAD = 5
_HEADER_CHARS = 60
# Digests whose lines' terms are kept between questions (one a day of a busy scope).
_LINE_TERMS_CACHED = 512

# Questions over the whole history: order, progress, summaries, what happened so far.
SPAN_QUESTION = re.compile(
    r"\b(?:in\s+(?:what|which)\s+order|the\s+order|chronolog\w*|sequence|timeline|over\s+time"
    r"|throughout|across\s+(?:our|all|the)|so\s+far|since\s+(?:we|i)\s+(?:started|began)"
    r"|summar\w+|recap|overview|progress\w*|evolv\w*|develop(?:ed|ment)\s+over|history"
    r"|how\s+(?:has|have|did)\s+\w+(?:\s+\w+)?\s+(?:changed|developed|progressed|evolved))\b"
    r"|\b(?:в\s+каком\s+порядке|по\s+порядку|порядок|хронолог\w*|за\s+вс[её]\s+время"
    r"|на\s+протяжении|до\s+сих\s+пор|подыт\w*|итог\w*|резюм\w*|кратко\s+перескаж\w*"
    r"|прогресс\w*|как\s+менял\w*|как\s+развивал\w*)\b"
    r"|\b(?:reihenfolge|chronolog\w*|im\s+laufe|bisher|zusammenfass\w*|fasse\s+\w+\s+zusammen"
    r"|fortschritt\w*|entwickelt|verlauf)\b"
    r"|\b(?:en\s+qu[ée]\s+orden|el\s+orden|cronol[óo]g\w*|a\s+lo\s+largo|hasta\s+ahora"
    r"|resumen\w*|resumir|resúme\w+|progreso|evolucion\w*|evolución)\b"
    r"|顺序|先后|按时间|时间线|一直以来|到目前为止|总结|概括|回顾|进展|演变|历程",
    re.IGNORECASE,
)


def is_span_question(text: str) -> bool:
    """Whether `text` asks about the conversation's history as a whole (see above)."""
    return SPAN_QUESTION.search(text) is not None


def line_refs(line: str) -> list[str]:
    """The refs a digest line names."""
    match = _LINE_REFS.match(line)
    return match.group(1).split(", ") if match else []


class _DigestIndex:
    """The scope's digest ids by day, found once per load of the store and kept as this
    module writes them (only it writes digests); and, from the first question over the
    history on, a word index of them of their own (the scope's index leaves them out)."""

    def __init__(self) -> None:
        self.loads = -1
        self.by_day: dict[str, str] = {}
        self.words: BM25Index | None = None

    def current(self, store: ScopeItemStore) -> dict[str, str]:
        if store.loads != self.loads:
            self.loads = store.loads
            self.words = None
            self.by_day = {
                day_of_digest(item): item.id
                for item in store.items.values()
                if item.type is ItemType.DIGEST
            }
        for day, item_id in list(self.by_day.items()):
            if item_id not in store.items:
                # Forgotten: written anew from the turns left.
                del self.by_day[day]
                if self.words is not None:
                    self.words.remove(item_id)
        return self.by_day

    def stored(self, item: MemoryItem) -> None:
        self.by_day[day_of_digest(item)] = item.id
        if self.words is not None:
            self.words.add(item.id, terms(item.content))

    def search(self, store: ScopeItemStore, query_terms: list[str], most: int) -> list[str]:
        by_day = self.current(store)
        if self.words is None:
            self.words = BM25Index()
            self.words.add_many(
                (item_id, terms(store.items[item_id].content)) for item_id in by_day.values()
            )
        return list(self.words.top(query_terms, most))


def day_of_digest(item: MemoryItem) -> str:
    """The day a digest is of (`YYYY-MM-DD`)."""
    return next((t[len(DAY_TAG_PREFIX) :] for t in item.tags if t.startswith(DAY_TAG_PREFIX)), "")


_INDEXES: WeakKeyDictionary[ScopeItemStore, _DigestIndex] = WeakKeyDictionary()


def _index(store: ScopeItemStore) -> _DigestIndex:
    index = _INDEXES.get(store)
    if index is None:
        index = _INDEXES[store] = _DigestIndex()
    return index


def digests(store: ScopeItemStore) -> list[MemoryItem]:
    """The scope's digests, oldest day first."""
    with store.lock:
        by_day = _index(store).current(store)
        return [store.items[by_day[day]] for day in sorted(by_day)]


def matching_digests(store: ScopeItemStore, query_terms: list[str], most: int) -> list[MemoryItem]:
    """The `most` digests best matching `query_terms` (BM25 over the digests alone), oldest
    day first."""
    if not query_terms:
        return []
    with store.lock:
        found = [store.items[i] for i in _index(store).search(store, query_terms, most)]
    return sorted(found, key=said_order)


def digest_ids_by_day(store: ScopeItemStore) -> dict[str, str]:
    """The scope's digest ids by day (the live index: its writer keeps it current through
    `remember_digest`). Hold the store's lock."""
    return _index(store).current(store)


def remember_digest(store: ScopeItemStore, item: MemoryItem) -> None:
    """A digest just stored: the index finds it from now on. Hold the store's lock."""
    _index(store).stored(item)


def span_of(item: MemoryItem) -> tuple[float, float] | None:
    """The bounds of a digest's day, in epoch seconds (cut in the zone it was written in)."""
    for tag in item.tags:
        if tag.startswith(SPAN_TAG_PREFIX):
            start, _, end = tag[len(SPAN_TAG_PREFIX) :].partition("-")
            try:
                return float(start), float(end)
            except ValueError:
                return None
    return None


@lru_cache(maxsize=_LINE_TERMS_CACHED)
def _line_terms(content: str) -> tuple[frozenset[str], ...]:
    """The terms of each line after the digest's header (read in the languages of the
    whole digest), kept for the next questions: a digest changes once a day at most."""
    _, _, rest = content.partition("\n")
    digest_languages = languages(content)
    return tuple(frozenset(terms_in(line, digest_languages)) for line in rest.split("\n"))


def pick_lines(
    chosen: Sequence[MemoryItem], weights: Mapping[str, float], budget_chars: int
) -> dict[str, tuple[int, ...]]:
    """The lines of `chosen` digests a question spanning the history gets: those holding
    the most of its weight (each query term counted once), across all days, within
    `budget_chars` (a day's header counted once); by digest id, each day's lines in order.
    A summary is a line like the others."""
    scored: list[tuple[float, int, int, int]] = []
    for order, digest in enumerate(chosen):
        lines = digest.content.split("\n")[1:]
        for index, found in enumerate(_line_terms(digest.content)):
            weight = sum(w for term, w in weights.items() if term in found)
            if weight > 0:
                scored.append((-weight, order, index, len(lines[index]) + _LINE_OVERHEAD))
    scored.sort()
    picked: dict[int, list[int]] = {}
    used = 0
    for _, order, index, cost in scored:
        extra = cost if order in picked else cost + _HEADER_CHARS
        if used + extra > budget_chars:
            continue
        picked.setdefault(order, []).append(index)
        used += extra
    return {chosen[order].id: tuple(sorted(lines)) for order, lines in picked.items()}


def shown_digest(content: str, lines: Sequence[int]) -> str:
    """The digest as a pack shows it: how many messages the day had, and `lines`."""
    header, _, rest = content.partition("\n")
    all_lines = rest.split("\n")
    count = _COUNT.search(header)
    turns = f"{turns_text(int(count.group(1)))}, " if count else ""
    kept = [all_lines[i] for i in lines if 0 <= i < len(all_lines)]
    return "\n".join([f"Digest of the day ({turns}{len(kept)} shown):", *kept])


def turns_text(count: int) -> str:
    """ "1 turn", "14 turns"."""
    return "1 turn" if count == 1 else f"{count} turns"


def shown_refs(text: str) -> list[str]:
    """The refs of the digest lines in `text` (a rendered digest)."""
    return [ref for line in text.splitlines() for ref in line_refs(line.strip())]
