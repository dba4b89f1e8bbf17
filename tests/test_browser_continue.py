"""The app opened again after the computer went off while a run trained, in a real headless Chromium: the Train
step says which run was interrupted and from which step Continue takes it on, Continue is the button to press, and
pressing it trains the run to its end in its own folder, its plots carrying on from the rows before. And Review's
"Continue this run" for an interrupted run that a newer finished one hides from the Train step."""

from __future__ import annotations

import time

import pytest

from tests.test_browser import ARTIFACTS, browser, page, pytestmark  # noqa: F401 (the same marks, Chromium, page)
from tests.test_browser_nav import open_page
from tests.test_continue import interrupted_run


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on a workspace whose one run was interrupted after step 3 (its checkpoint: step 2)."""
    from ui.testing import running_app

    root = tmp_path_factory.mktemp("continue")
    interrupted_run(root, root / "ws" / "runs")
    with running_app(root / "ws") as running:
        yield running


def test_a_run_the_computer_interrupted_is_offered_and_continued_in_the_browser(page, app):  # noqa: F811
    from trainer.io import read_jsonl

    (run,) = [p.parent for p in app.ctx.runs_dir.glob("*/*/config.toml")]
    page.wait_for_function("() => !document.querySelector('#ld-train-button').disabled")
    page.locator("#ld-train-button").click()
    status = page.locator(".ld-status-line")
    status.filter(has_text="was interrupted while it trained").wait_for()
    said = status.inner_text()
    assert app.ctx.run_rel(run) in said and "last complete checkpoint, step 2" in said, said
    button = page.get_by_role("button", name="Continue", exact=True)
    assert button.is_enabled() and not page.get_by_role("button", name="Stop", exact=True).is_enabled()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "continue-0-interrupted.png"), full_page=True)
    button.click()
    status.filter(has_text="finished").wait_for(timeout=120_000)
    assert "was interrupted" not in status.inner_text() and not button.is_enabled()
    page.wait_for_function("() => !document.querySelector('#ld-start').disabled", timeout=20_000)
    assert not page.get_by_role("button", name="Stop", exact=True).is_enabled()
    # the plots carry the rows from before the interruption on: all four steps, though the run (two steps from its
    # checkpoint) started and ended between two of the page's looks
    page.wait_for_function("() => (document.querySelector('#ld-loss .js-plotly-plot')?.data?.[0]?.x || [])"
                           ".length === 4", timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "continue-1-finished.png"), full_page=True)
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4]
    assert (run / "final" / "lora.safetensors").is_file()


@pytest.fixture(scope="module")
def older_and_newer(tmp_path_factory):
    """The app on a workspace with an interrupted run (checkpoint: step 2) and, after it, a finished one."""
    from tests.helpers import tiny_config
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training
    from ui.testing import running_app

    root = tmp_path_factory.mktemp("review-continue")
    older = interrupted_run(root, root / "ws" / "runs")
    time.sleep(1.1)  # the newer run's folder is named by the second it started
    newer = run_training(tiny_config(root / "data", root / "ws" / "runs", {"train.max_steps": 2}), MemorySink())
    assert newer.status == "finished", newer.message
    with running_app(root / "ws") as running:
        yield running, older, newer.run_dir


def test_troubleshoot_sends_an_older_interrupted_run_to_review_to_continue(browser, older_and_newer):  # noqa: F811
    """Troubleshoot on the interrupted run: its first cause is that it has not finished, and the button for its
    first advice shows Review on that run, where Continue this run carries it to its end."""
    from trainer.io import read_jsonl

    app, older, newer = older_and_newer
    rel = app.ctx.run_rel(older)
    context, tab = open_page(browser, app.url)
    try:
        tab.get_by_role("tab", name="Review").click()
        tab.locator("#ld-recommend").wait_for()
        button = tab.locator("#ld-review-continue")
        assert not button.is_visible()  # the newest run, chosen first, finished: nothing to continue
        tab.get_by_role("tab", name="Troubleshoot").click()
        tab.locator("#ld-troubleshoot").get_by_label("Run", exact=True).click()
        tab.get_by_role("option", name=f"{rel} (interrupted, resume from step 2)").click()
        tab.locator("#ld-findings").filter(has_text="The run has not finished").wait_for()
        findings = tab.locator("#ld-findings").inner_text()
        assert findings.index("The run has not finished") < findings.index("Undertrained: too little dose"), findings
        go = tab.locator("#ld-go-review")
        assert go.inner_text() == "Continue this run →"
        ARTIFACTS.mkdir(exist_ok=True)
        tab.screenshot(path=str(ARTIFACTS / "continue-2-troubleshoot.png"), full_page=True)
        go.click()
        button.wait_for(state="visible")  # Review, on the run diagnosed
        tab.locator("#ld-recommend").filter(has_text="Under-trained so far: the run stopped at step 3 of the 4").wait_for()
        assert button.inner_text() == "Continue this run"
        tab.screenshot(path=str(ARTIFACTS / "continue-3-review.png"), full_page=True)
        button.click()
        status = tab.locator(".ld-status-line")  # the Train step is shown, its run the older one
        status.filter(has_text="finished").wait_for(timeout=120_000)
        assert rel in status.inner_text()
        assert [r["step"] for r in read_jsonl(older / "metrics.jsonl")] == [1, 2, 3, 4]
        assert [r["step"] for r in read_jsonl(newer / "metrics.jsonl")] == [1, 2]  # the newer run untouched
        tab.get_by_role("tab", name="Review").click()
        tab.locator("#ld-review").get_by_label("Run", exact=True).click()
        tab.get_by_role("option", name=f"{rel} (finished)").click()
        button.wait_for(state="hidden")
    finally:
        context.close()
