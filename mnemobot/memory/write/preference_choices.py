"""A stated preference changed: "I prefer tea", then "I prefer coffee now".

A short "I prefer X" names a choice and its value, and a later one in the same frame with
another value is the same choice changed, though the two share only the verb ("prefer",
and "now" on one side: too few words for `memory.write.standing_statements` to read them
as one statement changed). Yet "I prefer tea" and "I prefer short answers" are two
choices, kept both. What tells them apart here is what the words say of themselves: a
change word ("now", "actually", "instead", "anymore", "these days" and their kin in
Russian, German and Spanish), and what an object asks of an answer (`answer_aspects`:
"short answers" is its length, "tea" nothing about it).

Only short objects count: a longer one ("I prefer e-books for their portability") says
enough words of its own for the overlap rule to compare.
"""

from __future__ import annotations

import re

from mnemobot.memory.text.terms import terms
from mnemobot.memory.write.answer_aspects import aspects_named

# An object of at most this many terms is a short noun phrase ("coffee", "black coffee",
# "window seats"); "e-books for their portability" is three and compares by its words.
SHORT_CHOICE_TERMS = 2

# "I prefer ...", "my preference for ...", in each language: where the clause starts.
PREFER = re.compile(
    r"\bI\s+(?:(?:really|generally|usually|much|strongly|also|still|definitely|personally"
    r"|now|do|always|tend\s+to)\s+)*(?:prefer|prioriti[sz]e)\b"
    # A choice the speaker made by what matters to them ("I prioritized battery life over
    # brand prestige", "I've been prioritizing team success over individual accolades").
    r"|\bI(?:'ve|\s+have)?\s+(?:been\s+|always\s+|also\s+)?prioriti[sz](?:ed|ing)\b"
    r"|\bI(?:'m|\s+am)\s+(?:\w+\s+)?prioriti[sz]ing\b"
    r"|\bя\s+(?:\w+\s+)?отда[юл]\w*\s+предпочтение\b"
    r"|\bI(?:'d|\s+would)\s+(?:much\s+)?(?:rather|prefer)\b"
    r"|\bmy\s+(?:strong\s+|personal\s+)?preference\s+(?:is|for|was)\b"
    r"|\bI(?:'ve|\s+have)\s+(?:set|got)\s+a\s+preference\s+for\b"
    r"|\bя\s+(?:\w+\s+)?предпочитаю\b|\bмо[ёе]\s+предпочтение\b|\bмне\s+(?:больше|удобнее)\b"
    r"|\bich\s+(?:\w+\s+)?(?:bevorzuge|ziehe)\b|\bmir\s+ist\s+(?:\w+\s+)?lieber\b"
    r"|\b(?:yo\s+)?prefiero\b|\bmi\s+preferencia\b|\bme\s+gusta\s+más\b"
    # "我喜欢" alone is "I like" (no choice, as "I like tea" is none); "更喜欢" prefers.
    r"|我(?:(?:更|比较|还是)喜欢|(?:更|比较|还是|一般)?(?:偏好|倾向于|宁愿|宁可|更愿意))",
    re.IGNORECASE,
)
# The speaker saying a preference is a change: "I prefer coffee now", "actually",
# "these days". "Now" of "from now on" is a request's, not a change of a choice; "instead
# of" compares two things ("I prefer tea instead of coffee").
_CHANGE_WORDS = (
    r"(?<!from\s)\bnow\b(?!\s+on\b)|\bactually\b|\binstead\b(?!\s+of\b)|\bany\s*more\b"
    r"|\bthese\s+days\b|\bnowadays\b"
    r"|\b(?:теперь|сейчас|на\s+самом\s+деле|вообще-то|в\s+последнее\s+время)\b"
    r"|\b(?:jetzt|nun|eigentlich|inzwischen|mittlerweile|neuerdings|stattdessen)\b"
    r"|\b(?:ahora|en\s+realidad|de\s+hecho|en\s+cambio|últimamente|hoy\s+en\s+día"
    r"|estos\s+días|ya)\b"
)
CHANGE = re.compile(_CHANGE_WORDS, re.IGNORECASE)
# A change word just before "I prefer" ("Actually, I prefer coffee"): part of the statement.
CHANGE_BEFORE = re.compile(r"(?:" + _CHANGE_WORDS + r")[\s,]*$", re.IGNORECASE)


def changed_choice(newer: str, older: str) -> bool | None:
    """Whether a newer short "I prefer X" changes an older one (both without their
    speaker's label): False for two choices ("tea", then "short answers"), True for one
    changed with a change word ("tea", then "coffee now"), None when they are no two
    short preferences in one frame (the caller compares them otherwise).

    Without a change word two short objects in one frame are left to the word overlap:
    "I prefer e-books" and later "I prefer window seats" are most likely two choices, and
    "I prefer tea" then "I prefer coffee" (half their words shared) a change, as before.
    With one, the speaker says it replaces what they chose: a person who said "I prefer
    tea" and then "these days I prefer black coffee" expects to be offered coffee.
    """
    new, old = _choice(newer), _choice(older)
    if new is None or old is None or new[0] != old[0] or new[1] == old[1]:
        return None
    if _aspect_kinds(new[2]) != _aspect_kinds(old[2]):
        return False  # "I prefer tea" / "I prefer short answers": two things
    return True if CHANGE.search(newer) else None


def _choice(said: str) -> tuple[str, frozenset[str], str] | None:
    """A short "I prefer X": its verb's term, X's terms and X, without change words."""
    plain = CHANGE.sub(" ", said).strip(" ,.!")
    frame = PREFER.match(plain)
    if frame is None:
        return None
    verb = terms(frame.group())
    chosen = plain[frame.end() :]
    chosen_terms = frozenset(terms(chosen))
    if not verb or not chosen_terms or len(chosen_terms) > SHORT_CHOICE_TERMS:
        return None
    return verb[-1], chosen_terms, chosen


def _aspect_kinds(chosen: str) -> frozenset[str]:
    return frozenset(aspect for aspect, _ in aspects_named(chosen))
