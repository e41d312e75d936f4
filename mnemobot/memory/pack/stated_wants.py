"""A question asking for advice, and the turns where the person said what they want.

"What would you suggest for my living room?" is answered by what the person said they
like, want or chose ("I'm looking for decor that also gives storage", "I love baking in the
afternoon", "I'm considering aquatic therapy over more yoga"), though few of those words
are the question's. Such a statement is seldom a standing request of its own (it is said
while asking something else) and the turn holding it competes with every other turn on
the subject. So when the message asks for advice, a matching turn in which the person
states a want of their own ranks a little higher (`Ranking.stated_want_boost`).

Both readings are pure functions of the text, in the five languages the extraction knows;
a miss costs one turn's rank, not a wrong answer.
"""

from __future__ import annotations

import re

from mnemobot.memory.pack.figures import ASSISTANT_TURN, REPLY_PART

# Asking what to do, choose or consider: "what would you suggest", "any tips", "how should
# I", "help me choose", "¿qué me recomiendas?", "посоветуй", "推荐".
_ASKS_FOR_ADVICE = re.compile(
    r"\b(?:suggest\w*|recommend\w*|advice|advise|tips?|ideas?|should\s+I|what\s+would\s+you"
    r"|how\s+(?:should|can|could|do|would|might)\s+I|help\s+me\s+(?:choose|decide|pick|find"
    r"|plan|figure|organi[sz]e|structure)|best\s+(?:way|options?|approach|time)"
    r"|(?:good|right)\s+time\s+for\s+me|options?|approach(?:es)?|strateg(?:y|ies)|consider)\b"
    r"|\b(?:empfiehl\w*|empfehl\w*|vorschl\w*|tipps?|soll(?:te)?\s+ich|rat(?:schlag|schläge)?"
    r"|schlägst\s+du|schlagen\s+Sie)\b"
    r"|\b(?:посовету\w*|порекоменду\w*|совет\w*|предлож\w*|стоит\s+ли|как\s+мне|что\s+мне)\b"
    r"|\b(?:recomiend\w*|recomend\w*|sugier\w*|suger\w*|consejos?|debería|qué\s+me)\b"
    r"|推荐|建议|应该|怎么安排",
    re.IGNORECASE,
)

# The asking is for the person asking, not about others ("What advice did Tim give John?"):
# they or the assistant are named, or the assistant is asked outright ("Посоветуй ...").
_ASKER_OR_ASSISTANT = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|me|my|myself|you|your)\b"
    r"|\b(?:ich|mir|mich|mein\w*|du|dir|dich)\b"
    r"|\b(?:я|мне|меня|мой|моя|моё|мои|мою|ты|тебе|вы|вам)\b"
    r"|\b(?:yo|me|mi|mis|mí|tú|te|usted)\b"
    r"|[我你您]|^\W*(?:please\s+)?(?:suggest|recommend|advise)\b|\bempfiehl\w*"
    # Asked of the assistant, not told of others ("Что предложил Тим?"): "посоветуй",
    # "что посоветуешь".
    r"|\b(?:посоветуй|порекомендуй|подскажи|предложи)(?:те)?\b"
    r"|\b(?:посоветуе|порекомендуе|подскаже|предложи)(?:шь|те)\b",
    re.IGNORECASE,
)

# The person saying what they like, want, look for or chose, in the first person.
_MODIFIER = r"(?:(?:really|also|still|generally|usually|definitely|absolutely|actually|just)\s+)*"
_STATES_WANT = re.compile(
    r"\bI\s+" + _MODIFIER + r"(?:love|like|enjoy|prefer|want|value|care\s+about|hate|dislike"
    r"|prioriti[sz]e|chose|picked|opted|settled\s+on|went\s+with)\b"
    r"|\bI(?:'m|\s+am)\s+" + _MODIFIER + r"(?:looking\s+for|interested\s+in|considering"
    r"|leaning\s+towards?|keen\s+on|fond\s+of|into|a\s+(?:big\s+)?fan\s+of)\b"
    r"|\bI(?:'ve|\s+have)\s+(?:been\s+)?" + _MODIFIER + r"(?:looking\s+for|considering|leaning"
    r"|decided|chosen|opted|settled)\b"
    r"|\bI(?:'d|\s+would)\s+(?:much\s+)?(?:rather|prefer|like|love)\b"
    r"|\b(?:I|we)\s+" + _MODIFIER + r"need\s+(?:a|an|some|something|more)\b"
    r"|\bwe(?:'re|\s+are)\s+" + _MODIFIER + r"(?:looking\s+for|interested\s+in|considering)\b"
    r"|\bwe\s+" + _MODIFIER + r"(?:love|like|enjoy|prefer|want)\b"
    r"|\bmy\s+(?:favou?rite|preference|priority|priorities)\b|\bmakes\s+the\s+most\s+sense\b"
    r"|\bich\s+(?:\w+\s+)?(?:mag|liebe|bevorzuge|möchte|suche|wünsche|brauche)\b"
    r"|\bwir\s+(?:\w+\s+)?(?:mögen|lieben|bevorzugen|möchten|suchen|brauchen)\b"
    r"|\bmir\s+ist\s+(?:\w+\s+)?(?:wichtig|lieber)\b|\bam\s+liebsten\b"
    r"|\bя\s+(?:\w+\s+)?(?:люблю|предпочитаю|хочу|ищу|выбрал\w*)\b"
    # Russian leaves the "я" out at the start of a sentence: "Ищу квартиру у парка".
    r"|(?:^|[.!?:]\s+)(?:люблю|предпочитаю|хочу|ищу|ищем|хотим)\b"
    r"|\b(?:мне|нам)\s+(?:\w+\s+)?(?:нравится|нравятся|важн\w+|нужн\w+)\b"
    r"|\b(?:(?:me|nos)\s+(?:gusta|gustan|encanta|encantan|interesa)|prefiero|quiero|busco"
    r"|necesito|buscamos|queremos|necesitamos|estoy\s+buscando|estamos\s+buscando|elegí)\b"
    r"|我们?(?:(?:更|比较|很|真的)?喜欢|爱|想要|希望|在找|需要|偏好|倾向于|选择了|决定)",
    re.IGNORECASE,
)
# The want is looked for this far into what the person said: a statement before asking
# comes first ("I'm looking for an apartment with ..., can you help"), and the search stays
# linear on a long message.
SCAN_CHARS = 600


def asks_for_advice(text: str) -> bool:
    """Whether the message asks what the person should do, choose or consider."""
    asked = text[:SCAN_CHARS]
    return (
        _ASKS_FOR_ADVICE.search(asked) is not None and _ASKER_OR_ASSISTANT.search(asked) is not None
    )


def states_own_want(content: str) -> bool:
    """Whether the person's part of a turn's `content` says what they like, want or chose
    (a turn of the assistant alone says nothing of the person)."""
    if ASSISTANT_TURN.match(content):
        return False
    said = content[:SCAN_CHARS].partition(REPLY_PART)[0]
    return _STATES_WANT.search(said) is not None
