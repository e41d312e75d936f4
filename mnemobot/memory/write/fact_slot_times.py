"""When a slot was set, said after its value: "I moved to Hamburg last week" (data; read by
`memory.write.fact_slots`).

A slot's value runs to the end of its clause, so it took the time phrase along: the home
became "Hamburg last week", and a later "I live in Hamburg" was another value rather than
the same one said again. The phrases here, in every language the slot rules read, are cut
from a value's end; what they name (a date, a while) is no part of the value.

A phrase is cut only as a whole, with what follows it (a companion, a reason: "Hamburg
last week with my wife"), and only where it holds a word of time ("last week", "in May",
"seit 2019", "на прошлой неделе", "hace dos años", "三年"): "Frankfurt am Main", "Palm
Springs" and "Spring Hill" stay whole.
"""

from __future__ import annotations

import re

_EN_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
)
_EN_DAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_EN_SEASONS = r"spring|summer|autumn|fall|winter"
_EN_UNITS = r"days?|weeks?|weekends?|months?|years?"
_EN_COUNT = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|few|several|many"
    r"|a\s+couple\s+of)"
)
# "May" is also a name: a bare month is cut only after a word of time ("in May").
_EN_WHEN = (
    rf"(?:(?:early|late|mid)[\s-]+)?(?:the\s+)?(?:{_EN_MONTHS}|{_EN_DAYS}|{_EN_SEASONS})"
    rf"(?:\s+\d{{4}})?|\d{{4}}|(?:last|this|next|past)\s+(?:{_EN_UNITS}|{_EN_MONTHS}|{_EN_DAYS}"
    rf"|{_EN_SEASONS})|the\s+(?:end|start|beginning|middle)\s+of\s+(?:the\s+)?(?:{_EN_UNITS})"
)
_EN = (
    rf"(?:(?:back\s+)?in|on|since|during|around|at\s+the\s+(?:end|start|beginning)\s+of)\s+"
    rf"(?:{_EN_WHEN})"
    rf"|(?:last|this|past)\s+(?:{_EN_UNITS}|{_EN_MONTHS}|{_EN_DAYS}|{_EN_SEASONS})"
    rf"|{_EN_COUNT}\s+(?:{_EN_UNITS})\s+ago"
    rf"|for\s+(?:the\s+(?:past|last)\s+)?(?:{_EN_COUNT}\s+)?(?:{_EN_UNITS})"
    r"|yesterday|today|recently|lately|now|already|finally|again|just\s+now"
)

_DE_MONTHS = (
    r"januar|februar|märz|maerz|april|mai|juni|juli|august|september|oktober|november|dezember"
)
_DE_DAYS = r"montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|wochenende"
_DE_SEASONS = r"frühling|frühjahr|sommer|herbst|winter"
_DE_UNITS = r"tag(?:en|e)?|woche[n]?|monat(?:en|e)?|jahr(?:en|e)?"
_DE_COUNT = (
    r"(?:\d+|einer?m?|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|ein\s+paar|einigen"
    r"|mehreren|wenigen|vielen)"
)
_DE_WHEN = (
    rf"(?:{_DE_MONTHS}|{_DE_DAYS}|{_DE_SEASONS})(?:\s+\d{{4}})?|(?:jahr\s+)?\d{{4}}"
    rf"|(?:letzte[nrsm]?|vorige[nrsm]?|vergangene[nrsm]?|diese[nrsm]?)\s+(?:{_DE_UNITS}"
    rf"|{_DE_MONTHS}|{_DE_DAYS}|{_DE_SEASONS})|kurzem|gestern|heute|{_DE_COUNT}\s+(?:{_DE_UNITS})"
)
_DE = (
    rf"(?:im|am|seit|ab|anfang|ende|mitte|vor)\s+(?:dem\s+|der\s+|des\s+)?(?:{_DE_WHEN})"
    rf"|(?:letzte[nrs]?|vorige[nrs]?|vergangene[nrs]?|diese[nrs]?)\s+(?:{_DE_UNITS}"
    rf"|{_DE_MONTHS}|{_DE_DAYS}|{_DE_SEASONS})"
    r"|gestern|vorgestern|heute|jetzt|nun|kürzlich|neulich|endlich|inzwischen|mittlerweile"
    r"|schon|bereits|wieder"
)

_RU_MONTHS = r"январе|феврале|марте|апреле|мае|июне|июле|августе|сентябре|октябре|ноябре|декабре"
_RU_UNITS = r"дн(?:я|ей)|день|недел[юиь]|месяц(?:а|ев)?|год(?:а)?|лет"
_RU_COUNT = (
    r"(?:\d+|один|одну|два|две|три|четыре|пять|шесть|семь|восемь|девять|десять|пару"
    r"|несколько)"
)
_RU = (
    r"на\s+(?:прошлой|этой|позапрошлой)\s+неделе"
    r"|в\s+(?:прошлом|этом|позапрошлом)\s+(?:месяце|году)"
    rf"|в\s+(?:{_RU_MONTHS})(?:\s+\d{{4}}(?:\s+года)?)?|в\s+\d{{4}}(?:\s+году|\s*г\.?)?"
    r"|с\s+\d{4}(?:\s+года)?"
    rf"|(?:{_RU_COUNT}\s+)?(?:{_RU_UNITS})\s+назад"
    rf"|(?:уже\s+)?{_RU_COUNT}\s+(?:{_RU_UNITS})|уже\s+(?:{_RU_UNITS})"
    r"|(?:прошлым\s+|этим\s+)?(?:летом|зимой|весной|осенью)"
    r"|вчера|позавчера|сегодня|недавно|теперь|уже|сейчас"
)

_ES_MONTHS = (
    r"enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre"
    r"|noviembre|diciembre"
)
_ES_DAYS = r"lunes|martes|miércoles|jueves|viernes|sábado|domingo"
_ES_SEASONS = r"primavera|verano|otoño|invierno"
_ES_UNITS = r"días?|semanas?|mes(?:es)?|años?"
_ES_COUNT = (
    r"(?:\d+|un|una|unos|unas|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|varios"
    r"|varias|pocos|pocas)"
)
_ES = (
    rf"(?:la\s+semana|el\s+mes|el\s+año|el\s+(?:{_ES_DAYS})|el\s+(?:{_ES_SEASONS})"
    rf"|la\s+primavera)\s+pasad[oa]"
    rf"|(?:este|esta)\s+(?:semana|mes|año|{_ES_SEASONS})"
    rf"|(?:desde\s+)?hace\s+(?:poco|tiempo|(?:{_ES_COUNT}\s+)?(?:{_ES_UNITS}))"
    rf"|(?:en|desde|a\s+(?:principios|finales|mediados)\s+de)\s+(?:(?:el\s+|la\s+)?"
    rf"(?:{_ES_MONTHS}|{_ES_SEASONS})(?:\s+(?:de\s+)?\d{{4}})?|\d{{4}})"
    r"|ayer|anteayer|hoy|recientemente|ahora|ya|por\s+fin"
)

# Chinese puts when before the verb ("我上周搬到了汉堡"), how long after the place ("我住在
# 北京三年了"): the while, and the few time words, are cut (no space before them).
_ZH_COUNT = r"(?:\d+|[一二三四五六七八九十两几半]+)"
_ZH = (
    rf"{_ZH_COUNT}多?个?多?(?:年|月|天|星期|礼拜|周)多?"
    r"|上个?月|上周|上个?星期|去年|前年|今年|昨天|前天|最近|现在"
)

# And what follows it: "Hamburg last week with my wife" is Hamburg (review).
_SPACED = re.compile(rf"\s+(?:{_EN}|{_DE}|{_RU}|{_ES})(?:[\s,].*)?$", re.IGNORECASE | re.DOTALL)
_UNSPACED = re.compile(rf"(?:{_ZH})$")
_CJK_END = re.compile(r"[\u4e00-\u9fff]$")


def without_trailing_time(value: str) -> str:
    """`value` without the time phrases at its end; the value itself when nothing else
    would be left ("Yesterday", a song)."""
    kept = value
    while True:
        cut = _SPACED.sub("", kept)
        if cut == kept and _CJK_END.search(kept):
            cut = _UNSPACED.sub("", kept)
        if cut == kept:
            break
        kept = cut.rstrip(" ,")
    return kept if kept.strip() else value
