"""The web page's server: aiohttp on 127.0.0.1 unless told otherwise, every request
checked for its access token (`access`), the app's own pages and stylesheet only.

`WebServer` is what both commands run: `mnemobot web` alone on a workspace, `mnemobot
run --web` beside the Telegram channel on the bot's own services (one event loop: the
page's reads run in memory's worker threads like the bot's).
"""

from __future__ import annotations

import logging
from importlib.resources import files

from aiohttp import web
from aiohttp.typedefs import Handler

from mnemobot.bot.web.access import Access, set_who
from mnemobot.bot.web.correction_pages import CorrectionPages
from mnemobot.bot.web.corrections import Corrections
from mnemobot.bot.web.host import WebHost
from mnemobot.bot.web.pages import ReadPages
from mnemobot.bot.web.redaction import shown
from mnemobot.bot.web.rendering import Renderer

log = logging.getLogger(__name__)

# The only files served that are not pages: read once, from the package.
STATIC = {"style.css": "text/css", "favicon.svg": "image/svg+xml"}
UNAUTHORIZED = (
    "401 Unauthorized: this page needs its access token. Open the address `mnemobot web` "
    "or `mnemobot run --web` printed (it ends in ?token=...), or send the header "
    "Authorization: Bearer TOKEN.\n"
)
# No script, no frames, nothing from elsewhere; forms post only to this page.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
ACCESS_KEY = web.AppKey("access", Access)
CORRECTIONS_KEY = web.AppKey("corrections", Corrections)


def cookie_name(port: int) -> str:
    """One cookie per port: cookies ignore ports, and two pages may run side by side."""
    return f"mnemobot_web_{port}"


@web.middleware
async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    access = request.app[ACCESS_KEY]
    offered = request.query.get("token")
    if offered is not None:
        if access.name_of(offered) is None:
            return web.Response(status=401, text=UNAUTHORIZED)
        # Into a cookie, and off the address (the history, a screenshot, a shared link).
        kept = [(name, value) for name, value in request.query.items() if name != "token"]
        clean = request.rel_url.with_query(kept or None)
        response = web.Response(status=303, headers={"Location": str(clean)})
        response.set_cookie(access.cookie_name, offered, httponly=True, samesite="Strict", path="/")
        return response
    name = access.from_header(request.headers.get("Authorization")) or access.name_of(
        request.cookies.get(access.cookie_name)
    )
    if name is None:
        return web.Response(
            status=401, text=UNAUTHORIZED, headers={"WWW-Authenticate": 'Bearer realm="mnemobot"'}
        )
    set_who(request, name)
    return await handler(request)


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)


def _static_files() -> Handler:
    """The handler of `/static/NAME`: the files of `STATIC`, read once, nothing else."""
    folder = files("mnemobot.bot.web").joinpath("static")
    held = {name: folder.joinpath(name).read_bytes() for name in STATIC}

    async def serve(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in held:
            raise web.HTTPNotFound()
        return web.Response(body=held[name], content_type=STATIC[name])

    return serve


def build_web_app(host: WebHost, access: Access, *, read_only: bool) -> web.Application:
    app = web.Application(middlewares=[require_token], client_max_size=64 * 1024)
    corrections = Corrections(host, read_only=read_only)
    app[ACCESS_KEY] = access
    app[CORRECTIONS_KEY] = corrections
    renderer = Renderer(shown(host.redact), {"read_only": read_only, "in_bot": host.in_bot})
    app.add_routes(ReadPages(host, renderer).routes())
    app.add_routes(CorrectionPages(host, renderer, access, corrections).routes())
    app.add_routes([web.get("/static/{name}", _static_files())])
    app.on_response_prepare.append(_security_headers)

    async def finish_erasures(_: web.Application) -> None:
        await corrections.settled()

    app.on_shutdown.append(finish_erasures)
    return app


class WebServer:
    """The page listening on `host:port` until `stop()`."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self.app = app
        self.host = host
        self.port = port
        # Requests are not logged: an address may carry the token once (`?token=`).
        self._runner = web.AppRunner(app, access_log=None)

    async def start(self) -> None:
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError:
            await self._runner.cleanup()
            raise
        if self._runner.addresses:
            # Port 0 asks the system for a free one: say which.
            self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        await self._runner.cleanup()

    def address(self, token: str | None = None) -> str:
        shown_host = f"[{self.host}]" if ":" in self.host else self.host
        base = f"http://{shown_host}:{self.port}/"
        return f"{base}?token={token}" if token else base
