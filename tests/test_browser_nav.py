"""Navigation and language in a real headless Chromium: no step that has what it needs is ever locked (after
going back, after a reload), the chosen language survives a reload, and the Korean page fits a phone's width.
Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import json

import pytest

from tests.test_browser import ARTIFACTS, CHROMIUM, pytestmark, sync_api  # noqa: F401 (the same marks)
from tests.test_review import _world, fake_run

STEPS = ("dataset", "plan", "preset", "train", "review", "troubleshoot")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on a workspace that already holds one finished run (its samples and checkpoints, no training)."""
    from ui.testing import running_app

    ws = tmp_path_factory.mktemp("ws")
    run = fake_run(ws, [10, 20], lambda step, kind: _world())
    (run / "status.json").write_text(json.dumps({"status": "finished"}), encoding="utf-8")
    with running_app(ws) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        yield b
        b.close()


def open_page(browser, url: str, width: int = 1400, height: int = 1000):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(url)
    page.wait_for_selector("#ld-dataset")
    return context, page


def step_button(page, key: str):
    return page.locator(f"#ld-{key}-button")


def wait_open(page, *keys: str) -> None:
    sels = [f"#ld-{k}-button" for k in keys]
    page.wait_for_function("(sels) => sels.every(s => { const b = document.querySelector(s); return b && !b.disabled; })",
                           arg=sels)


def test_finished_runs_stay_reachable_after_a_reload_and_after_going_back(browser, app):
    context, page = open_page(browser, app.url)
    try:
        page.wait_for_function("() => document.body.innerText.includes('usable pictures')")
        wait_open(page, *STEPS)  # the demo scans, the config validates, a run is in the workspace: all open
        step_button(page, "review").click()
        page.wait_for_function("() => document.querySelectorAll('#ld-grid img').length === 12")
        step_button(page, "dataset").click()
        page.wait_for_timeout(500)
        assert all(step_button(page, k).is_enabled() for k in STEPS)  # going back locks nothing
        step_button(page, "troubleshoot").click()
        page.wait_for_function("() => document.querySelector('#ld-findings')?.innerText.includes('Findings')")
        page.reload()
        page.wait_for_selector("#ld-dataset")
        wait_open(page, *STEPS)
    finally:
        context.close()


def test_the_chosen_language_survives_a_reload_and_a_query_parameter_chooses_it(browser, app):
    context, page = open_page(browser, app.url)
    try:
        page.get_by_text("한국어").click()
        page.wait_for_function("() => document.querySelector('#ld-dataset-button').innerText.includes('데이터셋')")
        page.reload()
        page.wait_for_selector("#ld-dataset")
        page.wait_for_function("() => document.querySelector('#ld-dataset-button').innerText.includes('데이터셋')")
        page.wait_for_function("() => document.body.innerText.includes('쓸 수 있는 그림')")  # the scan report too
        page.goto(app.url + "?lang=en")
        page.wait_for_selector("#ld-dataset")
        page.wait_for_function("() => document.querySelector('#ld-dataset-button').innerText.includes('Dataset')")
        # the page may already say "Dataset" before the load has read the address: wait until it has
        page.wait_for_function("() => window.localStorage.getItem('lora-doctor-lang') === 'en'")
        page.goto(app.url)  # the query parameter was a choice too: it is the one remembered
        page.wait_for_selector("#ld-dataset")
        page.wait_for_timeout(1500)
        assert "Dataset" in step_button(page, "dataset").inner_text()
    finally:
        context.close()


def test_korean_at_phone_width_keeps_the_title_on_one_line(browser, app):
    context, page = open_page(browser, app.url + "?lang=ko", width=390, height=844)
    try:
        page.wait_for_function("() => document.body.innerText.includes('쓸 수 있는 그림')")
        page.wait_for_function("() => document.querySelector('#ld-dataset-button').innerText.includes('데이터셋')"
                               " && document.body.innerText.includes('데이터셋 폴더')")  # relabelled too
        page.wait_for_timeout(1000)
        title = page.evaluate("""() => { const h = document.querySelector('#ld-title h1');
            return {height: h.getBoundingClientRect().height, line: parseFloat(getComputedStyle(h).lineHeight),
                    scroll: h.scrollWidth, width: h.clientWidth}; }""")
        assert title["height"] < 1.5 * title["line"], title  # "LoRA / Docto / r" was three lines
        assert title["scroll"] <= title["width"] + 1, title
        cut = page.evaluate("""() => [...document.querySelectorAll('#ld-thumbs .caption-label')]
            .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText)""")
        assert not cut, cut  # picture captions wrap instead of ending in "…"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "ko-390-dataset.png"), full_page=True)
    finally:
        context.close()


def test_a_symptom_panel_opened_before_the_language_switch_follows_it(browser, app):
    from trainer.doctor.kb import load_kb
    from ui.steps.troubleshoot import symptom_choices

    label, sid = symptom_choices("en")[0]
    titles = {lang: load_kb().symptom(sid).text("title", lang) for lang in ("en", "ko")}
    context, page = open_page(browser, app.url)
    try:
        wait_open(page, "troubleshoot")
        step_button(page, "troubleshoot").click()
        page.wait_for_function("() => document.querySelector('#ld-findings')?.innerText.includes('Findings')")
        page.get_by_label("What do you see? (every symptom the doctor knows)").click()
        page.get_by_role("option", name=label).click()
        page.wait_for_function("(t) => document.querySelector('#ld-troubleshoot').innerText.includes(t)",
                               arg=titles["en"])
        page.get_by_text("한국어").click()
        page.wait_for_function("(t) => document.querySelector('#ld-troubleshoot').innerText.includes(t)",
                               arg=titles["ko"])
        assert titles["en"] not in page.locator("#ld-troubleshoot").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "ko-troubleshoot-symptom.png"), full_page=True)
    finally:
        context.close()


def test_the_chosen_preset_card_is_marked(browser, app):
    context, page = open_page(browser, app.url)
    try:
        wait_open(page, "preset")
        step_button(page, "preset").click()
        card = "#ld-card-{}"
        page.wait_for_selector(card.format("demo-character"))
        assert "primary" in page.get_attribute(card.format("demo-character"), "class")
        page.click(card.format("sd15-style"))
        page.wait_for_function("(sel) => document.querySelector(sel).classList.contains('primary')",
                               arg=card.format("sd15-style"))
        assert "primary" not in page.get_attribute(card.format("demo-character"), "class")
    finally:
        context.close()
