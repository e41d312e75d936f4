"""A request to forget, on a model server that drops tools: the reply says nothing was.

Forgetting one thing goes through the memory tool, which such a server never offers. Found
live (llama-cpp-python's server, SmolLM2): "Forget my locker code." got the model's "I'm
sorry, I don't have a locker code." alone; the code stayed in memory and the next turn's
MemoryPack sent it to the model again. The user believed it gone. The reply to the request
itself now carries one line that says nothing was forgotten and what can be done
(`dropped_tool_note`).

Whether a message asks to forget is read from its words (`asks_to_forget`), conservatively:
a missing note costs what it did before, a false one puzzles. "Don't forget to call", "I
forgot my keys", "forget it" (never mind) and "vergiss nicht" ask nothing of the memory.
"""

from __future__ import annotations

import re

from mnemobot.bot.i18n import N_

# What the chat reads under the model's reply (the fixes the operator's log and
# docs/local-models.md name).
FORGETTING_OFF = N_(
    "⚠️ Nothing was forgotten: this bot's model server drops tools, so memory cannot be "
    "changed from the chat here. The bot's operator can forget it on the memory page "
    "(mnemobot web), or fix the server: llama-server with --jinja, llama-cpp-python with "
    "--chat_format chatml-function-calling, or a model whose template has tools."
)

# Where an imperative may stand: a clause's start, after a word of politeness or a request.
_LEAD = (
    r"(?:^|(?<=[.!?,;:\n(]))\s*"
    r"(?:(?:@\w+|please|pls|now|ok|okay|so|and|also|then|just|can\s+you|could\s+you|would\s+you"
    r"|will\s+you|i\s+want\s+you\s+to|пожалуйста|теперь|и|а|так|ну|можешь|bitte|jetzt|und"
    r"|kannst\s+du|por\s+favor|ahora|y|puedes|podrías|podrias)[\s,]+)*"
)
# The imperative and what it takes: "forget my code", "забудь код", "vergiss meine PIN",
# "olvida mi dirección"; "forget (about) it", "vergiss es" alone are "never mind".
_ASK = re.compile(
    _LEAD + r"(?:"
    r"forget\s+(?!(?:about\s+)?it\s*(?:[.!?,;]|$))(?:about\s+)?\w"
    r"|(?:забудь|забудьте)(?:\s+|,\s*(?=что\b))\w"
    r"|(?:vergiss|vergessen\s+sie)(?:\s+|,\s*(?=dass\b))(?!(?:nicht|nie|es\s+nicht)\b|es\s*(?:[.!?,;]|$))\w"
    r"|(?:olvida|olvide|olvídate|olvidate|olvídese|olvidese)\s+(?:de\s+)?\w"
    r")",
    re.IGNORECASE | re.MULTILINE,
)
# Chinese: "忘掉/忘记" asked of the bot at a clause's start, or "把…忘掉"; "我忘记了" is "I
# forgot", "别忘了" and "不要忘记" are "don't forget".
_CHINESE = re.compile(
    r"(?:^|[，。！？,.!?\s])(?:请你?|帮我|你)?(?:忘掉|忘记)(?!了)|把.{1,30}?忘(?:掉|记)",
    re.MULTILINE,
)


def asks_to_forget(text: str) -> bool:
    """Whether `text` asks the bot to forget something (not "don't forget", "I forgot")."""
    return bool(_ASK.search(text) or _CHINESE.search(text))
