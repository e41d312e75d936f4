"""Standing statements: which words of a user's message ask how they are answered, and
whether a newer one replaces an older one or says it again.

`memory.write.standing` keeps what is found here; this module only reads words. It is a
module of its own because the words of each language that mark a standing statement (the
patterns below) serve both questions and are most of its length.

What is kept (`standing_statements`, from a user's own words; never from a forwarded
message, a tool's output or the bot's replies):

- a request to the assistant (extraction's PREFERENCE tagged "request") about the
  speaker themselves: it names them ("when I ask", "give me", "my code"), or is a short
  message of its own with no "your" in it ("Never use emojis.");
- an order with "always" or "never" and a condition on the speaker's own asking ("when
  I ask about ..."), or with "from now on" and the speaker as the one served ("answer me
  in French"), in the extraction's languages (en, ru, de, es, zh);
- a preference the speaker states, also inside a question ("I prefer X, so can you ...?"
  keeps "I prefer X").

Nothing that steers other people ("everyone", "answer Anna ...", "answer us ...": see
`memory.write.served_others`) or the bot's own rules ("system prompt", "instructions",
"ignore", a password) is kept: that is one person steering others, which extraction never
turns into a rule (see `extraction.statements`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from mnemobot.memory.store.items import split_label
from mnemobot.memory.text.terms import terms
from mnemobot.memory.write.answer_aspects import about_other_aspects
from mnemobot.memory.write.extraction.code import split_code
from mnemobot.memory.write.extraction.sentences import (
    QUOTATION,
    cut_text,
    split_sentences,
    without_quoted_speech,
)
from mnemobot.memory.write.extraction.words import is_question
from mnemobot.memory.write.preference_choices import CHANGE_BEFORE, PREFER, changed_choice
from mnemobot.memory.write.served_others import serves_others

# A preference stated inside a longer sentence is kept up to this many characters.
CLAUSE_CHARS = 240
# A request without a word for its speaker counts when its message is this short (an
# order on its own, "Never use emojis."), not a remark inside a long text.
SHORT_MESSAGE_CHARS = 280
# Term overlap (Jaccard) at which a newer standing item of a speaker replaces an older
# one without a shared "when I ask about ..." condition.
REPLACES_OVERLAP = 0.5
# A replacing statement this long (in terms) that lacks one of the replaced one's words
# still says it again ("I prefer dividend-paying stocks for steady income over growth
# stocks" -> "... for steady income and I've increased my bond allocation"); shorter, one
# word apart is a change of value. Chosen on BEAM's development chats: of the replaced
# preferences a question named, the restatements one word short had seven terms or
# more, while "I prefer Python for data work and Go for services" -> "Rust ..." (six) is
# a change.
RESTATED_MIN_TERMS = 7
# The speaker as one word of a statement in `replaces` (no term has a space): a chat's
# "User: ..." statements compare as they did when REPLACES_OVERLAP was chosen (the label's
# one word was counted then; on BEAM 500K development every pair of one speaker's
# standing items gets the same answer). Without it: 0.622 -> 0.621, knowledge update
# 0.739 -> 0.736, stale-only 4 -> 5.
_SPEAKER_WORD = "the speaker"

# ------------------------------------------------------------------- the words

# "Always", "never", "from now on" and the like, per language.
_ALWAYS = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|whenever)\b"
    r"|\b(?:всегда|никогда|впредь|отныне|с\s+этого\s+момента|теперь\s+всегда)\b"
    r"|\b(?:immer|niemals|nie|ab\s+jetzt|von\s+nun\s+an|künftig|zukünftig)\b"
    r"|\b(?:siempre|nunca|jamás|a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante)\b"
    r"|总是|始终|一直|永远|从现在起|从现在开始|从今以后|以后|今后|每次|不要",
    re.IGNORECASE,
)
# A condition on the speaker's own asking: "when I ask about ...".
_ASKING = re.compile(
    r"\b(?:when(?:ever)?|if|each\s+time|every\s+time)\s+i\s+(?:ask|request|want|need|inquire)"
    r"|\b(?:когда|если)\s+я\s+(?:спрашиваю|спрошу|прошу|попрошу|интересуюсь)"
    r"|\b(?:wenn|sobald)\s+ich\s+(?:\S+\s+){0,4}?(?:frage|bitte|wissen\s+will)\b"
    r"|\b(?:cuando|si)\s+(?:te\s+|le\s+)?(?:pregunte|pido|pida|pregunto)\b"
    r"|当我问|我问到|我询问|我问起|每当我",
    re.IGNORECASE,
)
# Spanish joins "me" to an imperative, which then carries a written accent ("respóndeme",
# "contéstame"; "dime" is too short to need it): the speaker, as "answer me".
_ES_TO_ME = r"\b(?:\w*[áéíóú]\w*me|dime|dame|hazme|ponme)\b"
# "From now on" with the speaker as the one served ("from now on, answer me in French").
# How the assistant answers the speaker, said as "your answers" ("From now on, keep your
# answers under 50 words": found live, not kept, as "your" alone is the assistant's own).
_YOUR_ANSWERS = (
    r"\byour\s+(?:answers?|replies|reply|responses?)\b|\b(?:твои|ваши)\s+ответы"
    r"|\b(?:deine|eure|ihre)\s+antworten\b|\btus\s+respuestas\b|你的(?:回答|回复)"
)
_FROM_NOW_ON_REQUEST = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward)\b.*(?:\bme\b|" + _YOUR_ANSWERS + r")"
    r"|\b(?:впредь|отныне|с\s+этого\s+момента)\b.*(?:\b(?:мне|меня)\b|" + _YOUR_ANSWERS + r")"
    r"|\b(?:ab\s+jetzt|von\s+nun\s+an|künftig)\b.*(?:\b(?:mir|mich)\b|" + _YOUR_ANSWERS + r")"
    r"|\b(?:a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante|desde\s+ahora)\b.*(?:\bme\b|"
    + _ES_TO_ME
    + r")"
    r"|(?:以后|今后|从现在起|从现在开始|从今以后).*请",
    re.IGNORECASE,
)
# The speaker themselves: the request is about how they are answered.
# "i.e.", "I/O", "Form I-485" are no "I": "Ensure you have your green card (Form I-551)"
# is advice to the listener, not how its speaker wants answers.
_ME = re.compile(
    r"\b(?:i(?![-/.]\w)|me|my|mine|i'm|i've|i'd)\b|\b(?:я|мне|меня|мой|моя|моё|мои|мной)\b"
    r"|\b(?:ich|mir|mich|mein|meine|meinen|meinem)\b|\b(?:yo|me|mi|mis|conmigo)\b|"
    + _ES_TO_ME
    + r"|我",
    re.IGNORECASE,
)
# "Your", said to someone else: advice to the listener ("always back up your data").
_YOUR_ANSWERS_PATTERN = re.compile(_YOUR_ANSWERS, re.IGNORECASE)
_YOUR = re.compile(r"\b(?:your|yours|yourself|твой|твои|ваш|ваши|dein|deine|euer|tu|tus)\b", re.I)
# The bot's own rules, or secrets: never a standing preference of one person.
_BOT_RULES = re.compile(
    r"\b(?:system\s+prompt|(?:your|previous|the\s+operator's)"
    r"\s+(?:instructions|rules)|operator|jailbreak|ignore\s+(?:all|previous|your|the)|override"
    r"|obey|api\s+keys?|passwords?|secret\s+keys?|access\s+tokens?)\b"
    r"|\b(?:(?:свои|твои|ваши)\s+инструкци\w*|системн\w+\s+промпт\w*|парол\w*|игнорируй)\b"
    r"|\b(?:deine\s+anweisungen|systemprompt|passw(?:ö|o)rt\w*|ignoriere)\b"
    r"|\b(?:tus\s+instrucciones|contraseñas?|ignora)\b"
    r"|你的指令|系统提示|密码|忽略",
    re.IGNORECASE,
)
# A statement against something: "never", "not", "don't" and their kin.
_NEGATIVE = re.compile(
    r"\b(?:never|not|don't|do\s+not|no\s+longer|stop|avoid|without)\b|n't\b"
    r"|\b(?:никогда|не|нельзя|без|перестань)\b"
    r"|\b(?:nie|niemals|nicht|kein\w*|ohne)\b|\b(?:nunca|jamás|no|sin)\b"
    r"|不要|别|不|没有|从不",
    re.IGNORECASE,
)
# Where a preference stated inside a longer sentence ends ("..., so can you ...").
_CLAUSE_END = re.compile(
    r"[?!;\n]|\.(?:\s|$)"
    r"|,\s*(?:so|but|and\s+i(?:'m|\s+am|\s+was|\s+want)|and\s+(?:it|this|that)\b|can|could|would|will|what|how|do|does"
    r"|is|are|which|any|please|any\s+tips|should|i'm\s+wondering|i\s+wonder)\b"
    r"|\s-\s"
    # A new subject after "and": "I prefer tea over coffee, and my dog is called Rex".
    r"|,\s*(?:and|а|и|und|y|e)\s+(?:my|our|his|her|their|i|we|he|she|they"
    r"|мой|моя|моё|мои|у\s+меня|я|мы|он|она|mein|meine|unser|unsere|ich|wir|er|sie"
    r"|mi|mis|nuestro|nuestra|yo|nosotros|él|ella)\b"
    # "... whether my preference for X is the best strategy": the preference is X.
    r"|\s(?:is|was)\s+(?:really\s+|actually\s+)?(?:the\s+)?(?:best|right|wise|smart|good|a\s+good)\b"
    r"|,\s*(?:но|так\s+что|поэтому|можешь|можете|как|что|подскажи)\b"
    r"|,\s*(?:aber|also|kannst|können|könntest|wie|was)\b"
    r"|,\s*[¿¡]?(?:pero|así\s+que|puedes|puede|podrías|cómo|qué)\b"
    r"|[，,；。？！](?:但|所以|你|能|可以|怎么|请|我的|我们)",
    re.IGNORECASE,
)
# Before "I prefer": a condition, or a question about it ("should I prioritize X or Y?").
_IMAGINED_BEFORE = re.compile(
    r"\b(?:if|whether|wenn|falls|ob|если|ли|si)\s+(?:\w+\s+){0,2}$"
    r"|\b(?:should|can|could|would|will|shall|may|might|must|do|does|did|how|why)\s+$",
    re.IGNORECASE,
)
# A request to add something to answers ("always include hydration details", "always
# confirm guest list sizes"): a second one about another thing asks for both, where a
# second "always answer in German" replaces "answer in French". Found on BEAM's
# development chats (500K and the 1M stand-ins): 11 of the 72 replaced standing pairs were
# two such requests on one topic, the older one dropped from every request. Only verbs that
# add: "give me / provide / list / show ..." ask a kind of answer ("short answers" after
# "detailed answers", "list 5 options" after "3") and a second one is a change.
_ADDING = re.compile(
    r"[\s,:;，：]*(?:please\s+|пожалуйста\s+|bitte\s+|por\s+favor\s+)?"
    r"(?:(?:do\s+)?not\s+|don't\s+|не\s+|nicht\s+|no\s+|不要|别)?"
    r"(?:(?:includ\w*|mention\w*|add|adds|adding|note|notes|noting"
    r"|confirm\w*|cite|citing|highlight\w*|indicat\w*|specify\w*"
    r"|включ\w*|упомина\w*|упомян\w*|добав\w*|указыва\w*|укажи"
    r"|füge\w*|nenn\w*|erwähn\w*|bestätig\w*"
    r"|inclu\w*|mencion\w*|añad\w*|agreg\w*|indic\w*)\b"
    r"|包括|包含|加上|注明|确认)",
    re.IGNORECASE,
)
# The form asked for after what is added ("prices in euros", "answers as a table"): two
# requests of one thing in two forms ("give me prices in dollars" after "... in euros")
# are a change, not two things to add.
_IN_FORM = re.compile(
    r"\s(?:in|as|using|в|во|als|auf|en|como)\s|[用以]",
    re.IGNORECASE,
)
# The speaker saying a request takes the place of an earlier one: "answer me in long
# paragraphs instead", "never use emojis anymore".
_INSTEAD = re.compile(
    r"\b(?:instead|no\s+longer|any\s*more)\b"
    r"|\b(?:вместо|больше\s+не)\b|\b(?:stattdessen|nicht\s+mehr)\b"
    r"|\b(?:en\s+su\s+lugar|en\s+lugar\s+de|en\s+vez\s+de|ya\s+no)\b"
    # "Respóndeme mejor en inglés": "mejor" before the form asked for, not "la mejor opción".
    r"|\bmejor\s+(?:en|con|sin|como)\b|^\W*mejor\b"
    r"|改为|不再",
    re.IGNORECASE,
)
# "when I ask about X": X, the topic a conditional request is about.
_TOPIC = re.compile(
    r"(?:ask|request|inquire|спрашиваю|спрошу|frage|pregunte|pregunto|问到|问)\s*"
    r"(?:(?:me\s+)?(?:about|for|on|regarding|о|об|про|nach|über|zu|por|sobre|de)\s+)?"
    r"(?P<topic>.+)$",
    re.IGNORECASE,
)


# --------------------------------------------------------------- finding them


@dataclass(frozen=True, slots=True)
class StandingStatement:
    """A standing request or preference: what was said, and which kind."""

    text: str
    kind: str  # "request" or "preference"


def standing_statements(
    text: str,
    requests: Sequence[str] = (),
    *,
    short_message: bool | None = None,
    members: Callable[[], Collection[str]] | None = None,
) -> list[StandingStatement]:
    """The standing statements of a user's message `text` (see the module docstring).

    `requests`: the sentences extraction read as requests to the assistant (their
    `PREFERENCE` items tagged "request"); they count when they are about the speaker.
    `members`: the chat's other members, a name of whom in lower case is someone served
    (`served_others.serves_others`).
    """
    prose = without_quoted_speech(split_code(text)[0])
    short = len(text.strip()) <= SHORT_MESSAGE_CHARS if short_message is None else short_message
    found: dict[str, StandingStatement] = {}
    for request in requests:
        if len(request) > CLAUSE_CHARS:
            continue  # a remark inside a long account, not an order of its own
        # A quoted "me" is someone else's word ('check "Send me reminders"').
        own = QUOTATION.sub(" ", request)
        about_me = _ME.search(own) or _YOUR_ANSWERS_PATTERN.search(own)
        if _for_oneself(request, members) and (about_me or (short and not _YOUR.search(own))):
            found.setdefault(request, StandingStatement(request, "request"))
    for sentence in split_sentences(prose):
        if not _for_oneself(sentence, members):
            # Others named past the preference ("I prefer weekends, how do I make sure
            # everyone comes?") leave it the speaker's own; the bot's rules never do.
            if _BOT_RULES.search(sentence):
                continue
            for clause in _preference_clauses(sentence):
                if _for_oneself(clause, members) and not any(clause in known for known in found):
                    found.setdefault(clause, StandingStatement(clause, "preference"))
            continue
        if (
            len(sentence) <= CLAUSE_CHARS
            and not is_question(sentence)
            and (
                (_ALWAYS.search(sentence) and _ASKING.search(sentence))
                or _FROM_NOW_ON_REQUEST.search(sentence)
            )
        ):
            found.setdefault(sentence, StandingStatement(sentence, "request"))
            continue
        for clause in _preference_clauses(sentence):
            if not any(clause in known for known in found):
                found.setdefault(clause, StandingStatement(clause, "preference"))
    return list(found.values())


def _for_oneself(sentence: str, members: Callable[[], Collection[str]] | None) -> bool:
    """Neither steering others nor the bot's rules: one person's own preference."""
    return not serves_others(sentence, members) and _BOT_RULES.search(sentence) is None


def _preference_clauses(sentence: str) -> list[str]:
    clauses = []
    for match in PREFER.finditer(sentence):
        # "whether my preference for X is right" still states it; "if I prefer X" does not.
        owned = match.group().lower().startswith("my ")
        if not owned and _IMAGINED_BEFORE.search(sentence[: match.start()]):
            continue
        end = _CLAUSE_END.search(sentence, match.end())
        # "Actually, I prefer coffee": the change word says what the preference replaces.
        change = CHANGE_BEFORE.search(sentence, 0, match.start())
        start = change.start() if change else match.start()
        clause = sentence[start : end.start() if end else len(sentence)].strip(" ,")
        if len(terms(clause)) >= 2:
            clauses.append(cut_text(clause, CLAUSE_CHARS))
    return clauses


# -------------------------------------------------------------- comparing them


def replaces(newer: str, older: str) -> bool:
    """Whether a newer standing statement is about what an older one was: the same
    "when I ask about ..." topic and the same first word after it is ordered, or mostly
    the same words. The speaker (both statements are the same person's) counts as one
    shared word, whatever their name: a member named in three words found "I prefer tea in
    the morning" replacing "I prefer walks in the evening". Two requests to add something
    replace only when they add the same thing ("never include X" after "always include
    X"): "always include Y" asks for Y too. Nor do two about different aspects of the
    answer ("answer me in Spanish", "answer me briefly"), "instead" or not. A short
    preference in one frame is compared by `preference_choices` first ("I prefer coffee
    now" changes "I prefer tea"; "I prefer short answers" does not)."""
    if about_other_aspects(_said(newer), _said(older)):
        return False
    choice = changed_choice(_said(newer), _said(older))
    if choice is not None:
        return choice
    # Said to take the place of an earlier request about the same thing (the same first
    # word once "always" and "from now on" are set aside): "from now on, answer me in long
    # paragraphs instead" after "from now on, always answer me in short sentences", found
    # live with both kept in every prompt (too few words shared to read as a change).
    # Requests only: "I prefer X instead of Y" compares two things, it replaces nothing.
    asked = _first_word_asked(newer)
    if (
        asked
        and _INSTEAD.search(_said(newer))
        and not PREFER.search(newer)
        and not PREFER.search(older)
        and asked == _first_word_asked(older)
    ):
        return True
    new_added, old_added = _added(newer), _added(older)
    if (
        new_added is not None
        and old_added is not None
        and _overlap(new_added, old_added) < REPLACES_OVERLAP
    ):
        return False
    new_topic, old_topic = _topic_terms(newer), _topic_terms(older)
    if new_topic and old_topic:
        same_topic = _overlap(new_topic, old_topic) >= REPLACES_OVERLAP
        return same_topic and _first_term(newer) == _first_term(older)
    # Nor does the frame every preference shares ("I prefer"): with it, "I prefer morning
    # yoga over evening" replaced "I prefer reading in the evening" (found in a long chat).
    said_by = {_SPEAKER_WORD}
    new_words = set(terms(PREFER.sub(" ", _said(newer))))
    old_words = set(terms(PREFER.sub(" ", _said(older))))
    return _overlap(new_words | said_by, old_words | said_by) >= REPLACES_OVERLAP


def restates(newer: str, older: str) -> bool:
    """Whether a newer standing statement that replaces an older one says it again rather
    than changing it: the same polarity, and one's words hold the other's ("I prefer
    morning runs" -> "I prefer morning runs before work"), a long one's but for one word.

    One word apart in a short statement is a change ("answer in French" -> "answer in
    German"), and so is "always" against "never".
    """
    if bool(_NEGATIVE.search(_said(newer))) != bool(_NEGATIVE.search(_said(older))):
        return False
    new_terms, old_terms = _content_terms(newer), _content_terms(older)
    if len(old_terms) < 2 or len(new_terms) < 2:
        return False
    if new_terms <= old_terms or old_terms <= new_terms:
        return True
    return len(old_terms) >= RESTATED_MIN_TERMS and len(old_terms - new_terms) <= 1


def _content_terms(text: str) -> set[str]:
    """A statement's terms without its speaker label or its "always"/"never" words."""
    return set(terms(_ALWAYS.sub(" ", _said(text))))


def _topic_terms(text: str) -> set[str]:
    asking = _ASKING.search(text)
    if asking is None:
        return set()
    topic = _TOPIC.search(text, asking.start())
    return set(terms(topic["topic"])) if topic else set()


def _added(text: str) -> set[str] | None:
    """The terms of what a request asks answers to include, without the form it asks for
    ("Always include hydration details when I ask about ..." -> hydration, details; "give
    me prices in euros" -> prices); None when it asks no such thing."""
    said = _said(text)
    always = _ALWAYS.search(said)
    for start in (0, always.end()) if always else (0,):
        verb = _ADDING.match(said, start)
        if verb is not None:
            asking = _ASKING.search(said, verb.end())
            what = said[verb.end() : asking.start() if asking else len(said)]
            form = _IN_FORM.search(what)
            return set(terms(what[: form.start()] if form else what))
    return None


def _first_term(text: str) -> str:
    said = text.split(": ", 1)[-1]
    always = _ALWAYS.search(said)
    found = terms(said[always.end() :] if always else said)
    return found[0] if found else ""


def _first_word_asked(text: str) -> str:
    """The first term of what a statement asks, without its "always"/"from now on", and
    without accents: a short Spanish request may be read as English, whose stemmer keeps
    them ("respóndem" for "Respóndeme siempre brevemente", "respondem" in a longer one)."""
    found = terms(_ALWAYS.sub(" ", _said(text)))
    if not found:
        return ""
    letters = unicodedata.normalize("NFD", found[0])
    return "".join(c for c in letters if not unicodedata.combining(c))


def _overlap(first: set[str], second: set[str]) -> float:
    union = first | second
    return len(first & second) / len(union) if union else 0.0


def _said(content: str) -> str:
    """A statement without its speaker's label ("Ada: ...")."""
    return split_label(content)[1]
