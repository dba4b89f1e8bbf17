"""Who may reach the app: loopback by default; shared or on another interface only behind a login.

gradio's ``auth=`` puts every API route behind the login, but (6.31) the login page at ``/`` still embeds
``window.gradio_api_info``: the endpoints with their parameter names and default values. While restricted,
:class:`HideApiInfo` blanks that script so the page says nothing about the app before the login.
FastAPI's own ``/openapi.json`` and ``/docs`` are switched off for the same reason.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from trainer.errors import UserError

from .paths import is_loopback

GENERATED_USER = "lora"
_API_INFO = re.compile(rb"window\.gradio_api_info\s*=\s*.*?;</script>", re.S)


@dataclass(frozen=True)
class Security:
    restricted: bool
    auth: tuple[str, str] | None
    generated: bool  # the password was made here and must be shown to the user once

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
    pair = None
    if auth:
        user, sep, password = auth.partition(":")
        if not sep or not user or not password:
            raise UserError("--auth: write it as USER:PASSWORD")
        if restricted and len(password) < 12:
            raise UserError("--auth: a shared app needs a password of at least 12 characters (there is no rate limit)")
        pair = (user, password)
    if restricted and pair is None:
        return Security(True, (GENERATED_USER, secrets.token_urlsafe(24)), generated=True)
    return Security(restricted, pair, generated=False)


def app_kwargs(security: Security) -> dict:
    """FastAPI settings for ``launch(app_kwargs=...)``."""
    from starlette.middleware import Middleware

    kwargs: dict = {"openapi_url": None, "docs_url": None, "redoc_url": None}
    if security.restricted:
        kwargs["middleware"] = [Middleware(HideApiInfo)]
    return kwargs


class HideApiInfo:
    """ASGI middleware: in HTML pages, replace the embedded API description with ``null``."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        body: list[bytes] = []

        async def capture(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                if not headers.get(b"content-type", b"").startswith(b"text/html"):
                    await send(message)
                    start = {"pass": True}
                    return
                start = message
                return
            if start is not None and start.get("pass"):
                await send(message)
                return
            if message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body"):
                    page = _API_INFO.sub(b"window.gradio_api_info = null;</script>", b"".join(body))
                    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                    headers.append((b"content-length", str(len(page)).encode()))
                    await send({**start, "headers": headers})
                    await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, capture)
