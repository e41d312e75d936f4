"""BM25 terms of a text in any language: Unicode word split, per-language stopwords and
Snowball stemming, character bigrams for Chinese and Japanese.

`terms(text)` is what both the index (on every item add) and the query side call, so the
two always agree. It is pure and deterministic.

- Text is NFKC-normalized and case-folded, so "ＡＢＣ", "ABC" and "abc" meet.
- Words are runs of letters and digits (combining marks included, so Devanagari, Thai or
  Hebrew-with-points words stay whole); punctuation and underscores split. Numbers stay.
- Each word's language comes from its script and, where a script is shared, from its
  text (`memory.text.languages`): Latin text by which language's stopwords it uses most
  (English on a tie or none), Cyrillic text is Russian unless it holds a Ukrainian,
  Serbian or Belarusian letter, and so on. The word is dropped if it is one of that
  language's stopwords, else stemmed by that language's Snowball stemmer (PyStemmer),
  so "Шкода", "Шкоде" and "Шкоду" meet, as do "fährt"/"fahren" or "coches"/"coche".
- English apostrophes are kept long enough to drop contractions ("don't", "it's") and
  possessives ("Caroline's" -> the term of "Caroline"); in other languages an apostrophe splits
  ("l'homme" -> "l", "homme"), as French and Italian elisions want.
- Han ideographs and kana write no spaces. A run of them is cut at stopwords (the longer
  ones, "什么", "时候", "我们", "です", first; then single characters, "的", "是", "の"), and each
  piece gives its characters and its overlapping bigrams, as Lucene's CJK bigram filter
  does with unigrams on: a bigram match ("颜色", "红色") ranks high, and a one-character
  word ("车", "猫") still meets the same character inside a longer run ("斯柯达车"). A query
  searches with `search_terms`: its bigrams when stored texts have one of them, its
  characters too only when they have none. Bigrams rather than a word segmenter: jieba
  0.42 (the usual choice; no release since 2020) took 0.9 s and 82 MB for its dictionary
  on first use and 64 us for a 24-character sentence (6 s for a 100k-item scope, three
  times the whole cold-start budget), while this costs nothing to load and a few us a
  sentence; and a query bigram meets a stored word however a segmenter would have cut
  either side. The price is index size: a Chinese line has about twice the terms of the
  old one-term-per-character split. A synthetic 100k-item Chinese scope (`bench memory
  --lang zh`) loads in 5.9 s CPU with a 578 MB peak, against 4.6 s and 367 MB before;
  keeping only bigrams (and lone characters) would halve the terms but lose
  one-character words inside longer runs.

Idempotence holds under fixed languages: `terms_in(" ".join(terms(x)), languages(x)) ==
terms(x)`, because stems are iterated to a fixed point and are never stopwords. Plain
`terms(" ".join(terms(x))) == terms(x)` holds when the terms alone read in the languages
of their text: for scripts that name their language (Russian, Greek...), and for English
unless what is left holds two stopwords of one other language. A German text, though, is
known as German by its stopwords, which `terms` drops, so its terms read as English. For
Han and kana the fixed point is on the set of terms, not their counts: a bigram term read
again also gives its two characters, which the first pass already had.

Speed: loading a 100k-item scope tokenizes every item, so `terms_joined` takes a batch of
texts in a few C-level passes: one join, one split into runs (UTF-8 bytes cut at ASCII
spaces and punctuation), one memo lookup per run for its terms in English/Russian/...
(each distinct run normalized once, there, not every text), and only for a batch holding
clues to other languages (some foreign stopword), numpy counts per text and a pass per
stretch of texts in the same languages. Memos are kept across batches, bounded. A run of
letters and digits alone is its own word, without the word pattern (whose mark classes
take 30-50 ms to build). Measured CPU time to load a synthetic 100k-item scope (`bench
memory --lang`), whole load: English 1.2 s before this bulk path, 1.45 s with it, 1.55 s
now (the synthetic chat has grown); Russian 4.9 s before, 1.7 s with it, 1.6 s later, of
which ~0.75 s the index build. Normalizing runs rather than whole texts then took the
Russian scope's `terms_joined` from 0.50 s to 0.41 s (cold start 1.95 s to 1.86 s, mean
of six runs each). The module is longer than most (about 620 lines) because the
reference `_unicode_terms` and the fast paths that must equal it belong side by side.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import cache, partial, reduce
from itertools import chain, filterfalse
from operator import add, or_
from typing import Any

import numpy as np

from mnemobot.memory.text.languages import (
    END_BIT,
    ENGLISH_TEXT,
    FOREIGN_LATIN_MASK,
    LATIN_BIT_COUNT,
    LATIN_MASK,
    MARKER_MASK,
    MIN_FOREIGN_HITS,
    Language,
    TextLanguages,
    language,
    languages_of_masks,
    readings_of_masks,
    script_of,
    text_languages,
    word_mask,
)
from mnemobot.memory.text.scripts import CJK, CJK_CHAR

# Marks the end of each text's terms in `terms_joined`; never a term (not a word character).
TEXT_END = "\x01"
# Two texts whose stemmed terms overlap this much (Jaccard) say the same thing: two such
# durable facts collapse into one item (`memory.write.facts`), and a pack never shows
# both (`memory.pack.selection`). Not measured; chosen by hand (four words of five shared).
DUPLICATE_TERM_OVERLAP = 0.8


@cache
def _word_pattern() -> re.Pattern[str]:
    # Python's \w leaves out combining marks (a Devanagari vowel sign is not alphanumeric),
    # which would cut most Indic words apart. Collect them once, on first use (~50 ms).
    word_char = re.compile(r"\w")
    marks: list[int] = [
        code
        for code in range(0x30000)
        if unicodedata.category(chr(code)).startswith("M") and not word_char.match(chr(code))
    ]
    ranges: list[tuple[int, int]] = []
    for code in marks:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    mark_class = "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ranges
    )
    letter = rf"(?:[^\W_{CJK}]|[{mark_class}])"
    return re.compile(rf"[{CJK}]+|{letter}+(?:'{letter}+)*")


# For ASCII text `_normalize` is just `lower()` and a word is this (the letter class above
# restricted to ASCII is [a-z0-9] once lowered; no ASCII character is a mark).
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def _normalize(text: str) -> str:
    # NFKC then casefold is not always stable under a second round (casefold can emit
    # decomposed letters that NFKC composes again); normalize once more so the terms of a
    # text and of its own terms agree.
    folded = unicodedata.normalize("NFKC", text).casefold()
    if not unicodedata.is_normalized("NFKC", folded):
        # (Else the second round changes nothing: casefold is idempotent.)
        folded = unicodedata.normalize("NFKC", folded).casefold()
    return folded.replace("\u2019", "'")


# ------------------------------------------------------------------ one word's terms


def _plain_word_terms(word: str, lang: Language) -> tuple[str, ...]:
    if word in lang.stopwords:
        return ()
    stemmed = lang.stem(word)
    # A stem that is a stopword would be dropped on a second pass: drop it now.
    return () if stemmed in lang.stopwords else (stemmed,)


def _english_word_terms(word: str, lang: Language) -> tuple[str, ...]:
    if word in lang.stopwords:
        return ()
    if "'" in word:
        if word.endswith("'s"):
            word = word[:-2]
        word = word.replace("'", "")
    return _plain_word_terms(word, lang)


@cache
def _cjk_stopwords() -> tuple[dict[int, str], re.Pattern[str] | None, frozenset[str]]:
    """(a str.translate table turning one-character Chinese and Japanese stopwords into
    spaces, a pattern of the longer ones, longest first, their two-character ones).

    The longer stopwords ("什么", "时候", "我们", "です") come from the stopwords-iso lists
    too (package `stopwordsiso`): the `stop_words` package's Chinese list has one-character
    words only, so "什么时候" would give the terms "什", "时", "候" and "班什" of
    "航班什么", matching half of any Chinese chat. Their one-character entries are not
    used: stopwords-iso counts "过", "月" and "时" as stopwords, and "过敏" or "十月" must
    keep them.
    """
    words = language("chinese").stopwords | language("japanese").stopwords
    longer = {word for word in words if len(word) > 1}
    longer |= _iso_cjk_stopwords()
    pattern = (
        re.compile("|".join(map(re.escape, sorted(longer, key=lambda word: (-len(word), word)))))
        if longer
        else None
    )
    return (
        {ord(word): " " for word in words if len(word) == 1},
        pattern,
        frozenset(word for word in longer if len(word) == 2),
    )


def _iso_cjk_stopwords() -> set[str]:
    """stopwords-iso's Chinese and Japanese stopwords of two or more Han/kana characters."""
    import stopwordsiso

    found: set[str] = set()
    for code in ("zh", "ja"):
        for word in stopwordsiso.stopwords(code):
            word = _normalize(word)
            if len(word) > 1 and all(CJK_CHAR.match(ch) for ch in word):
                found.add(word)
    return found


def _cjk_terms(run: str) -> tuple[str, ...]:
    """Characters and bigrams of a Han/kana run, cut at its stopwords."""
    single, longer, double = _cjk_stopwords()
    if longer is not None:
        run = longer.sub(" ", run)
    out: list[str] = []
    for piece in run.translate(single).split():
        out += piece
        out += filterfalse(double.__contains__, map(add, piece, piece[1:]))
    return tuple(out)


def _word_terms_uncached(word: str, languages: TextLanguages) -> tuple[str, ...]:
    if not word:
        return ()
    if CJK_CHAR.match(word):
        return _cjk_terms(word)
    script = script_of(word)
    lang = languages.of_script(script)
    if lang.name == "english":
        return _english_word_terms(word, lang)
    if "'" in word:
        # Each part in the language of its own script: in "ꀀ'i" the "i" is English (a
        # stopword), as it is when the terms are read again on their own.
        return tuple(
            term
            for part in word.split("'")
            if part
            for term in _word_terms_uncached(part, languages)
        )
    return _plain_word_terms(word, lang)


def stem(word: str, language_name: str = "english") -> str:
    """The stem `terms` gives a lower-case word of that language (a Snowball name)."""
    return language(language_name).stem(word)


# ---------------------------------------------------------------- one text's terms


def _words(text: str) -> list[str]:
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    # No word holds whitespace, so the words of a text are those of its whitespace-split
    # runs; runs repeat, and the word pattern (with its mark classes) is slow on new text.
    return list(chain.from_iterable(map(_RUN_WORDS.fresh().__getitem__, _normalize(text).split())))


def languages(text: str) -> TextLanguages:
    """The language `terms` takes for each script of `text`."""
    return languages_of_masks(list(map(_RUN_MASKS.fresh().__getitem__, _words(text))))


def terms_in(text: str, text_languages: TextLanguages) -> list[str]:
    """The terms of `text` with its languages given instead of detected."""
    all_terms = _word_terms_memo(text_languages).fresh()
    return list(chain.from_iterable(map(all_terms.__getitem__, _words(text))))


def terms(text: str) -> list[str]:
    """The BM25 terms of `text`, in order, duplicates kept (BM25 counts them)."""
    words = _words(text)
    # (A word is a run of one word: the run memos serve words too.)
    detected = languages_of_masks(list(map(_RUN_MASKS.fresh().__getitem__, words)))
    all_terms = _word_terms_memo(detected).fresh()
    return list(chain.from_iterable(map(all_terms.__getitem__, words)))


def query_terms(text: str) -> list[str]:
    """`terms(text)`, then the terms not among them that the text has when read in the
    other languages it may be in (`languages.readings_of_masks`: "¿Dónde vivo?" reads
    as English and as Spanish), each once; for most texts just `terms(text)`.

    A word the text's own reading drops is not read again: a stopword of its language
    ("la", "de" of a Spanish question) met every short English line holding it, and so
    would a word whose stem is one ("cuál", whose Spanish stem is "cual"). The other
    readings drop those stopwords themselves too (`languages.also_read`), for the parts
    of a word they split or stem otherwise ("Ana's": "ana" and "s" in Spanish).
    """
    words = _words(text)
    readings = readings_of_masks(list(map(_RUN_MASKS.fresh().__getitem__, words)))
    own = list(map(_word_terms_memo(readings[0]).fresh().__getitem__, words))
    found = list(chain.from_iterable(own))
    if len(readings) == 1:
        return found
    kept = [word for word, word_terms in zip(words, own, strict=True) if word_terms]
    seen = set(found)
    for reading in readings[1:]:
        for term in chain.from_iterable(map(_word_terms_memo(reading).fresh().__getitem__, kept)):
            if term not in seen:
                seen.add(term)
                found.append(term)
    return found


def search_terms(text: str, known: Callable[[str], object] = bool) -> list[str]:
    """The terms a query searches with: `query_terms(text)` less the Han/kana characters
    its bigrams hold, when some bigram of the query is `known` (a stored text has it).

    Stored texts keep their characters as terms, so a one-character word still meets the
    same character inside a longer run. In a query a bigram says what its characters
    would, and a stored bigram says the query is about something the chat talked of:
    "预算" asks for a budget, while "预" and "算" alone match any text with "预订" or
    "打算" in it, and "名字" (never said) would bring every "一名" by its "名". Only when
    no bigram of the query is known ("猫呢？", a word and a particle) do its characters
    search too, so "猫" still finds "我家的猫叫豆豆". A character that is a piece of its
    own ("家" of "哪家", cut by stopwords) always searches.
    """
    found = query_terms(text)
    bigrams = [term for term in found if len(term) == 2 and CJK_CHAR.match(term)]
    if not any(known(bigram) for bigram in bigrams):
        return found
    paired = {ch for bigram in bigrams for ch in bigram}
    return [term for term in found if term not in paired]


def _unicode_terms(text: str) -> list[str]:
    """`terms` of any text with no shortcut and no cache: the reference the fast paths equal."""
    words = _word_pattern().findall(_normalize(text))
    detected = languages_of_masks([word_mask(word) for word in words])
    return [term for word in words for term in _word_terms_uncached(word, detected)]


# ---------------------------------------------------------------- many texts at once


def terms_joined(texts: Iterable[str]) -> Iterator[str]:
    """The terms of every text, each text's followed by TEXT_END (e.g. to index a corpus).

    Yields `*terms(t0), TEXT_END, *terms(t1), TEXT_END, ...`; several times faster than
    calling `terms` on each: the texts are joined, normalized, split and looked up in a
    few C-level passes (fewer still when all are ASCII).
    """
    texts = list(texts)
    with _BULK_LOCK:
        return _terms_joined(texts)


# The bulk memos' side sets (`_Memo.several`...) must not be emptied by one batch while
# another reads them: batches go one at a time (scope loads are serialized anyway).
_BULK_LOCK = threading.Lock()


def _terms_joined(texts: list[str]) -> Iterator[str]:
    separator = f" {TEXT_END} "
    joined = separator.join(texts)
    if joined.count(TEXT_END) == len(texts) - 1:
        # The common case, checked in one C-level pass: no TEXT_END inside any text.
        if joined.isascii():
            return iter(_ascii_terms_joined(joined + separator))
        return iter(_unicode_terms_joined(joined + separator))
    parts: list[list[str]] = []
    batch: list[str] = []
    for text in texts:
        if TEXT_END in text:
            if batch:
                parts.append(_unicode_terms_joined(separator.join(batch) + separator))
                batch = []
            parts.append([*terms(text), TEXT_END])
        else:
            batch.append(text)
    if batch:
        parts.append(_unicode_terms_joined(separator.join(batch) + separator))
    return iter(list(chain.from_iterable(parts)))


class _Memo(dict[Any, Any]):
    """A memo of `function` over words or runs, looked up in C by `map(memo.__getitem__)`.

    Kept across batches (a scope's words repeat from one chunk to the next) but bounded:
    `fresh()` empties it, before a batch, once it holds more than `_MEMO_LIMIT` entries.
    """

    def __init__(self, function: Callable[[Any], Any], seed: dict[Any, Any]) -> None:
        super().__init__(seed)
        self.function = function
        self.seed = seed
        # Run keys whose value stands for several terms (see `_terms_of_runs`), that hold
        # a clue to a language other than English, that hold several words with a clue.
        self.several: set[Any] = set()
        self.clues: set[Any] = set()
        self.clue_words: set[Any] = set()

    def __missing__(self, key: Any) -> Any:
        found = self[key] = self.function(key)
        return found

    def fresh(self) -> _Memo:
        if len(self) > _MEMO_LIMIT:
            self.reset()
        return self

    def reset(self) -> None:
        self.clear()
        self.update(self.seed)
        self.several.clear()
        self.clues.clear()
        self.clue_words.clear()


# Entries per memo: a few MB each, and more than the distinct words of most scopes.
_MEMO_LIMIT = 65_536


# Every ASCII byte but [a-z0-9'] and TEXT_END becomes a space (see `_ascii_terms_joined`).
_ASCII_RUN_BYTES = bytes(
    byte if chr(byte) in "abcdefghijklmnopqrstuvwxyz0123456789'" + TEXT_END else 0x20
    for byte in range(256)
)
# The same for UTF-8 text: bytes of multi-byte characters (>= 0x80) are kept as well.
_UTF8_RUN_BYTES = bytes(
    byte if byte >= 0x80 or chr(byte) in "abcdefghijklmnopqrstuvwxyz0123456789'" + TEXT_END
    else 0x20
    for byte in range(256)
)  # fmt: skip
_END_WORDS = (TEXT_END,)
_END_RUN = TEXT_END.encode("ascii")


def _ascii_terms_joined(texts: str) -> list[str]:
    """`terms_joined` of ASCII texts given joined, each followed by " TEXT_END ".

    For ASCII text `_normalize` is `lower()` and words only hold [a-z0-9'], so the words of
    a text are those of its [a-z0-9'] runs: split on everything else, in C.
    """
    runs = texts.lower().encode("ascii").translate(_ASCII_RUN_BYTES).split()
    return _joined_terms(runs, _RUNS)


def _unicode_terms_joined(texts: str) -> list[str]:
    """`terms_joined` of texts given joined, each followed by " TEXT_END "."""
    # Split in UTF-8 at ASCII spaces and punctuation (no UTF-8 sequence holds a byte below
    # 0x80, and no word holds ASCII punctuation but "'"), in C: faster than str.split, and
    # tags ("speaker:anna", on every turn) or "что-то" do not make runs of several words.
    # The raw text is split, and each distinct run normalized once, as its words are
    # memoized (`_RAW_RUNS`): at a 100k-item Russian load, normalizing every chunk's whole
    # text first took ~0.12 s. The same runs, because NFKC and casefold leave ASCII
    # separators alone and never join them to what precedes them, nor to what follows
    # unless it starts with a combining mark ("<" and U+0338 are "≮", no word character):
    # a batch with such a run is normalized whole instead.
    raw_runs = texts.encode("utf-8").translate(_RAW_RUN_BYTES).split()
    found = _joined_terms(raw_runs, _RAW_RUNS)
    unsafe = _RAW_RUNS.words.clues
    if unsafe and not unsafe.isdisjoint(raw_runs):
        runs = _normalize(texts).encode("utf-8").translate(_UTF8_RUN_BYTES).split()
        return _joined_terms(runs, _RUNS)
    return found


# Every ASCII byte but [A-Za-z0-9'] and TEXT_END becomes a space: runs of UTF-8 text not
# yet normalized (capitals are lowered with the run).
_RAW_RUN_BYTES = bytes(
    byte if byte >= 0x80 or chr(byte).isalnum() or chr(byte) in "'" + TEXT_END else 0x20
    for byte in range(256)
)


# ASCII characters that are never part of a word, as spaces (for `_words_of_run`).
_ASCII_SEPARATORS = {
    code: " " for code in range(128) if not chr(code).isalnum() and chr(code) != "'"
}


def _words_of_run(run: str | bytes) -> tuple[str, ...]:
    text = run if isinstance(run, str) else run.decode("utf-8")
    if text.isascii():
        return tuple(_ASCII_WORD.findall(text))
    if not CJK_CHAR.search(text):
        # Without Han or kana, a text of letters and digits (str.isalnum is re's \w less
        # "_", both Py_UNICODE_ISALNUM) cut only by ASCII separators (not "'") has those
        # pieces as its words, as the word pattern would find them. Most Cyrillic, Greek
        # or accented Latin runs are such, and need not build the pattern (~30-50 ms).
        if text.isalnum():
            return (text,)
        pieces = text.translate(_ASCII_SEPARATORS).split()
        if all(map(str.isalnum, pieces)):
            return tuple(pieces)
    return tuple(_word_pattern().findall(text))


class _RunMemos:
    """The memos `_joined_terms` reads runs through: a run's words, its language clues
    (those of its words together; one word's, for most runs), its terms per languages.

    `fresh()` empties them all at once, so that a run any of them holds has its words in
    `words` (and a flag its words function set, in `words.clues`).
    """

    def __init__(self, words_of_run: Callable[[Any], tuple[str, ...]]) -> None:
        # (Only the bytes TEXT_END is seeded: a text given to `terms` may hold "\x01".)
        self.words = _Memo(words_of_run, {_END_RUN: _END_WORDS})
        self.masks = _Memo(
            lambda run: reduce(or_, map(word_mask, self.words[run]), 0),
            {TEXT_END: END_BIT, _END_RUN: END_BIT},
        )
        self._terms: dict[TextLanguages, _Memo] = {}

    def fresh(self) -> _RunMemos:
        memos = [self.words, self.masks, *self._terms.values()]
        if any(len(memo) > _MEMO_LIMIT for memo in memos):
            for memo in memos:
                memo.reset()
        return self

    def terms(self, text_langs: TextLanguages) -> _Memo:
        """run -> its terms in those languages: None for none, else a str, with spaces
        between terms if several (no term holds whitespace; see `_terms_of_runs`)."""
        memo = self._terms.get(text_langs)
        if memo is None:
            memo = self._terms[text_langs] = self._terms_memo(text_langs)
        return memo

    def _terms_memo(self, text_langs: TextLanguages) -> _Memo:
        run_words = self.words
        run_masks = self.masks

        def run_terms(run: str | bytes) -> str | None:
            words = run_words[run]
            found = [term for word in words for term in _word_terms_uncached(word, text_langs)]
            if len(found) > 1:
                memo.several.add(run)
            mask = run_masks[run]
            if mask & (FOREIGN_LATIN_MASK | MARKER_MASK):
                memo.clues.add(run)
            if mask & LATIN_MASK and len(words) > 1:
                memo.clue_words.add(run)
            return " ".join(found) or None

        memo = _Memo(run_terms, {TEXT_END: TEXT_END, _END_RUN: TEXT_END})
        return memo


def _words_of_raw_run(run: bytes) -> tuple[str, ...]:
    """The words of a run of text not yet normalized (see `_unicode_terms_joined`)."""
    text = run.decode("utf-8")
    first = text[0]
    if unicodedata.combining(first) or unicodedata.combining(
        unicodedata.normalize("NFKC", first)[0]
    ):
        # It may join the separator before it: the batch is normalized whole instead.
        _RAW_RUNS.words.clues.add(run)
    pieces = _normalize(text).encode("utf-8").translate(_UTF8_RUN_BYTES).split()
    if len(pieces) == 1:
        return _words_of_run(pieces[0])
    # Separators that normalizing made ("…" is "...", "½" is "1⁄2").
    return tuple(chain.from_iterable(map(_words_of_run, pieces)))


# Runs are pieces of normalized text between spaces (str, in `terms`), or between ASCII
# spaces and punctuation (UTF-8 bytes, in `terms_joined`); a run holds any number of words
# (most one; "o''neil" two; "—" none).
_RUNS = _RunMemos(_words_of_run)
_RUN_WORDS = _RUNS.words
_RUN_MASKS = _RUNS.masks
# Runs of UTF-8 text not yet normalized (in `terms_joined`); see `_unicode_terms_joined`.
_RAW_RUNS = _RunMemos(_words_of_raw_run)


@cache
def _word_terms_memo(text_langs: TextLanguages) -> _Memo:
    """word -> its terms in those languages (for `terms`, a text at a time)."""
    return _Memo(partial(_word_terms_uncached, languages=text_langs), {})


def _joined_terms(runs: list[str] | list[bytes], memos: _RunMemos) -> list[str]:
    """The terms of `runs`, texts ended by TEXT_END, each text in its own languages."""
    memos.fresh()
    mask_of = memos.masks
    run_words = memos.words
    english = memos.terms(ENGLISH_TEXT)
    as_english = list(filter(None, map(english.__getitem__, runs)))
    if not english.clues or english.clues.isdisjoint(runs):
        # No run holds a clue to another language: every text reads as English (or
        # Russian, or...), which is what this one pass took.
        return _several_split(as_english, english, runs)
    if english.clue_words and not english.clue_words.isdisjoint(runs):
        # Stopword hits are counted per word: split the few runs of several words.
        words = list(chain.from_iterable(map(run_words.__getitem__, runs)))
        # (Words are normalized str runs of one word.)
        return _joined_terms(words, _RUNS)
    masks = np.fromiter(map(mask_of.__getitem__, runs), np.int64, len(runs))
    is_end = (masks & END_BIT) != 0
    ends = np.flatnonzero(is_end)
    # The text of each run: how many texts ended before it.
    text_of = np.cumsum(is_end) - is_end
    latin = np.zeros(len(ends), dtype=np.int64)
    # Only a text with MIN_FOREIGN_HITS words on some foreign list can be foreign.
    foreign_words = np.bincount(
        text_of[np.flatnonzero(masks & FOREIGN_LATIN_MASK)], minlength=len(ends)
    )
    candidates = foreign_words >= MIN_FOREIGN_HITS
    hit = np.flatnonzero(masks & LATIN_MASK)
    hit = hit[candidates[text_of[hit]]]
    if len(hit):
        # Stopword hits per candidate text and Latin language: the mask bits of its words
        # that hit any list, unpacked and summed over the text.
        bits = np.unpackbits(
            masks[hit].astype("<u4").view(np.uint8).reshape(-1, 4), axis=1, bitorder="little"
        )[:, :LATIN_BIT_COUNT]
        texts_hit = text_of[hit]
        firsts = np.concatenate(([0], np.flatnonzero(np.diff(texts_hit)) + 1))
        counts = np.add.reduceat(bits, firsts, axis=0, dtype=np.int64)
        # As `languages_of_masks`: the foreign language with the most hits (the first of
        # equal counts), if it has MIN_FOREIGN_HITS and more than English; else English.
        foreign = counts[:, 1:].argmax(axis=1) + 1
        foreign_hits = counts[np.arange(len(counts)), foreign]
        latin[texts_hit[firsts]] = np.where(
            (foreign_hits >= MIN_FOREIGN_HITS) & (foreign_hits > counts[:, 0]), foreign, 0
        )
    markers = np.zeros(len(ends), dtype=np.int64)
    marked = np.flatnonzero(masks & MARKER_MASK)
    np.bitwise_or.at(markers, text_of[marked], masks[marked] & MARKER_MASK)
    keys = latin * (MARKER_MASK + 1) + markers
    changes = np.flatnonzero(np.diff(keys)) + 1
    starts = np.concatenate(([0], ends[:-1] + 1))
    out: list[str] = []
    # One pass per stretch of consecutive texts in the same languages.
    for first, last in zip(
        np.concatenate(([0], changes)).tolist(),
        np.concatenate((changes, [len(ends)])).tolist(),
        strict=True,
    ):
        text_langs = text_languages(int(latin[first]), int(markers[first]))
        stretch = runs[int(starts[first]) : int(ends[last - 1]) + 1]
        out += _terms_of_runs(stretch, memos.terms(text_langs))
    return out


def _terms_of_runs(runs: list[str] | list[bytes], memo: _Memo) -> list[str]:
    """The terms of `runs` by `memo` (a `_RunMemos.terms`)."""
    # Most runs give one term or none: a str-or-None memo and filter() stay in C.
    return _several_split(list(filter(None, map(memo.__getitem__, runs))), memo, runs)


def _several_split(out: list[str], memo: _Memo, runs: list[str] | list[bytes]) -> list[str]:
    if not out or not memo.several or memo.several.isdisjoint(runs):
        return out
    # Some runs gave several terms, space-separated in one str: split them, in C.
    return " ".join(out).split(" ")


__all__ = [
    "TEXT_END",
    "languages",
    "query_terms",
    "search_terms",
    "stem",
    "terms",
    "terms_in",
    "terms_joined",
]


# ------------------------------------------------------------------ identity

_TERM_MODULES = ("terms.py", "languages.py", "scripts.py")


@cache
def terms_identity() -> str:
    """A name for what `terms` does now: different whenever its rules could differ (this
    code, the stemmer and stopword packages, Python's Unicode tables), so an index saved
    by other rules (`memory.store.index_file`) is rebuilt instead of read. (Versions from
    the modules themselves: `importlib.metadata` took 0.15 s.)"""
    from hashlib import blake2b
    from pathlib import Path

    import Stemmer
    from stop_words import _version as stop_words_version

    digest = blake2b(digest_size=12)
    digest.update(unicodedata.unidata_version.encode())
    digest.update(str(Stemmer.version()).encode())
    digest.update(str(stop_words_version.__version__).encode())
    here = Path(__file__).parent
    for name in _TERM_MODULES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()
