"""Writing systems: which script a character or a word is written in, defined once.

Every module that asks "is this text Chinese, Cyrillic, Latin?" (dates, extraction,
search terms, small-talk detection) uses the character classes here, and the search
terms take each word's script from `script_of`, so the answer is the same everywhere.

The classes are regex character-class bodies (for patterns that mix them with other
text) and compiled one-character patterns. CJK is kana plus every Han block; Hangul is
a script of its own (`Script.HANGUL`, spaced words, stemmed as Korean).
"""

from __future__ import annotations

import bisect
import re
from enum import IntEnum

HAN = (
    "\u3400-\u4dbf"  # extension A
    "\u4e00-\u9fff"  # unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\U00020000-\U0003134f"  # extensions B-G
)
KANA = "\u3040-\u30ff"  # hiragana, katakana
# Scripts written without spaces between words: Chinese and Japanese.
CJK = KANA + HAN
CYRILLIC = "\u0400-\u04ff"
# ASCII letters and those of Latin-1, Latin Extended-A and -B.
LATIN = "A-Za-z\u00c0-\u024f"

HAN_CHAR = re.compile(f"[{HAN}]")
KANA_CHAR = re.compile(f"[{KANA}]")
CJK_CHAR = re.compile(f"[{CJK}]")
CYRILLIC_CHAR = re.compile(f"[{CYRILLIC}]")
LATIN_CHAR = re.compile(f"[{LATIN}]")


class Script(IntEnum):
    OTHER = 0
    LATIN = 1
    CYRILLIC = 2
    GREEK = 3
    ARMENIAN = 4
    HEBREW = 5
    ARABIC = 6
    DEVANAGARI = 7
    TAMIL = 8
    GUJARATI = 9
    HANGUL = 10


# (first code point, script) in ascending order; a code point belongs to the last range
# that starts at or before it. Letters only: digits and marks never start a word's script.
_SCRIPT_STARTS: tuple[tuple[int, Script], ...] = (
    (0x0000, Script.OTHER),
    (0x0041, Script.LATIN),  # A-Z, a-z and the Latin-1, Extended-A/B and IPA letters
    (0x02B0, Script.OTHER),
    (0x0370, Script.GREEK),
    (0x0400, Script.CYRILLIC),
    (0x0530, Script.ARMENIAN),
    (0x0590, Script.HEBREW),
    (0x0600, Script.ARABIC),
    (0x0780, Script.OTHER),
    (0x0900, Script.DEVANAGARI),
    (0x0980, Script.OTHER),
    (0x0A80, Script.GUJARATI),
    (0x0B00, Script.OTHER),
    (0x0B80, Script.TAMIL),
    (0x0C00, Script.OTHER),
    (0x1100, Script.HANGUL),  # Hangul Jamo
    (0x1200, Script.OTHER),
    (0x1C80, Script.CYRILLIC),  # Cyrillic Extended-C
    (0x1C90, Script.OTHER),
    (0x1E00, Script.LATIN),  # Latin Extended Additional (Vietnamese and more)
    (0x1F00, Script.GREEK),  # Greek Extended
    (0x2000, Script.OTHER),
    (0x2DE0, Script.CYRILLIC),  # Cyrillic Extended-A
    (0x2E00, Script.OTHER),
    (0xA640, Script.CYRILLIC),  # Cyrillic Extended-B
    (0xA6A0, Script.OTHER),
    (0xA720, Script.LATIN),  # Latin Extended-D
    (0xA800, Script.OTHER),
    (0xAC00, Script.HANGUL),  # Hangul syllables
    (0xD7B0, Script.OTHER),
    (0xFB1D, Script.HEBREW),  # presentation forms
    (0xFB50, Script.ARABIC),
    (0xFE00, Script.OTHER),
    (0xFE70, Script.ARABIC),
    (0xFF00, Script.OTHER),
)
_SCRIPT_KEYS = [start for start, _script in _SCRIPT_STARTS]


def script_of(word: str) -> Script:
    """The script of the first letter of `word` (OTHER if it has none, e.g. a number)."""
    for char in word:
        if char.isalpha():
            code = ord(char)
            if code < 0x80:
                return Script.LATIN
            return _SCRIPT_STARTS[bisect.bisect_right(_SCRIPT_KEYS, code) - 1][1]
    return Script.OTHER
