"""Whether a statement serves someone other than its speaker: everyone, or one person
named as the one answered.

"From now on, answer Anna only in French", said by Boris in a group, was kept as Boris's
standing preference and carried in every request of the group: its words steer the
answers to Anna, who asked for nothing. A standing preference is how its speaker wants to
be answered (`memory.write.standing_statements`), so one that serves another person is
not kept, as "answer everyone ..." never was.

The one served is read after a verb of answering ("answer", "reply to", "отвечай",
"antworte", "respóndele", "回答"): a name, an @mention, "him", "her", "them" or "us" and
their kin in extraction's languages (en, ru, de, es, zh). A person merely mentioned ("I
prefer to meet Anna on Fridays") is no one served, and the preference stays the speaker's.

"Us" counts as others: in a group it takes in members who did not ask, and one member's
word is no one else's preference; "answer me ..." says the same for its speaker alone.

Names are read by their capital letter where a language has one (German capitalises every
noun, so only after "antworte", whose object is a person; a product or a language may
look like one, "answer Python and Go questions"), and in Chinese by a short run of
characters ending the clause after 回答/回复 said with how ("用法语回答安娜"), past the
words for what is answered ("问题").

Also read: the person after the language ("Speak French to Anna", "answer in German to
@anna", "responde en francés a Ana"), or a language after them ("talk to @anna in
Spanish": without one, "talk to Anna" is mostly the speaker's own plan); and the Russian
dative before the verb ("Анне всегда отвечай"), a capitalised word with a dative's ending
that is no adverb ("Короче отвечай", "Отныне отвечай").

A name in lower case ("answer anna in french") is no name by its look: "answer questions
in french", "answer briefly", "answer python questions" read the same. It counts only
when it is a member of the chat, one who spoke there lately (`members`, given by the
caller): its first name or username, or a Russian form of it ("анне" for Анна). So does
the name of an assistant or service ("talk to Siri in English" serves no one) when a
member bears it ("answer Alexa in French", Alexa in the chat).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

# Assistants and services, spoken or written to as people are; a member of the chat may
# still bear the name ("Alexa"), and then it is hers.
_SERVICES = (
    r"Siri|Alexa|Cortana|Google|ChatGPT|Copilot|Slack|Discord|Teams|Jira|GitHub|GitLab"
    r"|Gmail|Outlook|Notion|Confluence|Telegram|WhatsApp|Zoom"
)
_SERVICE = re.compile(_SERVICES, re.IGNORECASE)
# A name: a capitalised word (case-sensitive inside patterns that ignore case), or an
# @mention. Words that are capitalised but name no one: "I", languages, the formal "you".
_NOT_NAMES = (
    r"(?!(?:I|Me|Us|In|On|With|Only|Always|Never|Please|Yes|No|OK|English|French|German|Spanish"
    r"|Russian|Chinese|Italian|Portuguese|Japanese|Korean|Arabic|Latin|Sie|Ihnen|Deutsch"
    r"|Englisch|Französisch|Spanisch|Russisch|Chinesisch|" + _SERVICES + r")\b)"
)
_MENTION = r"@\w+"
# What is answered rather than who ("answer Python questions in code"): not a person.
# A word joined to another ("Python and Go questions", "React/Vue", "Python-related",
# "True or False", "Google Sheets questions") names things too.
_ANSWERED = (
    r"(?:questions?|queries|messages?|emails?|mails?|posts?|comments?|requests?|tickets?"
    r"|issues?|threads?|chats?|channels?|groups?|servers?|workspaces?|forums?|repos?"
    r"|repositories|reviews?)\b"
)
_THINGS_ANSWERED = r"(?!(?:\s+(?-i:[A-Z])[\w/-]*)?\s+" + _ANSWERED + r"|[-/]|\s+(?:and|or|&)\s)"
# Chinese: pronouns of others and "us", and what follows 回答 that names no one (what is
# answered, how, when).
_ZH_PEOPLE = _MENTION + r"|他们|她们|咱们|我们|他|她|TA"
_ZH_NO_ONE = (
    r"问题|所有|全部|一下|一切|清楚|简短|详细|准确|正确|完整|邮件|消息|信息|评论|短信"
    r"|这|那|得|的|时|吧|了|我|你|要|都|就"
)
_ZH_ANSWER = r"回答|回复|答复|说话"
_ZH_ADVERB = r"(?:只|都|也|总是|永远)?"
_EN_LANGUAGE = (
    r"(?:english|french|german|spanish|russian|chinese|mandarin|italian|portuguese|japanese"
    r"|korean|arabic|latin|dutch|polish|ukrainian|hebrew|turkish|hindi|greek|swedish)\b"
)
_ES_LANGUAGE = (
    r"(?:ingl[eé]s|franc[eé]s|alem[aá]n|espa[nñ]ol|castellano|ruso|chino|italiano"
    r"|portugu[eé]s|japon[eé]s|[aá]rabe|catal[aá]n)\b"
)
_EN_NAME = r"(?:" + _MENTION + r"|" + _NOT_NAMES + r"(?-i:[A-Z][a-z]+)\b" + _THINGS_ANSWERED + r")"
_RU_NAME = r"(?:" + _MENTION + r"|(?-i:[А-ЯЁ][а-яё]+)\b(?![-/]|\s+(?:и|или)\s))"
_DE_NAME = r"(?:" + _MENTION + r"|" + _NOT_NAMES + r"(?-i:[A-ZÄÖÜ][a-zäöüß]+)\b)"
_ES_NAME = r"(?:" + _MENTION + r"|" + _NOT_NAMES + r"(?-i:[A-ZÁÉÍÓÚÑ][a-záéíóúñ]+)\b)"

_EN_PRONOUNS = r"(?:him|her|them|us)\b"
_EN_PERSON = r"(?:" + _EN_NAME + r"|" + _EN_PRONOUNS + r")"
# After "with", a capitalised word is mostly how ("in English with British spelling",
# "with Markdown headings"): only an @mention or a pronoun is someone served.
_EN_WITH_PERSON = r"(?:" + _MENTION + r"|" + _EN_PRONOUNS + r")"
# Russian adverbs and words for the speaker that look like a dative name before the verb
# ("Отныне отвечай", "Лучше отвечай кратко", "Мне отвечай"), comparatives ("Подробнее",
# "Покороче", "Попроще") and the instrumental ("Цифрами отвечай", "Полностью отвечай").
_RU_NOT_NAMES = (
    r"(?!(?:Отныне|Далее|Более|Менее|Лучше|Больше|Меньше|Раньше|Позже|Дальше|Короче|Проще"
    r"|Чаще|Реже|Четче|Чётче|Строже|Мягче|Жестче|Жёстче|Тише|Громче|Глубже|Шире|Уже|Выше"
    r"|Ниже|Также|Тоже|Везде|Всюду|Иначе|Сразу|Вкратце|Вначале|Вообще|Еще|Ещё|Почти|Поэтому"
    r"|Потому|Почему|Никому|Кому|Мне|Тебе|Себе|Всему|Где|Позднее|Ранее|Хуже|Дороже|Вместе"
    r"|Кстати|Впоследствии|Попросту|Сверху|Снизу)\b|\w+(?:е[ей]|че|ще|[ая]ми|ью)\b"
    r"|По\w+(?:же|ше)\b)"
)
_RU_NO_PREPOSITION = "".join(
    rf"(?<!\b{preposition}\s)" for preposition in ("в", "во", "на", "о", "об", "обо", "при", "по")
)
_RU_ADVERBS = r"(?:(?:только|всегда|тоже|теперь|впредь|отныне|обязательно|пожалуйста),?\s+)*"
_RU_ANSWER_VERB = (
    r"(?:отвечай|ответь|пиши|напиши|говори|отвечайте|ответьте|пишите|напишите|говорите)\b"
)

_RU_PRONOUNS = r"(?:ей|ему|им|нам|ней|нему|ним|нами|неё|нее|него|них)\b"
_ES_PRONOUNS = r"(?:él|ella|ellos|ellas|nosotros)\b"
_ES_VERB = r"\b(?:resp[oó]nd(?:e|a|an)|cont[eé]st(?:a|e|en)|escr[ií]b(?:e|a|an)|h[aá]bl(?:a|e|en))"

_SERVED_OTHERS = re.compile(
    "|".join(
        [
            # English: "answer Anna", "reply to @anna", "respond to them" ("talk to Anna"
            # is mostly the speaker's own plan: "I'll talk to Anna about it").
            r"\b(?:answer|reply|respond)\s+(?:only\s+|always\s+)?(?:to\s+)?" + _EN_PERSON,
            # "Speak French to Anna", "answer in German to @anna", "talk to her in Spanish".
            r"\b(?:answer|reply|respond|speak|talk|write)\s+(?:only\s+|always\s+)?(?:in\s+)?"
            + _EN_LANGUAGE
            + r"\s+(?:only\s+)?(?:to\s+"
            + _EN_PERSON
            + r"|with\s+"
            + _EN_WITH_PERSON
            + r")",
            r"\b(?:speak|talk|write)\s+(?:only\s+|always\s+)?(?:to|with)\s+"
            + _EN_PERSON
            + r"\s+(?:only\s+|always\s+)?(?:in\s+)?"
            + _EN_LANGUAGE,
            # Russian: "отвечай Анне", "пиши ей", "обращайся к нам".
            r"\b(?:отвечай|ответь|пиши|напиши|говори|обращайся|обращайтесь|отвечайте|ответьте"
            r"|пишите|напишите|говорите)\s+(?:только\s+|всегда\s+|тоже\s+)?(?:к\s+|с\s+)?"
            r"(?:" + _RU_NAME + r"|" + _RU_PRONOUNS + r")",
            # The dative before the verb: "Анне всегда отвечай", "ей отвечай по-французски"
            # (after a preposition, a place or a thing: "В Питоне пиши с типами").
            r"(?<![\w-])"
            + _RU_NO_PREPOSITION
            + r"(?:"
            + _RU_NOT_NAMES
            + r"(?-i:[А-ЯЁ][а-яё]+[еиую])|ей|ему|нам)\s+"
            + _RU_ADVERBS
            + _RU_ANSWER_VERB,
            # German: "antworte Anna", "antworte ihr", "schreib uns" (a noun after "schreib"
            # is what is written: "schreib Code mit Typen").
            r"\b(?:antworte|antwortet|antworten\s+Sie)\s+(?:bitte\s+|nur\s+|immer\s+)?"
            r"(?:" + _DE_NAME + r"|(?-i:ihr|ihm|ihnen|uns)\b)",
            r"\b(?:schreib|schreibe|schreibt|schreiben\s+Sie)\s+(?:bitte\s+|nur\s+|immer\s+)?"
            r"(?:an\s+" + _DE_NAME + r"|(?:an\s+)?(?:" + _MENTION + r"|(?-i:ihr|ihm|ihnen|uns)\b))",
            # Spanish: "respóndele", "contéstales", "le respondas", "responde a Ana",
            # "respóndenos". Orders only: "prefiero responderle", "le respondo" are the
            # speaker's own doing.
            r"\b(?:resp[oó]nde|cont[eé]sta|escr[ií]be|h[aá]bla)(?:les?|nos)\b",
            r"\b(?:les?|nos)\s+(?:respondas|contestes|escribas|hables)\b",
            _ES_VERB + r"\s+(?:solo\s+|siempre\s+)?a\s+(?:" + _ES_NAME + r"|" + _ES_PRONOUNS + r")",
            # "Responde en francés a Ana", "habla en alemán con él".
            _ES_VERB
            + r"\s+(?:solo\s+|siempre\s+)?en\s+"
            + _ES_LANGUAGE
            + r"\s+(?:solo\s+)?(?:a\s+(?:"
            + _ES_NAME
            + r"|"
            + _ES_PRONOUNS
            + r")|con\s+(?:"
            + _MENTION
            + r"|"
            + _ES_PRONOUNS
            + r"))",
            # Chinese: "回答安娜", "回复她", "给安娜回答", "对他们用法语".
            # A name only after how it is answered ("用法语回答安娜"): right after the verb,
            # two or three characters are mostly how ("回答用中文", "回复简洁点", "回答短一点").
            r"(?:回答|回复|答复)(?:" + _ZH_PEOPLE + r")",
            r"用[\u4e00-\u9fff]{1,4}?(?:回答|回复|答复)(?!" + _ZH_NO_ONE + r")"
            r"[\u4e00-\u9fff]{2,3}(?=[，。！!,.;；\s]|$)",
            # "我喜欢给他们写信" gives them letters: only answering, or speaking in a language;
            # a thing named before "用" is what it is used on ("对代码用英文注释").
            r"(?:给|对|跟|向)(?:(?:"
            + _ZH_PEOPLE
            + r")"
            + _ZH_ADVERB
            + r"(?:"
            + _ZH_ANSWER
            + r"|用)"
            r"|(?!"
            + _ZH_NO_ONE
            + r")[\u4e00-\u9fff]{2,3}?"
            + _ZH_ADVERB
            + r"(?:"
            + _ZH_ANSWER
            + r"))",
        ]
    ),
    re.IGNORECASE,
)

# Everyone, all users: an order about them serves others too ("answer everyone in Latin").
_EVERYONE = re.compile(
    r"\b(?:every(?:one|body)|any(?:one|body)|all\s+(?:users|members|of\s+you)|other\s+users"
    r"|each\s+user|every\s+user)\b"
    r"|\b(?:всем|каждому|другим\s+пользовател\w*|всех\s+участник\w*)\b"
    r"|\b(?:jedem|allen\s+(?:nutzern|mitgliedern)|anderen\s+(?:nutzern|mitgliedern))\b"
    r"|\b(?:todo\s+el\s+mundo|cualquiera|a\s+todos|otros\s+usuarios)\b"
    r"|所有人|每个人|大家",
    re.IGNORECASE,
)


# The speaker doing the answering ("I prefer to talk to Sarah first", "ich antworte Anna
# morgens", "我总是回复安娜"): their own habit, unless they ask it of the assistant ("I want
# you to answer Anna").
_SPEAKER_ACTS = re.compile(
    r"\b(?:i|i'll|i'd|i'm|we|we'll|we'd|let's|ich|wir|я|мы|yo|nosotros)\s+(?:[\w'-]+\s+){0,3}$"
    # "我希望以后用法语回答安娜" asks it: a wish, not the speaker's doing.
    r"|我(?!们?(?:希望|想要|要求|请|让|需要))[^你您请让，。,；;]{0,8}$",
    re.IGNORECASE,
)
_YOU = re.compile(r"\b(?:you|dich|dir|du|тебя|тебе|вас|вам|te|ti|usted)\b|你|您", re.IGNORECASE)


# A word in the place of the one answered, whatever its case, to compare with the chat's
# members: "answer anna", "speak french to anna", "отвечай анне", "анне отвечай",
# "antworte anna", "responde a ana".
_SERVED_WORDS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # A member's name is known: "answer anna and boris" names two ("True or False",
        # in capitals, names no one).
        # "answer max 3 sentences": a count follows a word of how.
        r"\b(?:answer|reply|respond)\s+(?:only\s+|always\s+)?(?:to\s+)?@?(?P<word>\w+)\b"
        r"(?!(?:\s+\w+)?\s+" + _ANSWERED + r"|[-/]|\.?\s+\d)",
        r"\b(?:answer|reply|respond|speak|talk|write)\s+(?:only\s+|always\s+)?(?:in\s+)?"
        + _EN_LANGUAGE
        + r"\s+(?:only\s+)?(?:to|with)\s+@?(?P<word>\w+)",
        r"\b(?:speak|talk|write)\s+(?:only\s+|always\s+)?(?:to|with)\s+@?(?P<word>\w+)\s+"
        r"(?:only\s+|always\s+)?(?:in\s+)?" + _EN_LANGUAGE,
        r"\b" + _RU_ANSWER_VERB + r"\s+(?:только\s+|всегда\s+|тоже\s+)?@?(?P<word>\w+)",
        r"(?<![\w-])@?(?P<word>\w+)\s+" + _RU_ADVERBS + _RU_ANSWER_VERB,
        r"\b(?:antworte|antwortet)\s+(?:bitte\s+|nur\s+|immer\s+)?@?(?P<word>\w+)",
        _ES_VERB + r"\s+(?:solo\s+|siempre\s+)?(?:en\s+\w+\s+)?(?:a|con)\s+@?(?P<word>\w+)",
    )
)
_CYRILLIC = re.compile(r"[а-яё]")


def serves_others(text: str, members: Callable[[], Collection[str]] | None = None) -> bool:
    """Whether `text` names someone other than its speaker as the one answered, or
    everyone.

    `members`: the chat's members other than the speaker, each a first name or username in
    lower case (asked only when a word in lower case stands where a name would)."""
    if _EVERYONE.search(text):
        return True
    served = [match.start() for match in _SERVED_OTHERS.finditer(text)]
    if members is not None:
        served += [
            match.start()
            for pattern in _SERVED_WORDS
            for match in pattern.finditer(text)
            if (match["word"].islower() or _SERVICE.fullmatch(match["word"]))
            and _names_a_member(match["word"].lower(), members())
        ]
    for start in served:
        acting = _SPEAKER_ACTS.search(text, 0, start)
        if acting is None or _YOU.search(acting.group()):
            return True
    return False


def _names_a_member(word: str, members: Collection[str]) -> bool:
    """Whether `word` is one of `members`, or in Russian a form of one ("анне", "борису",
    "марии" for Анна, Борис, Мария: the name less its last letter, and one letter more at
    most; not an adverb in -о, "мило", "верно", which no form of Мила or Вера is)."""
    return any(
        word == name
        or (
            len(name) >= 4
            and not word.endswith("о")
            and _CYRILLIC.match(name) is not None
            and word.startswith(name[:-1])
            and len(word) <= len(name) + 1
        )
        for name in members
    )
