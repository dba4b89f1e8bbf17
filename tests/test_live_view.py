"""Watching a run costs the rows that arrived, not the run so far: the live plots take whole figures once and
then only new points (the poll's message and the page that appends them), the page's DOM stays bounded while
a run trains, and a hidden tab neither polls nor draws. A runner whose "training" emits metric rows at a
steady pace (no model) stands in for a run, so the page sees hundreds of rows in seconds."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest

from trainer.config.schema import Config
from trainer.run.events import RunEvent, StepRow
from trainer.train.runner import Runner
from ui import plots
from ui.steps.train_poll import REDRAW_AFTER, live_plots, status_body

CHROMIUM = "/usr/bin/chromium"


def row(step: int, **over) -> dict:
    r = {"type": "step", "step": step, "loss": 0.2 + 0.1 * math.sin(step / 7), "grad_norm": 1.5 + math.cos(step),
         "grad_norm_clipped": 1.0, "lr": 1e-4 * (1 + step % 3), "loss_scale": None, "skipped": False,
         "nonfinite": None, "sec_per_step": 0.01}
    return {**r, **over}


def step_row(step: int, **over) -> StepRow:
    """:func:`row` as the runner holds it (and the live plots read it)."""
    return StepRow.parse(row(step, **over))


class FeedRunner(Runner):
    """A runner whose run emits ``rate`` metric rows a second until stopped; ``paused`` holds it."""

    def __init__(self, run_dir: Path, rate: float = 50.0):
        super().__init__()
        self.run_dir, self.rate = run_dir, rate
        self.paused = threading.Event()

    def _run(self, config, parent, resume) -> None:
        self._on_event(RunEvent.from_json({"type": "started", "run_dir": str(self.run_dir),
                                           "plan": {"total_steps": 1_000_000}}))
        step = 0
        while not self._commands.stop_requested:
            if not self.paused.is_set():
                step += 1
                self._on_event(RunEvent.from_json(row(step)))
            threading.Event().wait(1.0 / self.rate)
        with self._lock:
            self.state.status = "stopped"
            self.version += 1


def feed(runner: Runner, rows: list[dict]) -> None:
    for r in rows:
        runner._on_event(RunEvent.from_json(r))


def started(tmp_path: Path) -> Runner:
    runner = Runner()
    runner._on_event(RunEvent.from_json({"type": "started", "run_dir": str(tmp_path / "feed" / "1"),
                                         "plan": {"total_steps": 5000}}))
    return runner


def line_traces(fig: dict) -> list[dict]:
    return [t for t in fig["data"] if t.get("mode") == "lines"]


# ------------------------------------------------------------------------------------------ the server's side


@pytest.mark.parametrize("scaled", [False, True])
def test_new_points_on_the_figures_of_earlier_rows_give_the_figures_of_all_rows(scaled):
    rows = [step_row(i, loss_scale=2.0**14 if scaled else None) for i in range(1, 61)]
    before, after = rows[:23], rows[23:]
    points, carry = plots.new_points(after, plots.live_carry(before))
    old = plots.live_figures(before, 1.0, "en", "r")
    whole = plots.live_figures(rows, 1.0, "en", "r")
    for name in plots.LIVE:
        lines = line_traces(whole[name])
        assert len(points["y"][name]) == len(lines) == len(line_traces(old[name]))
        for old_trace, trace, ys in zip(line_traces(old[name]), lines, points["y"][name]):
            assert old_trace["x"] + points["x"] == trace["x"]
            assert old_trace["y"] + ys == pytest.approx(trace["y"], rel=1e-12)
    assert carry == plots.live_carry(rows)


def test_a_non_finite_or_skipped_step_or_a_first_loss_scale_changes_the_figures_shape():
    carry = plots.live_carry([step_row(1)])
    assert not plots.changes_shape([step_row(2), step_row(3)], carry)
    assert plots.changes_shape([step_row(2, loss=math.nan, nonfinite="loss")], carry)
    assert plots.changes_shape([step_row(2, grad_norm=math.inf)], carry)
    assert plots.changes_shape([step_row(2, skipped=True)], carry)
    assert plots.changes_shape([step_row(2, loss_scale=65536.0)], carry)
    assert not plots.changes_shape([step_row(2, loss_scale=65536.0)], plots.live_carry([step_row(1, loss_scale=65536.0)]))


def test_a_tab_gets_whole_figures_once_then_only_the_rows_since_its_last_look(tmp_path):
    runner = started(tmp_path)
    look = lambda state, whole=False: live_plots(runner, runner.snapshot(state.get("rows", 0)), state, "en", "r",  # noqa: E731
                                                 whole=whole)
    message, state = look({}, whole=True)
    assert message["figures"] and state["drawn"] == 0  # no rows yet: the notes
    feed(runner, [row(i) for i in range(1, 11)])
    message, state = look(state)
    assert "figures" in message and state["drawn"] == state["rows"] == 10  # notes become lines: whole
    feed(runner, [row(i) for i in range(11, 14)])
    message, state = look(state)
    assert "figures" not in message and (message["from"], message["rows"], message["x"]) == (10, 13, [11, 12, 13])
    assert message["full"] == state["full"]
    assert look(state)[0] is None  # nothing new
    feed(runner, [row(14, loss=math.nan, nonfinite="loss")])
    message, state = look(state)
    assert "figures" in message  # the red marker and line
    feed(runner, [row(i) for i in range(15, 16 + REDRAW_AFTER)])
    message, state = look(state)
    assert "figures" in message and state["drawn"] == 15 + REDRAW_AFTER  # grown by REDRAW_AFTER: decimated anew
    assert all(len(t["x"]) <= plots.MAX_POINTS for t in message["figures"]["loss"]["data"])
    message, again = look(state, whole=True)  # a page that lost track
    assert "figures" in message and again["full"] == state["full"] + 1


gradio_client = pytest.importorskip("gradio_client")


@pytest.mark.slow
def test_a_poll_sends_what_the_new_rows_add_not_the_run_so_far(tmp_path):
    """The poll's answer for k new rows is as big after 850 rows as after 50, and grows with k."""
    from ui.testing import running_app

    runner = started(tmp_path)
    with running_app(tmp_path / "ws", runner=runner) as app:
        client = gradio_client.Client(app.url, verbose=False)

        def poll_size() -> int:
            return len(json.dumps(client.predict(api_name="/poll"), default=str))

        step = 0

        def add(k: int) -> None:
            nonlocal step
            feed(runner, [row(i) for i in range(step + 1, step + k + 1)])
            step += k

        poll_size()
        add(50)
        poll_size()
        add(5)
        early = poll_size()
        add(800)
        poll_size()
        add(5)
        late = poll_size()
        add(50)
        more = poll_size()
    assert late < 1.2 * early, (early, late)
    assert more > 2 * late, (late, more)


def test_the_status_box_is_the_status_line_as_html_with_every_word_escaped():
    html = status_body("**running** · step 3 / 9 · `demo/1`\n\n> <script>x</script> a **bold** end")
    assert html == ("<p><strong>running</strong> · step 3 / 9 · <code>demo/1</code></p>"
                    "<blockquote><p>&lt;script&gt;x&lt;/script&gt; a <strong>bold</strong> end</p></blockquote>")


def test_the_light_look_brings_points_and_status_and_says_what_else_moved(tmp_path):
    """A page's light look (``/gradio_api/run/look``, a plain POST outside gradio's events): whole figures and
    the status first, then only the new points, the status only when its words changed, what the full poll would
    bring, and its pace; the full poll of such a page sends neither plots nor status, only the look's cue."""
    import requests

    from ui.testing import running_app

    class Training(Runner):  # training as far as the look can tell: its pace is a run's
        active = True

    runner = Training()
    feed(runner, [{"type": "started", "run_dir": str(tmp_path / "feed" / "1"), "plan": {"total_steps": 5000}}])
    with running_app(tmp_path / "ws", runner=runner) as app:
        def look(view: dict) -> dict:
            reply = requests.post(f"{app.url}gradio_api/run/look", json={"data": [view]}, timeout=30)
            reply.raise_for_status()
            return reply.json()["data"][0]

        feed(runner, [row(i) for i in range(1, 11)])
        first = look({"lang": "en", "shown": True})
        assert first["plots"]["rows"] == 10 and set(first["plots"]["figures"]) >= {"loss", "grad", "lr"}
        assert "step 10" in first["status"]["html"] and first["held"]["status_hash"] == first["status"]["hash"]
        assert first["moved"]["active"] and first["moved"]["samples"] == 0 and first["every"] == 2.0
        feed(runner, [row(i) for i in range(11, 14)])
        second = look({**first["held"], "lang": "en", "shown": True})
        assert "figures" not in second["plots"] and second["plots"]["x"] == [11, 12, 13]
        assert second["plots"]["from"] == 10 and "step 13" in second["status"]["html"]
        third = look({**second["held"], "lang": "en", "shown": True})
        assert third["plots"] is None and third["status"] is None and third["every"] == 5.0  # nothing new: slower
        assert look({**third["held"], "lang": "en", "shown": False})["every"] == 10.0  # plots hidden
        korean = look({**third["held"], "lang": "ko", "shown": True})  # another language: whole, in it
        assert "figures" in korean["plots"] and korean["status"]["html"] != third.get("status")
        garbage = look({"rows": "x", "carry": 3, "lang": "en"})  # not what it sent: whole figures again
        assert "figures" in garbage["plots"]

        from ui.testing import call

        full = call(gradio_client.Client(app.url, verbose=False), app.ctx, "poll")  # an API client: all, as before
        assert "step 13" in full["status_md"] and "figures" in full["live_plots"]


# --------------------------------------------------------------------------------------------- in the browser

def in_browser(test):
    for mark in (pytest.mark.browser, pytest.mark.slow,
                 pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no /usr/bin/chromium")):
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def feed_app(tmp_path_factory):
    from ui.testing import running_app

    workspace = tmp_path_factory.mktemp("ws")
    with running_app(workspace, runner=FeedRunner(workspace / "runs" / "feed" / "1")) as app:
        yield app


@pytest.fixture
def watching(feed_app):
    """A page on the app while the feed runs (it shows the running job's Train step), with a CDP session."""
    sync_api = pytest.importorskip("playwright.sync_api")
    runner = feed_app.ctx.runner
    runner.paused.clear()
    assert runner.start(Config())[0]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(feed_app.url)
        wait_for_points(page, 50)
        try:
            yield page, cdp, runner
        finally:
            runner.stop()
            runner.wait(30)
            browser.close()


def kept_nodes(cdp) -> tuple[float, float]:
    """The renderer's DOM nodes and window listeners kept after a garbage collection (detached ones too)."""
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    window = cdp.send("Runtime.evaluate", {"expression": "window"})["result"]["objectId"]
    listeners = cdp.send("DOMDebugger.getEventListeners", {"objectId": window})["listeners"]
    return metrics["Nodes"], sum(1 for x in listeners if x["type"] == "resize")


def wait_for_points(page, n: int, timeout: float | None = None) -> None:
    """Until the page's loss plot holds at least ``n`` points (``timeout`` in ms: the page's default when None)."""
    page.wait_for_function("n => (document.querySelector('#ld-loss .js-plotly-plot')?.data?.[0]?.x?.length || 0) >= n",
                           arg=n, timeout=timeout)


def page_loss(page) -> dict:
    return page.evaluate("() => { const d = document.querySelector('#ld-loss .js-plotly-plot').data;"
                         " return {x: Array.from(d[0].x), y: Array.from(d[0].y), smooth: Array.from(d[1].y)}; }")


@in_browser
def test_the_page_keeps_every_new_point_and_its_dom_bounded_while_a_run_trains(watching):
    page, cdp, runner = watching
    nodes0, resize0 = kept_nodes(cdp)
    asked: dict[str, int] = {"poll": 0, "look": 0}
    page.on("request", lambda r: asked.update(poll=asked["poll"] + ("/queue/join" in r.url),
                                              look=asked["look"] + ("/run/look" in r.url)))
    page.wait_for_timeout(12_000)  # ~600 rows; the feed's run trains on the CPU here: a look every 5 s
    runner.paused.set()
    page.wait_for_timeout(1_000)  # a row under way lands in the run
    rows = runner.snapshot().metrics
    wait_for_points(page, len(rows), timeout=20_000)  # on a loaded machine a look and its draw take over a second
    nodes1, resize1 = kept_nodes(cdp)
    assert nodes1 - nodes0 < 2_000, (nodes0, nodes1)  # a poll used to leave ~4 plots' worth (~800 nodes) behind
    assert resize1 - resize0 <= 4, (resize0, resize1)  # a plot's listener each; it was four a poll
    shown = page_loss(page)
    assert shown["x"] == [r.step for r in rows]
    assert shown["y"] == pytest.approx([r.loss for r in rows], rel=1e-12)
    assert shown["smooth"] == pytest.approx(plots.smooth([r.loss for r in rows]), rel=1e-9)
    # the points came by the light look; gradio's poll (0.1-0.3 s of the page's CPU each) waited: nothing else moved
    assert asked["look"] >= 2 and asked["poll"] <= 1, asked
    assert "running" in page.locator("#ld-status").inner_text()


@in_browser
def test_a_hidden_tab_neither_polls_nor_draws_and_catches_up_once_shown(watching):
    page, _, runner = watching
    polls: list[str] = []
    # gradio's polls and the page's light looks (ui/live_view.js)
    page.on("request", lambda r: polls.append(r.url) if "/queue/join" in r.url or "/run/look" in r.url else None)
    page.evaluate("""() => { window.ldDraws = 0;
        for (const name of ['react', 'extendTraces', 'newPlot', 'redraw']) {
            const f = window.Plotly[name]; window.Plotly[name] = (...a) => { window.ldDraws++; return f(...a); }; }
        const set = (v) => { Object.defineProperty(document, 'visibilityState', {value: v, configurable: true});
                             Object.defineProperty(document, 'hidden', {value: v === 'hidden', configurable: true});
                             document.dispatchEvent(new Event('visibilitychange')); };
        window.ldSetVisibility = set; set('hidden'); }""")
    page.wait_for_timeout(1_500)  # a poll already under way when the tab hid lands
    polls.clear()
    points = len(page_loss(page)["x"])
    page.evaluate("window.ldDraws = 0")
    page.wait_for_timeout(4_000)
    assert polls == [] and page.evaluate("window.ldDraws") == 0
    assert len(page_loss(page)["x"]) == points < len(runner.snapshot().metrics)
    runner.paused.set()
    page.wait_for_timeout(500)  # a row under way lands
    steps = [r.step for r in runner.snapshot().metrics]
    page.evaluate("window.ldSetVisibility('visible')")
    # caught up at once by a look or two, on a busy machine within seconds
    page.wait_for_function(f"() => document.querySelector('#ld-loss .js-plotly-plot').data[0].x.length === {len(steps)}",
                           timeout=20_000)
    assert page_loss(page)["x"] == steps
    assert 1 <= len(polls) <= 6
