"""Which of the memory flush's bullets are known memory given back changed: a pure function.

Asked for what is new in an excerpt, a small model sometimes answers with a line of the
KNOWN MEMORY it was shown, a word swapped: SmolLM2-135M, live, given "Oleg: My name is Oleg
and I live in Tver." and an excerpt of "Are you there? / Yes, I am here.", answered
"- Oleg: My name is Olya.". Stored, that outranked what the user had said.

A bullet is such a copy when most of its terms are known memory's, the excerpt shares
none of its terms, no writer of the excerpt is what it adds, and it is not a known line
with words added. A paraphrase of the excerpt ("prefers short answers" from "keep it
brief") shares little with known memory and is kept; a changed value the excerpt speaks
of ("User has 3 cats" after "we have three cats now", "no longer eats meat" after "I
stopped eating meat") shares a word with it and is kept.
A term in a script that is not one of the excerpt's own (an English bullet about a
Russian chat that names a library or two) could be the excerpt's in translation: it cannot
be checked, and keeps its bullet.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from mnemobot.memory.text.scripts import Script, script_of
from mnemobot.memory.text.terms import terms

# A bullet reads as a copy when known memory has more than this share of its distinct terms.
# The copy above shares 2 of its 3 ("oleg", "name"); a new fact worded as flushed facts are
# ("User prefers short answers" beside a known "User prefers tea") shares its framing words,
# half of a short bullet, and must stay.
NEAR_COPY_SHARE = 0.5
# The share of the excerpt's words a script needs to be one of its own, so a Russian chat's
# "Python" does not make English checkable. Chosen, not measured: a language's own script
# holds most of its words.
OWN_SCRIPT_SHARE = 0.25
# A new term this long found inside a word of the excerpt is the excerpt's (shorter ones,
# "ex", "3", are inside too many words to tell).
MIN_STEM_INSIDE = 4
# A bullet may start with this mark (the flush's instructions ask for it on a how-to).
PROCEDURE_MARK = "[procedure]"


def changed_copies(
    bullets: list[str], known: str, excerpt: str, writers: Iterable[str] = ()
) -> list[str]:
    """The `bullets` that give back `known` memory changed, where `excerpt` (what was
    said, without who said it) says nothing of what they are about, in order. `writers`:
    the names of the group members who wrote in the excerpt."""
    known_terms = set(terms(known))
    known_lines = [line_terms for line in known.splitlines() if (line_terms := set(terms(line)))]
    excerpt_terms = set(terms(excerpt))
    writer_terms = set(terms(" ".join(writers)))
    excerpt_scripts = own_scripts(excerpt) | {Script.OTHER}
    # (A name's stem inside a longer word counts: "москв" of "Москве" in "москвич".)
    said = excerpt.lower()
    copies = []
    for bullet in bullets:
        text = bullet.removeprefix(PROCEDURE_MARK)
        bullet_terms = set(terms(text))
        if not bullet_terms:
            continue
        shared = bullet_terms & known_terms
        if len(shared) <= NEAR_COPY_SHARE * len(bullet_terms):
            continue
        new = bullet_terms - known_terms
        if (
            # Nothing changed: a restatement, which the write's own check leaves out (or
            # keeps, when it says more) as it does any fact said again.
            not new
            # The excerpt says the change, or a word made of it ("москвич", "Москве").
            or new & excerpt_terms
            or any(term in said for term in new if len(term) >= MIN_STEM_INSIDE)
            # A member's own statement of what another said ("me too").
            or new & writer_terms
            # A known line with words added: "ex-wife", "anymore".
            or any(line <= bullet_terms for line in known_lines)
            # The excerpt's words in another script may be the change in translation.
            or any(script_of(term) not in excerpt_scripts for term in new)
        ):
            continue
        # A name the excerpt never says is made up, whatever else it speaks of; other
        # words may be the excerpt's change said otherwise ("I stopped eating meat" for
        # "no longer eats meat", "three cats" for "3 cats", "4pm" for "16:00").
        names = proper_name_terms(text) & new
        made_up = any(name not in said for name in names)
        if bullet_terms & excerpt_terms and not made_up:
            continue
        copies.append(bullet)
    return copies


def own_scripts(text: str) -> set[Script]:
    """The scripts of at least OWN_SCRIPT_SHARE of the words of `text` that have letters."""
    counts = Counter(script_of(word) for word in text.split())
    counts.pop(Script.OTHER, None)
    words = sum(counts.values())
    return {script for script, count in counts.items() if count >= OWN_SCRIPT_SHARE * words}


_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)")


def proper_name_terms(text: str) -> set[str]:
    """The terms of the words of `text` written with a capital inside a sentence (a
    name: "Olya", "Москве"), not its first word."""
    found: set[str] = set()
    for sentence in _SENTENCE_START.split(text):
        for word in sentence.split()[1:]:
            if word[:1].isupper():
                found.update(terms(word))
    return found
