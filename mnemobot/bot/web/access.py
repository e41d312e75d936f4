"""Who may open the page: an access token on every request, and a check on every form.

Tokens come from the environment (`MNEMOBOT_WEB_TOKEN=TOKEN`, named "operator", or
`MNEMOBOT_WEB_TOKENS=anna:TOKEN,ben:TOKEN` to tell people apart in the log), else one is
made at start and printed in the page's address. A request shows its token in one of
three ways: `Authorization: Bearer TOKEN` (scripts), the cookie the page sets (HttpOnly,
SameSite=Strict), or `?token=TOKEN` once, which sets that cookie and sends the browser on
to the same address without it (so the token leaves the address bar and the history).
Anything else gets 401 and no data.

A form that changes memory carries a CSRF token, an HMAC of the token's name under a key
made at start: a page of another site can neither read it nor guess it, and the cookie is
not sent with its requests anyway (SameSite=Strict).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

TOKEN_VARIABLE = "MNEMOBOT_WEB_TOKEN"
TOKENS_VARIABLE = "MNEMOBOT_WEB_TOKENS"
# The name a single MNEMOBOT_WEB_TOKEN is logged under, and a token made at start.
OPERATOR_NAME = "operator"
GENERATED_NAME = "local"
# 16 characters of a random token are ~96 bits: out of reach of guessing over HTTP.
MIN_TOKEN_CHARS = 16
# A made token: 32 random bytes, 43 URL-safe characters.
GENERATED_TOKEN_BYTES = 32
_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,40}$")
_BEARER = "bearer "


# Where a checked request keeps its token's name (typed keys since aiohttp 3.13).
_WHO: Any = web.RequestKey("who", str) if hasattr(web, "RequestKey") else "who"


def set_who(request: web.Request, name: str) -> None:
    request[_WHO] = name


def who(request: web.Request) -> str:
    """The name of the token the request came with (every page request has one)."""
    return str(request[_WHO])


class TokenError(ValueError):
    """An access token in the environment that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class WebToken:
    name: str
    value: str

    def __repr__(self) -> str:
        return f"WebToken({self.name!r}, <hidden>)"


def _checked(name: str, value: str, variable: str) -> WebToken:
    if not _NAME.match(name):
        raise TokenError(
            f"{variable}: {name!r} is not a usable name; use letters, digits, '.', '_', '-' "
            "or '@' (at most 40), e.g. anna:TOKEN"
        )
    if len(value) < MIN_TOKEN_CHARS or value != value.strip():
        raise TokenError(
            f"{variable}: the token of {name} is shorter than {MIN_TOKEN_CHARS} characters "
            "(or has spaces around it); make one with `python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'`"
        )
    return WebToken(name, value)


def tokens_from_environment(environ: Mapping[str, str]) -> list[WebToken]:
    """The tokens the environment gives (none: the page makes one); TokenError if unusable."""
    found: list[WebToken] = []
    single = environ.get(TOKEN_VARIABLE, "")
    if single:
        found.append(_checked(OPERATOR_NAME, single, TOKEN_VARIABLE))
    entries = (part.strip() for part in environ.get(TOKENS_VARIABLE, "").split(","))
    for entry in filter(None, entries):
        name, colon, value = entry.partition(":")
        if not colon:
            raise TokenError(
                f"{TOKENS_VARIABLE}: each entry is NAME:TOKEN, comma-separated "
                "(e.g. anna:TOKEN1,ben:TOKEN2)"
            )
        found.append(_checked(name.strip(), value, TOKENS_VARIABLE))
    names = [token.name for token in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise TokenError(f"{TOKENS_VARIABLE}: the name {twice[0]} is given twice")
    values = [token.value for token in found]
    if len(set(values)) != len(values):
        raise TokenError(f"{TOKENS_VARIABLE}: two names share one token; give each its own")
    return found


def generated_token() -> WebToken:
    return WebToken(GENERATED_NAME, secrets.token_urlsafe(GENERATED_TOKEN_BYTES))


class Access:
    """The tokens of this run, and the CSRF tokens of their forms."""

    def __init__(self, tokens: list[WebToken], *, cookie_name: str) -> None:
        if not tokens:
            raise ValueError("the page needs at least one access token")
        self.tokens = list(tokens)
        self.cookie_name = cookie_name
        self._csrf_key = secrets.token_bytes(32)

    def name_of(self, presented: str | None) -> str | None:
        """The name of the token `presented`, or None. Every token is compared, in
        constant time, so the answer's timing tells nothing of how close a guess was."""
        if not presented:
            return None
        given = presented.encode()
        found = None
        for token in self.tokens:
            if hmac.compare_digest(given, token.value.encode()):
                found = token.name
        return found

    def from_header(self, authorization: str | None) -> str | None:
        if authorization and authorization[: len(_BEARER)].lower() == _BEARER:
            return self.name_of(authorization[len(_BEARER) :].strip())
        return None

    def csrf_token(self, name: str) -> str:
        return hmac.new(self._csrf_key, name.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, name: str, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            presented.encode(), self.csrf_token(name).encode()
        )
