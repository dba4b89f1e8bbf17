"""Step 4, Train: Start / Stop / Sample now / Save now, the live plots, the status line, the guard's alert box,
and the samples as they are made.

Every tab polls the one process-wide runner (``gr.Timer``, page load, a language chosen, and showing the Train
step) and gets ``gr.skip()`` while the runner's version has not moved; within a changed version only the parts
that changed are sent (the gallery when samples arrived, the status when its words changed). Each poll costs the
page a fixed 0.1-0.3 s of CPU in gradio's own bookkeeping, whatever it brings, so the poll sets its own pace
(:func:`poll_every`): every 2 s while a run trains with the Train step shown, 5 s while nothing moves, 10 s on
another step; with no run training the timer stops (an open page costs nothing): Start and Continue start it
again, and a run started elsewhere (another tab, the API) shows once this tab's Train step is shown. The plots
take only the new points: the page keeps its figures (``ui/live_view.js``) and the poll sends them whole once,
then what the rows since the tab's last look add (:func:`live_plots`).

In the browser that pace belongs to the light look (:func:`light_look`, the ``look`` endpoint the page calls
with a plain ``fetch``): it brings the plots' points and the status line, and the page presses the full poll
(the hidden ``poll_now`` button) only when the samples, the alerts, the findings or the run's state moved; the
timer then only backs it up, every 30 s. The full poll stays what API clients call, and sends them everything. The poll runs with
``concurrency_limit=None`` so no tab waits behind another tab's click; gradio's timer does not tick while the tab
is hidden, and the first tick after it shows again catches up.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path
from typing import Any

import gradio as gr
from gradio import processing_utils
from gradio.components.plot import PlotData

import words
from trainer.config.schema import save_config
from trainer.doctor.risks import start_risks
from trainer.errors import UserError
from trainer.io import json_tree_map
from trainer.message import Msg
from trainer.plan.steps import make_plan

from .. import live, plots
from ..binding import UI, ok_box
from ..fields import NAMES, config_from_values
from ..i18n import t
from ..paths import safe_name
from . import gates, review
from .dataset import scan_for
from .own_data import name_clash_note
from .train_poll import (
    CONTINUE_OUTPUTS,
    RUN_BUTTONS,
    RUN_POLL_S,
    continuable_run,
    continue_view,
    light_look,
    pace,
    poll_view,
    run_buttons,
    status_html,
)

POLL_OUTPUTS = ["poll_state", "status_md", "alert_html", "to_troubleshoot", "warnings_md", "verdict_md",
                "live_plots", "samples_gallery", "start_btn", "stop_btn", "pause_btn", "continue_btn", "sample_btn",
                "save_btn", "review_run", "ts_run", "wizard", "train_msg", "poll_timer", *gates.UNLOCKS]
# Before each poll the page puts what its plots hold into the ``live_view`` input; after it, the page applies
# the ``live_plots`` message (ui/live_view.js).
VIEW_JS = "(lang, state, view, msg) => [lang, state, window.ldLive ? window.ldLive.view() : null, msg]"
SHOWN_JS = ("(lang, state, view, msg) => { if (window.ldLive) window.ldLive.lookNow();"
            " return [lang, state, window.ldLive ? {...window.ldLive.view(), shown: true} : null, msg]; }")
APPLY_JS = "(message) => { if (window.ldLive) window.ldLive.apply(message); }"
def build(ui: UI) -> None:
    lang = ui.ctx.lang
    with gr.Row():
        ui.add("start_btn", gr.Button(t("start", lang), variant="primary", elem_id="ld-start"), "start", "value")
        ui.add("stop_btn", gr.Button(t("stop", lang), variant="stop", interactive=False), "stop", "value")
        ui.add("pause_btn", gr.Button(t("pause", lang), interactive=False), "pause", "value")
        ui.add("continue_btn", gr.Button(t("continue", lang), interactive=False), "continue", "value")
        ui.add("sample_btn", gr.Button(t("sample_now", lang), interactive=False), "sample_now", "value")
        ui.add("save_btn", gr.Button(t("save_now", lang), interactive=False), "save_now", "value")
    ui.add("train_msg", gr.HTML(""))
    # Start asks first when the settings are far from the preset's; API clients pass confirm=True to skip asking
    ui.add("confirm", gr.Checkbox(False, visible=False))
    ui.add("confirm_btn", gr.Button(t("confirm_start", lang), variant="stop", visible=False, elem_id="ld-confirm"),
           "confirm_start", "value")
    ui.add("status_md", gr.HTML(status_html(t("status_idle", lang)), elem_id="ld-status"))
    ui.add("alert_html", gr.HTML("", elem_id="ld-alert"))
    ui.add("to_troubleshoot", gr.Button(t("to_troubleshoot", lang), variant="stop", visible=False),
           "to_troubleshoot", "value")
    # The plots get a value once, here: the page draws into them from then on (a Plot given a new value makes
    # a new plot, see ui/live_view.js). That value is every tab's, whatever its language: it has no words, and
    # the page draws its own figures, in its language, as soon as a plot shows.
    empty = {name: plot_json(plots.wordless(fig)) for name, fig in plots.live_figures([], 0.0, lang, "idle").items()}
    with gr.Row():
        ui.add("loss_plot", gr.Plot(empty["loss"], show_label=False, elem_id="ld-loss", elem_classes="ld-live-plot"))
        ui.add("grad_plot", gr.Plot(empty["grad"], show_label=False, elem_id="ld-grad", elem_classes="ld-live-plot"))
    with gr.Row():
        ui.add("lr_plot", gr.Plot(empty["lr"], show_label=False, elem_id="ld-lr", elem_classes="ld-live-plot"))
        ui.add("scale_plot", gr.Plot(empty["scale"], show_label=False, elem_id="ld-scale", elem_classes="ld-live-plot"))
    ui.add("live_plots", gr.JSON(None, visible=False))
    ui.add("live_view", gr.JSON({}, visible=False))  # API clients leave it empty
    ui.add("samples_gallery", gr.Gallery(label=t("samples", lang), columns=8, height=300, allow_preview=True,
                                         elem_classes="ld-captions"),
           "samples")
    # the step ends with what the doctor makes of the run: its warnings as they are raised, its verdict once over
    ui.add("verdict_md", gr.Markdown("", elem_id="ld-train-verdict"))
    ui.add("warnings_md", gr.Markdown("", elem_id="ld-train-warnings"))
    ui.add("train_next", gr.Button(t("next_review", lang)), "next_review", "value")
    # what the light look presses when something beyond the plots and the status changed (ui/live_view.js)
    ui.add("poll_now", gr.Button("poll", visible="hidden", elem_id="ld-poll-now"))


def wire(ui: UI, timer: gr.Timer, loaded: Any) -> None:
    """``loaded``: the page-load event after which the language switch holds the page's language (``?lang=``
    or the browser's last choice), so the page's first poll gets its figures in that language."""
    ctx = ui.ctx
    runner = ctx.runner
    ui.add("poll_timer", timer)

    def start(*, lang: str, confirm: bool = False, report_state: Any = None, **values: Any) -> dict[str, Any]:
        if runner.active:
            raise UserError(t("err_run_active", lang))
        cfg = config_from_values(values, ctx.runs_dir, [ctx.presets_dir])
        ctx.policy.resolve_folders(cfg, lang)
        cfg.model.base = ctx.policy.check_base(cfg.model.base, lang)
        cfg.measure.judge = ctx.policy.check_judge(cfg.measure.judge, lang)
        if not confirm:
            # another dataset's settings under this run name are never written over without asking
            clash = name_clash_note(ui, cfg.save.name, cfg.dataset.path, lang)
            if clash:
                return {"train_msg": f'<div class="ld-error" id="ld-confirm-box">{html.escape(clash)} '
                                     f'{html.escape(t("confirm_overwrite_hint", lang))}</div>',
                        "confirm_btn": gr.Button(visible=True)}
            report, _ = scan_for(ui, values, lang, report_state)
            risks = start_risks(cfg, make_plan(cfg, report), [ctx.presets_dir])
            if risks:
                return {"train_msg": confirm_box(risks, lang), "confirm_btn": gr.Button(visible=True)}
        save_config(cfg, ctx.configs_dir / f"{safe_name(cfg.save.name, 'config')}.toml")
        ctx.sweeps.release()  # the Review step's model makes room for the run
        ok, _ = runner.start(cfg)
        if not ok:
            raise UserError(t("err_run_active", lang))
        return {"train_msg": ok_box(t("started", lang)), **run_buttons(True), "confirm_btn": gr.Button(visible=False),
                "poll_timer": pace(RUN_POLL_S)}

    start_outputs = ["train_msg", "start_btn", *RUN_BUTTONS, "continue_btn", "confirm_btn", "poll_timer"]
    ui.on(ui["start_btn"].click, start, ["lang", "confirm", "report_state", *NAMES], start_outputs,
          api_name="start", message="train_msg")

    def start_anyway(*, lang: str, report_state: Any = None, **values: Any) -> dict[str, Any]:
        return start(lang=lang, confirm=True, report_state=report_state, **values)

    ui.on(ui["confirm_btn"].click, start_anyway, ["lang", "report_state", *NAMES], start_outputs, message="train_msg")

    def command(name: str, method):
        def run_command(*, lang: str) -> dict[str, Any]:
            if not method():
                raise UserError(t("err_no_run", lang))
            return {"train_msg": ok_box(t(f"{name}_sent", lang))}

        run_command.__name__ = name
        return run_command

    for name, method in (("stop", runner.stop), ("pause", runner.pause), ("sample_now", runner.sample_now),
                         ("save_now", runner.save_now)):
        button = {"stop": "stop_btn", "pause": "pause_btn", "sample_now": "sample_btn", "save_now": "save_btn"}[name]
        ui.on(ui[button].click, command(name, method), ["lang"], ["train_msg"], api_name=name, message="train_msg")

    def continue_run(*, lang: str) -> dict[str, Any]:
        """Continue the last run (this app's, or after a restart the workspace's newest) when it paused, was
        stopped, interrupted or failed, from its newest complete checkpoint."""
        if runner.active:
            raise UserError(t("err_run_active", lang))
        found = continuable_run(ctx)
        if found is None:
            raise UserError(t("err_no_continue", lang))
        run, step, _ = found
        return continue_view(ctx, run, step, lang)

    ui.on(ui["continue_btn"].click, continue_run, ["lang"], CONTINUE_OUTPUTS, api_name="continue", message="train_msg")

    copies = GalleryCopies(ui["samples_gallery"].GRADIO_CACHE)

    def poll(*, lang: str, poll_state: dict | None, live_view: dict | None, train_msg: str | None) -> dict[str, Any]:
        out = poll_view(ui, poll_state or {}, lang, live_view, copies)
        if "samples_gallery" in out and t("sample_now_sent", lang) in (train_msg or ""):
            out["train_msg"] = ""  # "Sample pictures will appear below…": they did
        return out

    inputs = ["lang", "poll_state", "live_view", "train_msg"]
    quiet: dict[str, Any] = {"concurrency_limit": None, "show_progress": "hidden", "show_progress_on": []}
    # a language chosen (not set by the page on load) asks at once: the plots are drawn again in it
    polled = ui.on([timer.tick, ui["lang"].input], poll, inputs, POLL_OUTPUTS, api_name="poll", js=VIEW_JS, **quiet)
    polled.then(None, ui["live_plots"], None, js=APPLY_JS, queue=False, show_progress="hidden")
    first = ui.on(loaded, poll, inputs, POLL_OUTPUTS, js=VIEW_JS, **quiet)
    first.then(None, ui["live_plots"], None, js=APPLY_JS, queue=False, show_progress="hidden")
    # showing the Train step looks at once (its polls were slow while it was hidden), as a step being shown
    shown = ui.on(ui["step_train"].select, poll, inputs, POLL_OUTPUTS, js=SHOWN_JS, **quiet)
    shown.then(None, ui["live_plots"], None, js=APPLY_JS, queue=False, show_progress="hidden")
    asked = ui.on(ui["poll_now"].click, poll, inputs, POLL_OUTPUTS, js=VIEW_JS, **quiet)
    asked.then(None, ui["live_plots"], None, js=APPLY_JS, queue=False, show_progress="hidden")

    def look(view: dict) -> dict:
        """The page's light look at the run (ui/live_view.js calls it with ``fetch``, outside gradio's event
        machinery, whose bookkeeping costs the page far more CPU than the look itself): the plots' new points,
        the status when its words changed, and what else moved (:func:`light_look`)."""
        return light_look(ui, view if isinstance(view, dict) else {})

    gr.api(look, api_name="look", queue=False, api_visibility="undocumented")

    def status() -> dict:
        """Compact run state for API clients: status, step, total, run (inside runs/), alerts, samples."""
        snap = runner.snapshot()
        return {"version": snap.version, "active": snap.active, "status": str(snap.status),
                "step": snap.step, "total_steps": snap.total_steps, "run": ctx.run_rel(snap.run_dir),
                "message": snap.message, "alerts": [a.kind for a in snap.alerts],
                "samples": len(snap.samples), "checkpoints": len(snap.checkpoints),
                "rows": len(snap.metrics)}

    gr.api(status, api_name="status")

    def jump(*, lang: str, poll_state: dict | None) -> dict[str, Any]:
        run = (poll_state or {}).get("run")
        out = {"wizard": gates.go("troubleshoot"),
               "step_troubleshoot": gates.open_step()}
        if run:
            out["ts_run"] = gr.Dropdown(choices=ctx.run_choices(lang), value=ctx.run_rel(run))
        return out

    ui.on(ui["to_troubleshoot"].click, jump, ["lang", "poll_state"], ["wizard", "step_troubleshoot", "ts_run"])

    def next_step(*, lang: str) -> dict[str, Any]:
        choices = ctx.run_choices(lang)
        if not choices:
            raise UserError(t("no_runs", lang))
        run = ctx.run_rel(runner.state.run_dir) or choices[0][1]
        return {"wizard": gates.go("review"), "step_review": gates.open_step(),
                "review_run": gr.Dropdown(choices=choices, value=run), **review.review_view(ui, run, lang)}

    ui.on(ui["train_next"].click, next_step, ["lang"],
          ["wizard", "step_review", "review_run", "train_msg", *review.VIEW_OUTPUTS], message="train_msg")


def confirm_box(risks: list[Msg], lang: str) -> str:
    """What Start asks before it trains settings far from the preset's: each number against the preset's."""
    items = "".join(f"<li>{html.escape(words.say(r, lang))}</li>" for r in risks)
    return (f'<div class="ld-error" id="ld-confirm-box">⚠️ <b>{html.escape(t("confirm_title", lang))}</b>'
            f"<ul>{items}</ul>{html.escape(t('confirm_hint', lang))}</div>")


def plot_json(fig: plots.Fig) -> PlotData:
    """Figure JSON straight to the Plot component (no plotly objects on the one-second path). A NaN or Inf
    anywhere in it (a config's bound, a metric) goes as null, a gap: JSON has no such number."""
    try:
        return PlotData(type="plotly", plot=json.dumps(fig, allow_nan=False))
    except ValueError:
        return PlotData(type="plotly", plot=json.dumps(json_tree_map(_finite_or_null, fig), allow_nan=False))


def _finite_or_null(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


class GalleryCopies:
    """Each sample picture converted and saved to gradio's cache once, for the gallery: a poll that brings
    new samples pays for those alone, and the earlier ones go as the same files (which the browser keeps)."""

    LIMIT = 4096  # remembered files; past that the memory starts over

    def __init__(self, cache_dir: str):
        self.cache_dir = cache_dir
        self.saved: dict[Path, str] = {}

    def __call__(self, path: Path) -> str | None:
        cached = self.saved.get(path)
        if cached is None or not os.path.exists(cached):  # new, or gone with gradio's cache clean-up
            img = live.open_rgb(path)
            if img is None:
                return None
            if len(self.saved) >= self.LIMIT:
                self.saved.clear()
            cached = self.saved[path] = processing_utils.save_pil_to_cache(img, cache_dir=self.cache_dir)
        return cached
