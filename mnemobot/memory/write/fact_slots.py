"""Fact slots: which single-valued thing a statement sets ("I live in X" sets *residence*).

The rules are a table of data (`memory.write.fact_slot_rules`), in English, German,
Russian, Spanish and Chinese. A slot holds one value at a time, so a newer statement of
the same slot (by the same speaker) replaces the older one: "I moved to Berlin" ends "I
live in Paris". Only slots where that reading is reliable are listed; everything else
(likes, plans, people one knows) can hold many values at once and is left to
consolidation to judge. Two statements of one slot with the same value are the same fact
said twice, not an update.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from mnemobot.memory.text.scripts import CJK_CHAR
from mnemobot.memory.text.terms import terms
from mnemobot.memory.write.extraction.question_clauses import statement_before_question
from mnemobot.memory.write.fact_clauses import clauses
from mnemobot.memory.write.fact_slot_rules import SLOT_RULES, SlotRule
from mnemobot.memory.write.fact_slot_times import without_trailing_time


@dataclass(frozen=True, slots=True)
class SlotStatement:
    slot: str
    value: str
    sentence: str
    keywords: tuple[str, ...]
    # The value it replaces when the sentence names it ("moved from Berlin to Lisbon"):
    # such a statement counts only where that value is the one known, so "I moved from
    # Java to Kotlin" changes no home.
    left: str | None = None


# Quick test before the rules run one by one: most sentences name no slot at all.
_ANY_SLOT = re.compile(
    r"(?<!\w)(?:i|i'm|i've|my|ich|mein|meine|я|мой|моя|мою|моего|мое|моё|мои"
    r"|yo|mi|me|vivo|resido|estoy|trabajo|soy)(?!\w)|我",
    re.IGNORECASE,
)
# Chinese ends a sentence with its own marks, no space after them.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
_NEGATION = re.compile(
    r"\b(?:not|never|don't|didn't|no\s+longer|nicht|nie|kein\w*)\b|(?<!\w)не(?!\w)"
    # Spanish "no" before the verb ("no vivo", "ya no me mudé"): a bare "No," that
    # answers a question is no negation of what follows.
    r"|(?<!\w)no\s+(?:me\s+|lo\s+)?(?:vivo|resido|trabajo|soy|estoy|mud|traslad|tengo)"
    # Chinese "不"/"没" before the verb: "我不住在天津", "我已经不在百度工作了".
    r"|(?:不再|不|没有|没)(?:住|在|是|叫|吃|搬)",
    re.I,
)
_CLAUSE_END = ".!;。！；"
_VALUE_EDGES = " ,:-—\"'"
_CONDITIONAL = r"(?:(?:if|when|wenn|falls|если|si|cuando)\b|如果|要是|假如|万一)"


def _slot_name(rule: SlotRule, match: re.Match[str]) -> str:
    if "{kind}" not in rule.slot:
        return rule.slot
    said = match.group("kind")
    # Chinese terms are characters and their pairs: its kind is kept as written.
    kind = said if CJK_CHAR.search(said) else " ".join(terms(said)) or said.lower()
    return rule.slot.format(kind=kind)


@lru_cache(maxsize=16_384)
def slot_statements(text: str) -> tuple[SlotStatement, ...]:
    """The slot-setting statements of `text` (a sentence or a whole message), in order.

    Questions (but for a statement before the asking: "I moved to Berlin, what should I
    see?"), negated sentences ("I don't live in Paris") and conditionals are not
    statements of a value. A `speaker: ` prefix (a group member, a LoCoMo speaker) is
    ignored here; the caller keys slots by speaker.
    """
    if not _ANY_SLOT.search(text):
        return ()
    found: list[SlotStatement] = []
    seen: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence.endswith(("?", "？")):
            # "I moved to Berlin, what should I see first?" states the move all the same.
            sentence = statement_before_question(sentence) or ""
        if not sentence or re.match(_CONDITIONAL, sentence, re.IGNORECASE):
            continue
        # Each clause sets its own slot, its value ending where the clause does.
        for clause in clauses(sentence, _states_a_slot):
            if _NEGATION.search(clause):
                continue
            statement = _clause_statement(clause)
            if statement is not None and statement.slot not in seen:
                seen.add(statement.slot)
                found.append(statement)
    return tuple(found)


def says_only_slots(text: str) -> bool:
    """Whether every clause of `text` sets a slot: its slot facts hold all it says."""
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence and (
            sentence.endswith(("?", "？"))
            or re.match(_CONDITIONAL, sentence, re.IGNORECASE)
            or not all(map(_states_a_slot, clauses(sentence, _states_a_slot)))
        ):
            return False
    return True


def without_slot(text: str, slot: str) -> str | None:
    """What else `text` says once the clauses that set `slot` are left out, in its own
    words ("Ich heiße Greta und wohne in Berlin" without *residence*: "Ich heiße Greta.");
    None when no clause sets it or nothing else is said.

    A move ends the home a sentence states, not the name said beside it.
    """
    kept: list[str] = []
    removed = False
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        parts = clauses(sentence, _states_a_slot)
        others = [part for part in parts if not _sets(part, slot)]
        if len(others) == len(parts):
            kept.append(sentence)
            continue
        removed = True
        if others:
            kept.append(_sentence_of(others, sentence))
    if not removed or not kept:
        return None
    rest = "".join(
        part if index == 0 or CJK_CHAR.match(part) else f" {part}"
        for index, part in enumerate(kept)
    )
    return rest


def _sets(clause: str, slot: str) -> bool:
    statement = None if _NEGATION.search(clause) else _clause_statement(clause)
    return statement is not None and statement.slot == slot


def _sentence_of(parts: list[str], sentence: str) -> str:
    """The clauses `parts` of `sentence` as a sentence of their own: joined as its language
    joins clauses, its first letter as the sentence had it, its closing mark kept."""
    chinese = CJK_CHAR.search(sentence) is not None
    joined = ("，" if chinese else ", ").join(part.rstrip(_CLAUSE_END) for part in parts)
    if sentence[:1].isupper():
        joined = joined[:1].upper() + joined[1:]
    end = sentence[-1] if sentence[-1] in _CLAUSE_END else ""
    return joined + end


@lru_cache(maxsize=4_096)
def _clause_statement(clause: str) -> SlotStatement | None:
    """The slot `clause` sets: the first rule that reads it. Cached: a clause that starts
    with a verb is read once to cut it off (`clauses`) and again for its statement."""
    for rule in SLOT_RULES:
        match = rule.pattern.search(clause)
        if match is None:
            continue
        # "I moved to Hamburg last week" sets the home to Hamburg, the same value as a
        # later "I live in Hamburg".
        value = without_trailing_time(match.group("value").strip(_VALUE_EDGES))
        value = value.strip(_VALUE_EDGES)
        left = match.groupdict().get("left")
        return SlotStatement(_slot_name(rule, match), value, clause, rule.keywords, left)
    return None


def _states_a_slot(text: str) -> bool:
    return not _NEGATION.search(text) and _clause_statement(text) is not None


def value_terms(statement: SlotStatement) -> frozenset[str]:
    """The terms of a statement's value: equal sets mean the same value said again."""
    return frozenset(terms(statement.value)) or frozenset((statement.value.lower(),))
