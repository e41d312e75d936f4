"""Failures and fixes told in prose ("the build fails", "fixed it by pinning numpy")."""

from __future__ import annotations

import re

from mnemobot.memory.store.items import ItemType
from mnemobot.memory.write.extraction.finding import FAILURE_SALIENCE, FIX_SALIENCE, Finding, Origin
from mnemobot.memory.write.extraction.tuning import ExtractionTuning
from mnemobot.memory.write.extraction.vocabulary import FIX_WORDS
from mnemobot.memory.write.extraction.words import TECH_CONTEXT, content_words, is_question

_FAILURE_STRONG = re.compile(
    r"\b(?:errors?|errored|exceptions?|traceback|segfault|segmentation\s+fault|stack\s*trace"
    r"|exit\s+(?:code|status)\s+[1-9]\d*|non-zero\s+exit|\w+(?:Error|Exception))\b"
)
_FAILURE_WEAK = re.compile(
    r"\b(?:fail|fails|failed|failing|failure|crash|crashes|crashed|crashing|broken|breaks"
    r"|panic(?:s|ked)?|timed?\s*out|timeouts?|hangs|hung|freezes|froze"
    r"|(?:doesn't|does\s+not|didn't|did\s+not|won't|isn't|is\s+not|not)\s+(?:work|working"
    r"|start|starting|load|loading|compile|compiling|build|connect|connecting|run|running))\b",
    re.IGNORECASE,
)
_FAILURE_NEGATED = re.compile(
    r"\b(?:no|without|zero|0|never\s+any)\s+(?:more\s+)?(?:errors?|failures?|exceptions?"
    r"|crash(?:es)?|issues?|problems?)\b|\bno\s+longer\b|\banymore\b|\bany\s+more\b"
    r"|\btrial\s+(?:and|&)\s+error\b"
    r"|\b(?:error|exception)\s+handling\b",
    re.IGNORECASE,
)
_ERROR_IDENTIFIER = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\bexit\s+(?:code|status)\s+[1-9]|\b[45]\d\d\b|`[^`]+`"
    r"|\"[^\"]{4,}\"|\berrno\b",
)
_FIX = re.compile(
    r"\b(?:fixed\s+(?:it|this|that|the|by|with|in|after|now)|(?:the|a|one)\s+fix\s+(?:is|was|for)"
    r"|fixes\s+(?:the|this|it)|solved\s+(?:it|this|the|by|with)|resolved\s+(?:it|this|the|by"
    r"|with)|(?:is|was|got)\s+(?:fixed|solved|resolved)\s+by|workaround|the\s+solution\s+(?:is"
    r"|was)|solution:|fix:|(?:to|you\s+can|we\s+can|i)\s+(?:fix|solve|resolve)\s+(?:it|this"
    r"|that|the)\b|no\s+longer\s+(?:fails|crashes|errors|breaks|times\s+out)"
    r"|not\s+failing\s+anymore|(?:upgrading|downgrading|pinning|installing|reinstalling"
    r"|restarting|clearing|removing|deleting|adding|setting|changing|updating|switching"
    r"|rolling\s+back)\b[^.!?]{0,80}?\b(?:fixed|solved|resolved)\b)",
    re.IGNORECASE,
)
# Phrases that name a fix only when the sentence is about something technical
# ("it turned out to be fun" is not a fix).
_FIX_WEAK = re.compile(
    r"\b(?:(?:it|that|this)\s+works\s+now|(?:it|that|this)\s+worked\s+(?:after|once|when)"
    r"|turned\s+out\s+(?:to\s+be|that|i|we|the)|the\s+(?:root\s+cause|culprit|cause|problem"
    r"|issue|bug)\s+(?:is|was)|the\s+trick\s+(?:is|was))\b",
    re.IGNORECASE,
)
_FIX_NEGATED = re.compile(
    r"\b(?:need|needs|trying|try|tried|want|wants|have|has|going|how)\s+to\s+(?:fix|solve"
    r"|resolve)\b|\b(?:can't|cannot|couldn't|didn't|haven't|hasn't|not|never)\s+(?:be\s+)?"
    r"(?:fix|fixed|solve|solved|resolve|resolved)\b|\bstill\s+(?:broken|failing|crashing)\b",
    re.IGNORECASE,
)
_SUGGESTION = re.compile(r"^(?:to\s+fix|you\s+can|try|we\s+can|one\s+option)\b", re.IGNORECASE)


def match_fix(sentence: str, origin: Origin, tuning: ExtractionTuning) -> Finding | None:
    """A sentence telling how a problem was (or can be) fixed."""
    if is_question(sentence) or _FIX_NEGATED.search(sentence):
        return None
    technical = TECH_CONTEXT.search(sentence) or _FAILURE_STRONG.search(sentence)
    if not (_FIX.search(sentence) or (_FIX_WEAK.search(sentence) and technical)):
        return None
    if len([w for w in content_words(sentence) if w not in FIX_WORDS]) < 2:
        return None  # "Fixed it!", "That worked now, thanks"
    suggested = origin == "assistant" or bool(_SUGGESTION.match(sentence))
    confidence = tuning.suggested_fix_confidence if suggested else tuning.confirmed_fix_confidence
    tags = ["fix", "suggested" if suggested else "confirmed"]
    return Finding(ItemType.FIX, sentence, confidence, FIX_SALIENCE, tags, origin)


def match_failure(sentence: str, origin: Origin, tuning: ExtractionTuning) -> Finding | None:
    """A sentence telling that something technical fails."""
    if _FAILURE_NEGATED.search(sentence):
        return None
    strong = bool(_FAILURE_STRONG.search(sentence))
    weak = bool(_FAILURE_WEAK.search(sentence)) and bool(TECH_CONTEXT.search(sentence))
    if not (strong or weak):
        return None
    concrete = bool(_ERROR_IDENTIFIER.search(sentence))
    if is_question(sentence) and not concrete:
        return None
    if len(content_words(sentence)) < 2:
        return None
    # Only the user's own report of a concrete error is sure enough to become durable.
    if concrete and origin != "assistant":
        confidence = tuning.concrete_failure_confidence
    else:
        confidence = tuning.vague_failure_confidence
    return Finding(ItemType.FAILURE, sentence, confidence, FAILURE_SALIENCE, ["failure"], origin)


def error_tags(line: str) -> list[str]:
    """The exception class a line names, lowercased, as a tag ("importerror")."""
    match = re.search(r"\b([A-Z]\w*(?:Error|Exception))\b", line)
    return [match.group(1).lower()] if match else []
