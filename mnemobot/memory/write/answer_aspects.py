"""Aspects of an answer a standing request names: its language, its length, its layout,
its tone.

"Always answer me in Spanish" and then "Always answer me briefly" share most of their
words, yet a person who says both wants both: they ask about two aspects of the answer.
"Always answer me in French" after "... in Spanish" asks about the same one, and is a
change. `memory.write.standing_statements` asks `about_other_aspects` before it reads
two requests as one changed, and `memory.write.standing` asks `aspects_left` before it
replaces an older one whole ("briefly and in Spanish", then "in English instead": the
length is left).

The classes are closed and small on purpose: the words for them are few in each of
extraction's languages (en, ru, de, es, zh), so they can be listed. A word no class holds
says nothing here, and the requests are compared as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Tag prefix of a standing request a newer one changed only in part: "changed:language" on
# "Always answer me briefly and in Spanish" once "... in English instead" was said. The
# rest of it ("briefly") still holds, so it stays in force, marked.
CHANGED_ASPECT = "changed:"

# Each language by the words that name it, in each extraction language; a stem where
# Russian and German inflect ("по-испански", "на испанском", "auf Spanisch").
_LANGUAGES: Mapping[str, str] = {
    "english": r"english|английск\w*|englisch\w*|ingl[eé]s\w*|英语|英文",
    "spanish": r"spanish|испанск\w*|spanisch\w*|espa[nñ]ol\w*|castellano|西班牙语|西班牙文",
    "french": r"french|французск\w*|französisch\w*|franc[eé]s\w*|法语|法文",
    "german": r"german|немецк\w*|deutsch\w*|alem[aá]n\w*|德语|德文",
    "russian": r"russian|русск\w*|russisch\w*|rus[oa]|俄语|俄文",
    "italian": r"italian|итальянск\w*|italienisch\w*|italian[oa]|意大利语",
    "portuguese": r"portuguese|португальск\w*|portugiesisch\w*|portugu[eé]s\w*|葡萄牙语",
    "chinese": r"chinese|mandarin|китайск\w*|chinesisch\w*|chin[oa]|mandar[ií]n|中文|汉语|普通话",
    "japanese": r"japanese|японск\w*|japanisch\w*|japon[eé]s\w*|日语|日文",
    "korean": r"korean|корейск\w*|koreanisch\w*|coreano|韩语|韩文",
    "arabic": r"arabic|арабск\w*|arabisch\w*|[aá]rabe|阿拉伯语",
    "hindi": r"hindi|хинди|印地语",
    "dutch": r"dutch|нидерландск\w*|голландск\w*|niederländisch\w*|holländisch\w*"
    r"|neerland[eé]s|holand[eé]s|荷兰语",
    "polish": r"polish|польск\w*|polnisch\w*|polaco|波兰语",
    "ukrainian": r"ukrainian|украинск\w*|ukrainisch\w*|ucraniano|乌克兰语",
    "turkish": r"turkish|турецк\w*|türkisch\w*|turco|土耳其语",
    "swedish": r"swedish|шведск\w*|schwedisch\w*|sueco|瑞典语",
    "greek": r"greek|греческ\w*|griechisch\w*|griego|希腊语",
    "hebrew": r"hebrew|иврит\w*|hebräisch\w*|hebreo|希伯来语",
    "catalan": r"catalan|каталанск\w*|katalanisch\w*|catal[aá]n|加泰罗尼亚语",
    "latin": r"latin|латын\w*|латинск\w*|latein\w*|lat[ií]n|拉丁语",
}
# How long or how detailed.
_LENGTH = (
    r"brief\w*|short\w*|long|longer|lengthy|concise\w*|succinct\w*|terse\w*|detailed"
    r"|in\s+detail|in[\s-]+depth|thorough\w*|verbose\w*"
    r"|кратк\w*|коротк\w*|подробн\w*|разв[её]рнут\w*|длинн\w*|сжат\w*|лаконичн\w*|детальн\w*"
    r"|kurz\w*|knapp\w*|ausführlich\w*|lang|lange[nrs]?|länger\w*|detailliert\w*|prägnant\w*"
    r"|breve\w*|cort[oa]s?|larg[oa]s?|detallad\w*|(?:en|con)\s+detalle|conciso\w*|extens[oa]s?"
    r"|简短|简洁|简要|详细|详尽|长篇"
)
# How laid out.
_LAYOUT = (
    r"tables?|tabular|lists?|bullet\w*|paragraphs?|markdown|prose|plain\s+text"
    r"|таблиц\w*|списк\w*|список|пункт\w*|абзац\w*"
    r"|tabelle\w*|liste\w*|stichpunkt\w*|aufzählung\w*|absatz|absätze\w*|fließtext"
    r"|tablas?|listas?|viñetas?|p[aá]rrafos?"
    r"|表格|列表|要点|段落"
)
# In what tone.
_TONE = (
    r"formal\w*|informal\w*|casual\w*|polite\w*|friendly|professional\w*"
    r"|официальн\w*|формальн\w*|неформальн\w*|вежлив\w*|дружелюбн\w*|на\s+(?:ты|вы)"
    r"|förmlich\w*|formell\w*|locker\w*|höflich\w*|freundlich\w*|duz\w*|siez\w*"
    r"|cort[eé]s|amable\w*|tute\w*"
    r"|正式|随意|礼貌|友好|轻松"
)
_ASPECTS: Mapping[str, str] = {
    **{f"language:{name}": words for name, words in _LANGUAGES.items()},
    "length": _LENGTH,
    "layout": _LAYOUT,
    "tone": _TONE,
}
# A letter of the alphabetic scripts: a word of a class is a whole word ("long", not
# "belong"), while a Chinese one stands inside a run of characters.
_LETTER = "a-zÀ-ÿа-яё"
_ASPECT_WORD = re.compile(
    "|".join(
        f"(?P<a{n}>(?<![{_LETTER}])(?:{words})(?![{_LETTER}]))"
        for n, words in enumerate(_ASPECTS.values())
    ),
    re.IGNORECASE,
)
_KEYS = {f"a{n}": key for n, key in enumerate(_ASPECTS)}


def aspects_named(text: str) -> frozenset[tuple[str, str]]:
    """The aspects of an answer `text` names, each with what it asks of it:
    ("language", "spanish"), ("length", "briefly")."""
    named = set()
    for match in _ASPECT_WORD.finditer(text):
        key = _KEYS[match.lastgroup or ""]
        aspect, _, language = key.partition(":")
        named.add((aspect, language or " ".join(match.group().lower().split())))
    return frozenset(named)


def about_other_aspects(first: str, second: str) -> bool:
    """Whether two requests ask about different aspects of an answer: what each names that
    the other does not is an aspect, and none of one's is of the kind of the other's
    ("in Spanish" / "briefly"; not "in Spanish" / "in French", nor a request and the same
    one in more words)."""
    first_named, second_named = aspects_named(first), aspects_named(second)
    first_only = {aspect for aspect, _ in first_named - second_named}
    second_only = {aspect for aspect, _ in second_named - first_named}
    return bool(first_only) and bool(second_only) and not first_only & second_only


def aspects_left(older: str, newer: str, changed: Iterable[str] = ()) -> frozenset[str]:
    """The aspects an older request asks about that a newer one replacing it leaves as
    they were: those it names that the newer one does not, nor an earlier change did
    (`changed`). None when the newer one names no aspect: then it replaces all of it.

    "Always answer me briefly and in Spanish", then "From now on, answer me in English
    instead": the length is left ("briefly" still wanted), the language changed."""
    newer_kinds = _kinds(newer)
    if not newer_kinds:
        return frozenset()
    return _kinds(older) - newer_kinds - frozenset(changed)


def changed_aspects(older: str, newer: str) -> frozenset[str]:
    """The aspects both name: what a newer request changes of an older one."""
    return _kinds(older) & _kinds(newer)


def _kinds(text: str) -> frozenset[str]:
    return frozenset(aspect for aspect, _ in aspects_named(text))
