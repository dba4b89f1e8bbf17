"""ASGI middleware that rewrites the HTML pages the app serves (a subclass says how, in :meth:`rewrite`); every
other response, and a compressed page, passes through untouched."""

from __future__ import annotations


class HtmlRewrite:
    """Collects a GET request's ``text/html`` response body, passes it through :meth:`rewrite` and sends it with
    its ``content-length`` set again."""

    def __init__(self, app):
        self.app = app

    def rewrite(self, page: bytes) -> bytes:
        raise NotImplementedError

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
                html = headers.get(b"content-type", b"").startswith(b"text/html")
                if not html or headers.get(b"content-encoding"):
                    start = {"pass": True}
                    await send(message)
                    return
                start = message
                return
            if start is None or start.get("pass"):
                await send(message)
                return
            if message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body"):
                    page = self.rewrite(b"".join(body))
                    kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                    kept.append((b"content-length", str(len(page)).encode()))
                    await send({**start, "headers": kept})
                    await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, capture)
