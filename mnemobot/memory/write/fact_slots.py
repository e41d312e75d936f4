"""Fact slots: which single-valued thing a statement sets ("I live in X" sets *residence*).

A table of data, one rule per slot and phrasing, in English, German, Russian and Spanish. A slot
holds one value at a time, so a newer statement of the same slot (by the same speaker)
replaces the older one: "I moved to Berlin" ends "I live in Paris". Only slots where that
reading is reliable are listed; everything else (likes, plans, people one knows) can hold
many values at once and is left to consolidation to judge.

Each pattern has a `value` group: what the slot is set to. Two statements of one slot
with the same value are the same fact said twice, not an update.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from mnemobot.memory.text.terms import terms
from mnemobot.memory.write.extraction.question_clauses import statement_before_question
from mnemobot.memory.write.fact_clauses import clauses


@dataclass(frozen=True, slots=True)
class SlotRule:
    slot: str
    pattern: re.Pattern[str]
    # Words a question about the slot uses but the statement may not ("home city" for
    # "I moved to Berlin"); added to the fact's tags, so the fact is found by them.
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SlotStatement:
    slot: str
    value: str
    sentence: str
    keywords: tuple[str, ...]
    # The value it replaces when the sentence names it ("moved from Berlin to Lisbon"):
    # such a statement counts only where that value is the one known, so "I moved from
    # Java to Kotlin" changes no home.
    left: str | None = None


_VALUE = r"(?P<value>[^.!?;\n]{2,80})"
_NAME = r"(?P<value>[\w'-]+(?:\s+[A-ZА-ЯЁÁÉÍÓÚÑ][\w'-]+)?)"
_PARTNERS_EN = r"(?:partner|girlfriend|boyfriend|wife|husband|fianc[ée]e?|spouse)"
# Spanish questions ("¿Dónde vivo?") are read as Spanish and stemmed ("viv"), a short
# statement without accents ("Vivo en Madrid") often is not: the stems a question has are
# keywords too, so the fact is found either way.
_SPANISH_STEMS = {
    "residence": ("viv", "ciud"),
    "job": ("trabaj", "empres"),
    "partner": ("novi", "parej"),
    "phone": ("telefon", "num"),
    "email": ("corr",),
    "address": ("direccion",),
}
# The words a question about the slot uses, in each language's usual form (a question
# "Wo wohne ich?" must meet a fact "Ich bin nach München gezogen").
_RESIDENCE_KEYS = (
    *("home", "city", "live", "residence", "wohnort", "wohne", "город", "живу"),
    *("vivo", "ciudad", *_SPANISH_STEMS["residence"]),
)
_JOB_KEYS = (
    *("job", "work", "employer", "company", "arbeit", "работа", "trabajo", "empresa"),
    *_SPANISH_STEMS["job"],
)
_PARTNER_KEYS = (
    *("partner", "relationship", "dating", "beziehung", "партнер", "pareja"),
    *_SPANISH_STEMS["partner"],
)
_PHONE_KEYS = (
    *("phone", "number", "telefon", "telefonnummer", "nummer", "телефон", "номер"),
    *("teléfono", "número", "móvil", *_SPANISH_STEMS["phone"]),
)
_EMAIL_KEYS = ("email", "mail", "почта", "correo", *_SPANISH_STEMS["email"])
_ADDRESS_KEYS = ("address", "adresse", "адрес", "dirección", *_SPANISH_STEMS["address"])
_DIET_KEYS = ("diet", "eat", "food")


def _rule(slot: str, pattern: str, keywords: tuple[str, ...] = ()) -> SlotRule:
    return SlotRule(slot, re.compile(pattern, re.IGNORECASE), keywords)


SLOT_RULES: tuple[SlotRule, ...] = (
    # Residence.
    _rule(
        "residence",
        r"\bi\s+(?:now\s+|currently\s+|still\s+)?(?:live|reside)\s+in\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    _rule(
        "residence",
        r"\bi(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+"
        r"(?:over\s+)?to\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    # "I moved from Berlin to Lisbon": both places written as names are (capitalized);
    # the move counts where Berlin is the home known (SlotStatement.left), so "I moved from
    # Java to Kotlin" changes no home.
    _rule(
        "residence",
        r"\bi(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+"
        r"(?:over\s+)?from\s+(?P<left>(?-i:[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*))\s+to\s+"
        r"(?P<value>(?-i:[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*))",
        _RESIDENCE_KEYS,
    ),
    _rule("residence", r"\bi(?:'m|\s+am)\s+(?:now\s+)?living\s+in\s+" + _VALUE, _RESIDENCE_KEYS),
    _rule("residence", r"\bmy\s+home\s+(?:town|city)?\s*is\s+(?:now\s+)?(?:in\s+)?" + _VALUE),
    _rule(
        "residence",
        r"\bich\s+(?:wohne|lebe)\s+(?:jetzt\s+|seit\s+\w+\s+|inzwischen\s+)?in\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    _rule(
        "residence",
        r"\bich\s+bin\s+(?:jetzt\s+|gerade\s+)?(?:von\s+(?P<left>[\w-]+)\s+)?nach\s+"
        r"(?P<value>[\w-]+(?:\s+[\w-]+)?)\s+"
        r"(?:um)?gezogen",
        _RESIDENCE_KEYS,
    ),
    _rule(
        "residence",
        r"(?<!\w)я\s+(?:сейчас\s+|теперь\s+)?живу\s+в\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    _rule(
        "residence",
        r"(?<!\w)я\s+(?:недавно\s+|только\s+что\s+)?переехала?\s+"
        # "из Москвы в Казань": both places capitalized, so "из Москвы в январе" is no home.
        r"(?:из\s+(?P<left>(?-i:[А-ЯЁ][\w-]*))\s+(?=в\s+(?-i:[А-ЯЁ])))?в\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    # Spanish drops the "I": "Vivo en Madrid", "Me mudé a Sevilla (desde Madrid)".
    _rule(
        "residence",
        r"(?<!\w)(?:yo\s+)?(?:ahora\s+|actualmente\s+|todavía\s+)?(?:vivo|resido)\s+en\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    _rule("residence", r"(?<!\w)(?:ahora\s+)?estoy\s+viviendo\s+en\s+" + _VALUE, _RESIDENCE_KEYS),
    _rule(
        "residence",
        r"(?<!\w)(?:yo\s+)?(?:ya\s+|recién\s+|recientemente\s+|por\s+fin\s+)?"
        r"(?:me\s+(?:he\s+)?(?:mudado|mudé|trasladado|trasladé))\s+"
        r"(?:(?:de|desde)\s+(?P<left>(?-i:[A-ZÁÉÍÓÚÑ][\w-]*))\s+)?a\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    # Employer.
    _rule(
        "employer",
        r"\bi\s+(?:now\s+|currently\s+)?work\s+(?:at|for)\s+" + _VALUE,
        _JOB_KEYS,
    ),
    _rule(
        "employer",
        r"\bi(?:'m|\s+am)\s+(?:now\s+)?working\s+(?:at|for)\s+" + _VALUE,
        _JOB_KEYS,
    ),
    _rule(
        "employer",
        r"\bi\s+(?:just\s+|recently\s+)?(?:joined|started\s+(?:a\s+new\s+job\s+|working\s+)?at"
        r"|got\s+a\s+(?:new\s+)?job\s+at)\s+" + _VALUE,
        _JOB_KEYS,
    ),
    _rule("employer", r"\bich\s+arbeite\s+(?:jetzt\s+)?(?:bei|für)\s+" + _VALUE, _JOB_KEYS),
    _rule(
        "employer",
        r"(?<!\w)я\s+(?:сейчас\s+|теперь\s+)?работаю\s+в\s+" + _VALUE,
        _JOB_KEYS,
    ),
    _rule(
        "employer",
        r"(?<!\w)я\s+(?:недавно\s+)?устроила?с[ья]\s+(?:на\s+работу\s+)?в\s+" + _VALUE,
        _JOB_KEYS,
    ),
    _rule(
        "employer",
        r"(?<!\w)(?:yo\s+)?(?:ahora\s+|actualmente\s+)?trabajo\s+(?:en|para)\s+" + _VALUE,
        _JOB_KEYS,
    ),
    # Role.
    _rule("role", r"\bi\s+(?:now\s+)?work\s+as\s+" + _VALUE, _JOB_KEYS),
    _rule("role", r"\bich\s+arbeite\s+(?:jetzt\s+)?als\s+" + _VALUE, _JOB_KEYS),
    _rule("role", r"(?<!\w)(?:yo\s+)?(?:ahora\s+)?trabajo\s+como\s+" + _VALUE, _JOB_KEYS),
    # Partner.
    _rule(
        "partner",
        r"\bmy\s+(?:new\s+)?" + _PARTNERS_EN + r"(?:'s\s+name)?\s+is\s+(?:named\s+|called\s+)?"
        r"(?:now\s+)?" + _NAME,
        _PARTNER_KEYS,
    ),
    _rule(
        "partner",
        r"\bi(?:'m|\s+am)\s+(?:now\s+)?(?:dating|seeing|with|married\s+to|engaged\s+to)\s+" + _NAME,
        _PARTNER_KEYS,
    ),
    _rule(
        "partner",
        r"\b(?:meine?\s+(?:neue[r]?\s+)?(?:partner(?:in)?|freundin|freund|frau|mann))\s+"
        r"(?:heißt|heisst|ist)\s+(?:jetzt\s+)?" + _NAME,
        _PARTNER_KEYS,
    ),
    _rule(
        "partner",
        r"(?<!\w)(?:мою\s+(?:девушку|жену|партнершу)|моего\s+(?:парня|мужа|партнера))\s+"
        r"(?:теперь\s+)?зовут\s+" + _NAME,
        _PARTNER_KEYS,
    ),
    _rule("partner", r"(?<!\w)я\s+(?:теперь\s+)?встречаюсь\s+с\s+" + _NAME, _PARTNER_KEYS),
    _rule(
        "partner",
        r"(?<!\w)mi\s+(?:nuev[oa]\s+)?(?:novia|novio|esposa|esposo|mujer|marido|pareja"
        r"|prometid[oa])\s+se\s+llama\s+(?:ahora\s+)?" + _NAME,
        _PARTNER_KEYS,
    ),
    # Pets: one slot per kind of animal ("my dog" and "my cat" are two slots).
    _rule(
        "pet:{kind}",
        r"\bmy\s+(?:new\s+)?(?P<kind>dog|cat|puppy|kitten|parrot|hamster|rabbit|horse)"
        r"(?:'s\s+name)?\s+is\s+(?:named\s+|called\s+)?" + _NAME,
        ("pet",),
    ),
    _rule(
        "pet:{kind}",
        r"\bi\s+(?:now\s+)?(?:have|got|adopted)\s+a\s+(?:new\s+)?(?P<kind>dog|cat|puppy|kitten"
        r"|parrot|hamster|rabbit|horse)\s+(?:named|called)\s+" + _NAME,
        ("pet",),
    ),
    _rule(
        "pet:{kind}",
        r"\b(?:mein|meine)\s+(?:neuer?\s+)?(?P<kind>hund|katze|kater)\s+heißt\s+" + _NAME,
        ("pet", "haustier"),
    ),
    _rule(
        "pet:{kind}",
        r"(?<!\w)(?:мою|моего)\s+(?:нового\s+|новую\s+)?(?P<kind>собаку|кошку|кота|пса)\s+"
        r"зовут\s+" + _NAME,
        ("pet", "питомец"),
    ),
    _rule(
        "pet:{kind}",
        r"(?<!\w)mi\s+(?:nuev[oa]\s+)?(?P<kind>perro|perra|gato|gata|perrito|gatito)\s+"
        r"se\s+llama\s+" + _NAME,
        ("pet", "mascota"),
    ),
    # Contact details.
    _rule(
        "phone",
        r"\bmy\s+(?:new\s+)?(?:phone|mobile|cell)?\s*(?:phone\s+)?number\s+is\s+(?:now\s+)?"
        r"(?P<value>\+?[\d][\d \-()]{4,20}\d)",
        _PHONE_KEYS,
    ),
    _rule(
        "phone",
        r"\bmeine\s+(?:neue\s+)?(?:telefon|handy)?nummer\s+ist\s+(?:jetzt\s+)?"
        r"(?P<value>\+?[\d][\d \-()]{4,20}\d)",
        _PHONE_KEYS,
    ),
    _rule(
        "phone",
        r"(?<!\w)мой\s+(?:новый\s+)?(?:номер(?:\s+телефона)?|телефон)\s*(?:—|-|:)?\s*"
        r"(?:теперь\s+)?(?P<value>\+?[\d][\d \-()]{4,20}\d)",
        _PHONE_KEYS,
    ),
    _rule(
        "phone",
        r"(?<!\w)mi\s+(?:nuevo\s+)?(?:número(?:\s+de\s+(?:teléfono|móvil|celular))?|teléfono"
        r"|móvil|celular)\s+(?:es|ahora\s+es)\s+(?:ahora\s+)?(?P<value>\+?[\d][\d \-()]{4,20}\d)",
        _PHONE_KEYS,
    ),
    _rule(
        "email",
        r"\bmy\s+(?:new\s+)?e-?mail(?:\s+address)?\s+is\s+(?:now\s+)?(?P<value>\S+@\S+\w)",
        _EMAIL_KEYS,
    ),
    _rule(
        "email",
        r"(?<!\w)mi\s+(?:nuevo\s+)?(?:correo(?:\s+electrónico)?|e-?mail)\s+es\s+(?:ahora\s+)?"
        r"(?P<value>\S+@\S+\w)",
        _EMAIL_KEYS,
    ),
    _rule("address", r"\bmy\s+(?:new\s+)?(?:home\s+)?address\s+is\s+(?:now\s+)?" + _VALUE),
    _rule("address", r"\bmeine\s+(?:neue\s+)?adresse\s+ist\s+(?:jetzt\s+)?" + _VALUE),
    _rule("address", r"(?<!\w)mi\s+(?:nueva\s+)?dirección\s+es\s+(?:ahora\s+)?" + _VALUE),
    _rule("address", r"(?<!\w)мой\s+(?:новый\s+)?адрес\s*(?:—|-|:)?\s*" + _VALUE),
    # Favourites: one slot per kind of thing ("favourite colour", "favourite food").
    _rule(
        "favourite:{kind}",
        r"\bmy\s+(?:new\s+)?(?:all[- ]time\s+)?favou?rite\s+(?P<kind>[\w-]+(?:\s+[\w-]+)?)\s+"
        r"(?:is|are)\s+(?:now\s+)?" + _VALUE,
    ),
    _rule(
        "favourite:{kind}",
        r"\bmeine?\s+(?:neue[rs]?\s+)?lieblings(?P<kind>[\w-]+)\s+(?:ist|sind)\s+"
        r"(?:jetzt\s+)?" + _VALUE,
    ),
    _rule(
        "favourite:{kind}",
        r"(?<!\w)(?:мой|моя|моё|мое|мои)\s+(?:самый\s+|самая\s+)?"
        r"(?:любим(?:ый|ая|ое|ые))\s+(?P<kind>\w+)\s*(?:—|-|:|это|теперь)\s*"
        r"(?:теперь\s+|это\s+)?" + _VALUE,
    ),
    _rule(
        "favourite:{kind}",
        r"(?<!\w)mi\s+(?P<kind>[\w-]+)\s+favorit[oa]\s+(?:es|son)\s+(?:ahora\s+)?" + _VALUE,
    ),
    # Diet.
    _rule(
        "diet",
        r"\bi(?:'m|\s+am)\s+(?:now\s+)?(?:an?\s+)?"
        r"(?P<value>vegetarian|vegan|pescatarian)\b",
        _DIET_KEYS,
    ),
    _rule("diet", r"\bi\s+(?P<value>(?:now\s+|again\s+)?eat\s+meat(?:\s+again)?)\b", _DIET_KEYS),
    _rule(
        "diet",
        r"\bich\s+(?:bin|lebe)\s+(?:jetzt\s+)?(?P<value>vegetarisch|vegan|vegetarier(?:in)?"
        r"|veganer(?:in)?)\b",
        _DIET_KEYS,
    ),
    _rule("diet", r"(?<!\w)(?:ahora\s+)?soy\s+(?P<value>vegetarian[oa]|vegan[oa])\b", _DIET_KEYS),
)

# Quick test before the rules run one by one: most sentences name no slot at all.
_ANY_SLOT = re.compile(
    r"(?<!\w)(?:i|i'm|i've|my|ich|mein|meine|я|мой|моя|мою|моего|мое|моё|мои"
    r"|yo|mi|me|vivo|resido|estoy|trabajo|soy)(?!\w)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_NEGATION = re.compile(
    r"\b(?:not|never|don't|didn't|no\s+longer|nicht|nie|kein\w*)\b|(?<!\w)не(?!\w)"
    # Spanish "no" before the verb ("no vivo", "ya no me mudé"): a bare "No," that
    # answers a question is no negation of what follows.
    r"|(?<!\w)no\s+(?:me\s+|lo\s+)?(?:vivo|resido|trabajo|soy|estoy|mud|traslad|tengo)",
    re.I,
)
_CONDITIONAL = r"(?:if|when|wenn|falls|если|si|cuando)\b"


def _slot_name(rule: SlotRule, match: re.Match[str]) -> str:
    if "{kind}" not in rule.slot:
        return rule.slot
    kind = " ".join(terms(match.group("kind"))) or match.group("kind").lower()
    return rule.slot.format(kind=kind)


@lru_cache(maxsize=16_384)
def slot_statements(text: str) -> tuple[SlotStatement, ...]:
    """The slot-setting statements of `text` (a sentence or a whole message), in order.

    Questions (but for a statement before the asking: "I moved to Berlin, what should I
    see?"), negated sentences ("I don't live in Paris") and conditionals are not
    statements of a value. A `speaker: ` prefix (a group member, a LoCoMo speaker) is
    ignored here; the caller keys slots by speaker.
    """
    if not _ANY_SLOT.search(text):
        return ()
    found: list[SlotStatement] = []
    seen: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence.endswith("?"):
            # "I moved to Berlin, what should I see first?" states the move all the same.
            sentence = statement_before_question(sentence) or ""
        if not sentence or re.match(_CONDITIONAL, sentence, re.IGNORECASE):
            continue
        # Each clause sets its own slot, its value ending where the clause does.
        for clause in clauses(sentence, _states_a_slot):
            if _NEGATION.search(clause):
                continue
            statement = _clause_statement(clause)
            if statement is not None and statement.slot not in seen:
                seen.add(statement.slot)
                found.append(statement)
    return tuple(found)


def says_only_slots(text: str) -> bool:
    """Whether every clause of `text` sets a slot: its slot facts hold all it says."""
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence and (
            sentence.endswith("?")
            or re.match(_CONDITIONAL, sentence, re.IGNORECASE)
            or not all(map(_states_a_slot, clauses(sentence, _states_a_slot)))
        ):
            return False
    return True


@lru_cache(maxsize=4_096)
def _clause_statement(clause: str) -> SlotStatement | None:
    """The slot `clause` sets: the first rule that reads it. Cached: a clause that starts
    with a verb is read once to cut it off (`clauses`) and again for its statement."""
    for rule in SLOT_RULES:
        match = rule.pattern.search(clause)
        if match is None:
            continue
        value = match.group("value").strip(" ,:-—\"'")
        left = match.groupdict().get("left")
        return SlotStatement(_slot_name(rule, match), value, clause, rule.keywords, left)
    return None


def _states_a_slot(text: str) -> bool:
    return not _NEGATION.search(text) and _clause_statement(text) is not None


def value_terms(statement: SlotStatement) -> frozenset[str]:
    """The terms of a statement's value: equal sets mean the same value said again."""
    return frozenset(terms(statement.value)) or frozenset((statement.value.lower(),))
