"""One voice (issue 18): on the default demo run, nothing changed, the Steps page's forecast, Review and
Troubleshoot show the same verdict in a real Chromium, and the Review grid is saved as a picture in
``test-artifacts/``.

The default run is trained headless with exactly the config the app's Start would use on a fresh workspace
(``tests/default_run.py``, shared with the files that only read it); the app then opens on that workspace and the
browser reads it."""

from __future__ import annotations

import re

import pytest

from tests.test_browser import ARTIFACTS, CHROMIUM, button, doc_shot, pytestmark, shot, sync_api, wait_text  # noqa: F401

VERDICT = re.compile(r"[Vv]erdict: (fit|under-trained|over-trained|broken)")


@pytest.fixture(scope="module")
def default_run(default_demo_run):
    return default_demo_run


@pytest.fixture(scope="module")
def app(default_run):
    from ui.testing import running_app

    with running_app(default_run[0]) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def verdict_on(page, selector: str) -> str:
    """The verdict the element shows, in the words every step uses."""
    wait_text(page, selector, "erdict: ", 300)
    found = VERDICT.search(page.locator(selector).inner_text())
    assert found, page.locator(selector).inner_text()
    return found.group(1)


def test_plan_review_and_troubleshoot_agree_on_the_default_demo_run(app, default_run, browser):
    import words
    from trainer.doctor.verdict import LABEL_TEXT, run_verdict

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(app.url)  # the wizard walked with its own buttons, nothing changed on the way
        page.wait_for_function("() => document.body.innerText.includes('usable pictures')")
        button(page, "Next: steps →").click()
        plan = verdict_on(page, "#ld-plan")
        shot(page, "verdict-2-steps")
        button(page, "Next: preset →").click()
        page.wait_for_selector("#ld-card-demo-character")
        button(page, "Next: train →").click()
        page.wait_for_selector("#ld-start")
        button(page, "Next: review →").click()
        review = verdict_on(page, "#ld-recommend")
        page.wait_for_function("() => document.querySelectorAll('#ld-grid img').length >= 16")  # 4 saves + step 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#ld-grid").screenshot(path=str(ARTIFACTS / "review-grid-default-demo.png"))
        shot(page, "verdict-5-review")
        doc_shot(page, "review", "#ld-recommend")  # the README's pictures, from the whole default run
        recommended = page.locator("#ld-recommend").inner_text()

        button(page, "Next: troubleshoot →").click()
        troubleshoot = verdict_on(page, "#ld-findings")
        findings = page.locator("#ld-findings").inner_text()
        shot(page, "verdict-6-troubleshoot")
        doc_shot(page, "troubleshoot", "#ld-findings")
    finally:
        context.close()

    verdict = run_verdict(default_run[1])
    assert plan == review == troubleshoot == words.say(LABEL_TEXT[verdict.label], "en"), (plan, review, troubleshoot)
    assert verdict.recommended_step is not None and f"step-{verdict.recommended_step:06d}" in recommended
    # what the issue saw on this run: "fit" beside "lower the dose" and "Learning rate too high (1.70)"
    assert "Lower the dose" not in recommended and not re.search(r"\(\d+\.\d\d\)", findings)
