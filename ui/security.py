"""Who may reach the app: loopback by default; shared or on another interface only behind a login.

gradio (6.31) answers any ``Host`` header and, for a host that is not a loopback name, echoes any ``Origin``
back as allowed. A web page whose name is rebound to 127.0.0.1 (DNS rebinding) is then same-origin with the
app and could scan folders, write captions and start runs. :class:`HostOriginGuard` answers only the names in
:class:`HostPolicy` (the loopback names, the ``--host`` given, the share link's host; any name when listening
on every interface, where the login stands guard) and refuses any request whose ``Origin`` is not the page's
own, so no other site can drive the app from the user's browser.

gradio's ``auth=`` puts every API route behind the login, but (6.31) the login page at ``/`` still embeds
``window.gradio_api_info``: the endpoints with their parameter names and default values. With a login,
:class:`HideApiInfo` blanks that script so the page says nothing about the app before the login.
FastAPI's own ``/openapi.json`` and ``/docs`` are switched off for the same reason.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

from trainer.errors import UserError

from .html_rewrite import HtmlRewrite
from .paths import is_loopback

GENERATED_USER = "lora"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
EVERY_INTERFACE = frozenset({"0.0.0.0", "::", ""})
_API_INFO = re.compile(rb"window\.gradio_api_info\s*=\s*.*?;</script>", re.S)


@dataclass
class HostPolicy:
    """The ``Host`` names the app answers to. ``names`` grows by the share link's host once gradio has it."""

    names: set[str] = field(default_factory=lambda: set(LOOPBACK_NAMES))
    any_host: bool = False  # listening on every interface: the LAN reaches it by any name, behind the login

    @classmethod
    def for_host(cls, host: str) -> HostPolicy:
        if host.strip("[]") in EVERY_INTERFACE:
            return cls(any_host=True)
        policy = cls()
        policy.add(host)
        return policy

    def add(self, host_or_url: str) -> None:
        """A name to answer to: a bare host (``--host``, IPv6 with or without brackets) or a URL's host."""
        netloc = urlsplit(host_or_url).netloc if "//" in host_or_url else host_or_url
        if netloc.count(":") > 1 and not netloc.startswith("["):
            netloc = f"[{netloc}]"
        if name := host_name(netloc):
            self.names.add(name)

    def allows(self, name: str | None) -> bool:
        if not name:
            return False
        if self.any_host or name in self.names:
            return True
        try:  # an address typed as such cannot be rebound; a loopback one is this computer
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False

    def refusal(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """(status, reason) for a request that must not reach the app, None for one that may."""
        if not self.allows(host_name(host or "")):
            return 400, "Invalid host header: this app answers only to the names it was started with"
        if origin is not None and not same_origin(origin, host or ""):
            return 403, "Cross-origin request refused: only the app's own page may call it"
        return None


def host_name(host: str) -> str | None:
    """The lower-case name in a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``; IPv6 without
    brackets); None for anything else."""
    if not host or any(c in host for c in "@/\\?# "):
        return None
    try:
        parts = urlsplit(f"//{host}")
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None
    return parts.hostname or None


def same_origin(origin: str, host: str) -> bool:
    """Whether a browser's ``Origin`` names the very host (and port, where the Host header has one) that the
    request went to: the app's own page. ``null`` (sandboxed frames, files) never is."""
    try:
        o, h = urlsplit(origin), urlsplit(f"//{host}")
        if o.scheme not in ("http", "https") or o.path or not o.hostname or o.hostname != host_name(host):
            return False
        return h.port is None or (o.port or (443 if o.scheme == "https" else 80)) == h.port
    except ValueError:
        return False


@dataclass(frozen=True)
class Security:
    restricted: bool
    auth: tuple[str, str] | None
    generated: bool  # the password was made here and must be shown to the user once
    hosts: HostPolicy = field(default_factory=HostPolicy)

    def banner(self) -> str:
        if not self.auth:
            return ""
        user, password = self.auth
        if self.generated:
            return (f"Login required. user: {user}  password: {password}\n"
                    "(generated for this session; pass --auth USER:PASSWORD to choose your own)")
        return f"Login required (user {user})."


def decide_security(host: str, share: bool, auth: str | None) -> Security:
    """``--auth U:P`` is used as given; shared or non-loopback without it gets a long random password."""
    restricted = share or not is_loopback(host)
    hosts = HostPolicy.for_host(host)
    pair = None
    if auth:
        user, sep, password = auth.partition(":")
        if not sep or not user or not password:
            raise UserError("--auth: write it as USER:PASSWORD")
        if restricted and len(password) < 12:
            raise UserError("--auth: a shared app needs a password of at least 12 characters (there is no rate limit)")
        pair = (user, password)
    if restricted and pair is None:
        return Security(True, (GENERATED_USER, secrets.token_urlsafe(24)), generated=True, hosts=hosts)
    return Security(restricted, pair, generated=False, hosts=hosts)


def app_kwargs(security: Security) -> dict:
    """FastAPI settings for ``launch(app_kwargs=...)``."""
    from starlette.middleware import Middleware

    kwargs: dict = {"openapi_url": None, "docs_url": None, "redoc_url": None}
    kwargs["middleware"] = [Middleware(HostOriginGuard, policy=security.hosts)]
    if security.auth:
        kwargs["middleware"].append(Middleware(HideApiInfo))
    kwargs["lifespan"] = _guard_outermost(security.hosts)
    return kwargs


def _guard_outermost(policy: HostPolicy):
    """A lifespan that also puts the guard outside gradio's CORS layer once the server starts: gradio adds that
    layer outside every middleware it is given, and it answers preflights itself and marks localhost origins
    (any port) as allowed, even on a refusal. Outermost, the guard's refusals carry no CORS allowance at all.
    The guard inside stays: it holds even where this lifespan never runs."""

    @asynccontextmanager
    async def lifespan(app):
        if app.middleware_stack is not None:  # built before the lifespan event passed through it
            app.middleware_stack = HostOriginGuard(app.middleware_stack, policy)
        yield

    return lifespan


class HostOriginGuard:
    """ASGI middleware: a request (or websocket) with a ``Host`` the policy does not answer to is refused
    with 400, one whose ``Origin`` is another site's with 403, before any route or handler runs. Installed
    twice by :func:`app_kwargs`: inside gradio's CORS layer (always) and outside it (from server start)."""

    def __init__(self, app, policy: HostPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refused = self.policy.refusal(headers.get("host"), headers.get("origin"))
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refused[1]})
        else:
            await PlainTextResponse(refused[1], status_code=refused[0])(scope, receive, send)


class HideApiInfo(HtmlRewrite):
    """ASGI middleware: in HTML pages, replace the embedded API description with ``null``."""

    def rewrite(self, page: bytes) -> bytes:
        return _API_INFO.sub(b"window.gradio_api_info = null;</script>", page)
