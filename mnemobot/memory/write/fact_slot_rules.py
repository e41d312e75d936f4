"""The slot rules: which phrasings set which single-valued slot, one rule per slot and
phrasing, in English, German, Russian, Spanish and Chinese (data; read by
`memory.write.fact_slots`).

Each pattern has a `value` group: what the slot is set to; a `kind` group names the slot
of a family ("pet:dog", "favourite:food"); a `left` group the value a move names as left
("moved from Berlin to Lisbon").

Longer than a module of ours should be: it is one table, and splitting it by language
would spread one slot's phrasings over five files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlotRule:
    slot: str
    pattern: re.Pattern[str]
    # Words a question about the slot uses but the statement may not ("home city" for
    # "I moved to Berlin"); added to the fact's tags, so the fact is found by them.
    keywords: tuple[str, ...] = ()


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
# Chinese is indexed by characters and their pairs (`memory.text.terms`): "我住在哪里？"
# keeps only 住, so a fact "我搬到了上海" needs it as a keyword.
_RESIDENCE_KEYS_ZH = (*_RESIDENCE_KEYS, "住", "家", "城市")
_JOB_KEYS_ZH = (*_JOB_KEYS, "工作", "公司", "上班")
_PARTNER_KEYS_ZH = (*_PARTNER_KEYS, "对象", "伴侣")
_PHONE_KEYS_ZH = (*_PHONE_KEYS, "电话", "手机", "号码")
_EMAIL_KEYS_ZH = (*_EMAIL_KEYS, "邮箱")
_ADDRESS_KEYS_ZH = (*_ADDRESS_KEYS, "地址")
# A Chinese value runs to the end of its clause, or to a particle or an adverb that ends
# the statement ("我搬到上海了", "我住在北京已经三年了").
_ZH_END = r"(?=了|啦|呢|吧|已经|有|快|[，。！？；、,.!?;\s]|$)"
# "我" starts the speaker's next statement, never a value.
_ZH_CHAR = r"[^，。！？；、,.!?;\s我]"
# A particle never starts one ("我入职了": no employer named).
_ZH_VALUE = r"(?P<value>(?![了啦呢吧])" + _ZH_CHAR + r"{1,20}?)" + _ZH_END
# When a move was ("上个月", "2019年"), between "我" and the verb.
_ZH_WHEN = (
    r"(?:(?:上个?月|上周|上个星期|去年|前年|今年|昨天|前天|\d{1,4}年|\d{1,2}月)(?:底|初|中)?)?"
)
# "在" before a verb is the progressive, not a place: "我在找工作" (looking for work),
# "我在想工作的事" (thinking about work) name no employer.
_ZH_DOING = r"(?:找|想|准备|考虑|努力|认真|忙|写|做|等|学|看|网上|家|为|跟|和|给|帮)"
# "我" and the adverbs that do not change what is said ("我现在也住在..."). Possessive:
# "刚刚" is also "刚" twice, and a run of them ("我刚刚刚...") tried every way of splitting
# it into the two, a time doubling every few characters.
_ZH_I = r"我(?:现在|目前|还|也|一直|已经|刚刚|刚|最近|终于)*+"
_ZH_MY = r"我的?(?:新的?)?"

# German puts the verb second: after a word of time the subject follows the verb ("Jetzt
# wohne ich in Hamburg", "Letzte Woche bin ich nach Hamburg gezogen"), so "ich" is read
# on either side of it. Before "wohne ich", only words that say it holds now: "Im Urlaub
# wohne ich in einem Hotel" is no home, nor is "Ich wohne gern in Berlin, aber ...".
_DE_NOW = (
    r"(?:jetzt|nun|inzwischen|mittlerweile|derzeit|momentan|aktuell|gerade|endlich|schon"
    r"|bereits|wieder|noch|auch|seit\s+kurzem|seit\s+(?:\w+\s+){0,2}?\w+)"
)
# Between "bin" and "nach" a few words say when, how or with whom ("letzte Woche", "vor
# kurzem", "mit meiner Familie"); none starts another clause or names another subject
# ("Ich bin sicher dass er nach Hamburg gezogen ist").
_DE_MOVE_HOW = r"(?:(?!(?:nach|von|dass|daß|weil|wenn|ob|als|er|sie|es|wir|ihr|man)\b)\w+\s+){0,4}?"
_DE_FROM_TO = r"(?:von\s+(?P<left>[\w-]+)\s+)?nach\s+"
# The place, up to the verb's end; a time said after it is cut (`fact_slot_times`).
_DE_PLACE = r"(?P<value>[\w-]+(?:\s+[\w-]+){0,4}?)"
_DE_MOVING_NOW = r"(?:jetzt|nun|gerade|endlich|heute)"


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
        r"(?:\bich\s+(?:wohne|lebe)|(?<!\w)" + _DE_NOW + r"\s+(?:wohne|lebe)\s+ich)\s+"
        r"(?:" + _DE_NOW + r"\s+){0,3}in\s+" + _VALUE,
        _RESIDENCE_KEYS,
    ),
    _rule(
        "residence",
        r"(?:\bich\s+bin|\bbin\s+ich)\s+" + _DE_MOVE_HOW + _DE_FROM_TO + _DE_PLACE + r"\s+"
        r"(?:um|zurück)?gezogen\b",
        _RESIDENCE_KEYS,
    ),
    # The present of a move made now ("Ich ziehe gerade nach Hamburg um"); one said with
    # a time to come ("nächste Woche") is a plan, not yet the home.
    _rule(
        "residence",
        r"(?:\bich\s+ziehe|(?<!\w)" + _DE_MOVING_NOW + r"\s+ziehe\s+ich)\s+"
        r"(?:" + _DE_MOVING_NOW + r"\s+)?" + _DE_FROM_TO + _DE_PLACE + r"\s+(?:um|zurück)\b",
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
    # "я работаю программистом": the role in the instrumental case, one word (not "дома",
    # "удалённо", "днём", nor "в Яндексе", which is the employer).
    _rule(
        "role",
        r"(?<!\w)я\s+(?:сейчас\s+|теперь\s+)?работаю\s+"
        r"(?P<value>(?!(?:днём|ночью|вечером|утром|летом|зимой|весной|осенью|вахтой|неделей"
        r"|сменой|втроём|вдвоём|удал)\w*)\w{3,}(?:ом|ем|ём|ой|ей))"
        # One word, the clause's last: "полной ставкой" is how much, not a post.
        r"(?=\s*(?:[,.;!?]|$|\s(?:и|а|но)\s))",
        _JOB_KEYS,
    ),
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
    # Chinese: no spaces between words, its own punctuation.
    _rule("residence", _ZH_I + r"住在" + _ZH_VALUE, _RESIDENCE_KEYS_ZH),
    _rule("residence", _ZH_MY + r"家(?:现在)?在" + _ZH_VALUE, _RESIDENCE_KEYS_ZH),
    # "我上个月搬到了上海", "我从北京搬到了上海": when, or where from, may come between.
    _rule(
        "residence",
        # Only a when between "我" and the move: "我妈搬到北京" is the mother's move, "我把
        # 沙发搬到客厅" a sofa's.
        _ZH_I
        + _ZH_WHEN
        + r"(?:从(?P<left>"
        + _ZH_CHAR
        + r"{1,10}?))?(?:搬家?到|搬家?去)了?"
        + _ZH_VALUE,
        _RESIDENCE_KEYS_ZH,
    ),
    # "我在腾讯工作"; "我在家工作" is working from home, no employer.
    _rule(
        "employer",
        _ZH_I
        + r"在(?!"
        + _ZH_DOING
        + r")(?P<value>"
        + _ZH_CHAR
        + r"{1,20}?)(?:工作|上班|任职)(?!过)",
        _JOB_KEYS_ZH,
    ),
    _rule("employer", _ZH_I + r"(?:加入了|加入|入职了|入职)" + _ZH_VALUE, _JOB_KEYS_ZH),
    # "我是一名工程师", "我现在担任产品经理", "我的工作是老师": words that name a post (a
    # bare "我是…" is as often "我是北京人").
    _rule(
        "role",
        _ZH_I + r"(?:是一名|是一位|当上了|当了|担任(?!过)|做了?一名)" + _ZH_VALUE,
        _JOB_KEYS_ZH,
    ),
    _rule(
        "role",
        r"我(?:现在|目前)?的?(?:新的?)?(?:工作|职位|职业)(?:现在)?是" + _ZH_VALUE,
        _JOB_KEYS_ZH,
    ),
    _rule(
        "partner",
        _ZH_MY + r"(?:女朋友|男朋友|女友|男友|老婆|老公|妻子|丈夫|对象|未婚妻|未婚夫)"
        r"(?:现在)?叫" + _ZH_VALUE,
        _PARTNER_KEYS_ZH,
    ),
    _rule(
        "pet:{kind}",
        _ZH_MY + r"(?P<kind>狗狗|小狗|狗|猫咪|小猫|猫|鹦鹉|仓鼠|兔子)(?:现在)?叫" + _ZH_VALUE,
        ("pet", "宠物"),
    ),
    _rule(
        "phone",
        _ZH_MY + r"(?:手机号码|手机号|电话号码|电话|手机)(?:现在)?(?:是|换成了?|改成了?)\s*"
        r"(?P<value>\+?\d[\d \-()]{4,20}\d)",
        _PHONE_KEYS_ZH,
    ),
    _rule(
        "email",
        _ZH_MY + r"(?:邮箱|电子邮件|电邮|邮件)(?:地址)?(?:现在)?(?:是|换成了?|改成了?)\s*"
        r"(?P<value>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)",
        _EMAIL_KEYS_ZH,
    ),
    _rule(
        "address",
        _ZH_MY + r"(?:地址|住址)(?:现在)?是(?P<value>[^，。！？；,.!?;\n]{2,60})",
        _ADDRESS_KEYS_ZH,
    ),
    _rule(
        "favourite:{kind}",
        _ZH_I + r"最喜欢的(?P<kind>[^，。！？；、,.!?;\s是]{1,4})(?:现在)?是" + _ZH_VALUE,
    ),
    # Its end too: "我吃肉夹馍" is a dish, no diet.
    _rule("diet", _ZH_I + r"(?:开始)?(?P<value>吃素|吃纯素|吃肉)" + _ZH_END, _DIET_KEYS),
    _rule(
        "diet",
        _ZH_I + r"是(?:一个|一名|个)?(?P<value>素食者|素食主义者|纯素食者)",
        _DIET_KEYS,
    ),
)
