"""The script every page runs before gradio's own (ui/early.py): in the HTML, ahead of gradio's module scripts,
and only in HTML pages."""

from __future__ import annotations

import asyncio

from ui.early import EARLY_JS, EarlyScript, with_early_script

PAGE = (b'<!doctype html><html><head><meta charset="utf-8"><script type="module" src="./assets/index-x.js"></script>'
        b"</head><body><gradio-app></gradio-app></body></html>")


def serve(body: bytes, content_type: bytes) -> list[dict]:
    """What the middleware sends for an app answering ``body`` to a GET."""

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    asyncio.run(EarlyScript(app)({"type": "http", "method": "GET", "path": "/"}, None, send))
    return sent


def test_the_early_script_is_in_the_page_before_gradio_runs():
    sent = serve(PAGE, b"text/html; charset=utf-8")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert body.count(EARLY_JS.encode()) == 1
    assert body.index(EARLY_JS.encode()) < body.index(b"</head>")  # read with the head; modules run after it
    assert dict(sent[0]["headers"])[b"content-length"] == str(len(body)).encode()
    assert "requestAnimationFrame" in EARLY_JS and "</script>" not in EARLY_JS


def test_other_answers_pass_as_they_are():
    data = b'{"a": 1}'
    sent = serve(data, b"application/json")
    assert sent[1]["body"] == data and dict(sent[0]["headers"])[b"content-length"] == b"8"
    assert with_early_script(b"<p>no head</p>") == b"<p>no head</p>"
