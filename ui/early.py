"""What the page runs before gradio's own scripts: ``ui/early.js``, put into the ``<head>`` of every HTML page
the app serves by :class:`EarlyScript`.

gradio (6.31) keeps an idle page busy: the loading screen's status tracker is removed while its status is still
"pending", and the requestAnimationFrame loop that times it never stops (a frame every 16 ms for as long as the
page is open). Its module takes ``window.requestAnimationFrame`` when it loads, before the app's own scripts
(``launch(js=...)``, ``head``) run, so the page must change it earlier still: the script goes into the HTML.
"""

from __future__ import annotations

from pathlib import Path

from .html_rewrite import HtmlRewrite

EARLY_JS = (Path(__file__).parent / "early.js").read_text(encoding="utf-8")
_TAG = f"<script>{EARLY_JS}</script>".encode()


def with_early_script(page: bytes) -> bytes:
    """The HTML page with the early script at the end of its head (before ``</head>``; gradio's own scripts are
    modules, which run only once the whole page has been read); a page without a head is left as it is."""
    at = page.find(b"</head>")
    return page if at < 0 else page[:at] + _TAG + page[at:]


class EarlyScript(HtmlRewrite):
    """ASGI middleware: the early script in every HTML page (the app's page, the login page)."""

    def rewrite(self, page: bytes) -> bytes:
        return with_early_script(page)
