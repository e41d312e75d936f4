"""A small MCP server written with the official SDK's server API, for mnemobot's tests.

Run it as the bot would, by its path (it imports nothing of mnemobot): ``python
.../mnemobot_tooling/fakes/mcp_server.py`` (stdio) or ``... --http PORT`` (streamable HTTP
on 127.0.0.1:PORT/mcp).
Every call is appended to the file named by ``MCP_TEST_LOG`` (one line: the tool and its
arguments, or ``cancelled <tool>``), so a test sees what ran and what was cancelled.

``--exit-at-start`` writes ``MCP_TEST_SECRET`` to stderr and exits 1: a server that fails
to start, loudly, with a secret in its last words. ``--hang-at-start`` never answers.
``--refuse-init-when PATH``: once PATH exists, the server answers ``initialize`` with a
protocol error that repeats ``MCP_TEST_SECRET`` (a server that came up, then cannot log in
after a restart, and says with what). Over HTTP with ``MCP_TEST_URL_KEY`` set, a request
must carry that key as ``?api_key=`` (401 otherwise). ``--with-weather`` offers the
weather tool from the start; ``--with-account`` a tool whose result repeats
``MCP_TEST_SECRET`` (a careless server). ``--many-tools N`` offers N more tools after its
own (``catalog_0`` ...), each described at length, as a server wrapping a large API does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

if "--exit-at-start" in sys.argv:
    # Before the SDK's import (half a second): a server that fails at once.
    print(f"fatal: cannot log in with {os.environ.get('MCP_TEST_SECRET')}", file=sys.stderr)
    sys.exit(1)

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

# --refuse-init-when PATH
refuse_flag: str | None = None


async def refuse_init(ctx: Any, call_next: Any) -> Any:
    """The server's middleware: refuses `initialize` once the flag file of
    --refuse-init-when exists, and lets everything else through."""
    if ctx.method == "initialize" and refuse_flag and os.path.exists(refuse_flag):
        secret = os.environ.get("MCP_TEST_SECRET")
        raise MCPError(code=-32603, message=f"cannot log in with {secret}")
    return await call_next(ctx)


server = MCPServer(
    "mnemobot-test", instructions="tools for mnemobot's tests", middleware=[refuse_init]
)


def note(line: str) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    note(f"add {a} {b}")
    return a + b


@server.tool()
def lookup_order(order_id: str) -> str:
    """Find an order by its id and say where it is."""
    note(f"lookup_order {order_id}")
    return f"Order {order_id} shipped on Tuesday via Parcelwise, tracking PW-{order_id[::-1]}."


@server.tool()
def big(chars: int) -> str:
    """Return a long text of `chars` characters."""
    note(f"big {chars}")
    line = "0123456789abcdefghijklmnopqrstuvwxyz-MCP-BIG-RESULT\n"
    return (line * (chars // len(line) + 1))[:chars]


@server.tool()
async def slow(seconds: float) -> str:
    """Wait `seconds`, then say so."""
    note(f"slow {seconds}")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        note("cancelled slow")
        raise
    return f"slept {seconds}s"


def weather(city: str) -> str:
    """Tell the weather in a city (offered once the server is unlocked)."""
    note(f"weather {city}")
    return f"sunny in {city}"


@server.tool()
async def unlock(ctx: Context) -> str:
    """Add the weather tool, and tell the client that the list of tools changed."""
    note("unlock")
    server.add_tool(weather)
    await ctx.session.send_tool_list_changed()
    return "unlocked"


@server.tool()
async def freeze(seconds: float) -> str:
    """Block the whole server for `seconds`: it answers nothing meanwhile, not even a ping."""
    note(f"freeze {seconds}")
    time.sleep(seconds)  # on the server's event loop, on purpose
    return "thawed"


@server.tool()
def die() -> str:
    """Crash the server in the middle of the call."""
    note("die")
    os._exit(3)


@server.tool()
def secret_length() -> str:
    """How long the secret the server was given is (never the secret itself)."""
    note("secret_length")
    return f"the secret has {len(os.environ.get('MCP_TEST_SECRET', ''))} characters"


def account() -> str:
    """Say which account the server works as (and, carelessly, with which token)."""
    note("account")
    return f"logged in as svc-mnemo with token {os.environ.get('MCP_TEST_SECRET', '')}"


@server.tool()
def authorization_length(ctx: Context) -> str:
    """How long the Authorization header of this call was (streamable HTTP only)."""
    headers = ctx.headers or {}
    note("authorization_length")
    return f"the authorization header has {len(headers.get('authorization', ''))} characters"


@server.tool()
def fail(message: str) -> str:
    """Fail with `message`."""
    note(f"fail {message}")
    raise ToolError(message)


@server.tool()
def delete_everything() -> str:
    """Delete every record."""
    note("delete_everything")
    return "deleted"


@server.tool()
def send_mail(to: str, subject: str) -> str:
    """Send an e-mail."""
    note(f"send_mail {to} {subject}")
    return f"sent to {to}"


# A large API's tool: what it does, its parameters, its caveats; about 200 tokens each.
CATALOG_DESCRIPTION = (
    "Query section {n} of the product catalog. Returns the matching products with their "
    "stock, price, supplier, shipping time and the warehouse that holds them. Use filters "
    "to narrow the search: category, price range, availability and supplier. Results are "
    "paged: pass the cursor of the previous page to get the next one. Prices are in the "
    "shop's currency, without taxes. Products that are discontinued are left out unless "
    "asked for. A section holds products of one department; the catalog has many sections "
    "and each has its own tool. Rate limited to ten calls a minute per shop. "
)


def catalog_tool(n: int) -> Any:
    def catalog(query: str, cursor: str = "", limit: int = 20) -> str:
        note(f"catalog_{n} {query}")
        return f"no products match {query!r} in section {n}"

    return catalog


def add_catalog_tools(count: int) -> None:
    # The SDK builds an argument model per added function (~20 ms on a busy machine): the
    # tools share one signature, so one is built and copied with each its own function.
    server.add_tool(catalog_tool(0), name="catalog_0", description=CATALOG_DESCRIPTION.format(n=0))
    tools = server._tool_manager._tools
    first = tools["catalog_0"]
    for n in range(1, count):
        tools[f"catalog_{n}"] = first.model_copy(
            update={
                "fn": catalog_tool(n),
                "name": f"catalog_{n}",
                "description": CATALOG_DESCRIPTION.format(n=n),
            }
        )


def serve_http(port: int, url_key: str | None) -> None:
    """Streamable HTTP on 127.0.0.1:`port`/mcp; with `url_key`, a request without
    ``?api_key=<url_key>`` is refused (401), as servers that take their key in the URL do."""
    if url_key is None:
        server.run("streamable-http", host="127.0.0.1", port=port)
        return
    from urllib.parse import parse_qs

    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        query = parse_qs(scope.get("query_string", b"").decode())
        if scope["type"] == "http" and query.get("api_key") != [url_key]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"wrong or missing api_key"})
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


def main() -> None:
    global refuse_flag
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--hang-at-start", action="store_true")
    parser.add_argument("--refuse-init-when", metavar="PATH")
    parser.add_argument("--with-weather", action="store_true")
    parser.add_argument("--with-account", action="store_true")
    parser.add_argument("--many-tools", type=int, default=0, metavar="N")
    args = parser.parse_args()
    refuse_flag = args.refuse_init_when
    if args.many_tools:
        add_catalog_tools(args.many_tools)
    if args.with_weather:
        server.add_tool(weather)
    if args.with_account:
        server.add_tool(account)
    if args.hang_at_start:
        time.sleep(3600)
    if args.http:
        serve_http(args.http, os.environ.get("MCP_TEST_URL_KEY"))
    else:
        server.run()


if __name__ == "__main__":
    main()
