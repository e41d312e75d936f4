"""Rule-based extraction of memory items from a finished turn (no LLM; DESIGN §6).

Each turn gives one EPISODIC turn item plus derived items, each holding the whole
sentence that matched (not the start of the message):

- from the user's words: CONSTRAINT ("never push to main"), PREFERENCE ("I prefer
  tea"), PROJECT_FACT ("my sister lives in Oslo", "our API runs on FastAPI"),
  DECISION ("we decided to use Postgres"), TASK_STATE ("I'm working on the parser");
- from anyone's words: FAILURE ("the build fails with ImportError") and FIX ("fixed
  it by pinning numpy");
- with `code_aware`: shell commands (COMMAND_RESULT), error lines of tracebacks and
  logs (FAILURE), a fix that follows an error (FIX), file paths in `references`.

Precision matters more than recall here: a wrong durable item is injected into every
later prompt. So questions, hypotheticals, requests ("I'd like to..."), deictic small
talk ("I love it!") and hedged statements are left out or kept below the promotion
threshold. First-person explicit statements score >= 0.8 and are promoted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

from memory.items import ItemType, Layer, MemoryItem, TurnMemoryEvent, fingerprint

TURN_CONFIDENCE = 0.65
MAX_DERIVED_ITEMS = 12
MAX_COMMANDS = 6
MAX_ERRORS = 3
TURN_USER_CHARS = 1200
TURN_ASSISTANT_CHARS = 800
SENTENCE_CHARS = 500
TITLE_CHARS = 80
ERROR_LINE_CHARS = 300
MAX_SCAN_CHARS = 30_000

# ----------------------------------------------------------------------- sentences

_BULLET = re.compile(r"^\s*(?:[-*•+>]|#{1,6}|\d{1,3}[.)])\s+")
_BOUNDARY = re.compile(
    r"(?P<punct>[.!?]+|…+)(?P<close>[\"'”’)\]]*)\s+"
    r"|(?P<cjk>[。！？]+)(?P<cjk_close>[」』”’)]*)"
)
# Always followed by more of the sentence.
_TITLES = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "cf", "approx", "e.g", "i.e"}
)
# Continue only when a lowercase word follows ("etc. and more" vs "etc. Then").
_ABBREVIATIONS = frozenset(
    {"etc", "inc", "ltd", "co", "corp", "dept", "fig", "no", "a.m", "p.m"}
    | {"u.s", "u.k", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct"}
    | {"nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "min", "max", "ca"}
)
_LAST_WORD = re.compile(r"([^\s(\"'“‘]+)$")


def _continues(before: str, punct: str, following: str) -> bool:
    """Whether the punctuation ending `before` is not a sentence end."""
    if punct.startswith("..") or punct.startswith("…"):
        return following[:1].islower()
    if punct != ".":
        return False
    match = _LAST_WORD.search(before)
    if match is None:
        return False
    word = match.group(1).lower().rstrip(".")
    if word in _TITLES:
        return True
    if len(word) == 1 and word.isalpha() and match.group(1).isupper():
        return True  # an initial: "J. R. R. Tolkien"
    return word in _ABBREVIATIONS and following[:1].islower()


def split_sentences(text: str) -> list[str]:
    """Split prose into whole sentences; line breaks and list items also end a sentence."""
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = _BULLET.sub("", raw_line).strip()
        if not line:
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            if match.group("cjk"):
                end = match.end()
            else:
                end = match.end("close")
                # Only the next character matters; slicing the rest would be quadratic.
                before = line[start : match.start()]
                following = line[match.end() : match.end() + 1]
                if _continues(before, match.group("punct"), following):
                    continue
            sentence = line[start:end].strip()
            if sentence:
                sentences.append(sentence)
            start = match.end()
        tail = line[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


# --------------------------------------------------------------- word-level checks

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
# Words that carry no durable meaning on their own (small talk, deixis, fillers).
_FILLER_WORDS = """
    a an the it its it's this that that's these those them they you your yours u ya ye
    him her he she we us our me my mine i i'm im so too very much many really quite just
    lot lots one ones thing things stuff idea ideas way here there all everything anything
    something nothing what how when why who which as well also more most better best both
    either with about of to for in on at by from now then again though tho even still
    yes yeah yep no nope ok okay sure fine great good nice cool awesome amazing wow omg
    lol haha hehe thanks thank please hi hello hey bye guys man dude buddy pal bit kind
    sort some any and or but if is am are was were be been being do does did have has had
    will would can could should shall may might must not don't doesn't didn't gonna wanna
    like love enjoy prefer hate
"""
_FILLER = frozenset(_FILLER_WORDS.split())
_DEICTIC_START = frozenset(
    {"it", "this", "that", "these", "those", "them", "you", "u", "your", "yours", "him"}
    | {"her", "here", "there", "em", "everything", "everyone", "all"}
)
_SMALL_TALK_EXTRA = frozenset(
    {"morning", "evening", "night", "afternoon", "day", "welcome", "np", "agreed", "right"}
    | {"exactly", "perfect", "see", "later", "soon", "bro", "sis", "appreciate", "it's"}
    | {"sounds", "got", "gotcha", "noted", "understood", "alright", "yup", "hmm", "uh", "um"}
)
_LEADING_ADVERBS = frozenset(
    {"really", "so", "totally", "absolutely", "just", "also", "still", "truly", "very"}
    | {"much", "quite", "pretty", "kinda", "always", "definitely", "especially"}
)


def _words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


def content_words(text: str) -> list[str]:
    """The words of `text` that say something (not fillers, pronouns or small talk)."""
    return [w for w in _words(text) if w not in _FILLER and (len(w) > 2 or w.isdigit())]


def is_small_talk(text: str) -> bool:
    """Greetings, thanks and acknowledgements with nothing else in them."""
    words = _words(text)
    return all(w in _FILLER or w in _SMALL_TALK_EXTRA for w in words)


def _has_durable_object(text: str) -> bool:
    """The object of a statement names something ("jazz"), not deixis ("it", "that")."""
    words = _words(text)
    while words and words[0] in _LEADING_ADVERBS:
        words = words[1:]
    if not words or words[0] in _DEICTIC_START:
        return False
    if words[0] in ("how", "when", "that") and len(words) > 1 and words[1] in _DEICTIC_START:
        return False  # "I love how it looks": about what is on screen, not a lasting taste
    return bool(content_words(" ".join(words)))


_QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|hey|ok|okay|also|btw)[,\s]+)*"
    r"(?:what|why|how|when|where|who|whom|which|whose"
    r"|(?:do|does|did|are|is|was|were|can|could|would|will|should|shall|have|has|had"
    r"|may|might|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|can't|couldn't)"
    r"\s+(?:you|we|i|they|he|she|it|u|ya|there|your|my|the|this|that|these|those|anyone)"
    r")\b",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"[\s\"'”’)\]*_~\U0001F300-\U0001FAFF\u2600-\u27BF]+$")


def is_question(sentence: str) -> bool:
    stripped = _TRAILING.sub("", sentence)
    if stripped.endswith(("?", "？")):
        return True
    if stripped.endswith((".", "!")):
        return False
    return bool(_QUESTION_START.match(_normalize_quotes(stripped)))


_HYPOTHETICAL_START = re.compile(
    r"^(?:(?:and|but|so)\s+)?(?:if|unless|in case|whether|what if|suppose|imagine)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:i think|i guess|i suppose|i believe|i feel like|maybe|perhaps|probably|possibly"
    r"|kind of|kinda|sort of|sorta|might|not sure|sometimes|occasionally|used to"
    r"|i'm not sure|i am not sure|i wonder)\b",
    re.IGNORECASE,
)


def _normalize_quotes(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


# ------------------------------------------------------------------ statement rules


@dataclass(frozen=True, slots=True)
class StatementRule:
    """One kind of statement: a pattern over a sentence and what an item of it is worth."""

    type: ItemType
    pattern: re.Pattern[str]
    confidence: float
    salience: float
    tag: str
    # "after": the words after the match must name something; "before": the words
    # before it ("Jazz is my favourite"); None: the pattern is specific enough.
    needs_object: str | None = "after"


def _rule(
    item_type: ItemType,
    pattern: str,
    confidence: float,
    salience: float,
    tag: str,
    needs_object: str | None = "after",
) -> StatementRule:
    return StatementRule(
        item_type, re.compile(pattern, re.IGNORECASE), confidence, salience, tag, needs_object
    )


_I = (
    r"\bi\s+(?:(?:really|also|just|truly|absolutely|totally|definitely|still|do|much"
    r"|genuinely)\s+)*"
)
_I_AM = r"\bi(?:'m|\s+am)\s+(?:(?:currently|still|now|also|actually|really)\s+)*"
_F = "fact"
_P = "preference"
_RELATIVES = (
    r"(?:sister|brother|sibling|mother|mom|mum|father|dad|parents?|wife|husband|partner"
    r"|spouse|fianc[ée]e?|sons?|daughters?|kids?|children|child|baby|grand(?:ma|pa|mother"
    r"|father|parents?|son|daughter)|aunt|uncle|cousin|niece|nephew|(?:best\s+)?friend"
    r"|roommate|flatmate|boss|manager|colleague|coworker|co-worker|girlfriend|boyfriend"
    r"|family|dog|cat|pet|puppy|kitten|horse|bird|parrot|hamster|rabbit|bunny|fish)s?"
)
_PROFESSIONS = (
    r"(?:engineer|developer|programmer|coder|teacher|professor|nurse|doctor|physician"
    r"|student|designer|manager|writer|author|artist|painter|lawyer|scientist|researcher"
    r"|consultant|founder|owner|parent|mom|mum|dad|mother|father|musician|singer"
    r"|photographer|chef|cook|accountant|analyst|architect|counselor|counsellor|therapist"
    r"|psychologist|journalist|pilot|farmer|mechanic|electrician|plumber|carpenter"
    r"|pharmacist|dentist|veterinarian|vet|firefighter|officer|soldier|veteran|athlete"
    r"|coach|freelancer|entrepreneur|intern|volunteer|retiree|vegetarian|vegan)s?"
)

PERSONAL_RULES: tuple[StatementRule, ...] = (
    # Preferences.
    _rule(ItemType.PREFERENCE, _I + r"prefer\b", 0.9, 0.7, "preference"),
    _rule(ItemType.PREFERENCE, r"\bi(?:'d|\s+would)\s+(?:much\s+)?rather\b", 0.7, 0.6, _P),
    _rule(ItemType.PREFERENCE, _I + r"(?:like|love|adore|enjoy)\b", 0.85, 0.65, "preference"),
    _rule(
        ItemType.PREFERENCE,
        _I + r"(?:hate|dislike|detest|can't\s+stand|cannot\s+stand|don't\s+(?:really\s+)?"
        r"(?:like|enjoy|care\s+for)|do\s+not\s+(?:like|enjoy))\b",
        0.85,
        0.65,
        "dislike",
    ),
    _rule(ItemType.PREFERENCE, _I_AM + r"(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\b", 0.85, 0.65, _P),
    _rule(ItemType.PREFERENCE, _I_AM + r"(?:really\s+)?into\b", 0.8, 0.6, "preference"),
    _rule(
        ItemType.PREFERENCE,
        r"\bmy\s+(?:all[- ]time\s+|absolute\s+)?(?:favou?rite|fave)\s+[\w\s'-]{1,40}?"
        r"\s+(?:is|are)\b",
        0.85,
        0.7,
        "preference",
    ),
    _rule(
        ItemType.PREFERENCE,
        r"\b(?:is|are)\s+(?:still\s+)?my\s+(?:all[- ]time\s+|absolute\s+)?(?:favou?rites?|fave)\b",
        0.85,
        0.7,
        "preference",
        needs_object="before",
    ),
    # Facts about the person and their world.
    _rule(
        ItemType.PROJECT_FACT,
        r"\bmy\s+(?:[\w-]+\s+){0,2}?" + _RELATIVES + r"(?:\s+[\w'-]+){0,4}?\s+"
        r"(?:lives?|lived|works?|worked|studies|studied|is\s+named|was\s+named|named|called"
        r"|just\s+turned|turns?|moved|was\s+born|teaches|is\s+allergic|passed\s+away"
        r"|got\s+married|is\s+(?:a|an))\b",
        0.85,
        0.7,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bmy\s+(?:[\w-]+\s+){0,2}?" + _RELATIVES + r"(?:\s+[\w'-]+){0,4}?\s+"
        r"(?:is|are|has|have|loves?|likes?|hates?|plays?|owns?|goes)\b",
        0.7,
        0.6,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT, r"\bi\s+(?:currently\s+)?work\s+(?:at|for|as|in)\b", 0.85, 0.7, _F
    ),
    _rule(ItemType.PROJECT_FACT, _I_AM + r"working\s+(?:at|for|as)\b", 0.85, 0.7, "fact"),
    _rule(
        ItemType.PROJECT_FACT,
        _I_AM + r"(?:a|an)\s+(?:[\w-]+\s+){0,2}?" + _PROFESSIONS + r"\b",
        0.85,
        0.7,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        _I_AM + r"(?:severely\s+|very\s+)?allergic\s+to\b|\bi\s+have\s+(?:an?\s+)?"
        r"(?:[\w-]+\s+)?allerg(?:y|ies)\b",
        0.9,
        0.85,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        _I_AM + r"(?:vegetarian|vegan|pescatarian|diabetic|lactose[- ]intolerant|celiac"
        r"|coeliac|gluten[- ]intolerant|pregnant|married|engaged|divorced|retired|single"
        r"|left[- ]handed|colou?r[- ]blind|deaf|blind)\b",
        0.85,
        0.75,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:have|own|got|adopted)\s+(?:a|an|one|two|three|four|five|\d+)\s+"
        r"(?:[\w-]+\s+){0,3}?(?:named|called)\s+\w+",
        0.9,
        0.7,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:have|own)\s+(?:a|an|one|two|three|four|five|\d+)\s+(?:[\w-]+\s+)?"
        + _RELATIVES
        + r"\b",
        0.85,
        0.65,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bmy\s+(?:[\w-]+\s+)?(?:birthday|anniversary|name|nickname|email|e-mail"
        r"|phone\s+number|address|age|blood\s+type|time\s*zone|pronouns|zodiac\s+sign)"
        r"\s+(?:is|are)\b",
        0.9,
        0.75,
        "fact",
    ),
    _rule(ItemType.PROJECT_FACT, r"\bi\s+was\s+born\s+(?:in|on|at)\b", 0.9, 0.7, "fact"),
    _rule(ItemType.PROJECT_FACT, _I_AM + r"\d{1,3}\s+(?:years?\s+old|y/?o)\b", 0.85, 0.6, _F, None),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:currently\s+|still\s+)?live\s+(?:in|at|near|with|on|by)\b"
        r"|\bi(?:'ve|\s+have)\s+been\s+living\s+(?:in|at|near|with)\b"
        r"|\bi\s+grew\s+up\s+(?:in|on|near)\b|" + _I_AM + r"from\b",
        0.85,
        0.7,
        "fact",
    ),
    _rule(ItemType.PROJECT_FACT, r"\bi\s+(?:just\s+)?moved\s+(?:to|from)\b", 0.8, 0.65, "fact"),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:study|speak|teach)\b|" + _I_AM + r"(?:studying|majoring\s+in)\b",
        0.8,
        0.6,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\b(?:our|the|this|my)\s+(?:app|application|project|service|repo|repository|codebase"
        r"|backend|frontend|api|bot|server|database|db|stack|site|website|product|cluster"
        r"|ci|pipeline|company|team)\s+(?:is\s+written\s+in|is\s+built\s+(?:with|on)"
        r"|uses|runs\s+on|runs|depends\s+on|targets|deploys\s+to|is\s+deployed\s+(?:to|on)"
        r"|is\s+hosted\s+on|lives\s+in|is\s+based\s+on)\b",
        0.8,
        0.7,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bwe(?:'re|\s+are)?\s+(?:currently\s+)?(?:use|using|run|running|deploy|host|hosting)\b",
        0.7,
        0.6,
        "fact",
    ),
    # Decisions.
    _rule(
        ItemType.DECISION,
        r"\b(?:we|i)(?:'ve|\s+have)?\s+(?:finally\s+|just\s+)?decided\b"
        r"|\blet'?s\s+(?:go\s+with|use|stick\s+with|switch\s+to)\b"
        r"|\bwe(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to)\s+(?:use|go\s+with"
        r"|stick\s+with|switch\s+to|adopt|move\s+to|migrate\s+to)\b"
        r"|\b(?:we|i)(?:'re|'m|\s+are|\s+am)\s+going\s+with\b|\bi(?:'ll|\s+will)\s+go\s+with\b"
        r"|\bwe\s+(?:agreed|chose|settled\s+on|picked)\b|\b(?:the|our|my)\s+decision\s+(?:is|was)\b",
        0.85,
        0.75,
        "decision",
    ),
    # Task state.
    _rule(ItemType.TASK_STATE, _I_AM + r"working\s+on\b", 0.8, 0.6, "task"),
    _rule(
        ItemType.TASK_STATE,
        r"\bnext,?\s+i(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|\s+need\s+to)\b"
        r"|\b(?:my|the|our)\s+next\s+step\s+(?:is|will\s+be)\b"
        r"|\bi(?:'m|\s+am)\s+planning\s+to\b|\bi\s+plan\s+to\b|\bi\s+still\s+(?:need|have)\s+to\b"
        r"|\bi(?:'m|\s+am)\s+in\s+the\s+middle\s+of\b|\bi(?:'m|\s+am)\s+halfway\s+through\b",
        0.8,
        0.55,
        "task",
    ),
    _rule(ItemType.TASK_STATE, r"(?:^|\s)(?:TODO|todo)\b:?", 0.8, 0.55, "task"),
    _rule(
        ItemType.TASK_STATE,
        r"\bi(?:'ve|\s+have)\s+(?:just\s+)?(?:finished|completed|started|shipped|released)\b"
        r"|" + _I_AM + r"(?:learning|building|writing|preparing\s+for|training\s+for)\b",
        0.7,
        0.5,
        "task",
    ),
)

_LEAD_IN = r"^(?:(?:please|pls|and|also|oh|btw|remember|note|ok|okay)[,:]?\s+)*"
# Words after "always"/"never" that show it is not an order ("Always happy to help").
_NOT_VERBS = (
    r"(?:happy|glad|welcome|good|great|nice|fun|there|here|a|an|the|been|so|too|more|less"
    r"|better|fine|ready|sure|true|right|late|early|again|ever|alone|mind|forget\s+you"
    r"|been|was|is|has|had|my|your|his|her|our|their|up\s+for|down\s+for|in\s+the|on\s+the"
    r"|saw|heard|thought|knew|did|got|felt|went|came|made|took|gave|said|told|found|met|left"
    r"|really|[a-z]+ed|[a-z]+ing)"
)
_CONSTRAINT_IMPERATIVE = re.compile(
    _LEAD_IN + r"(?:(?:always|never)\s+(?!" + _NOT_VERBS + r"\b)[a-z]+"
    r"|(?:don't|do\s+not|dont|avoid|make\s+sure|ensure|refrain\s+from)\b"
    r"|only\s+(?:use|answer|reply|respond|write|speak|run|deploy|commit|push|call|send|show"
    r"|return|talk|suggest|recommend)\b|stop\s+[a-z]+ing\b)",
    re.IGNORECASE,
)
_CONSTRAINT_NOT = re.compile(
    _LEAD_IN + r"(?:don't|do\s+not|dont|never)\s+"
    r"(?:worry|mind|know|care|think|be\s+sorry|apologi[sz]e|hesitate|bother|get\s+me\s+wrong"
    r"|ask|feel|forget(?=\s*[,!.-])|forget\s+(?:it|that|the\s+details)|give\s+up|be\s+(?:afraid"
    r"|scared|shy|sad|so\s+hard|too\s+hard|a\s+stranger)|stop\s+(?:believing|dreaming))\b"
    r"|^never\s+mind\b",
    re.IGNORECASE,
)
_CONSTRAINT_STRONG = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|mustn't|must\s+not|shall\s+not|should\s+never"
    r"|should\s+always|(?:is|are)\s+(?:strictly\s+)?(?:required|mandatory|forbidden|prohibited"
    r"|not\s+allowed)|not\s+allowed\s+to|required\s+to)\b",
    re.IGNORECASE,
)
# "must" is an order ("Tests must pass") unless it is a guess ("that must have been fun",
# "you must be tired", "must be nice").
_MUST = re.compile(
    r"(?:^|\b(?P<subject>[\w'-]+)\s+)must\s+(?P<next>[\w']+)(?:\s+(?P<after>[\w']+))?",
    re.IGNORECASE,
)
_GUESSING_VERBS = frozenset({"have", "'ve", "of", "feel", "make", "add", "still", "really", "seem"})
_EVALUATIVE = frozenset(
    {"so", "such", "quite", "really", "very", "pretty", "amazing", "great", "incredible"}
    | {"exciting", "fun", "rewarding", "hard", "tough", "nice", "awesome", "wonderful", "cool"}
    | {"lovely", "scary", "difficult", "tiring", "exhausting", "a", "an", "the", "raw", "feeling"}
    | {"proud", "tired", "happy", "sad", "excited", "thrilled", "relieved", "fantastic", "special"}
)
_GUESSING_SUBJECTS = frozenset(
    {"you", "that", "it", "this", "he", "she", "they", "there", "which", "what", "who", "i"}
    | {"wow", "oh", "ah", "which", "that's", "it's", "u"}
)
_CONSTRAINT_SOFT = re.compile(
    r"\bwe\s+(?:always|never|must|cannot|can't|should\s+(?:always|never))\b"
    r"|\b(?:every|each|all)\s+[\w-]+\s+(?:has\s+to|have\s+to|needs?\s+to)\b",
    re.IGNORECASE,
)
_REQUIRES = re.compile(r"\b(?:requires?|required)\b", re.IGNORECASE)
_FIRST_PERSON_MODAL = re.compile(r"\bi\s+(?:must|have\s+to|need\s+to|can't|cannot)\b", re.I)
_ENTHUSIASM = re.compile(
    r"\byou\s+(?:have|need|must)\s+to\s+(?:try|see|check|watch|come|meet|visit|read|listen"
    r"|hear|go|taste|get)\b",
    re.IGNORECASE,
)

# ------------------------------------------------------------------ failures, fixes

_TECH_CONTEXT = re.compile(
    r"\b(?:build|builds|tests|test\s+suite|unit\s+tests?|deploy\w*|install\w*|compil\w+"
    r"|server|script|code|command|function|api|request|query|import|module|package|library"
    r"|app|program|bot|container|docker|pipeline|ci|migration|database|db|endpoint|http"
    r"|https|service|upload|download|login|page|website|site|cron|worker|cluster|pod|npm|pip"
    r"|python|java|node|rust|gradle|maven|webpack|lint\w*|type\s*check\w*"
    r"|startup|connection|socket|port|ssl|tls|cert\w*|config\w*|version"
    r"|upgrade|update|phone|laptop|computer|printer|browser|wifi|network|router)\b"
    r"|\b[45]\d\d\b|`",
    re.IGNORECASE,
)
_FAILURE_STRONG = re.compile(
    r"\b(?:errors?|errored|exceptions?|traceback|segfault|segmentation\s+fault|stack\s*trace"
    r"|exit\s+(?:code|status)\s+[1-9]\d*|non-zero\s+exit|\w+(?:Error|Exception))\b"
)
_FAILURE_WEAK = re.compile(
    r"\b(?:fail|fails|failed|failing|failure|crash|crashes|crashed|crashing|broken|breaks"
    r"|panic(?:s|ked)?|timed?\s*out|timeouts?|hangs|hung|freezes|froze"
    r"|(?:doesn't|does\s+not|didn't|did\s+not|won't|isn't|is\s+not|not)\s+(?:work|working"
    r"|start|starting|load|loading|compile|compiling|build|connect|connecting|run|running))\b",
    re.IGNORECASE,
)
_FAILURE_NEGATED = re.compile(
    r"\b(?:no|without|zero|0|never\s+any)\s+(?:more\s+)?(?:errors?|failures?|exceptions?"
    r"|crash(?:es)?|issues?|problems?)\b|\bno\s+longer\b|\banymore\b|\bany\s+more\b"
    r"|\btrial\s+(?:and|&)\s+error\b"
    r"|\b(?:error|exception)\s+handling\b",
    re.IGNORECASE,
)
_ERROR_IDENTIFIER = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\bexit\s+(?:code|status)\s+[1-9]|\b[45]\d\d\b|`[^`]+`"
    r"|\"[^\"]{4,}\"|\berrno\b",
)
_FIX = re.compile(
    r"\b(?:fixed\s+(?:it|this|that|the|by|with|in|after|now)|(?:the|a|one)\s+fix\s+(?:is|was|for)"
    r"|fixes\s+(?:the|this|it)|solved\s+(?:it|this|the|by|with)|resolved\s+(?:it|this|the|by"
    r"|with)|(?:is|was|got)\s+(?:fixed|solved|resolved)\s+by|workaround|the\s+solution\s+(?:is"
    r"|was)|solution:|fix:|(?:to|you\s+can|we\s+can|i)\s+(?:fix|solve|resolve)\s+(?:it|this"
    r"|that|the)\b|no\s+longer\s+(?:fails|crashes|errors|breaks|times\s+out)"
    r"|not\s+failing\s+anymore|(?:upgrading|downgrading|pinning|installing|reinstalling"
    r"|restarting|clearing|removing|deleting|adding|setting|changing|updating|switching"
    r"|rolling\s+back)\b[^.!?]{0,80}?\b(?:fixed|solved|resolved)\b)",
    re.IGNORECASE,
)
# Phrases that name a fix only when the sentence is about something technical
# ("it turned out to be fun" is not a fix).
_FIX_WEAK = re.compile(
    r"\b(?:(?:it|that|this)\s+works\s+now|(?:it|that|this)\s+worked\s+(?:after|once|when)"
    r"|turned\s+out\s+(?:to\s+be|that|i|we|the)|the\s+(?:root\s+cause|culprit|cause|problem"
    r"|issue|bug)\s+(?:is|was)|the\s+trick\s+(?:is|was))\b",
    re.IGNORECASE,
)
_FIX_NEGATED = re.compile(
    r"\b(?:need|needs|trying|try|tried|want|wants|have|has|going|how)\s+to\s+(?:fix|solve"
    r"|resolve)\b|\b(?:can't|cannot|couldn't|didn't|haven't|hasn't|not|never)\s+(?:be\s+)?"
    r"(?:fix|fixed|solve|solved|resolve|resolved)\b|\bstill\s+(?:broken|failing|crashing)\b",
    re.IGNORECASE,
)
_FIX_WORDS_TEXT = (
    "fixed fix fixes solved solve resolved resolve works worked now workaround solution "
    "turned out problem issue bug cause culprit trick"
)
_FIX_WORDS = frozenset(_FIX_WORDS_TEXT.split())
_SUGGESTION = re.compile(r"^(?:to\s+fix|you\s+can|try|we\s+can|one\s+option)\b", re.IGNORECASE)

# -------------------------------------------------------------------- code-aware

_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S
)
_SHELL_LANGS = frozenset(
    {"sh", "bash", "shell", "zsh", "fish", "console", "terminal", "shell-session"}
    | {"shellsession", "ps", "powershell", "pwsh", "cmd", "bat", "batch", "ksh"}
)
_PROGRAMS = frozenset(
    {"pip", "pip3", "python", "python3", "py", "uv", "uvx", "poetry", "pipx", "conda", "npm"}
    | {"npx", "yarn", "pnpm", "bun", "deno", "node", "git", "gh", "docker", "docker-compose"}
    | {"podman", "kubectl", "helm", "terraform", "make", "cmake", "cargo", "rustup", "go"}
    | {"apt", "apt-get", "brew", "dnf", "yum", "pacman", "apk", "snap", "curl", "wget", "ssh"}
    | {"scp", "rsync", "sudo", "cd", "ls", "rm", "mv", "cp", "mkdir", "chmod", "chown", "cat"}
    | {"grep", "find", "sed", "awk", "tar", "systemctl", "journalctl", "service", "pytest"}
    | {"ruff", "mypy", "black", "flake8", "tox", "nox", "java", "javac", "mvn", "gradle"}
    | {"./gradlew", "gradlew", "dotnet", "ruby", "gem", "bundle", "rails", "php", "composer"}
    | {"export", "source", "alembic", "django-admin", "flask", "uvicorn", "gunicorn", "psql"}
    | {"mysql", "redis-cli", "sqlite3", "mnemobot", "tsc", "eslint", "prettier", "jest", "vite"}
)
_PROSE_COMMAND = re.compile(
    r"\b(?:(?:pip3?|uv\s+pip|python3?\s+-m\s+pip)\s+install|uv\s+add|poetry\s+add"
    r"|npm\s+(?:install|i|ci)|yarn\s+add|pnpm\s+add|git\s+(?:clone|pull|push|fetch|checkout"
    r"|switch|rebase|merge|reset|stash|commit|status|log|diff|add|revert|cherry-pick|bisect"
    r"|tag|branch|remote|submodule|init|restore|clean|show|blame|worktree))"
    r"(?:\s+(?!(?:and|then|to|or|again|first|now|it|in|on|the|a|with|but|so|if)\b)"
    r"[\w./:@~^=<>!\[\],+-]+){0,6}"
)
_INLINE_CODE = re.compile(r"`([^`\n]{2,200})`")
_PROMPT = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.@-]+(?::[~\w/.-]*)?)?[$❯]\s+(.+)$")
_ERROR_LINE = re.compile(
    r"^\s*(?:(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::\s*.*)?"
    r"|(?:error|fatal|ERROR|FATAL|Error|Fatal|FAILED|FAIL)(?:\[[\w-]+\])?[:!]?\s+.+"
    r"|npm\s+ERR!\s+.+|panic:\s+.+|E\s{2,}\S.+|.*\bSegmentation\s+fault\b.*"
    r"|.*:\s+command\s+not\s+found\b.*|.*\bNo\s+such\s+file\s+or\s+directory\b.*"
    r"|.*\bPermission\s+denied\b.*|.*\bexited\s+with\s+(?:code|status)\s+[1-9]\d*.*"
    r"|.*\bcommand\s+failed\b.*)$"
)
_TRACEBACK_START = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?"
    r"|(?<![\w/.:-])[\w.@+-]+(?:/[\w.@+-]+)+"
    r"|(?<![\w/.:@-])[\w@+-]+(?:\.[\w-]+)*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|java|kt|kts|go|rs"
    r"|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sh|bash|zsh|ps1|json|ya?ml|toml|ini|cfg|conf|env"
    r"|lock|md|rst|txt|csv|sql|html?|css|scss|xml|gradle|tf|proto|ipynb|vue|svelte|dart"
    r"|lua|log)\b"
    r"|[A-Za-z]:\\(?:[\w .-]+\\)+[\w .-]+\.\w+"
)
_NOT_FILES = re.compile(
    r"^(?:node|vue|next|nuxt|react|express|d3|three|chart|angular|ember|backbone|socket\.io"
    r"|alpine|ember|p5|solid)\.js$",
    re.IGNORECASE,
)
_HAS_EXTENSION = re.compile(r"[^/\\]\.[A-Za-z]\w{0,7}$")


@dataclass(slots=True)
class CodeBlock:
    lang: str
    body: str
    # The prose sentence right before the block ("Install the missing package:").
    intro: str = ""


def split_code(text: str) -> tuple[str, list[CodeBlock]]:
    """Separate fenced code blocks and unfenced tracebacks from prose."""
    blocks: list[CodeBlock] = []
    prose_parts: list[str] = []
    position = 0
    for match in _FENCE.finditer(text):
        before = text[position : match.start()]
        prose_parts.append(before)
        intro_sentences = split_sentences(before)
        intro = intro_sentences[-1] if intro_sentences else ""
        blocks.append(CodeBlock(match.group(1).lower(), match.group(2), intro))
        prose_parts.append("\n")
        position = match.end()
    prose_parts.append(text[position:])
    prose = "".join(prose_parts)
    return _split_tracebacks(prose, blocks)


def _split_tracebacks(prose: str, blocks: list[CodeBlock]) -> tuple[str, list[CodeBlock]]:
    if "Traceback" not in prose:
        return prose, blocks
    kept: list[str] = []
    lines = prose.splitlines()
    index = 0
    while index < len(lines):
        if not _TRACEBACK_START.match(lines[index]):
            kept.append(lines[index])
            index += 1
            continue
        body = [lines[index]]
        index += 1
        while index < len(lines):
            line = lines[index]
            body.append(line)
            index += 1
            if line and not line[0].isspace() and _ERROR_LINE.match(line):
                break
        intro = split_sentences("\n".join(kept))
        blocks.append(CodeBlock("traceback", "\n".join(body), intro[-1] if intro else ""))
        kept.append("")
    return "\n".join(kept), blocks


def find_paths(text: str) -> list[str]:
    """File paths in `text` (not URLs, not "and/or", not "Node.js")."""
    found: dict[str, None] = {}
    for match in _PATH.finditer(text):
        path = match.group(0).rstrip(".,:;)")
        if _NOT_FILES.match(path) or not re.search(r"[A-Za-z]", path):
            continue
        anchored = path.startswith(("/", "~/", "./", "../")) or path[1:3] == ":\\"
        if "/" in path and not anchored and not _HAS_EXTENSION.search(path):
            continue  # "and/or", "src/app": too ambiguous without an extension
        if anchored and path.count("/") < 2 and not _HAS_EXTENSION.search(path):
            continue  # "/s", "/help": slash commands, not paths
        found[path] = None
    return list(found)


def _is_command(line: str) -> bool:
    words = line.split()
    if not words:
        return False
    first = words[0]
    if first == "sudo" and len(words) > 1:
        first = words[1]
    return first in _PROGRAMS or first.startswith(("./", "bin/", ".venv/bin/"))


@dataclass(slots=True)
class CommandRun:
    command: str
    error: str = ""


def commands_in_block(block: CodeBlock) -> list[CommandRun]:
    """The commands of a shell block, each with the first error line of its output."""
    lines = block.body.splitlines()
    prompted = [m for m in (_PROMPT.match(line) for line in lines) if m]
    runs: list[CommandRun] = []
    pending = ""
    for line in lines:
        if prompted:
            match = _PROMPT.match(line)
            if match is None:
                # Output of the previous command: remember its first error line.
                if runs and not runs[-1].error and _ERROR_LINE.match(line):
                    runs[-1].error = line.strip()[:ERROR_LINE_CHARS]
                continue
            text = match.group(1).strip()
        else:
            text = line.strip()
            if not text or text.startswith(("#", "//", "REM ", "::")):
                continue
            if block.lang not in _SHELL_LANGS and not _is_command(text):
                continue
        if pending:
            text = pending + " " + text
            pending = ""
        if text.endswith("\\"):
            pending = text[:-1].strip()
            continue
        runs.append(CommandRun(text[:300]))
    if pending:
        runs.append(CommandRun(pending[:300]))
    return runs


@dataclass(slots=True)
class ErrorSighting:
    line: str
    paths: list[str]
    command: str = ""


def errors_in_text(text: str) -> list[ErrorSighting]:
    """Error lines of code/log text; a traceback counts once, as its final exception line."""
    sightings: list[ErrorSighting] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if _TRACEBACK_START.match(line):
            body_paths: list[str] = []
            index += 1
            final = ""
            while index < len(lines):
                current = lines[index]
                index += 1
                body_paths.extend(find_paths(current))
                if current and not current[0].isspace() and _ERROR_LINE.match(current):
                    final = current.strip()
                    break
            if final:
                sightings.append(
                    ErrorSighting(final[:ERROR_LINE_CHARS], list(dict.fromkeys(body_paths)))
                )
            continue
        if _ERROR_LINE.match(line) and content_words(line):
            sightings.append(ErrorSighting(line.strip()[:ERROR_LINE_CHARS], find_paths(line)))
        index += 1
    return sightings


# ------------------------------------------------------------------ item building


def _cut(text: str, limit: int) -> str:
    """Cut at a sentence end, else at a word boundary, marking the cut with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    window = text[:limit]
    sentence_end = max(window.rfind(mark) for mark in (". ", "! ", "? ", "\n"))
    if sentence_end >= limit * 0.6:
        return window[: sentence_end + 1].rstrip() + " …"
    space = window.rfind(" ")
    if space >= limit * 0.6:
        window = window[:space]
    return window.rstrip(" ,;:") + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(slots=True)
class _Found:
    type: ItemType
    sentence: str
    confidence: float
    salience: float
    tags: list[str]
    origin: str  # "user", "assistant" or "tool"
    paths: list[str] = field(default_factory=list)
    content: str = ""


_LABELS = {
    ItemType.PREFERENCE: "Preference",
    ItemType.PROJECT_FACT: "Fact",
    ItemType.DECISION: "Decision",
    ItemType.TASK_STATE: "Task",
    ItemType.CONSTRAINT: "Constraint",
    ItemType.FAILURE: "Failure",
    ItemType.FIX: "Fix",
    ItemType.COMMAND_RESULT: "Command",
}


def _match_personal(sentence: str) -> _Found | None:
    normalized = _normalize_quotes(sentence)
    if is_question(sentence) or _HYPOTHETICAL_START.match(normalized):
        return None
    best: StatementRule | None = None
    for rule in PERSONAL_RULES:
        match = rule.pattern.search(normalized)
        if match is None or (best is not None and best.confidence >= rule.confidence):
            continue
        if rule.needs_object == "after" and not _has_durable_object(normalized[match.end() :]):
            continue
        if rule.needs_object == "before" and not _has_durable_object(normalized[: match.start()]):
            continue
        best = rule  # the most specific (most confident) reading of the sentence wins
    if best is None:
        return None
    hedged = bool(_HEDGE.search(normalized))
    confidence = min(best.confidence, 0.6) if hedged else best.confidence
    tags = [best.tag] + (["hedged"] if hedged else [])
    return _Found(best.type, sentence, confidence, best.salience, tags, "user")


def _is_order_must(sentence: str) -> bool:
    for match in _MUST.finditer(sentence):
        subject = (match.group("subject") or "").lower()
        following = match.group("next").lower()
        after = (match.group("after") or "").lower()
        if following in _GUESSING_VERBS or subject in ("a", "i"):
            continue  # "must have been", "a must", "I must say"
        if following == "be" and (
            not subject
            or subject in _GUESSING_SUBJECTS
            or after in _EVALUATIVE
            or after.endswith("ing")
        ):
            continue  # "must be so rewarding", "you must be tired", "must be having fun"
        return True
    return False


def _match_constraint(sentence: str, speaker: str | None) -> _Found | None:
    normalized = _normalize_quotes(sentence)
    if is_question(sentence) or _HYPOTHETICAL_START.match(normalized):
        return None
    if _CONSTRAINT_NOT.match(normalized) or _ENTHUSIASM.search(normalized):
        return None
    if len(content_words(normalized)) < 2:
        return None  # "Never mind!", "Always!"
    if _FIRST_PERSON_MODAL.search(normalized):
        return None  # "I have to pick up the kids": the user's errand, not a rule for us
    if _CONSTRAINT_STRONG.search(normalized) or _is_order_must(normalized):
        confidence = 0.85
    elif _CONSTRAINT_IMPERATIVE.match(normalized):
        # Among several people an order is mostly advice to one another, not a rule for
        # the assistant: keep it as an episode, below the promotion threshold.
        confidence = 0.7 if speaker else 0.85
    elif _CONSTRAINT_SOFT.search(normalized) or (
        _REQUIRES.search(normalized) and _TECH_CONTEXT.search(normalized)
    ):
        confidence = 0.7
    else:
        return None
    if _HEDGE.search(normalized):
        confidence = min(confidence, 0.6)
    return _Found(ItemType.CONSTRAINT, sentence, confidence, 0.8, ["constraint"], "user")


def _match_fix(sentence: str, origin: str) -> _Found | None:
    if is_question(sentence) or _FIX_NEGATED.search(sentence):
        return None
    technical = _TECH_CONTEXT.search(sentence) or _FAILURE_STRONG.search(sentence)
    if not (_FIX.search(sentence) or (_FIX_WEAK.search(sentence) and technical)):
        return None
    if len([w for w in content_words(sentence) if w not in _FIX_WORDS]) < 2:
        return None  # "Fixed it!", "That worked now, thanks"
    suggested = origin == "assistant" or bool(_SUGGESTION.match(sentence))
    confidence = 0.65 if suggested else 0.85
    tags = ["fix", "suggested" if suggested else "confirmed"]
    return _Found(ItemType.FIX, sentence, confidence, 0.75, tags, origin)


def _match_failure(sentence: str, origin: str) -> _Found | None:
    if _FAILURE_NEGATED.search(sentence):
        return None
    strong = bool(_FAILURE_STRONG.search(sentence))
    weak = bool(_FAILURE_WEAK.search(sentence)) and bool(_TECH_CONTEXT.search(sentence))
    if not (strong or weak):
        return None
    concrete = bool(_ERROR_IDENTIFIER.search(sentence))
    if is_question(sentence) and not concrete:
        return None
    if len(content_words(sentence)) < 2:
        return None
    # Only the user's own report of a concrete error is sure enough to become durable.
    confidence = 0.8 if concrete and origin != "assistant" else 0.7
    return _Found(ItemType.FAILURE, sentence, confidence, 0.6, ["failure"], origin)


def _error_tags(line: str) -> list[str]:
    match = re.search(r"\b([A-Z]\w*(?:Error|Exception))\b", line)
    return [match.group(1).lower()] if match else []


def _program_tag(command: str) -> list[str]:
    words = command.split()
    if words and words[0] == "sudo":
        words = words[1:]
    return [PurePath(words[0]).name.lower()] if words else []


class _TurnExtractor:
    def __init__(self, event: TurnMemoryEvent, code_aware: bool) -> None:
        self.event = event
        self.speaker = (event.speaker or "").strip() or None
        self.code_aware = code_aware
        self.found: list[_Found] = []
        # Errors seen so far in reading order (user, tools, assistant): a later fix binds
        # to the most recent one.
        self.errors: list[ErrorSighting] = []
        self.fixes: dict[str, _Found] = {}
        self.commands: set[str] = set()

    def run(self) -> list[_Found]:
        event = self.event
        self._scan(event.user_text, "user")
        for output in event.tool_outputs:
            self._scan(output, "tool")
        self._scan(event.assistant_text, "assistant")
        self._finish_fix_tags()
        return self.found

    def _scan(self, text: str, origin: str) -> None:
        if not text or not text.strip():
            return
        # A pasted log or a tool dump can be megabytes; what matters is near its start
        # (what the user says) or, for tool output, its end (where errors land).
        text = text[-MAX_SCAN_CHARS:] if origin == "tool" else text[:MAX_SCAN_CHARS]
        if self.code_aware:
            if origin == "tool":
                self._scan_tool_output(text)
            else:
                self._scan_code(text, origin)
        if origin == "tool":
            return  # tool output is data, not statements
        prose, _blocks = split_code(text)
        for sentence in split_sentences(prose):
            self._scan_sentence(sentence, origin)

    # -------------------------------------------------------------- sentences

    def _scan_sentence(self, sentence: str, origin: str) -> None:
        sentence = sentence if len(sentence) <= SENTENCE_CHARS else _cut(sentence, SENTENCE_CHARS)
        paths = find_paths(sentence) if self.code_aware else []
        fix = _match_fix(sentence, origin)
        if fix is not None:
            if self.code_aware and self.errors:
                self._extend_fix(self.errors[-1], sentence, fix.confidence, origin, paths)
            else:
                fix.paths = paths
                self.found.append(fix)
            return
        failure = _match_failure(sentence, origin)
        if failure is not None:
            if any(sentence in known.line or known.line in sentence for known in self.errors):
                return  # the error line itself, already kept by the code-aware pass
            failure.paths = paths
            failure.tags += _error_tags(sentence)
            self.found.append(failure)
            return
        if origin != "user":
            return
        statement = _match_constraint(sentence, self.speaker) or _match_personal(sentence)
        if statement is not None:
            statement.paths = paths
            self.found.append(statement)

    # ------------------------------------------------------------------- code

    def _scan_code(self, text: str, origin: str) -> None:
        """Commands, error lines and code blocks of a message, in the order they appear."""
        position = 0
        for match in _FENCE.finditer(text):
            before = text[position : match.start()]
            self._scan_code_prose(before, origin)
            intro_sentences = split_sentences(_INLINE_CODE.sub(" ", before))
            intro = intro_sentences[-1] if intro_sentences else ""
            self._scan_block(CodeBlock(match.group(1).lower(), match.group(2), intro), origin)
            position = match.end()
        self._scan_code_prose(text[position:], origin)

    def _scan_code_prose(self, text: str, origin: str) -> None:
        suggested = origin == "assistant"
        lines = text.splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            index += 1
            if _TRACEBACK_START.match(line):
                body = [line]
                while index < len(lines):
                    body.append(lines[index])
                    index += 1
                    if body[-1][:1].strip() and _ERROR_LINE.match(body[-1]):
                        break
                self._add_errors(errors_in_text("\n".join(body)), origin)
                continue
            prompt = _PROMPT.match(line)
            if prompt and _is_command(prompt.group(1).strip()):
                self._add_command(CommandRun(prompt.group(1).strip()), "", origin, suggested)
                continue
            if _ERROR_LINE.match(line) and not is_question(line):
                # Unfenced log lines ("ERROR: could not connect to ...") pasted into prose.
                sighting = ErrorSighting(line.strip()[:ERROR_LINE_CHARS], find_paths(line))
                self._add_errors([sighting], origin)
                continue
            spans: list[tuple[int, str]] = [
                (m.start(), m.group(1).strip())
                for m in _INLINE_CODE.finditer(line)
                if _is_command(m.group(1).strip())
            ]
            plain = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
            spans += [(m.start(), m.group(0).strip()) for m in _PROSE_COMMAND.finditer(plain)]
            for _start, command in sorted(spans):
                self._add_command(CommandRun(command), "", origin, suggested)

    def _scan_block(self, block: CodeBlock, origin: str) -> None:
        suggested = origin == "assistant"
        if block.lang in _SHELL_LANGS or (not block.lang and _looks_like_shell(block.body)):
            for run in commands_in_block(block):
                self._add_command(run, block.intro, origin, suggested)
            return
        sightings = errors_in_text(block.body)
        self._add_errors(sightings, origin, block.intro)
        if suggested and self.errors and not sightings and block.intro:
            # A code change proposed right after an error is the fix to remember.
            paths = find_paths(block.body) + find_paths(block.intro)
            self._extend_fix(self.errors[-1], _one_line(block.intro), 0.65, origin, paths)

    def _scan_tool_output(self, text: str) -> None:
        if any(_PROMPT.match(line) for line in text.splitlines()):
            for run in commands_in_block(CodeBlock("console", text)):
                self._add_command(run, "", "tool", suggested=False)
        else:
            self._add_errors(errors_in_text(text), "tool")

    def _add_errors(self, sightings: Iterable[ErrorSighting], origin: str, intro: str = "") -> None:
        for sighting in sightings:
            if any(existing.line == sighting.line for existing in self.errors):
                continue
            if len(self.errors) >= MAX_ERRORS:
                return
            self.errors.append(sighting)
            content = sighting.line
            if sighting.command:
                content = f"`{sighting.command}` failed: {sighting.line}"
            elif intro and len(content_words(intro)) >= 2 and not is_question(intro):
                content = f"{sighting.line} ({_one_line(intro).rstrip(':')})"
            confidence = 0.85 if origin in ("user", "tool") else 0.7
            self.found.append(
                _Found(
                    ItemType.FAILURE,
                    sighting.line,
                    confidence,
                    0.65,
                    ["failure", "error", *_error_tags(sighting.line)],
                    origin,
                    paths=list(sighting.paths),
                    content=content,
                )
            )

    def _add_command(self, run: CommandRun, intro: str, origin: str, suggested: bool) -> None:
        if run.command in self.commands or len(self.commands) >= MAX_COMMANDS:
            return
        self.commands.add(run.command)
        paths = find_paths(run.command)
        if run.error:
            sighting = ErrorSighting(run.error, paths + find_paths(run.error), run.command)
            self._add_errors([sighting], origin)
            return
        line = f"$ {run.command}"
        useful_intro = intro and len(content_words(intro)) >= 2 and not is_question(intro)
        if suggested and self.errors:
            # A command suggested after an error is how that error gets fixed.
            if useful_intro:
                self._extend_fix(self.errors[-1], _one_line(intro), 0.7, origin, [])
            self._extend_fix(self.errors[-1], line, 0.7, origin, paths, _program_tag(run.command))
            return
        content = f"{_one_line(intro)}\n{line}" if useful_intro else line
        tags = ["command", *_program_tag(run.command)] + (["suggested"] if suggested else [])
        self.found.append(
            _Found(
                ItemType.COMMAND_RESULT,
                run.command,
                0.7 if suggested else 0.8,
                0.5,
                tags,
                origin,
                paths=paths,
                content=content,
            )
        )

    def _extend_fix(
        self,
        error: ErrorSighting,
        step: str,
        confidence: float,
        origin: str,
        paths: list[str],
        extra_tags: list[str] | None = None,
    ) -> None:
        """Add one step (a sentence or a command) to the FIX item of `error`."""
        fix = self.fixes.get(error.line)
        if fix is None:
            fix = _Found(
                ItemType.FIX,
                step,
                confidence,
                0.75,
                ["fix", *_error_tags(error.line)],
                origin,
                paths=list(error.paths),
                content=f"Fix for `{error.line}`:",
            )
            self.fixes[error.line] = fix
            self.found.append(fix)
        if step in fix.content:
            return
        fix.content += f"\n{step}"
        fix.confidence = max(fix.confidence, confidence)
        fix.paths = list(dict.fromkeys(fix.paths + paths))
        fix.tags = list(dict.fromkeys(fix.tags + (extra_tags or [])))

    def _finish_fix_tags(self) -> None:
        for fix in self.fixes.values():
            confirmed = fix.confidence >= 0.8
            fix.tags.append("confirmed" if confirmed else "suggested")


def _looks_like_shell(body: str) -> bool:
    lines = [line for line in body.splitlines() if line.strip()]
    return bool(lines) and all(
        _PROMPT.match(line) or _is_command(line.strip()) or line.strip().startswith("#")
        for line in lines[:5]
    )


def _basename(path: str) -> str:
    return PurePath(path.replace("\\", "/")).name


def _speaker_tag(speaker: str) -> str:
    return "speaker:" + "-".join(speaker.lower().split())


def extract_items(
    event: TurnMemoryEvent, *, code_aware: bool, id_factory: Callable[[], str]
) -> list[MemoryItem]:
    """The EPISODIC items of one turn: the turn itself, then what was derived from it.

    Every derived item is EPISODIC too; promotion moves the confident ones to the
    SEMANTIC/PROCEDURAL layers. Pure function of the event (and the ids it is given).
    """
    user_text = event.user_text or ""
    assistant_text = event.assistant_text or ""
    if not user_text.strip() and not assistant_text.strip():
        return []
    speaker = (event.speaker or "").strip() or None
    found = _TurnExtractor(event, code_aware).run()

    derived: list[MemoryItem] = []
    seen: set[str] = set()
    for finding in found:
        if len(derived) >= MAX_DERIVED_ITEMS:
            break
        item = _derived_item(event, finding, speaker, id_factory)
        if item.fingerprint in seen:
            continue
        seen.add(item.fingerprint)
        derived.append(item)

    items: list[MemoryItem] = []
    small_talk = is_small_talk(user_text[:MAX_SCAN_CHARS])
    if derived or not small_talk or (not user_text.strip() and assistant_text):
        items.append(_turn_item(event, speaker, found, id_factory))
    items.extend(derived)
    return items


def _derived_item(
    event: TurnMemoryEvent, finding: _Found, speaker: str | None, id_factory: Callable[[], str]
) -> MemoryItem:
    body = finding.content or finding.sentence
    if speaker and finding.origin == "user":
        body = f"{speaker}: {body}"
    label = _LABELS[finding.type]
    title_label = f"{label} ({speaker})" if speaker and finding.origin == "user" else label
    tags = list(finding.tags)
    if speaker and finding.origin == "user":
        tags.append(_speaker_tag(speaker))
    tags.append(f"from:{finding.origin}")
    tags.extend(f"file:{_basename(path)}" for path in finding.paths)
    references = list(event.message_refs) + [f"file:{path}" for path in finding.paths]
    return MemoryItem(
        id=id_factory(),
        layer=Layer.EPISODIC,
        type=finding.type,
        title=f"{title_label}: {_cut(_one_line(finding.content or finding.sentence), TITLE_CHARS)}",
        content=body,
        scope=event.scope,
        created_at=event.at,
        updated_at=event.at,
        tags=list(dict.fromkeys(tags)),
        references=list(dict.fromkeys(references)),
        source=finding.origin,
        confidence=finding.confidence,
        salience=finding.salience,
        fingerprint=fingerprint(finding.type, body),
    )


def _turn_item(
    event: TurnMemoryEvent,
    speaker: str | None,
    found: list[_Found],
    id_factory: Callable[[], str],
) -> MemoryItem:
    user_text = event.user_text.strip()
    assistant_text = event.assistant_text.strip()
    parts: list[str] = []
    if user_text:
        parts.append(f"{speaker or 'User'}: {_cut(user_text, TURN_USER_CHARS)}")
    if assistant_text:
        parts.append(f"Assistant: {_cut(assistant_text, TURN_ASSISTANT_CHARS)}")
    content = "\n".join(parts)

    lead_text = (user_text or assistant_text)[:MAX_SCAN_CHARS]
    first = split_sentences(split_code(lead_text)[0]) or [lead_text]
    title = _cut(_one_line(first[0]), TITLE_CHARS)
    if speaker and user_text:
        title = f"{speaker}: {title}"

    tags = ["turn"]
    if speaker:
        tags.append(_speaker_tag(speaker))
    if "```" in user_text or "```" in assistant_text:
        tags.append("code")
    if user_text and any(is_question(s) for s in split_sentences(user_text[:MAX_SCAN_CHARS])):
        tags.append("question")
    tags.extend(_LABELS[f.type].lower() for f in found)
    paths = list(dict.fromkeys(path for f in found for path in f.paths))[:10]
    tags.extend(f"file:{_basename(path)}" for path in paths)
    # The turn item records what happened; TASK_STATE is the closest of the fixed types,
    # and at TURN_CONFIDENCE it stays episodic unless promoted by hand.
    item_type = ItemType.TASK_STATE
    return MemoryItem(
        id=id_factory(),
        layer=Layer.EPISODIC,
        type=item_type,
        title=title,
        content=content,
        scope=event.scope,
        created_at=event.at,
        updated_at=event.at,
        tags=list(dict.fromkeys(tags)),
        references=list(event.message_refs) + [f"file:{path}" for path in paths],
        source="turn",
        confidence=TURN_CONFIDENCE,
        salience=0.6 if found else 0.5,
    )
