"""No secret on the page: what the bot knows to be secret, and what looks like one.

The CLI hands over the bot's own redaction (its tokens, API keys and the passwords of its
URLs, the access tokens of this page: `bot.cli.logging_setup.redact`). Memory holds what
people said and tools returned, so a key pasted into a chat is in its files too; the page
masks what has the shape of a credential as well: the password of a URL, a URL's key or
token parameter, a Telegram bot token, an `sk-` style API key, a bearer token.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MASK = "[REDACTED]"

_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/@:]*):[^\s/@]+@")
_URL_SECRET_QUERY = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|secret|password|passwd|sig|"
    r"signature|auth)=)[^&\s#]+"
)
_BOT_TOKEN = re.compile(r"\b\d{6,12}:[A-Za-z0-9_-]{30,}")
_API_KEY = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}")


def masked(text: str) -> str:
    """`text` with every credential-shaped part replaced by `MASK`."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{MASK}@", text)
    text = _URL_SECRET_QUERY.sub(lambda m: m.group(1) + MASK, text)
    text = _BOT_TOKEN.sub(MASK, text)
    text = _API_KEY.sub(MASK, text)
    return _BEARER.sub(lambda m: m.group(1) + MASK, text)


def shown(redact_known: Callable[[str], str]) -> Callable[[str], str]:
    """What every text on the page goes through: the known secrets, then the shapes."""

    def clean(text: str) -> str:
        return masked(redact_known(text))

    return clean
