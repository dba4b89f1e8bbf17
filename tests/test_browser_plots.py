"""The Train step's live plots never go blank (issue 34): their rendered heights are sampled in a real Chromium
through a whole run, a pause, a continue and a stop, with the window resized and full-page screenshots taken
on the way (each one a resize: plotly's resize deleted the figures' height, and a responsive plot without one
collapsed to 0 px), then after leaving the step and coming back. On the way the same run shows what else the
step owes its user: Start greyed while it trains, the "sample pictures will appear" note gone once they did, the
verdict once it stopped. A run of one step gets axes from 0, not plotly's padding around a lone point."""

from __future__ import annotations

from tests import test_browser
from tests.test_browser import button, loss_points, pytestmark, shot, wait_text, walk_to_train  # noqa: F401

# the app (one per module), the browser and a page on it, as the other browser tests have them
app, browser, page = test_browser.app, test_browser.browser, test_browser.page

PLOTS = ("ld-loss", "ld-grad", "ld-lr", "ld-scale")
# Installed in the page: every 150 ms, each shown plot's height goes into window.ldHeights with the phase's name
SAMPLER = """(ids) => {
    window.ldPhase = "start";
    window.ldHeights = [];
    window.ldSampler = setInterval(() => {
        for (const id of ids) {
            const gd = document.querySelector(`#${id} .js-plotly-plot`);
            if (!gd || gd.offsetParent === null) continue; // another step is shown: nothing to see
            window.ldHeights.push([window.ldPhase, id, gd.getBoundingClientRect().height]);
        }
    }, 150);
}"""


def shake(page, phase: str, name: str) -> None:
    """What made the plots collapse: window resizes (a user's, a full-page screenshot's), then a few draws."""
    page.evaluate("(p) => { window.ldPhase = p; }", phase)
    for width in (1100, 1400):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(400)
    shot(page, f"4-train-plots-{name}")
    page.wait_for_timeout(3500)  # the page draws the plots at most every 3 s


def test_the_plots_keep_their_height_through_a_run_a_pause_and_a_stop(page, app):
    walk_to_train(page, {"max_steps": "400"}, {"sample_steps": "10"})
    page.evaluate(SAMPLER, list(PLOTS))
    button(page, "Start").click()
    page.wait_for_function("() => { const gd = document.querySelector('#ld-loss .js-plotly-plot');"
                           " return gd && gd.data && gd.data.length && gd.data[0].x.length >= 3; }", timeout=240_000)
    shake(page, "running", "running")
    assert button(page, "Start").is_disabled()  # not the button to press while it trains
    pictures = page.evaluate("() => document.querySelectorAll('#ld-train img').length")
    button(page, "Sample now").click()
    page.wait_for_function("() => document.body.innerText.includes('Sample pictures will appear below')")
    page.wait_for_function(f"() => document.querySelectorAll('#ld-train img').length > {pictures}", timeout=120_000)
    # the note goes with the poll that brings the pictures
    page.wait_for_function("() => !document.body.innerText.includes('Sample pictures will appear below')",
                           timeout=15_000)
    before = loss_points(page)
    shake(page, "running", "running-2")
    page.wait_for_function(f"() => document.querySelector('#ld-loss .js-plotly-plot').data[0].x.length > {before}",
                           timeout=60_000)  # new points came (a sample being drawn holds them a while)
    shake(page, "running", "running-3")  # and were drawn on the shaken plots

    button(page, "Pause").click()
    wait_text(page, "#ld-status", "paused", 240)
    shake(page, "paused", "paused")
    button(page, "Continue").click()
    wait_text(page, "#ld-status", "running", 240)
    paused_at = loss_points(page)
    page.wait_for_function(f"() => document.querySelector('#ld-loss .js-plotly-plot').data[0].x.length > {paused_at}",
                           timeout=240_000)
    shake(page, "continued", "continued")

    button(page, "Stop").click()
    wait_text(page, "#ld-status", "stopped", 240)
    wait_text(page, "#ld-train-verdict", "Verdict: ", 120)  # the step ends with the doctor's verdict
    assert button(page, "Start").is_enabled()
    shake(page, "stopped", "stopped")
    page.evaluate("() => { window.ldPhase = 'away'; }")
    page.get_by_role("tab", name="Dataset").click()
    page.wait_for_timeout(1500)
    page.set_viewport_size({"width": 1200, "height": 1000})  # resized while the plots are hidden
    page.wait_for_timeout(500)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.evaluate("() => { window.ldPhase = 'back'; }")
    page.get_by_role("tab", name="Train").click()
    page.wait_for_timeout(4000)
    shot(page, "4-train-plots-back")

    heights = page.evaluate("() => { clearInterval(window.ldSampler); return window.ldHeights; }")
    phases = {phase for phase, _, _ in heights}
    assert {"running", "paused", "continued", "stopped", "back"} <= phases, phases
    collapsed = [(phase, plot, h) for phase, plot, h in heights if h < 200]
    assert not collapsed, f"{len(collapsed)} of {len(heights)} samples collapsed, first {collapsed[:5]}"
    assert {plot for _, plot, _ in heights} == set(PLOTS)
    # every plot shows the run after it stopped: its points, on axes from 0
    drawn = page.evaluate("""() => ['ld-loss', 'ld-grad', 'ld-lr'].map(id => {
        const gd = document.querySelector(`#${id} .js-plotly-plot`);
        return [gd.data[0].x.length, gd._fullLayout.xaxis.range[0], gd.querySelector('.main-svg') !== null]; })""")
    assert all(n >= paused_at and x0 >= 0 and svg for n, x0, svg in drawn), drawn


def test_a_run_of_one_step_gets_axes_from_zero(page, app):
    walk_to_train(page, {"max_steps": "1"}, {"sample_enabled": "off"})
    button(page, "Start").click()
    wait_text(page, "#ld-status", "finished", 240)
    page.wait_for_function("() => document.querySelector('#ld-loss .js-plotly-plot').data[0].x.length === 1",
                           timeout=15_000)
    page.wait_for_timeout(500)
    axes = page.evaluate("""() => Object.fromEntries(['ld-loss', 'ld-grad', 'ld-lr'].map(id => {
        const gd = document.querySelector(`#${id} .js-plotly-plot`);
        const ys = gd.data.flatMap(t => t.y).filter(v => typeof v === 'number');
        return [id, {x: gd._fullLayout.xaxis.range, y: gd._fullLayout.yaxis.range, type: gd._fullLayout.yaxis.type,
                     top: Math.max(...ys)}]; }))""")
    shot(page, "4-train-plots-one-step")
    for plot, a in axes.items():
        assert a["x"][0] == 0 and a["x"][1] >= 1, (plot, a)  # the step, from 0: not -0.5 .. 1.5
        if a["type"] == "log":  # a decade either side
            assert 10 ** a["y"][0] < a["top"] < 10 ** a["y"][1], (plot, a)
        else:  # from 0 to about twice the value: not -1 .. 1
            assert a["y"][0] == 0 and (a["top"] == 0 or a["top"] < a["y"][1] <= 2.5 * a["top"]), (plot, a)
