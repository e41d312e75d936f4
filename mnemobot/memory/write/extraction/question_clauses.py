"""A statement the user makes before asking: "I love baking in the afternoon, do you think ...?".

A question states nothing, so extraction skips it. But people mostly write one long
sentence that says something about themselves and then asks about it: "I'm planning to
meet Robert at the lobby at 6 PM on April 25, can you suggest what to bring?", "I love
baking in the afternoon between 2-5 PM, do you think the light makes a difference?". The
first part is a statement like any other; skipped with the question, what the person said
about themselves was kept only inside a long turn the pack seldom picks.

`statement_before_question` cuts that leading part off: the sentence must be a question,
start with the speaker ("I", "my", "я", "ich", "yo", "我" ...) and turn to the asking
after a comma or a dash ("..., can you", "..., how", "..., but I'm not sure"). What it
returns is read by the same statement rules as any sentence, so a hedge, a hypothetical
or small talk stays nothing.

On BEAM's 500K development chats (the first five) 478 sentences had such a leading part,
and the statement rules kept 51 of them (29 plans, 8 facts, 8 preferences, 6 decisions).
"""

from __future__ import annotations

import re

from mnemobot.memory.write.extraction.words import is_question

# The speaker at the start of the sentence, after an interjection.
_SPEAKER_FIRST = re.compile(
    r"^(?:(?:so|and|also|well|hmm+|ok|okay|actually|honestly|btw)[,]?\s+)?"
    r"(?:I\b|I'm\b|I've\b|I'd\b|I'll\b|my\b|я\b|мне\b|мой\b|моя\b|мои\b|моё\b|ich\b|mein\w*\b"
    r"|yo\b|mi\b|mis\b|我)",
    re.IGNORECASE,
)
# Where the statement ends and the asking (or a doubt about it) begins.
_TURN_TO_ASKING = re.compile(
    r",\s*(?:and\s+|so\s+)?(?:do|does|can|could|would|will|what|how|which|should|is|are|any"
    r"|where|when|why|please)\b"
    r"|,\s*(?:but|so|though)\b"
    r"|,\s*and\s+(?:I(?:'m|\s+am)\s+(?:not\s+sure|wondering|curious|trying|looking)|I\s+(?:want|need"
    r"|wonder|was\s+wondering)|I'd\s+like)\b"
    r"|(?:,\s*|\s)(?:I(?:'m|\s+am)\s+wondering|I\s+wonder|I\s+was\s+wondering)\b"
    r"|\s[-–—]\s*(?:do|can|could|would|what|how|which|should|is|are|any)\b"
    r"|,\s*(?:но|так\s+что|можешь|можете|как|что|какие|какой|стоит|подскажи|посоветуй)\b"
    r"|,\s*(?:aber|also|kannst|können|könntest|wie|was|welche|soll)\b"
    r"|,\s*[¿]?(?:pero|así\s+que|puedes|puede|podrías|cómo|qué|cuál|debo)\b"
    r"|[，,](?:但|所以|你|能|可以|怎么|请|有什么)",
    re.IGNORECASE,
)
# A polite opening before the asking, not a statement about oneself ("I hate to ask, but
# ...", "I prefer not to say, but why ...?").
_POLITE_OPENING = re.compile(
    r"^(?:I\s+(?:hate|don't\s+want|do\s+not\s+want)\s+to\s+(?:ask|say|bother|admit|interrupt"
    r"|be\s+a\s+pain|sound)|I(?:'d|\s+would)?\s+(?:prefer|rather)\s+not\s+(?:to\s+)?say"
    r"|I(?:'m|\s+am)\s+(?:sorry|afraid))\b",
    re.IGNORECASE,
)
# The statement is looked for this far into the sentence: a longer lead-in is an account,
# not a statement before a question, and the search stays linear on hostile text.
SCAN_CHARS = 600
# Shorter than this, the leading part is a lead-in ("I see, can you ..."), not a statement;
# a Chinese character says about as much as a short word.
SHORTEST_STATEMENT_CHARS = 12
SHORTEST_CJK_STATEMENT_CHARS = 4
_CJK = re.compile(r"[\u3400-\u9fff]")


def statement_before_question(sentence: str) -> str | None:
    """The statement a question `sentence` opens with, or None when it opens with none."""
    if not is_question(sentence) or not _SPEAKER_FIRST.match(sentence):
        return None
    turn = _TURN_TO_ASKING.search(sentence[:SCAN_CHARS])
    if turn is None:
        return None
    statement = sentence[: turn.start()].strip(" ,")
    shortest = SHORTEST_CJK_STATEMENT_CHARS if _CJK.search(statement) else SHORTEST_STATEMENT_CHARS
    if len(statement) < shortest or is_question(statement) or _POLITE_OPENING.match(statement):
        return None
    return statement
