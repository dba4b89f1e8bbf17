"""The app in a real headless Chromium (Debian's, driven by Playwright): walk the wizard, train, watch the loss
plot gain points, see the guard's alert for a run that goes NaN, a second tab that sees the running job and
cannot start another, and the Korean switch. Screenshots of each step go to ``test-artifacts/``; the wizard walk
also keeps the README's pictures of the steps, ``docs/images/step-*.png``, current (:func:`doc_shot`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no /usr/bin/chromium (scripts/browser.sh installs it)"),
]
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("ws")) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        yield b
        b.close()


@pytest.fixture
def page(browser, app):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(app.url)
    page.wait_for_selector("#ld-dataset")
    yield page
    context.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


# The README's picture of each wizard step: its tab's element id and its English label.
DOC_IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
# the README's pictures are written where it reads them only when asked (LORA_DOCTOR_DOC_IMAGES=1 ./test.sh -m
# browser); otherwise into test-artifacts/, so that a test run leaves the working tree as it was
DOC_OUT = DOC_IMAGES if os.environ.get("LORA_DOCTOR_DOC_IMAGES") == "1" else ARTIFACTS / "docs-images"
DOC_STEPS = {"dataset": ("ld-dataset", "Dataset"), "steps": ("ld-plan", "Steps"), "train": ("ld-train", "Train"),
             "review": ("ld-review", "Review"), "troubleshoot": ("ld-troubleshoot", "Troubleshoot")}
DOC_VIEWPORT = {"width": 1280, "height": 800}


def doc_shot(page, name: str, focus: str | None = None) -> bool:
    """Save what the page shows as ``docs/images/step-<name>.png`` (1280×800, the README's picture of that step),
    only when that step's tab is the selected one, in English, and its panel is visible: a test that took another
    path leaves the picture as it was. ``focus`` (a selector) is scrolled to the top of the window first. The
    viewport and the scroll are put back afterwards. Review and Troubleshoot are the full default demo run's
    (test_browser_verdict.py), not this walk's 6 steps. Written to ``DOC_OUT``."""
    panel_id, label = DOC_STEPS[name]
    tab = page.get_by_role("tab", selected=True)
    if tab.count() != 1 or tab.inner_text().strip() != label or not page.locator(f"#{panel_id}").is_visible():
        return False
    before = page.viewport_size
    page.set_viewport_size(DOC_VIEWPORT)
    try:
        page.wait_for_timeout(1_000)  # plots and grids settle to the narrower width
        if focus:  # its top a little below the window's
            page.locator(focus).first.evaluate(
                "el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 24)")
        else:
            page.evaluate("() => window.scrollTo(0, 0)")
        DOC_OUT.mkdir(parents=True, exist_ok=True)
        save_small_png(page.screenshot(), DOC_OUT / f"step-{name}.png")
    finally:
        if before:
            page.set_viewport_size(before)
        page.evaluate("() => window.scrollTo(0, 0)")
    return True


def save_small_png(png: bytes, path: Path) -> None:
    """A screenshot as a 256-colour PNG: the sample grids' noise made a full-colour one over 300 KB, this a third."""
    import io

    from PIL import Image

    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(
        path, format="PNG", optimize=True)


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def set_field(page, name: str, value: str) -> None:
    box = page.locator(f"#ld-f-{name} input, #ld-f-{name} textarea").first
    box.fill(value)
    box.press("Tab")  # numbers and text commit on blur


def selected_step(page) -> str:
    return page.get_by_role("tab", selected=True).inner_text()


def loss_points(page) -> int:
    return page.evaluate("""() => {
        const plot = document.querySelector('#ld-loss .js-plotly-plot');
        return plot && plot.data && plot.data.length ? plot.data[0].x.length : 0; }""")


def upload(page, box: str, path) -> None:
    """Choose ``path`` in the upload box ``box`` (its element id) as a person does: click it, pick the file. The
    dataset step has other file inputs before it, some rendered late, so "the first one" is not always the box;
    and a file set on a hidden input before the box listens is never uploaded."""
    with page.expect_file_chooser() as chooser:
        page.locator(f"{box} input[type=file]").locator("xpath=..").click()
    chooser.value.set_files(str(path))
    # The box lists the file, with its download link, once gradio has it on the server. (While it uploads, the box
    # says "Uploading 1 file... mine.zip"; once there it shows the name in two parts, "mine" and ".zip": a test
    # that waited for "mine.zip" in the page's text saw only that short moment, and missed it on a busy machine.)
    page.locator(f'{box} td.filename[aria-label="{Path(path).name}"] ~ td a.download-link').wait_for(timeout=60_000)


def wait_text(page, selector: str, pattern: str, timeout_s: int = 60) -> None:
    """Wait until the element exists (steps render when first shown) and its text matches ``pattern``."""
    page.wait_for_function(
        "([sel, pat]) => { const el = document.querySelector(sel); return !!el && new RegExp(pat).test(el.innerText); }",
        arg=[selector, pattern], timeout=timeout_s * 1000)


def status(page) -> str:
    return page.locator("#ld-status").inner_text()


def walk_to_train(page, fields: dict[str, str], advanced: dict[str, str] | None = None, shots: bool = False) -> None:
    page.wait_for_function("() => document.body.innerText.includes('usable pictures')")
    if shots:
        shot(page, "1-dataset")
        doc_shot(page, "dataset", "#ld-dataset >> text=usable pictures")
    button(page, "Next: steps →").click()
    page.wait_for_function("() => document.body.innerText.includes('Bucket-aware total')")
    if shots:  # the README's picture shows the demo's own plan, before the test shortens it
        doc_shot(page, "steps")
    for name, value in fields.items():
        set_field(page, name, value)
    page.wait_for_timeout(800)
    if shots:
        shot(page, "2-steps")
    button(page, "Next: preset →").click()
    page.wait_for_selector("#ld-card-demo-character")
    if advanced:
        page.get_by_text("Advanced settings").click()
        for name, value in advanced.items():
            if value in ("on", "off"):
                box = page.locator(f"#ld-f-{name} input")
                box.set_checked(value == "on")
            else:
                set_field(page, name, value)
    page.wait_for_timeout(800)
    if shots:
        shot(page, "3-preset")
    button(page, "Next: train →").click()
    page.wait_for_selector("#ld-start")
    assert "Train" in selected_step(page)


def wait_until_ended(page, timeout_s: int = 240) -> str:
    wait_text(page, "#ld-status", "finished|stopped|failed", timeout_s)
    return status(page)


def test_a_thumbnail_click_opens_its_caption(page):
    page.wait_for_function("() => document.querySelectorAll('#ld-thumbs img').length >= 8")
    page.locator("#ld-thumbs img").nth(2).click()
    page.wait_for_function("() => document.querySelector('#ld-cap-file textarea, #ld-cap-file input').value"
                           " === '10_zxc/zxc_002.png'")
    caption = page.locator("#ld-cap-text textarea, #ld-cap-text input").first.input_value()
    assert caption.startswith("zxc")


def test_walk_the_wizard_train_and_review(page, app, monkeypatch):
    import time

    from trainer.run.events import StepRow
    from ui.steps.train_poll import CPU_LOOK_S

    # a CPU run's page looks every CPU_LOOK_S: each step lasts long enough that the plot is drawn before the end, so
    # the test can see it grow (a quiet machine trains these 6 steps between two looks)
    on_event = app.ctx.runner._on_event

    def slowly(ev):
        on_event(ev)
        if isinstance(ev, StepRow):
            time.sleep(CPU_LOOK_S / 2)

    monkeypatch.setattr(app.ctx.runner, "_on_event", slowly)
    walk_to_train(page, {"max_steps": "6", "save_every": "3"}, {"sample_steps": "2"}, shots=True)
    button(page, "Start").click()
    page.wait_for_function("() => document.body.innerText.includes('Training started')")
    page.wait_for_function("() => { const p = document.querySelector('#ld-loss .js-plotly-plot');"
                           " return p && p.data && p.data.length && p.data[0].x.length >= 2; }", timeout=180_000)
    first = loss_points(page)
    final = wait_until_ended(page)
    assert "finished" in final and "step 6 / 6" in final
    page.wait_for_function("() => document.querySelector('#ld-loss .js-plotly-plot').data[0].x.length === 6")
    assert loss_points(page) > first >= 2
    page.wait_for_function("() => document.querySelectorAll('#ld-train img').length >= 4")  # the samples
    # the plots draw at most every few seconds (ui/live_view.js): each one's axis reaches the last step once drawn
    page.wait_for_function("""() => ['ld-loss', 'ld-grad', 'ld-lr'].every(id =>
        document.querySelector(`#${id} .js-plotly-plot`)._fullLayout.xaxis.range[1] >= 6)""", timeout=15_000)
    # the demo's held-out pictures were scored at each save: a validation line beside the loss, its lowest starred
    validation = page.evaluate("""() => document.querySelector('#ld-loss .js-plotly-plot').data
        .filter(t => /alidation/.test(t.name || '')).map(t => ({name: t.name, x: t.x, y: t.y,
                                                               symbol: (t.marker || {}).symbol}))""")
    line = next(v for v in validation if v["name"] == "Validation loss")
    star = next(v for v in validation if v["symbol"] == "star")
    assert line["x"] == [3, 6] and all(y > 0 for y in line["y"])
    assert star["y"] == [min(line["y"])]
    shot(page, "4-train")
    doc_shot(page, "train")
    button(page, "Next: review →").click()
    page.wait_for_function("() => document.querySelectorAll('#ld-grid img').length === 12")
    assert "Recommended" in page.locator("#ld-recommend").inner_text()
    measures = page.locator("#ld-measures").inner_text()
    assert "validation loss (★ lowest)" in measures and measures.count("★") == 2  # the header and the lowest
    shot(page, "5-review")
    button(page, "Next: troubleshoot →").click()
    wait_text(page, "#ld-findings", "Observed")
    shot(page, "6-troubleshoot")
    page.get_by_role("tab", name=re.compile("Dataset")).click()  # earlier steps stay reachable
    assert "Dataset" in selected_step(page)


def test_a_run_that_goes_nan_shows_the_alert(page):
    walk_to_train(page, {"max_steps": "40"}, {"lr": "10", "max_grad_norm": "0", "sample_enabled": "off"})
    button(page, "Start").click()
    asked = page.locator("#ld-confirm-box")  # an lr 3,333 times the preset's asks first, naming both numbers
    asked.wait_for(state="visible")
    assert "learning rate 10" in asked.inner_text() and "0.003" in asked.inner_text()
    button(page, "Start anyway").click()
    alert = page.locator("#ld-alert-box")
    alert.wait_for(state="visible", timeout=240_000)
    text = alert.inner_text()
    for part in ("What broke first", "Where", "At step", "Batch files", "Try first:",
                 "Go back to the preset's learning rate"):  # not "halve it": half of 10 is still 1,667× too high
        assert part in text, text
    assert "stopped by the numerics guard" in wait_until_ended(page)
    # the plots are this run's, not the run this tab showed before it (lr 0.003): a new run's figures are drawn
    # at once, whatever wait the throttle had set for the old ones
    page.wait_for_function("""() => { const gd = document.querySelector('#ld-lr .js-plotly-plot');
        return gd && gd.data.length && Math.max(...gd.data[0].y.filter(v => v !== null)) > 1; }""", timeout=5_000)
    shot(page, "4-train-nan-alert")
    button(page, "Go to Troubleshoot →").click()
    wait_text(page, "#ld-findings", "non-finite")
    assert "Troubleshoot" in selected_step(page)
    shot(page, "6-troubleshoot-nan")


def test_a_second_tab_sees_the_running_job_and_cannot_start_another(page, browser, app):
    walk_to_train(page, {"max_steps": "400"}, {"sample_enabled": "off"})
    button(page, "Start").click()
    wait_text(page, "#ld-status", "running", 120)
    other_context = browser.new_context(viewport={"width": 1400, "height": 1000})
    other = other_context.new_page()
    other.set_default_timeout(120_000)  # a run's first row comes after its step-0 measures (~40 s on a busy machine)
    try:
        other.goto(app.url)
        wait_text(other, "#ld-status", "running")
        assert "Train" in selected_step(other)  # the reopened tab jumps to the run
        other.wait_for_function("() => { const p = document.querySelector('#ld-loss .js-plotly-plot');"
                                " return p && p.data && p.data.length && p.data[0].x.length >= 1; }")
        assert button(other, "Start").is_disabled()  # greyed while a run trains (the API still says "already active")
        shot(other, "4-train-second-tab")
        assert app.ctx.runner.active
        button(other, "Stop").click()
        assert "stopped" in wait_until_ended(other)
    finally:
        other_context.close()


def test_korean_switch_relabels_the_wizard(page):
    page.get_by_text("한국어").click()
    page.wait_for_function("() => document.body.innerText.includes('다음: 스텝')")
    # the tab labels come in the same update but may be drawn a frame later
    page.wait_for_function("() => document.querySelector('#ld-dataset-button')?.innerText.includes('데이터셋')")
    assert page.get_by_role("tab", name=re.compile("데이터셋")).count() == 1
    assert "트리거 단어" in page.locator("#ld-f-trigger").inner_text()
    page.wait_for_function("() => document.body.innerText.includes('쓸 수 있는 그림')")
    shot(page, "1-dataset-ko")
