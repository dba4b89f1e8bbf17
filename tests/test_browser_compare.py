"""In a real Chromium (issue 21): Review's "Compare two runs" on two finished tiny runs shows the setting that
differs and both runs' curves and grids; and Pause then Continue on the Train step ends with the same LoRA weights
as a run of the same settings that was never paused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import test_browser
from tests.test_browser import button, pytestmark, shot, status, wait_text, walk_to_train  # noqa: F401 (the marks)
from tests.test_browser_nav import open_page

browser = test_browser.browser  # the module's headless Chromium (a fixture)

COMPARE_LR = (1e-3, 3e-3)


@pytest.fixture(scope="module")
def two_runs_app(tmp_path_factory):
    """An app on a workspace that holds two finished tiny runs with sample pictures, the second started from the
    first with another learning rate (so the journal records the change)."""
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.train.loop import run_training
    from ui.testing import running_app

    root = tmp_path_factory.mktemp("cmp")
    data = write_toy_dataset(root / "data")
    runs = []
    for lr in COMPARE_LR:
        cfg = tiny_config(data, root / "ws" / "runs", {"train.max_steps": 2, "optim.lr": lr, "sample.enabled": True,
                                                       "save.name": "cmp"})
        result = run_training(cfg, parent=runs[-1] if runs else None)
        assert result.status == "finished", result.message
        runs.append(result.run_dir)
    with running_app(root / "ws") as app:
        yield app, [app.ctx.run_rel(r) for r in runs]


def test_compare_shows_the_difference_both_curves_and_both_grids(browser, two_runs_app):
    app, (older, newer) = two_runs_app
    context, page = open_page(browser, app.url)
    try:
        page.get_by_role("tab", name="Review").click()
        page.get_by_text("Compare two runs").click()
        button(page, "Compare").click()  # A: the older run, B: the newer one, chosen already
        wait_text(page, "#ld-compare-diff", "optim\\.lr")
        diff = page.locator("#ld-compare-diff").inner_text()
        assert "0.001" in diff and "0.003" in diff and older in diff and newer in diff, diff
        assert "run journal" in page.locator("#ld-compare-source").inner_text()
        page.wait_for_function("""() => {
            const p = document.querySelector('#ld-compare-loss .js-plotly-plot');
            if (!p || !p.data) return false;
            const names = p.data.filter(t => t.x && t.x.length === 2).map(t => t.name);
            return names.some(n => n.startsWith('A: ')) && names.some(n => n.startsWith('B: ')); }""")
        page.wait_for_function("() => document.querySelectorAll('#ld-compare-grid-a img').length > 0"
                               " && document.querySelectorAll('#ld-compare-grid-b img').length > 0")
        grad = page.evaluate("() => document.querySelector('#ld-compare-grad .js-plotly-plot').data.map(t => t.name)")
        assert any(n.startswith("A: ") for n in grad) and any(n.startswith("B: ") for n in grad), grad
        page.locator("#ld-compare").scroll_into_view_if_needed()
        shot(page, "5-review-compare")
    finally:
        context.close()


def test_pause_then_continue_ends_with_the_weights_of_a_run_never_paused(browser, tmp_path):
    import torch
    from safetensors.torch import load_file

    from trainer.config.schema import load_config
    from trainer.io import read_jsonl
    from trainer.train.loop import run_training
    from ui.testing import running_app

    with running_app(tmp_path / "ws") as app:
        context, page = open_page(browser, app.url)
        try:
            walk_to_train(page, {"max_steps": "6", "save_every": "2"}, {"sample_enabled": "off"})
            button(page, "Start").click()
            page.wait_for_function("() => document.body.innerText.includes('Training started')")
            button(page, "Pause").click()  # enabled by Start's answer; Playwright waits for that
            wait_text(page, "#ld-status", "paused", 240)
            # the steps taken before the pause are drawn once it pauses, not when the plots' throttle next allows
            page.wait_for_function("() => { const gd = document.querySelector('#ld-loss .js-plotly-plot');"
                                   " return gd && gd.data.length && gd.data[0].x.length >= 1; }", timeout=5_000)
            # a lone step shows as a point (a line of one point draws nothing)
            assert page.evaluate("() => document.querySelectorAll('#ld-loss .scatterlayer .point').length") >= 1
            shot(page, "4-train-paused")
            run = Path(app.ctx.runner.snapshot().run_dir)
            button(page, "Continue").click()
            wait_text(page, "#ld-status", "finished", 240)
            assert "step 6 / 6" in status(page), status(page)
        finally:
            context.close()
        assert Path(app.ctx.runner.snapshot().run_dir) == run  # continued in the same folder

    events = read_jsonl(run / "events.jsonl")
    paused = [e for e in events if e["type"] == "paused"]
    assert len(paused) == 1 and paused[0]["checkpoint"], paused
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4, 5, 6]

    cfg = load_config(run / "config.toml")  # the same settings, trained straight through
    cfg.save.output_dir = str(tmp_path / "straight")
    straight = run_training(cfg)
    assert straight.status == "finished", straight.message
    a = load_file(run / "final" / "lora.safetensors")
    b = load_file(straight.run_dir / "final" / "lora.safetensors")
    assert a.keys() == b.keys() and a
    assert [k for k in a if not torch.equal(a[k], b[k])] == []
