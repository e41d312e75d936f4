"""Figures that change: the newest update of the value a question asks about.

"The gym costs me €30, €5 over my €25 monthly sports budget", weeks later "my raised
sports budget of €40": both match "what is my monthly sports budget?", and the older one,
saying more of the question's words, ranked first, so a pack could hold the old value
without the new one. No slot rule knows budgets, latencies, deadlines or versions, and a
long chat holds thousands of them, so they are read relative to the question
(`latest_figure`):

- a *figure sentence* of a candidate is a sentence with a value (a token holding a digit:
  an amount, a percentage, a date, a time, a version) and the question's terms; its
  weight is their idf weight;
- an *update* is a figure sentence that says its value changed or is the current one
  ("increased to", "extended to", "now", "new"; `UPDATE_WORDS`, in the extraction's
  languages, next to the value), holding at least `UPDATE_SHARE` of the best figure
  sentence's weight; the question is about the kind of value (money, percent, time,
  date, or a number of the same unit) of the updates said with the most of its words;
- the newest update is the current figure: the pack takes it first, and the updates
  before it of other values (`LATEST_UPDATES` in all), so it shows how the value got
  there. Older candidates whose best figure sentence gives a value of that kind but
  another value are marked earlier, naming when the current one was stated; only by an
  update of the same speaker (`same_speaker`): in a group, Bob's new phone number, or
  his word about Alice's, leaves Alice's own statement of hers as it is, as the slot
  rules do when memory is written.

A pure function of the candidates and the query's term weights.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mnemobot.memory.store.items import MemoryItem, speaker_of
from mnemobot.memory.text.languages import TextLanguages
from mnemobot.memory.text.terms import languages, terms_in

# An update must hold this share of the best figure sentence's query weight. On BEAM's
# development chats an update names its subject more briefly than the first statement
# ("my raised budget of €40" after "€25 monthly budget for sports and the pool").
UPDATE_SHARE = 0.3
# An older figure is the same as the update's when its sentence holds this share.
EARLIER_SHARE = 0.3
# Updates of the figure a pack takes, newest first, each of another value: the current
# value and how it got there ("€25", then "€40", now "€55"). BEAM 500K development chats
# (`--assistant-replies`, 1800 tokens): stale-only 6 of 66 at 3, 4 at 5, same recall;
# an UPDATE_SHARE of 0.5 gained 0.01 there but made 2 of 19 stale-only at 100K.
LATEST_UPDATES = 5
# Candidates looked at, best first: the update is among the question's best matches.
FIGURE_CANDIDATES = 96

# Words saying a value changed or is the current one, in the extraction's languages.
# "reached" ("my rating has only reached 60%") and "shorten" ("I need to shorten the
# session to 2.5 hours"): BEAM 500K development chats (`--assistant-replies`, 1800
# tokens), stale-only 4 -> 2 of 66, knowledge update 0.813 -> 0.820, overall 0.655 ->
# 0.656; the other present forms too (increase, reduce, extend, adjust, reschedule...),
# which the assistant's advice says next to values, cost 0.004 overall (12 questions).
UPDATE_WORDS = re.compile(
    r"\b(?:increased|decreased|raised|lowered|reduced|extended|shortened|adjusted|changed"
    r"|moved|rescheduled|postponed|updated|revised|bumped|dropped|grew|rose|fell|improved"
    r"|shorten|reached"
    r"|now|currently|new|latest|down\s+to|up\s+to)\b"
    r"|\b(?:увеличил\w*|увеличен\w*|уменьшил\w*|уменьшен\w*|повысил\w*|повышен\w*"
    r"|понизил\w*|сократил\w*|сокращен\w*|продлил\w*|продлен\w*|перенес\w*|перенёс\w*"
    r"|изменил\w*|изменен\w*|обновил\w*|обновлен\w*|достиг\w*|теперь|сейчас|нов(?:ый|ая|ое|ые))\b"
    r"|\b(?:erhöht|gesenkt|reduziert|verlängert|verkürzt|angepasst|geändert|verschoben"
    r"|aktualisiert|erreicht|jetzt|nun|neue?[nrs]?)\b"
    r"|\b(?:aumenté|aumentó|aumentado|reduje|redujo|reducido|bajé|bajó|bajado|subí|subió"
    r"|subido|extendido|ampliado|acortado|ajustado|cambiado|reprogramado|pospuesto"
    r"|aplazado|actualizado|alcanzado|alcanzó|ahora|nuev[oa]s?)\b"
    r"|增加|提高|降低|减少|延长|缩短|调整|改为|改成|推迟|改期|更新|达到|现在|新的",
    re.IGNORECASE,
)
# How near a value an update word must be, in characters before it and after it: "my
# raised sports budget of €40", "€40 is the new budget".
CUE_BEFORE_CHARS = 48
CUE_AFTER_CHARS = 24
# The reply part of a turn, and a turn of the assistant alone (`extraction.build`; an
# import labels the parts of a long message "(continued)").
REPLY_PART = "\nAssistant: "
ASSISTANT_TURN = re.compile(r"^Assistant(?: \(continued\))?: ")
SENTENCE = re.compile(r"[^.!?;。！？；\n]+(?:[.!?;。！？；]+|\n|$)")
_VALUE = re.compile(
    r"(?P<money>[$€£¥₽]\s?\d[\d,.]*[kKmM]?|\d[\d,.]*\s?(?:usd|eur|dollars?|euros?|руб\w*|元))"
    r"|(?P<percent>\d[\d,.]*\s?%)"
    r"|(?P<time>\b\d{1,2}(?::\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d\d\b)"
    r"|(?P<date>\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"(?:,?\s+\d{4})?\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d{4}\b"
    r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b\d{4}-\d\d-\d\d\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\d+月\d+日)"
    r"|(?P<number>\d[\d,.]*(?:\s?[-–]\s?\d[\d,.]*)?)\s*(?P<unit>[^\W\d_]+)?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Figure:
    """The value of a candidate's best figure sentence: its kind, value and weight."""

    item: MemoryItem
    kind: str
    value: str
    weight: float
    update: bool


@dataclass(slots=True)
class LatestFigure:
    """The updates of the figure, newest (the current value) first, and the older
    statements of another value (id -> when the current one was stated)."""

    updates: list[MemoryItem] = field(default_factory=list)
    earlier: dict[str, float] = field(default_factory=dict)


def _person_part_end(content: str) -> int:
    """Where what a person said in a turn's content ends: at the assistant's reply part,
    at 0 in a turn of the assistant alone."""
    if ASSISTANT_TURN.match(content):
        return 0
    end = content.find(REPLY_PART)
    return len(content) if end < 0 else end


def figure_of(item: MemoryItem, weights: Mapping[str, float]) -> Figure | None:
    """The item's sentence with a value holding the most query weight (an update first
    on a tie), with its first value; None when no sentence has both. Only what a person
    said is an update: the assistant's reply echoing "your budget is now $25" (a model
    misquoting "$250") changes nobody's value."""
    text = item.content
    if not weights or not any(ch.isdigit() for ch in text):
        return None
    text_languages = languages(text)
    person_end = _person_part_end(text)
    best: Figure | None = None
    for found in SENTENCE.finditer(text):
        sentence = found.group()
        values = list(_VALUE.finditer(sentence))
        if not values:
            continue
        said = set(terms_in(sentence, text_languages))
        weight = sum(w for term, w in weights.items() if term in said)
        if weight <= 0 or (best is not None and weight < best.weight):
            continue
        updated = (
            next((v for v in values if _is_update(sentence, v)), None)
            if found.start() < person_end
            else None
        )
        if best is None or (weight, updated is not None) > (best.weight, best.update):
            kind, normal = _kind_and_value(updated or values[0], text_languages)
            best = Figure(item, kind, normal, weight, updated is not None)
    return best


def _is_update(sentence: str, value: re.Match[str]) -> bool:
    """Whether an update word stands next to the value."""
    start, end = value.span()
    before = sentence[max(0, start - CUE_BEFORE_CHARS) : start]
    after = sentence[end : end + CUE_AFTER_CHARS]
    return UPDATE_WORDS.search(before) is not None or UPDATE_WORDS.search(after) is not None


def latest_figure(candidates: Iterable[MemoryItem], weights: Mapping[str, float]) -> LatestFigure:
    """The newest update of the figure the question asks about, and the older statements
    of another value of it (see the module docstring)."""
    found = [f for item in candidates if (f := figure_of(item, weights)) is not None]
    latest = LatestFigure()
    if not found:
        return latest
    best = max(f.weight for f in found)
    updated_kinds = {f.kind for f in found if f.update and f.weight >= UPDATE_SHARE * best}
    if not updated_kinds:
        return latest
    # The kind of value the question is about: of those updated, the one said with the
    # most of the question's words.
    weight_of: dict[str, float] = {}
    for figure in found:
        if figure.kind in updated_kinds:
            weight_of[figure.kind] = max(weight_of.get(figure.kind, 0.0), figure.weight)
    kind = max(sorted(weight_of), key=weight_of.__getitem__)
    updates = [f for f in found if f.update and f.kind == kind and f.weight >= UPDATE_SHARE * best]
    updates.sort(key=lambda f: (f.item.created_at, f.item.id), reverse=True)
    # Each value by the statement that first gave it (a later one repeats it).
    first_said: dict[str, Figure] = {}
    for update in updates:
        first_said[update.value] = update
    for value in list(first_said)[:LATEST_UPDATES]:
        latest.updates.append(first_said[value].item)
    for figure in found:
        newer = next((u for u in updates if same_speaker(u.item, figure.item)), None)
        if (
            newer is not None
            and figure.item.created_at < newer.item.created_at
            and figure.kind == kind
            and figure.value != newer.value
            and figure.weight >= EARLIER_SHARE * best
        ):
            latest.earlier[figure.item.id] = newer.item.created_at
    return latest


def same_speaker(first: MemoryItem, second: MemoryItem) -> bool:
    """Whether one person may have said both: an item naming no speaker (an import's,
    the assistant's note) may be anyone's."""
    one, other = speaker_of(first), speaker_of(second)
    return one is None or other is None or one == other


def values_in(sentence: str, text_languages: TextLanguages) -> list[tuple[str, str]]:
    """The kinds and values of the sentence's values, in order."""
    return [_kind_and_value(match, text_languages) for match in _VALUE.finditer(sentence)]


def updated_values(sentence: str, text_languages: TextLanguages) -> list[tuple[str, str]]:
    """The kinds and values of the sentence's values an update word stands next to."""
    return [
        _kind_and_value(match, text_languages)
        for match in _VALUE.finditer(sentence)
        if _is_update(sentence, match)
    ]


def _kind_and_value(match: re.Match[str], text_languages: TextLanguages) -> tuple[str, str]:
    kind = next(name for name in ("money", "percent", "time", "date", "number") if match[name])
    value = re.sub(r"[\s,$€£¥₽]", "", match[kind]).lower()
    if kind == "number":
        unit = match["unit"] or ""
        unit_terms = terms_in(unit, text_languages) if unit else []
        kind = f"number:{unit_terms[0] if unit_terms else unit.lower()}"
    return kind, value
