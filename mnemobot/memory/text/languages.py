"""Which language a word is in, and that language's stopwords and Snowball stemmer.

`memory.text.terms` asks this module three things about the (normalized) words of a text:

- `script_of(word)` (from `memory.text.scripts`): the writing system of the word's first
  letter. Most scripts name one language outright (Greek, Armenian, Hebrew, Tamil...);
  that is the cheap, reliable part.
- `word_mask(word)`: the clues one word gives about its text's language, as bits: which
  Latin-script languages list it as a stopword or write one of its non-ASCII letters in
  their stopwords ("ñ", "ß", "ø"...), and whether it holds a letter only one
  language of a shared script has (Ukrainian іїєґ, Serbian ђјљњћџ and Belarusian ў among
  Cyrillic scripts; Persian پچژگ among Arabic ones).
- `TextLanguages.of(counts, ...)`: from a text's clue counts, the language of each of its
  scripts. Latin text takes the language whose stopword list it hits most, English on a
  tie, a single hit or none (so a text without function words, e.g. most short questions in English,
  stays English); Cyrillic text is Russian unless it holds a marker letter.

Counting stopword hits uses the stopword lists themselves (data, not hand-written rules);
a language identifier would cost more and still need a fallback for the three-word texts
chats are full of. On the LoCoMo dev file (English chat) it takes 3 of 2,960 turns and
none of the 1,020 questions for another language. A short text with fewer than two
clues ("vivo en madrid", "Quali libri?") is read as English and stemmed as such; so that
it still meets the questions about it, a query also searches in its other likely
language (`readings_of_masks`).

Data: stopwords come from the `stop-words` package (maintained, plain text files in the
wheel, about 0.1 ms to load a language). `stopwordsiso` was the other candidate; its
Russian list holds content nouns such as "машина", "жена", "работа" and "москва", which a
memory must be able to find. English keeps the classic NLTK/Snowball list (function words
and contractions): the package's English list (1,333 words) holds "home", "music", "work",
"need", "new", "old" and "year", and with it LoCoMo evidence recall fell from 0.786 to
0.754 (`mnemobot eval locomo`, dev file). The few content words the package's lists of
other languages hold ("trabajo", "lavoro", "nom") are left out of them here.
Stemmers are PyStemmer's Snowball algorithms (C; about 1 us a word, cached per word above).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache, reduce
from itertools import repeat
from operator import or_

import Stemmer
import stop_words

from mnemobot.memory.text.scripts import Script, script_of


# eq=False: one instance per language (`language` is cached), hashed by identity, which
# is cheap; the default hash would hash the stopword set on every memo lookup.
@dataclass(frozen=True, slots=True, eq=False)
class Language:
    """A language as far as BM25 terms go: its stopwords and its stemmer (if Snowball has one)."""

    name: str
    stopwords: frozenset[str]
    stemmer_name: str | None

    def stem(self, word: str) -> str:
        """The Snowball stem of `word`, iterated to a fixed point (some stems stem again)."""
        if self.stemmer_name is None:
            return word
        stemmer = _stemmer(self.stemmer_name)
        # Real words settle in a round or two, random letter strings in up to 7 (Russian);
        # the bound only guards against a stemmer that would ever cycle.
        for _ in range(_MAX_STEM_ROUNDS):
            stemmed = stemmer.stemWord(word)
            if stemmed == word or not stemmed:
                return word
            word = stemmed
        return word


_MAX_STEM_ROUNDS = 32


@cache
def _stemmer(name: str) -> Stemmer.Stemmer:
    # PyStemmer's own cache is off: `memory.text.terms` caches whole words' terms.
    return Stemmer.Stemmer(name, 0)


def _normalized(words: list[str]) -> frozenset[str]:
    # The same normalization as the words they are compared with (`text_terms._normalize`).
    out = set()
    for word in words:
        folded = unicodedata.normalize("NFKC", word).casefold()
        out.add(unicodedata.normalize("NFKC", folded).casefold().replace("\u2019", "'"))
    return frozenset(out)


# The classic English list (NLTK's, as in Snowball), plus contractions written without
# the apostrophe. Not the package's English list: see the module docstring.
_ENGLISH_STOPWORDS = """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also just yes s t d ll m re ve dont doesnt didnt isnt arent wasnt
    werent cant couldnt wont wouldnt shouldnt im ive youre theyre thats whats lets
"""


# Words the `stop-words` lists hold that name what a person tells about themselves and
# asks about later (work, name, place, people): dropping them, "¿Dónde trabajo?" searched
# with "dónde" alone. (The package is not ours to edit; they are left out where read.)
_CONTENT_WORDS: dict[str, str] = {
    "spanish": "trabajo trabaja trabajas trabajamos trabajais trabajan trabajar lugar",
    "italian": "lavoro nome persone gente comprare",
    "portuguese": "trabalho trabalhar nome povo caminho",
    "french": "nom personnes pièce parole",
    "russian": "жизнь люди человек",
}


@cache
def language(name: str) -> Language:
    """The named language (a `stop_words` / Snowball name such as "russian")."""
    if name == "english":
        stopwords = _normalized(_ENGLISH_STOPWORDS.split())
    elif name in stop_words.AVAILABLE_LANGUAGES:
        content = _normalized(_CONTENT_WORDS.get(name, "").split())
        stopwords = _normalized(stop_words.get_stop_words(name)) - content
    else:
        stopwords = frozenset()
    return Language(name, stopwords, name if name in _SNOWBALL else None)


_SNOWBALL = frozenset(Stemmer.algorithms())
NO_LANGUAGE = Language("none", frozenset(), None)

# Latin-script languages told apart by stopword hits, English first: it wins every tie.
# Each has a Snowball stemmer and a stopword list.
LATIN_LANGUAGES: tuple[str, ...] = (
    "english",
    "german",
    "spanish",
    "french",
    "italian",
    "portuguese",
    "dutch",
    "swedish",
    "danish",
    "norwegian",
    "finnish",
    "polish",
    "czech",
    "hungarian",
    "romanian",
    "turkish",
    "indonesian",
    "catalan",
)
# Cyrillic: Russian unless the text holds a letter Russian does not have (first match
# in this order wins). Snowball has Serbian; Ukrainian and Belarusian have no stemmer, and
# Russian rules would cut their words wrongly, so their words are only stopword-filtered.
# Belarusian comes first: it shares "і" with Ukrainian, and only it has "ў".
CYRILLIC_MARKERS: tuple[tuple[str, str], ...] = (
    ("belarusian", "ў"),
    ("ukrainian", "іїєґ"),
    ("serbian", "ђјљњћџ"),
)
CYRILLIC_DEFAULT = "russian"
ARABIC_MARKERS: tuple[tuple[str, str], ...] = (("persian", "پچژگ"),)
ARABIC_DEFAULT = "arabic"
# The one language of each remaining script.
SCRIPT_LANGUAGE: dict[Script, str] = {
    Script.GREEK: "greek",
    Script.ARMENIAN: "armenian",
    Script.HEBREW: "hebrew",
    Script.DEVANAGARI: "hindi",
    Script.TAMIL: "tamil",
    Script.GUJARATI: "gujarati",
    Script.HANGUL: "korean",
}

# A Latin text is taken for another language than English only with at least this many
# of its stopwords (and more than English ones): many English words are some language's
# stopword ("dog" is Danish for "however", "die" and "war" are German), and one of them in
# a short English line must not turn it Danish. Real sentences in any language hold two
# function words or more. Not tunable: it is part of what `terms` means, and a change
# would re-stem every stored item.
MIN_FOREIGN_HITS = 2

# Bits of `word_mask`: one per Latin language, then one per marker language, then END.
_LATIN_BITS = len(LATIN_LANGUAGES)
_CYRILLIC_BIT = _LATIN_BITS
_ARABIC_BIT = _CYRILLIC_BIT + len(CYRILLIC_MARKERS)
END_BIT = 1 << (_ARABIC_BIT + len(ARABIC_MARKERS))
LATIN_MASK = (1 << _LATIN_BITS) - 1
# Latin bits of every language but English: a text none of whose words has one is English.
FOREIGN_LATIN_MASK = LATIN_MASK & ~1
MARKER_MASK = (END_BIT - 1) & ~LATIN_MASK


@cache
def _latin_stopword_masks() -> dict[str, int]:
    masks: dict[str, int] = {}
    for bit, name in enumerate(LATIN_LANGUAGES):
        for word in language(name).stopwords:
            # Single letters ("o", "n", "y") are some list's stopword in every language's
            # text (initials, "rock'n'roll"): no clue to the language.
            if len(word) > 1:
                masks[word] = masks.get(word, 0) | (1 << bit)
    # A word on the English list counts for English only: "on", "in" or "me" in a line
    # say nothing against English, and with them "CI runs on GitHub Actions" had two
    # French stopwords ("ci", "on") to English's one.
    for word in language("english").stopwords:
        if word in masks:
            masks[word] = 1
    return masks


@cache
def _letter_masks() -> dict[str, int]:
    """The clue bits of single letters: Latin letters beyond ASCII, and marker letters."""
    # The letters beyond ASCII that each language's stopwords use ("ñ", "ó" for Spanish;
    # "ä", "ß" for German; "ø" for Danish and Norwegian): English writes none of them, and
    # a word holding one is as good a clue as a stopword ("¿Dónde viven tus hermanas?").
    masks: dict[str, int] = {}
    for bit, name in enumerate(LATIN_LANGUAGES):
        for letter in {char for word in language(name).stopwords for char in word}:
            if not letter.isascii() and letter.isalpha() and script_of(letter) is Script.LATIN:
                masks[letter] = masks.get(letter, 0) | (1 << bit)
    for first_bit, markers in ((_CYRILLIC_BIT, CYRILLIC_MARKERS), (_ARABIC_BIT, ARABIC_MARKERS)):
        for offset, (_name, letters) in enumerate(markers):
            for letter in letters:
                masks[letter] = masks.get(letter, 0) | (1 << (first_bit + offset))
    return masks


def word_mask(word: str) -> int:
    """The language clues in one normalized word, as bits (see the module docstring)."""
    mask = _latin_stopword_masks().get(word, 0)
    if word.isascii():
        return mask
    return reduce(or_, map(_letter_masks().get, set(word), repeat(0)), mask)


@dataclass(frozen=True, slots=True, eq=False)
class TextLanguages:
    """The language of each script in one text."""

    latin: Language
    cyrillic: Language
    arabic: Language

    def of_script(self, script: Script) -> Language:
        if script is Script.LATIN:
            return self.latin
        if script is Script.CYRILLIC:
            return self.cyrillic
        if script is Script.ARABIC:
            return self.arabic
        name = SCRIPT_LANGUAGE.get(script)
        return NO_LANGUAGE if name is None else language(name)


@cache
def text_languages(latin_index: int, markers: int) -> TextLanguages:
    """The languages of a text whose Latin winner is `latin_index` and marker bits `markers`."""
    cyrillic = CYRILLIC_DEFAULT
    for offset, (name, _letters) in enumerate(CYRILLIC_MARKERS):
        if markers & (1 << (_CYRILLIC_BIT + offset)):
            cyrillic = name
            break
    arabic = ARABIC_DEFAULT
    for offset, (name, _letters) in enumerate(ARABIC_MARKERS):
        if markers & (1 << (_ARABIC_BIT + offset)):
            arabic = name
            break
    return TextLanguages(
        language(LATIN_LANGUAGES[latin_index]), language(cyrillic), language(arabic)
    )


def languages_of_masks(masks: list[int]) -> TextLanguages:
    """The languages of one text from its words' masks (`word_mask`)."""
    clues = [mask for mask in masks if mask & (FOREIGN_LATIN_MASK | MARKER_MASK)]
    if not clues:
        return ENGLISH_TEXT
    best = 0
    if len(clues) >= MIN_FOREIGN_HITS:
        top, top_hits = _top_foreign(clues)
        english = sum(mask & 1 for mask in masks)
        if top_hits >= MIN_FOREIGN_HITS and top_hits > english:
            best = top
    return text_languages(best, reduce(or_, clues, 0) & MARKER_MASK)


def _top_foreign(clues: list[int]) -> tuple[int, int]:
    """(index in LATIN_LANGUAGES, hits) of the foreign Latin language the most clues
    name, the first of equal counts; (0, 0) when none names one."""
    hits: dict[int, int] = {}
    for mask in clues:
        foreign = mask & FOREIGN_LATIN_MASK
        while foreign:
            low = foreign & -foreign
            hits[low] = hits.get(low, 0) + 1
            foreign ^= low
    if not hits:
        return 0, 0
    top_bit = min(hits, key=lambda bit: (-hits[bit], bit))
    return top_bit.bit_length() - 1, hits[top_bit]


def readings_of_masks(masks: list[int]) -> tuple[TextLanguages, ...]:
    """The languages a query is read in to search: `languages_of_masks` first, then the
    other Latin language a short text may as well be in.

    A stored line too short to show its language ("vivo en madrid": one Spanish clue) is
    English in the index, while the question about it ("¿Dónde vivo ahora?") is Spanish,
    and the other way round: the stems of one never meet the other's. So a query read as
    another language also searches as English, and a query read as English with no
    English stopword but some clue to another language ("¿Dónde trabajo?") also searches
    in that language. The index keeps one reading per text (its terms stay a fixed
    point, and English texts are indexed as before); only queries get more terms.

    The other reading also drops the stopwords of the detected one: "la", "de" and
    "ahora" of a Spanish question are no English stopwords, and as English terms they
    met every short line with a "de" or a "la" in it (and "i" or the "s" of "Ana's",
    of an English-read question, would be Spanish terms).
    """
    detected = languages_of_masks(masks)
    # (The Cyrillic and Arabic languages stay those detected.)
    markers = reduce(or_, masks, 0) & MARKER_MASK
    if detected.latin is not ENGLISH_TEXT.latin:
        return detected, also_read(text_languages(0, markers), detected)
    clues = [mask for mask in masks if mask & FOREIGN_LATIN_MASK]
    if not clues or any(mask & 1 for mask in masks):
        return (detected,)
    top, _hits = _top_foreign(clues)
    return detected, also_read(text_languages(top, markers), detected)


@cache
def also_read(reading: TextLanguages, detected: TextLanguages) -> TextLanguages:
    """`reading`, the other reading of a text whose own languages are `detected`: each of
    its languages also drops the stopwords of the detected language of its script."""
    return TextLanguages(
        *(
            mine
            if mine is theirs
            else Language(mine.name, mine.stopwords | theirs.stopwords, mine.stemmer_name)
            for mine, theirs in (
                (reading.latin, detected.latin),
                (reading.cyrillic, detected.cyrillic),
                (reading.arabic, detected.arabic),
            )
        )
    )


ENGLISH_TEXT = text_languages(0, 0)
LATIN_BIT_COUNT = _LATIN_BITS

__all__ = [
    "END_BIT",
    "ENGLISH_TEXT",
    "FOREIGN_LATIN_MASK",
    "LATIN_BIT_COUNT",
    "LATIN_LANGUAGES",
    "LATIN_MASK",
    "MARKER_MASK",
    "MIN_FOREIGN_HITS",
    "NO_LANGUAGE",
    "Language",
    "Script",
    "TextLanguages",
    "also_read",
    "language",
    "languages_of_masks",
    "readings_of_masks",
    "script_of",
    "text_languages",
    "word_mask",
]
