"""The app opened again after the computer went off while a run trained, in a real headless Chromium: the Train
step says which run was interrupted and from which step Continue takes it on, Continue is the button to press, and
pressing it trains the run to its end in its own folder, its plots carrying on from the rows before."""

from __future__ import annotations

import pytest

from tests.test_browser import ARTIFACTS, browser, page, pytestmark  # noqa: F401 (the same marks, Chromium, page)
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
