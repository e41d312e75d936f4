"""Which language a sentence is in, and the shape of one language's statement rules.

The guess is by script first (Han ideographs: Chinese; mostly Cyrillic: Russian), then,
for Latin script, by a few frequent words and letters German and Spanish have and
English has not. It only has to pick a rule table: English rules run on every Latin
sentence anyway, so a wrong guess between English and German or Spanish costs at most
a missed fact, never changes what an English sentence gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from mnemobot.memory.text.scripts import CYRILLIC_CHAR, HAN, HAN_CHAR, KANA_CHAR, LATIN, LATIN_CHAR
from mnemobot.memory.write.extraction.personal_rules import StatementRule

ENGLISH = "en"
RUSSIAN = "ru"
CHINESE = "zh"
GERMAN = "de"
SPANISH = "es"

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_HAN_RUN = re.compile(f"[{HAN}]+")
_LATIN_WORD = re.compile(f"[0-9{LATIN}]+")


def word_set(text: str) -> frozenset[str]:
    """The words of a list written as one string (word lists stay readable as data)."""
    return frozenset(text.split())


# Frequent words of each Latin-script language that the others do not write (as words).
_GERMAN_WORDS = word_set(
    "ich mein meine meinen meinem meiner wir uns unser unsere nicht und ist bin habe hast "
    "hat sind ein eine einen einem einer der das dem den des mit bei auf für nach aus von "
    "zu im ihr sie du dich dir wohne arbeite heiße heisse lebe mag liebe gerne gern kein "
    "keine keinen niemals nie immer bitte danke vielleicht auch sehr noch schon wo wie "
    "warum wann wer welche haben wohnst arbeitest oder aber doch lass uns wird werden "
    "nur dass heute jetzt hier"
)
_SPANISH_WORDS = word_set(
    "yo mi mis soy estoy tengo vivo trabajo el la los las en con que de del y por para "
    "nunca siempre es se llama llamo un una unos muy también pero gracias hola quizás quizas "
    "tal vez gusta gustan encanta prefiero hemos decidimos usar usaremos hagas uses dónde "
    "cómo qué cuándo quién cuál su sus al lo le les esposa esposo marido perro gato vamos "
    "hacer ahora aquí bien este esta eso porque cuando donde mucho todo nosotros tú"
)
_ENGLISH_WORDS = word_set(
    "i my me we our you your the a an and is are was am to of in on at for with it this "
    "that have has do does not but or so be will would can"
)
_PUNCTUATION_TO_SPACE = str.maketrans({mark: " " for mark in ".,;:!?¡¿()[]{}\"'«»“”‘’…—–/"})
_GERMAN_LETTERS = frozenset("äöüß")
_SPANISH_LETTERS = frozenset("ñ¿¡áíóú")


def script_language(text: str) -> str | None:
    """ "zh" or "ru" when the script says so (English rules cannot read it), else None."""
    if text.isascii():
        return None
    if HAN_CHAR.search(text) and not KANA_CHAR.search(text):
        return CHINESE
    # Russian sentences name software in Latin letters ("Я работаю с Kubernetes и Docker");
    # an English one may quote a Russian word. Half the letters Cyrillic tells them apart.
    if CYRILLIC_CHAR.search(text) and 2 * len(CYRILLIC_CHAR.findall(text)) >= len(
        LATIN_CHAR.findall(text)
    ):
        return RUSSIAN
    return None


def has_latin_letters(text: str) -> bool:
    return bool(LATIN_CHAR.search(text))


def guess_language(text: str) -> str:
    """The language of `text`: "ru", "zh", "de", "es", or else "en" (Latin or unknown)."""
    by_script = script_language(text)
    if by_script is not None:
        return by_script
    lowered = text.lower()
    if lowered.isascii():
        german = spanish = 0
    else:
        letters = set(lowered)
        german = 2 * len(letters & _GERMAN_LETTERS)
        spanish = 2 * len(letters & _SPANISH_LETTERS)
    # Distinct words: a vote, not a count; split and set operations run in C (this runs
    # on every sentence English rules found nothing in, so it must cost next to nothing).
    words = set(lowered.translate(_PUNCTUATION_TO_SPACE).split())
    german += len(words & _GERMAN_WORDS)
    spanish += len(words & _SPANISH_WORDS)
    english = len(words & _ENGLISH_WORDS)
    # A tie with English goes to the other language: English rules have read the
    # sentence already and found nothing.
    if german > spanish and german >= english:
        return GERMAN
    if spanish > german and spanish >= english:
        return SPANISH
    return ENGLISH


@dataclass(frozen=True, slots=True)
class LanguageRules:
    """What the statement rules of one language read a sentence with (data, no code)."""

    code: str
    # Statements about the user, as `personal_rules.PERSONAL_RULES` is for English.
    personal: tuple[StatementRule, ...]
    # Rules for the assistant: phrases that make any sentence one ("from now on"),
    # orders at the start of a sentence ("never push ..."), softer rules among a team,
    # and phrases that look like orders but are kind words ("don't worry").
    constraint_strong: re.Pattern[str]
    constraint_order: re.Pattern[str]
    constraint_soft: re.Pattern[str]
    not_constraint: re.Pattern[str]
    # A question without a question mark (searched, so it anchors itself).
    question: re.Pattern[str]
    # Words that make a statement unsure, and starts that only imagine something.
    hedge: re.Pattern[str]
    hypothetical: re.Pattern[str]
    # Words that say nothing on their own, words that point instead of naming, adverbs
    # skipped before a statement's object, and greetings/thanks/acknowledgements.
    fillers: frozenset[str]
    deictic: frozenset[str]
    leading: frozenset[str]
    small_talk: frozenset[str]
    # Shortest word that can name something (Spanish "té", Russian "чай").
    min_word_chars: int = 2
    # Written without spaces: words are read as characters and phrases.
    cjk: bool = False


def _words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


@cache
def _phrases(words: frozenset[str]) -> re.Pattern[str]:
    """One pattern for a set of phrases, longest first (so "早上好" wins over "好")."""
    ordered = sorted(words, key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in ordered))


def _cjk_content(text: str, rules: LanguageRules) -> int:
    """Characters and Latin words of a CJK text that name something."""
    count = sum(1 for run in _HAN_RUN.findall(text) for ch in run if ch not in rules.fillers)
    return count + len(_LATIN_WORD.findall(text))


def content_count(text: str, rules: LanguageRules) -> int:
    """How many words (characters, for CJK) of `text` say something."""
    if rules.cjk:
        return _cjk_content(text, rules)
    return sum(
        1
        for w in _words(text)
        if w not in rules.fillers and (len(w) >= rules.min_word_chars or w.isdigit())
    )


def has_object(text: str, rules: LanguageRules) -> bool:
    """The object of a statement names something ("jazz"), not deixis ("it", "that")."""
    if rules.cjk:
        rest = text.strip(" ，,、：:")
        leading = _phrases(rules.leading)
        while match := leading.match(rest):
            if not match.group(0):
                break
            rest = rest[match.end() :]
        if any(rest.startswith(word) for word in rules.deictic):
            return False
        return _cjk_content(rest, rules) > 0
    words = _words(text)
    while words and words[0] in rules.leading:
        words = words[1:]
    if not words or words[0] in rules.deictic:
        return False
    return content_count(" ".join(words), rules) > 0


def is_small_talk_in(text: str, rules: LanguageRules, english_words: frozenset[str]) -> bool:
    """Greetings, thanks and acknowledgements (of this language or English) and nothing else."""
    if rules.cjk:
        rest = _phrases(rules.small_talk).sub("", text)
        return _cjk_content(rest, rules) == 0
    return all(w in rules.small_talk or w in english_words for w in _words(text))
