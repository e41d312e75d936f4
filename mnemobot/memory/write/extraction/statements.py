"""Statements of the user: preferences, facts, decisions, tasks, requests and rules.

Precision matters more than recall: a wrong durable item is injected into every later
prompt. So questions, hypotheticals ("if I moved ..."), guesses ("that must be fun") and
small talk are no statements, and hedged ones ("I think ...") stay below promotion.

A user's words never become a rule about the assistant's own behaviour (a CONSTRAINT):
only the operator sets those, in their notes and instructions. An order to the assistant
("always answer in French", "never push to main", "you must ...") is kept as what the
user asked for, a PREFERENCE tagged "request"; a rule of the user's world ("tests must
pass before a merge", "we never deploy on Fridays") as a PROJECT_FACT tagged "rule".
Both are remembered as something the user said, never as an instruction. What a person
asks for themselves ("always include versions when I ask about libraries", "I prefer
short answers") is also kept as their standing preference (`memory.write.standing`): carried
in every request of the chat as that person's stated preference for answers to them,
never above the operator's instructions and never binding anyone else; an order that
steers others or the bot's own rules is not.
"""

from __future__ import annotations

import re

from mnemobot.memory.store.items import ItemType
from mnemobot.memory.write.extraction.finding import CONSTRAINT_SALIENCE, Finding
from mnemobot.memory.write.extraction.language import (
    LanguageRules,
    content_count,
    guess_language,
    has_latin_letters,
    has_object,
    script_language,
)
from mnemobot.memory.write.extraction.personal_rules import PERSONAL_RULES, StatementRule
from mnemobot.memory.write.extraction.rules.tables import rules_of
from mnemobot.memory.write.extraction.tuning import ExtractionTuning
from mnemobot.memory.write.extraction.vocabulary import (
    EVALUATIVE,
    GUESSING_SUBJECTS,
    GUESSING_VERBS,
)
from mnemobot.memory.write.extraction.words import (
    HEDGE,
    HYPOTHETICAL_START,
    TECH_CONTEXT,
    content_words,
    has_durable_object,
    is_question,
    normalize_quotes,
)

_LEAD_IN = r"^(?:(?:please|pls|and|also|oh|btw|remember|note|ok|okay)[,:]?\s+)*"
# Words after "always"/"never" that show it is not an order ("Always happy to help").
_NOT_VERBS = (
    r"(?:happy|glad|welcome|good|great|nice|fun|there|here|a|an|the|been|so|too|more|less"
    r"|better|fine|ready|sure|true|right|late|early|again|ever|alone|mind|forget\s+you"
    r"|been|was|is|has|had|my|your|his|her|our|their|up\s+for|down\s+for|in\s+the|on\s+the"
    r"|saw|heard|thought|knew|did|got|felt|went|came|made|took|gave|said|told|found|met|left"
    r"|really|[a-z]+ed|[a-z]+ing)"
)
_CONSTRAINT_IMPERATIVE = re.compile(
    _LEAD_IN + r"(?:(?:always|never)\s+(?!" + _NOT_VERBS + r"\b)[a-z]+"
    r"|(?:don't|do\s+not|dont|avoid|make\s+sure|ensure|refrain\s+from)\b"
    r"|only\s+(?:use|answer|reply|respond|write|speak|run|deploy|commit|push|call|send|show"
    r"|return|talk|suggest|recommend)\b|stop\s+[a-z]+ing\b)",
    re.IGNORECASE,
)
_CONSTRAINT_NOT = re.compile(
    _LEAD_IN + r"(?:don't|do\s+not|dont|never)\s+"
    r"(?:worry|mind|know|care|think|be\s+sorry|apologi[sz]e|hesitate|bother|get\s+me\s+wrong"
    r"|ask|feel|forget(?=\s*[,!.-])|forget\s+(?:it|that|the\s+details)|give\s+up|be\s+(?:afraid"
    r"|scared|shy|sad|so\s+hard|too\s+hard|a\s+stranger)|stop\s+(?:believing|dreaming))\b"
    r"|^never\s+mind\b",
    re.IGNORECASE,
)
_CONSTRAINT_STRONG = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|mustn't|must\s+not|shall\s+not|should\s+never"
    r"|should\s+always|(?:is|are)\s+(?:strictly\s+)?(?:required|mandatory|forbidden|prohibited"
    r"|not\s+allowed)|not\s+allowed\s+to|required\s+to)\b",
    re.IGNORECASE,
)
# "must" is an order ("Tests must pass") unless it is a guess ("that must have been fun",
# "you must be tired", "must be nice").
_MUST = re.compile(
    r"(?:^|\b(?P<subject>[\w'-]+)\s+)must\s+(?P<next>[\w']+)(?:\s+(?P<after>[\w']+))?",
    re.IGNORECASE,
)
_CONSTRAINT_SOFT = re.compile(
    r"\bwe\s+(?:always|never|must|cannot|can't|should\s+(?:always|never))\b"
    r"|\b(?:every|each|all)\s+[\w-]+\s+(?:has\s+to|have\s+to|needs?\s+to)\b",
    re.IGNORECASE,
)
_REQUIRES = re.compile(r"\b(?:requires?|required)\b", re.IGNORECASE)
_FIRST_PERSON_MODAL = re.compile(r"\bi\s+(?:must|have\s+to|need\s+to|can't|cannot)\b", re.I)
# A sentence about "you" or the assistant: in a chat, that is the assistant's behaviour.
_ABOUT_THE_ASSISTANT = re.compile(
    r"\b(?:you|your|yourself|assistant|bot|chatbot|ai|system\s+prompt|instructions?)\b",
    re.IGNORECASE,
)
# "From now on, answer in French": an order once the lead-in is set aside, unless a
# subject follows ("from now on we deploy on Mondays").
_FROM_NOW_ON = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|in\s+future|henceforth)[,:]?\s+(?P<rest>\S+)",
    re.IGNORECASE,
)
_SUBJECT_WORDS = frozenset(
    {"i", "we", "they", "he", "she", "it", "this", "that", "these", "those", "there"}
    | {"the", "a", "an", "our", "my", "their", "his", "her", "its", "all", "every", "each"}
    | {"no", "nobody", "everyone", "everybody", "nothing"}
)
_ENTHUSIASM = re.compile(
    r"\byou\s+(?:have|need|must)\s+to\s+(?:try|see|check|watch|come|meet|visit|read|listen"
    r"|hear|go|taste|get)\b",
    re.IGNORECASE,
)


def match_personal(sentence: str, tuning: ExtractionTuning) -> Finding | None:
    """A preference, fact, decision or task the user states about themselves."""
    normalized = normalize_quotes(sentence)
    if is_question(sentence) or HYPOTHETICAL_START.match(normalized):
        return None
    best: StatementRule | None = None
    for rule in PERSONAL_RULES:
        match = rule.pattern.search(normalized)
        if match is None or (best is not None and best.confidence >= rule.confidence):
            continue
        if rule.needs_object == "after" and not has_durable_object(normalized[match.end() :]):
            continue
        if rule.needs_object == "before" and not has_durable_object(normalized[: match.start()]):
            continue
        best = rule  # the most specific (most confident) reading of the sentence wins
    if best is None:
        return None
    hedged = bool(HEDGE.search(normalized))
    confidence = min(best.confidence, tuning.hedged_confidence_cap) if hedged else best.confidence
    tags = [best.tag] + (["hedged"] if hedged else [])
    return Finding(best.type, sentence, confidence, best.salience, tags, "user")


def _is_order_must(sentence: str) -> bool:
    for match in _MUST.finditer(sentence):
        subject = (match.group("subject") or "").lower()
        following = match.group("next").lower()
        after = (match.group("after") or "").lower()
        if following in GUESSING_VERBS or subject in ("a", "i"):
            continue  # "must have been", "a must", "I must say"
        if following == "be" and (
            not subject
            or subject in GUESSING_SUBJECTS
            or after in EVALUATIVE
            or after.endswith("ing")
        ):
            continue  # "must be so rewarding", "you must be tired", "must be having fun"
        return True
    return False


def _rule_finding(sentence: str, confidence: float, order: bool, tags: list[str]) -> Finding:
    """An order to the assistant as the user's request, any other rule as a fact."""
    kind, tag = (ItemType.PREFERENCE, "request") if order else (ItemType.PROJECT_FACT, "rule")
    return Finding(kind, sentence, confidence, CONSTRAINT_SALIENCE, [tag, *tags], "user")


def _is_order(normalized: str) -> bool:
    """Whether an English rule is addressed to the assistant (see the module docstring)."""
    if _CONSTRAINT_IMPERATIVE.match(normalized) or _ABOUT_THE_ASSISTANT.search(normalized):
        return True
    lead = _FROM_NOW_ON.match(normalized)
    return lead is not None and lead["rest"].lower().strip(",.") not in _SUBJECT_WORDS


def match_constraint(
    sentence: str, speaker: str | None, tuning: ExtractionTuning
) -> Finding | None:
    """A rule or an order ("never push to main", "tests must pass"); see `_rule_finding`."""
    normalized = normalize_quotes(sentence)
    if is_question(sentence) or HYPOTHETICAL_START.match(normalized):
        return None
    if _CONSTRAINT_NOT.match(normalized) or _ENTHUSIASM.search(normalized):
        return None
    if len(content_words(normalized)) < 2:
        return None  # "Never mind!", "Always!"
    if _FIRST_PERSON_MODAL.search(normalized):
        return None  # "I have to pick up the kids": the user's errand, not a rule for us
    if _CONSTRAINT_STRONG.search(normalized) or _is_order_must(normalized):
        confidence = tuning.constraint_confidence
    elif _CONSTRAINT_IMPERATIVE.match(normalized):
        # Among several people an order is mostly advice to one another, not a rule for
        # the assistant: keep it as an episode, below the promotion threshold.
        confidence = tuning.weak_constraint_confidence if speaker else tuning.constraint_confidence
    elif _CONSTRAINT_SOFT.search(normalized) or (
        _REQUIRES.search(normalized) and TECH_CONTEXT.search(normalized)
    ):
        confidence = tuning.weak_constraint_confidence
    else:
        return None
    if HEDGE.search(normalized):
        confidence = min(confidence, tuning.hedged_confidence_cap)
    return _rule_finding(sentence, confidence, _is_order(normalized), [])


# ------------------------------------------------------------- other languages

# Opening marks that a pattern anchored at the sentence start must look past.
_OPENING_MARKS = "¡¿«\"'“‘—–- "


def match_statement(sentence: str, speaker: str | None, tuning: ExtractionTuning) -> Finding | None:
    """A rule for the assistant or a statement about the user, in any known language.

    English rules read every sentence in Latin script first (so English gives what it
    always gave); a German or Spanish sentence they find nothing in, and a Russian or
    Chinese one, is read with its own language's table.
    """
    language = script_language(sentence)
    if language is None or has_latin_letters(sentence):
        # Also a Russian or Chinese sentence with Latin words in it: it may be English
        # quoting them ("I love the word привет").
        found = match_constraint(sentence, speaker, tuning) or match_personal(sentence, tuning)
        if found is not None:
            return found
        language = language or guess_language(sentence)
    rules = rules_of(language)
    if rules is None:
        return None
    text = normalize_quotes(sentence).lstrip(_OPENING_MARKS)
    if is_question(sentence) or rules.hypothetical.search(text):
        return None
    return _constraint_in(rules, text, sentence, speaker, tuning) or _personal_in(
        rules, text, sentence, tuning
    )


def _personal_in(
    rules: LanguageRules, text: str, sentence: str, tuning: ExtractionTuning
) -> Finding | None:
    best: StatementRule | None = None
    for rule in rules.personal:
        if best is not None and best.confidence >= rule.confidence:
            continue
        match = rule.pattern.search(text)
        if match is None:
            continue
        if rule.needs_object == "after" and not has_object(text[match.end() :], rules):
            continue
        if rule.needs_object == "before" and not has_object(text[: match.start()], rules):
            continue
        if rule.needs_object is None and content_count(text, rules) < 1:
            continue
        best = rule
    if best is None:
        return None
    hedged = bool(rules.hedge.search(text))
    confidence = min(best.confidence, tuning.hedged_confidence_cap) if hedged else best.confidence
    tags = [best.tag, f"lang:{rules.code}"] + (["hedged"] if hedged else [])
    return Finding(best.type, sentence, confidence, best.salience, tags, "user")


def _constraint_in(
    rules: LanguageRules,
    text: str,
    sentence: str,
    speaker: str | None,
    tuning: ExtractionTuning,
) -> Finding | None:
    if rules.not_constraint.search(text) or content_count(text, rules) < 2:
        return None
    order = rules.constraint_order.search(text) is not None
    if rules.constraint_strong.search(text):
        confidence = tuning.constraint_confidence
    elif order:
        # As in English: among several people an order is mostly advice to one another.
        confidence = tuning.weak_constraint_confidence if speaker else tuning.constraint_confidence
    elif rules.constraint_soft.search(text):
        confidence = tuning.weak_constraint_confidence
    else:
        return None
    if rules.hedge.search(text):
        confidence = min(confidence, tuning.hedged_confidence_cap)
    return _rule_finding(sentence, confidence, order, [f"lang:{rules.code}"])
