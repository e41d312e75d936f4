"""States that change: the newest statement of a state the question asks about.

"My office is in Tallinn", weeks later "I moved my office to Tartu"; "we use PostgreSQL",
then "we switched to MySQL"; "the project is on hold", then "the project is back on".
Both statements match "where is my office?", nothing but their order says which is
current, and no digit marks either as a value (`memory.pack.figures` reads figures). So,
relative to the question (`latest_state`):

- a *subject sentence* of a candidate holds the question's terms; its weight is their idf
  weight (a candidate's is that of its best sentence);
- a *state update* is a subject sentence a person said (not the assistant's part of a
  turn: its advice says "switch to X" about what nobody did) that says the state changed
  or is the current one (`STATE_CUES`: "moved ... to", "switched", "is now", "back on",
  "no longer", in the extraction's languages) next to a question term, holding at least
  `STATE_UPDATE_SHARE` of the question's weight;
- its *value* is what the state became: the names the sentence writes capitalized that the
  question does not ("Tartu", "MySQL"), else its words that are neither the question's nor
  the cue's;
- the newest update is the current state: the pack takes it first, with the updates
  before it of other values (`LATEST_STATES` in all). Older candidates whose best subject
  sentence is about the same thing (a question term of the update's sentence, at least
  `STATE_EARLIER_SHARE` of the question's weight) without the current value are marked
  earlier, naming when the current one was stated; only by an update of the same speaker
  (Bob's move leaves Alice's home as it is).

`latest_value` reads a figure first and a state only when no figure was updated: a
figure's update word sits next to its value, a state's cue only in its sentence.

A pure function of the candidates and the query's term weights.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mnemobot.memory.pack.figures import (
    ASSISTANT_TURN,
    REPLY_PART,
    LatestFigure,
    latest_figure,
    same_speaker,
)
from mnemobot.memory.store.items import MemoryItem
from mnemobot.memory.text.languages import TextLanguages
from mnemobot.memory.text.terms import languages, terms_in

# An update must hold this share of the question's weight, and an older statement this
# share to be marked earlier. A state update names its subject as fully as the first
# statement ("I moved my office to Tartu" after "My office is in Tallinn"). BEAM's
# development chats (100K 11-20 default import, the pack's 96 best candidates): of the
# best sentence's weight instead, the rule fired on 4 of 176 questions, three of them on
# words of the assistant's or of another thing ("I just upgraded my curtains" for
# "what snacks do you recommend?", marking 47 lines earlier); of the question's, with the
# cue next to a question term, on 1 (no line marked), and on none of 500K's 629.
STATE_UPDATE_SHARE = 0.5
STATE_EARLIER_SHARE = 0.5
# How near a question term the cue must be, in characters either side: "I moved my
# office to Tartu", "Ich habe mein Büro nach Bremen verlegt".
CUE_SUBJECT_CHARS = 40
# Updates of the state a pack takes, newest first, each of another value.
LATEST_STATES = 2

# Words saying a state changed or is the current one, in the extraction's languages: a
# verb of change said by the speaker ("I moved", "we switched"), or the state's own
# "now", "no longer", "back on", "instead of".
_EN_CHANGE = (
    r"moved|switched|changed|migrated|relocated|transferred|replaced|swapped|upgraded"
    r"|downgraded|converted|transitioned|reverted|resumed|restarted|paused|cancell?ed"
    r"|stopped|quit|abandoned|ditched"
)
STATE_CUES = re.compile(
    rf"\b(?:i|we)(?:'ve|'d|\s+have|\s+had|\s+just|\s+finally|\s+recently|\s+now)*\s+(?:{_EN_CHANGE})\b"
    rf"|\b(?:{_EN_CHANGE})\s+(?:\w+\s+){{0,4}}?(?:to|from|over|with)\b"
    r"|\b(?:is|are|was|were|'s|'re)\s+(?:now|no\s+longer|back|currently)\b"
    r"|\b(?:i|we)\s+(?:now|currently|no\s+longer)\b|\bno\s+longer\b|\bback\s+on\b"
    r"|\binstead\s+of\b|\bnot\s+any\s*more\b|\bfrom\s+now\s+on\b"
    r"|\b(?:переехал\w*|перевез\w*|перевёз\w*|перевел\w*|перевёл\w*|перешл\w*|переш[её]л\w*"
    r"|перенес\w*|перенёс\w*|сменил\w*|поменял\w*|заменил\w*|переключил\w*|мигрировал\w*"
    r"|возобновил\w*|возобновлен\w*|приостановил\w*|отменил\w*|заморозил\w*|разморозил\w*"
    r"|теперь|больше\s+не|снова|опять|вместо)\b"
    r"|\b(?:umgezogen|gewechselt|umgestiegen|verlegt|ersetzt|migriert|geändert|wieder"
    r"|jetzt|nun|nicht\s+mehr|stattdessen|statt)\b"
    r"|\b(?:mudé|mudamos|mudado|cambié|cambiamos|cambiado|pasamos|migramos|migrado"
    r"|reemplazamos|reemplazado|sustituimos|trasladé|trasladamos|trasladado|reanudamos"
    r"|reanudado|ahora|ya\s+no|de\s+nuevo|otra\s+vez|en\s+lugar\s+de|en\s+vez\s+de)\b"
    r"|搬到|搬去|换成|换到|改用|改为|改成|迁到|迁移到|切换到|现在|不再|恢复",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?;。！？；\n]+(?:[.!?;。！？；]+|\n|$)")
# A speaker's label at the start of a text ("Anna: ", "User (continued): ").
_LABEL = re.compile(r"^[^\n:]{1,64}: ")
# A name as written: a capitalized word after the sentence's first ("Tartu", "MySQL").
_NAME = re.compile(r"(?<=[\w,:)]\s)[A-ZА-ЯЁ][\w.+#-]*")


@dataclass(frozen=True, slots=True)
class State:
    """A candidate's subject: its best sentence's weight and terms, and the best
    sentence saying the state changed (its weight, value and terms) if any."""

    item: MemoryItem
    weight: float
    said: frozenset[str]
    update_weight: float = 0.0
    value: frozenset[str] = frozenset()
    update_said: frozenset[str] = frozenset()


def state_of(item: MemoryItem, weights: Mapping[str, float]) -> State | None:
    """The item's subject sentences read for `weights`; None when none holds a term."""
    if not weights:
        return None
    # Without the speakers' labels: "User" is no word of what either said.
    content = _LABEL.sub("", item.content.replace(REPLY_PART, "\n"), count=1)
    spoken = spoken_part(item)
    text_languages = languages(content)
    best: State | None = None
    for sentence in _SENTENCE.findall(content):
        said = frozenset(terms_in(sentence, text_languages))
        weight = sum(w for term, w in weights.items() if term in said)
        if weight > 0 and (best is None or weight > best.weight):
            best = State(item, weight, said)
    if best is None:
        return None
    for sentence in _SENTENCE.findall(spoken):
        cue = next(
            (
                c
                for c in STATE_CUES.finditer(sentence)
                if _near_subject(sentence, c, weights, text_languages)
            ),
            None,
        )
        if cue is None:
            continue
        said = frozenset(terms_in(sentence, text_languages))
        weight = sum(w for term, w in weights.items() if term in said)
        if weight <= best.update_weight:
            continue
        cue_terms = set(terms_in(cue.group(0), text_languages))
        names = {
            term
            for name in _NAME.findall(sentence)
            for term in terms_in(name, text_languages)
            if term not in weights
        }
        value = names or {t for t in said if t not in weights and t not in cue_terms}
        best = State(item, best.weight, best.said, weight, frozenset(value), said)
    return best


def spoken_part(item: MemoryItem) -> str:
    """What a person said in the item, without the speaker's label: none of a turn of the
    assistant alone, nor the assistant's reply part."""
    if ASSISTANT_TURN.match(item.content):
        return ""
    return _LABEL.sub("", item.content.split(REPLY_PART, 1)[0], count=1)


def _near_subject(
    sentence: str, cue: re.Match[str], weights: Mapping[str, float], text_languages: TextLanguages
) -> bool:
    """Whether a question term stands next to the cue: the change is of what is asked."""
    start, end = cue.span()
    near = sentence[max(0, start - CUE_SUBJECT_CHARS) : end + CUE_SUBJECT_CHARS]
    return any(term in weights for term in terms_in(near, text_languages))


def latest_state(candidates: Iterable[MemoryItem], weights: Mapping[str, float]) -> LatestFigure:
    """The newest update of the state the question asks about, and the older statements
    of it without its value (see the module docstring)."""
    found = [s for item in candidates if (s := state_of(item, weights)) is not None]
    latest = LatestFigure()
    if not found:
        return latest
    # Of the question's weight, not the best sentence's: a state said of a few of a long
    # question's words is no answer to it.
    best = sum(weights.values())
    updates = [s for s in found if s.update_weight >= STATE_UPDATE_SHARE * best]
    if not updates:
        return latest
    updates.sort(key=lambda s: (s.item.created_at, s.item.id), reverse=True)
    # Each value by the statement that first gave it (a later one repeats it).
    first_said: dict[frozenset[str], State] = {}
    for update in updates:
        first_said[update.value] = update
    for value in list(first_said)[:LATEST_STATES]:
        latest.updates.append(first_said[value].item)
    for state in found:
        newest = next((u for u in updates if same_speaker(u.item, state.item)), None)
        if newest is None:
            continue
        subject = {term for term in weights if term in newest.update_said}
        if (
            state.item.created_at < newest.item.created_at
            and state.item.id != first_said[newest.value].item.id
            and not (state.update_weight and state.value == newest.value)
            and state.weight >= STATE_EARLIER_SHARE * best
            and subject & state.said
            and not newest.value & state.said
        ):
            latest.earlier[state.item.id] = newest.item.created_at
    return latest


def latest_value(candidates: Iterable[MemoryItem], weights: Mapping[str, float]) -> LatestFigure:
    """The figure the question asks about if one was updated, else its state."""
    items = list(candidates)
    figure = latest_figure(items, weights)
    return figure if figure.updates else latest_state(items, weights)
