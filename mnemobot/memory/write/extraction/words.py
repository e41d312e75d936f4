"""Word-level reading of a sentence: content words, small talk, questions, hedges."""

from __future__ import annotations

import re

from mnemobot.memory.write.extraction.language import is_small_talk_in
from mnemobot.memory.write.extraction.rules.tables import rules_for
from mnemobot.memory.write.extraction.vocabulary import (
    DEICTIC_START,
    FILLER_WORDS,
    LEADING_ADVERBS,
    SMALL_TALK_EXTRA,
)

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def lower_words(text: str) -> list[str]:
    """The lowercased words of `text`, with typographic apostrophes made plain."""
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


def content_words(text: str) -> list[str]:
    """The words of `text` that say something (not fillers, pronouns or small talk)."""
    return [w for w in lower_words(text) if w not in FILLER_WORDS and (len(w) > 2 or w.isdigit())]


def is_small_talk(text: str) -> bool:
    """Greetings, thanks and acknowledgements with nothing else in them."""
    words = lower_words(text)
    if all(w in FILLER_WORDS or w in SMALL_TALK_EXTRA for w in words):
        return True
    if len(text) > SMALL_TALK_MAX_CHARS:
        return False
    rules = rules_for(text)
    return rules is not None and is_small_talk_in(text, rules, _ENGLISH_SMALL_TALK)


_ENGLISH_SMALL_TALK = FILLER_WORDS | SMALL_TALK_EXTRA
# Greetings and thanks are short: a longer message in another language is never only
# that, so its language is not even guessed. A bound on work, not a setting.
SMALL_TALK_MAX_CHARS = 200


def has_durable_object(text: str) -> bool:
    """The object of a statement names something ("jazz"), not deixis ("it", "that")."""
    words = lower_words(text)
    while words and words[0] in LEADING_ADVERBS:
        words = words[1:]
    if not words or words[0] in DEICTIC_START:
        return False
    if words[0] in ("how", "when", "that") and len(words) > 1 and words[1] in DEICTIC_START:
        return False  # "I love how it looks": about what is on screen, not a lasting taste
    return bool(content_words(" ".join(words)))


_QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|hey|ok|okay|also|btw)[,\s]+)*"
    r"(?:what|why|how|when|where|who|whom|which|whose"
    r"|(?:do|does|did|are|is|was|were|can|could|would|will|should|shall|have|has|had"
    r"|may|might|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|can't|couldn't)"
    r"\s+(?:you|we|i|they|he|she|it|u|ya|there|your|my|the|this|that|these|those|anyone)"
    r")\b",
    re.IGNORECASE,
)
# Closing marks, spaces and emoji after a sentence's last word. The lookbehind starts a
# match only where such a run starts: `[...]+$` alone retried from every character of a
# long run of spaces before a "?" (100,000 of them took minutes).
_TRAILING = re.compile(
    r"(?<![\s\"'”’)\]*_~\U0001F300-\U0001FAFF\u2600-\u27BF])"
    r"[\s\"'”’)\]*_~\U0001F300-\U0001FAFF\u2600-\u27BF]+$"
)


def is_question(sentence: str) -> bool:
    """Ends with a question mark, or starts like a question and ends without a full stop.

    "Starts like a question" is read in the sentence's language ("где ты живёшь",
    "wo wohnst du", "¿dónde vives", "你住在哪里").
    """
    stripped = _TRAILING.sub("", sentence)
    if stripped.endswith(("?", "？")):
        return True
    if stripped.endswith((".", "!", "。", "！")):
        return False
    if _QUESTION_START.match(normalize_quotes(stripped)):
        return True
    rules = rules_for(stripped)
    return rules is not None and bool(rules.question.search(stripped.lstrip("¡«\"'“ ")))


# A sentence that only imagines something ("If I moved to Oslo ...").
HYPOTHETICAL_START = re.compile(
    r"^(?:(?:and|but|so)\s+)?(?:if|unless|in case|whether|what if|suppose|imagine)\b",
    re.IGNORECASE,
)
# Words that make a statement unsure ("I think", "maybe", "used to").
HEDGE = re.compile(
    r"\b(?:i think|i guess|i suppose|i believe|i feel like|maybe|perhaps|probably|possibly"
    r"|kind of|kinda|sort of|sorta|might|not sure|sometimes|occasionally|used to"
    r"|i'm not sure|i am not sure|i wonder)\b",
    re.IGNORECASE,
)


def normalize_quotes(text: str) -> str:
    """Typographic single quotes as plain apostrophes, as the patterns expect them."""
    return text.replace("’", "'").replace("‘", "'")


# A sentence about something technical: a failure or fix in it is about software.
TECH_CONTEXT = re.compile(
    r"\b(?:build|builds|tests|test\s+suite|unit\s+tests?|deploy\w*|install\w*|compil\w+"
    r"|server|script|code|command|function|api|request|query|import|module|package|library"
    r"|app|program|bot|container|docker|pipeline|ci|migration|database|db|endpoint|http"
    r"|https|service|upload|download|login|page|website|site|cron|worker|cluster|pod|npm|pip"
    r"|python|java|node|rust|gradle|maven|webpack|lint\w*|type\s*check\w*"
    r"|startup|connection|socket|port|ssl|tls|cert\w*|config\w*|version"
    r"|upgrade|update|phone|laptop|computer|printer|browser|wifi|network|router)\b"
    r"|\b[45]\d\d\b|`",
    re.IGNORECASE,
)
