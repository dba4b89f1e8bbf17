"""What the page runs before gradio's own scripts: ``ui/early.js``, put into the ``<head>`` of every HTML page
the app serves by :class:`EarlyScript`.

gradio (6.31) keeps an idle page busy: the loading screen's status tracker is removed while its status is still
"pending", and the requestAnimationFrame loop that times it never stops (a frame every 16 ms for as long as the
page is open). Its module takes ``window.requestAnimationFrame`` when it loads, before the app's own scripts
(``launch(js=...)``, ``head``) run, so the page must change it earlier still: the script goes into the HTML.
"""

from __future__ import annotations

from pathlib import Path

EARLY_JS = (Path(__file__).parent / "early.js").read_text(encoding="utf-8")
_TAG = f"<script>{EARLY_JS}</script>".encode()


def with_early_script(page: bytes) -> bytes:
    """The HTML page with the early script at the end of its head (before ``</head>``; gradio's own scripts are
    modules, which run only once the whole page has been read); a page without a head is left as it is."""
    at = page.find(b"</head>")
    return page if at < 0 else page[:at] + _TAG + page[at:]


class EarlyScript:
    """ASGI middleware: the early script in every HTML page (the app's page, the login page)."""

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
                    page = with_early_script(b"".join(body))
                    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                    headers.append((b"content-length", str(len(page)).encode()))
                    await send({**start, "headers": headers})
                    await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, capture)
