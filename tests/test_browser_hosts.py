"""DNS rebinding in a real headless Chromium (Debian's, driven by Playwright): a name the attacker controls,
resolved to 127.0.0.1 (``--host-resolver-rules`` plays the rebound DNS answer), gets a refusal instead of the
app, while the app opened as 127.0.0.1 and as localhost still scans and answers its buttons."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.test_browser import CHROMIUM, pytestmark, sync_api  # noqa: F401 - the same marks and skips

REBOUND = "rebound.test"


@pytest.fixture(scope="module")
def loopback_app(tmp_path_factory):
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("ws")) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    """Chromium whose resolver answers 127.0.0.1 for the attacker's name, as a rebound DNS record would."""
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_the_app_works_by_its_loopback_names(page, loopback_app, name):
    port = urlsplit(loopback_app.url).port
    page.goto(f"http://{name}:{port}/")
    page.wait_for_function("() => document.body.innerText.includes('usable pictures')")  # the scan on load
    page.locator("#ld-thumbs img").nth(1).click()  # a POST from the page itself: same origin
    page.wait_for_function("() => document.querySelector('#ld-cap-file textarea, #ld-cap-file input')?.value"
                           "?.includes('zxc_001')")
    page.get_by_role("button", name="Scan", exact=True).click()
    page.wait_for_function("() => document.body.innerText.includes('Scanned: 20 usable pictures')")


def test_a_rebound_name_gets_a_refusal_not_the_app(page, loopback_app):
    port = urlsplit(loopback_app.url).port
    response = page.goto(f"http://{REBOUND}:{port}/")
    assert response is not None and response.status == 400
    assert "Invalid host header" in page.content()
    # the rebound page's own requests to the app (same origin for the browser) are refused too
    status = page.evaluate("() => fetch('/gradio_api/info').then(r => r.status)")
    assert status == 400
