"""Clauses of one sentence: "I live in Lisbon and I work as a translator" says two things.

A slot's value runs to the end of its sentence (`memory.write.fact_slots`), so read whole,
that sentence sets the home to "Lisbon and I work as a translator" and no job at all, and
a later move replaces the job with the home. Cut at its clauses, each value ends where its
clause does, and each slot is one fact of its own, replaced on its own.

A clause starts after a joiner ("and", "but", a comma; "und", "и", "y" ...) where the
speaker speaks of themselves again: the pronoun or a possessive ("and I", "und ich",
"и я", "y yo", "and my"; "，我" in Chinese) always starts one, since no value goes on
with it. A verb alone ("and work as ...") starts one only when what follows states a
slot of its own; other words never do, so "fish and chips" or "Johnson and Johnson" stay
one value. A verb in the first person that no value goes on with ("und heiße Greta", "и
люблю джаз", "y me llamo Ana", "and am a nurse") starts one whatever follows: read as
part of "Ich wohne in Berlin und heiße Greta", the name went out of date with the home
when the speaker moved. These are written in lower case only, as a verb after "and" is:
"Stop and Shop" is a shop. A clause that drops the pronoun ("und arbeite als ...") is
read with it put back ("ich arbeite als ..."), as the rules read the first person.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Language:
    joiners: str
    # Words that start a clause about oneself: the pronoun, possessives, and the verbs
    # the slot rules start with (a clause may drop the pronoun before them).
    pronoun: str
    possessives: str
    verbs: str
    # First-person verbs that start a clause of their own, stating a slot or not.
    own_verbs: str
    # Put before a clause that starts with a verb, so the rules read it as they read the
    # first clause ("" where the rules need no pronoun: Spanish).
    restore: str
    # Where a verb says no person (English "work", "speak"): the clause before names who
    # acts, and a verb-first clause is the speaker's only when that clause is theirs.
    subject: str = ""


_LANGUAGES = (
    _Language(
        joiners=r"and|but",
        pronoun=r"I",
        possessives=r"my",
        verbs=r"live|reside|moved|relocated|work|joined|started|got|have|eat",
        own_verbs=r"am|go\s+by|love|enjoy|speak|study",
        restore="I",
        subject=r"(?-i:\bI\b)",
    ),
    _Language(
        joiners=r"und|aber",
        pronoun=r"ich",
        possessives=r"mein|meine|meiner|meinen",
        verbs=r"wohne|lebe|arbeite|bin|ziehe",
        own_verbs=(
            r"heiße|heisse|bin|habe|hab|mag|liebe|spiele|studiere|lerne|spreche|komme|mache"
            r"|koche|fahre|gehe|lese|höre|reise|treibe|besitze|kenne|suche|brauche|möchte"
            r"|will|kann|muss|freue|interessiere|nenne"
        ),
        restore="ich",
    ),
    _Language(
        joiners=r"и|а|но",
        # "и меня зовут ...", "и мне 30 лет": the speaker too.
        pronoun=r"я|меня|мне",
        possessives=r"мой|моя|моё|мое|мои|мою|моего",
        verbs=r"живу|работаю|переехала?|устроила?с[ья]|встречаюсь|сейчас|теперь",
        own_verbs=(
            r"люблю|учусь|занимаюсь|увлекаюсь|говорю|играю|хожу|езжу|имею|хочу|могу"
            r"|зовусь|пишу|читаю|изучаю"
        ),
        restore="я",
    ),
    _Language(
        joiners=r"y|e|pero",
        pronoun=r"yo",
        possessives=r"mi",
        verbs=r"vivo|resido|trabajo|estoy|soy|me|ahora|actualmente",
        own_verbs=(
            r"me\s+llamo|me\s+gusta|me\s+encanta|soy|estoy|tengo|hablo|estudio|juego|hago"
            r"|practico|toco"
        ),
        restore="",
    ),
)


def _boundary(language: _Language, index: int) -> str:
    # A comma (with or without a joiner after it) or a joiner between spaces, then the
    # clause's first word, in a group named for the kind of start and the language.
    # Tried only where a run of spaces starts (the lookbehind), each run read once
    # (possessive): tried at every space of a long run, a 4,096-character message of
    # spaces took 0.5 s, and 40,000 a minute.
    joiner = (
        rf"(?<!\s)(?:\s*+,\s*+(?:(?:{language.joiners})\s++)?"
        rf"|\s++(?:{language.joiners})\s++)"
    )
    return (
        rf"{joiner}(?=(?P<self{index}>{language.pronoun}|{language.possessives})(?!\w)"
        rf"|(?P<own{index}>(?-i:{language.own_verbs}))(?!\w)"
        rf"|(?P<verb{index}>{language.verbs})(?!\w))"
    )


# Chinese has no spaces: a clause starts after a comma (and a joiner: "而且", "但是") at
# "我" again ("我住在浦东，我在腾讯工作"), or at a verb the slot rules start with, the "我"
# left out as Chinese leaves it ("我住在北京，在一家银行工作").
_CHINESE_BOUNDARY = (
    r"[，,；]\s*+(?:而且|并且|但是|但|也|还)?"
    r"(?=(?P<selfzh>我)|(?P<verbzh>(?:现在|目前)?(?:在|住在|搬|加入|入职|担任|当上|是一名|是一位)))"
)

_BOUNDARY = re.compile(
    "|".join(
        [
            *(_boundary(language, index) for index, language in enumerate(_LANGUAGES)),
            _CHINESE_BOUNDARY,
        ]
    ),
    re.IGNORECASE,
)


def clauses(sentence: str, states_slot: Callable[[str], bool]) -> list[str]:
    """`sentence` cut into the clauses that each state something of the speaker.

    `states_slot` tells whether a text sets a slot: a clause that starts with a verb (no
    pronoun, no possessive) counts only then; otherwise its words stay part of the
    clause before. A verb-first clause is given back its pronoun.
    """
    matches = list(_BOUNDARY.finditer(sentence))
    if not matches:
        return [sentence.strip()] if sentence.strip() else []
    ends = [match.start() for match in matches[1:]] + [len(sentence)]
    found = [sentence[: matches[0].start()]]
    # Whether each clause is the speaker's, read once, as it first stood: the words merged
    # into it later do not change whose it is, and reading a clause grown by every "and"
    # again at each one took 0.2 s for a 4,096-character message, 3 s for 16,000.
    speakers: dict[tuple[int, str], bool] = {}
    for match, end in zip(matches, ends, strict=True):
        following = sentence[match.end() : end]
        kind = next(name for name, value in match.groupdict().items() if value)
        if kind.startswith("self"):
            found.append(following)
            continue
        if kind.startswith("own") or (kind.startswith("verb") and kind != "verbzh"):
            language = _LANGUAGES[int(kind.removeprefix("own").removeprefix("verb"))]
            key = (len(found) - 1, language.joiners)
            if key not in speakers:
                speakers[key] = _speakers_clause(language, found[-1], states_slot)
            if not speakers[key]:
                # "My parents live in Rome and work at Fiat": theirs, not the speaker's.
                found[-1] += match.group(0) + following
                continue
        if kind.startswith("own"):
            restore = _LANGUAGES[int(kind.removeprefix("own"))].restore
            found.append(f"{restore} {following}" if restore else following)
            continue
        if kind == "verbzh":
            # About the speaker only after a clause that states a slot of theirs: "他住在
            # 北京，在银行工作" is his job, "我妈妈住在上海，在医院工作" the mother's, "我在
            # 上海出差，住在酒店" a trip.
            restored = f"我{following}" if states_slot(found[0].strip()) else ""
        else:
            restore = _LANGUAGES[int(kind.removeprefix("verb"))].restore
            restored = f"{restore} {following}" if restore else following
        if restored and states_slot(restored):
            found.append(restored)
        else:
            found[-1] += match.group(0) + following
    return [clause.strip() for clause in found if clause.strip()]


def _speakers_clause(language: _Language, before: str, states_slot: Callable[[str], bool]) -> bool:
    """Whether the clause `before` a verb-first one is the speaker's, so the verb is too
    (always, where the verb itself says who acts)."""
    if not language.subject:
        return True
    return re.search(language.subject, before) is not None or states_slot(before.strip())
