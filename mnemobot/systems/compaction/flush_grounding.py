"""Which of the memory flush's bullets are known memory given back changed: a pure function.

Asked for what is new in an excerpt, a small model sometimes answers with a line of the
KNOWN MEMORY it was shown, a word swapped: SmolLM2-135M, live, given "Oleg: My name is Oleg
and I live in Tver." and an excerpt of "Are you there? / Yes, I am here.", answered
"- Oleg: My name is Olya.". Stored, that outranked what the user had said.

A bullet is such a copy when most of its terms are known memory's and none of the others
is in the excerpt. A paraphrase of the excerpt ("prefers short answers" from "keep it
brief") shares little with known memory and is kept; a changed value the excerpt gives
("lives in Moscow now" after "I moved to Moscow") names the excerpt's word and is kept.
A term in a script that is not one of the excerpt's own (an English bullet about a
Russian chat that names a library or two) could be the excerpt's in translation: it cannot
be checked, and keeps its bullet.
"""

from __future__ import annotations

from collections import Counter

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
# A bullet may start with this mark (the flush's instructions ask for it on a how-to).
PROCEDURE_MARK = "[procedure]"


def changed_copies(bullets: list[str], known: str, excerpt: str) -> list[str]:
    """The `bullets` that restate `known` memory with nothing from `excerpt` (what was said,
    without who said it) in what they change, in order."""
    known_terms = set(terms(known))
    excerpt_terms = set(terms(excerpt))
    excerpt_scripts = own_scripts(excerpt) | {Script.OTHER}
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
        # Nothing changed: a restatement, which the write's own check leaves out (or
        # keeps, when it says more) as it does any fact said again.
        if not new or new & excerpt_terms:
            continue
        if any(script_of(term) not in excerpt_scripts for term in new):
            continue
        copies.append(bullet)
    return copies


def own_scripts(text: str) -> set[Script]:
    """The scripts of at least OWN_SCRIPT_SHARE of the words of `text` that have letters."""
    counts = Counter(script_of(word) for word in text.split())
    counts.pop(Script.OTHER, None)
    words = sum(counts.values())
    return {script for script, count in counts.items() if count >= OWN_SCRIPT_SHARE * words}
