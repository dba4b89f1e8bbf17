"""What a tab's look at the run brings the Train step (ui/steps/train.py wires it): the full poll's answer
(:func:`poll_view`: only what changed since the tab's last look), the light look's (:func:`light_look`: the plots'
new points and the status line), and the pace of both (:func:`poll_every`, :func:`look_every`)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

import words
from trainer.errors import UserError
from trainer.models.precision import resolve_device
from trainer.run.rundir import continue_step, list_runs, run_status
from trainer.train.runner import TERMINAL, RunSnapshot

from .. import live, plots
from ..binding import UI, ok_box
from ..i18n import t
from . import gates

RUN_BUTTONS = ("stop_btn", "pause_btn", "sample_btn", "save_btn")  # the commands into an active run
REDRAW_AFTER = plots.MAX_POINTS  # new points a tab's lines take before it gets whole (decimated) figures again
RUN_POLL_S = 2.0  # a run trains and the Train step shows: the status and plots move (they draw every >= 3 s)
QUIET_POLL_S = 5.0  # it trains, but nothing came since the last look (a long step, samples being drawn)
IDLE_POLL_S = 10.0  # it trains with the Train step hidden (showing it polls at once); the page's first pace
# A page with the light look (ui/live_view.js) gets the plots and the status from it, and the light look asks for
# this poll at once when the samples, the alerts, the findings or the run's state change: the timer only backs it up
LIGHT_POLL_S = 30.0
# A run on the CPU trains on the cores the page draws on: torch's threads meet at a barrier after every operation,
# so whatever the page takes from one core stalls both, and the run loses more than the page's own CPU time. There
# the light look comes every 5 s (bench/bench_watch.py: every 2 s cost such a run 7 % of its speed); on a GPU, 2 s.
CPU_LOOK_S = 5.0


def poll_every(active: bool, shown: bool, moved: bool, light: bool = False) -> float | None:
    """Seconds until a tab's next poll (or light look): often only while there is something to see; None (no
    timer) while no run trains; the backing-up pace for a page with the light look."""
    if not active:
        return None
    if light:
        return LIGHT_POLL_S
    if not shown:
        return IDLE_POLL_S
    return RUN_POLL_S if moved else QUIET_POLL_S


def trains_on_cpu(runner) -> bool:
    """Whether the run the runner holds trains on the CPU (its config's device, as the training loop resolves it)."""
    config = runner.state.config
    try:
        return config is not None and resolve_device(config.train.device).type == "cpu"
    except UserError:  # a device this machine lacks: the run was refused
        return False


def look_every(runner, snap, shown: bool, moved: bool) -> float | None:
    """Seconds until the page's next light look: :func:`poll_every`'s pace, slower where the run trains on the CPU."""
    every = poll_every(snap.active, shown, moved)
    return max(every, CPU_LOOK_S) if every is not None and trains_on_cpu(runner) else every


def pace(every: float | None) -> gr.Timer:
    """The timer's update for this pace: ticking every ``every`` seconds, or stopped."""
    return gr.Timer(every, active=True) if every is not None else gr.Timer(active=False)


def run_buttons(active: bool) -> dict[str, Any]:
    """Stop, Pause, Sample now and Save now work while a run is active; Start (no longer the button to press)
    and Continue only when none is."""
    return {"start_btn": gr.Button(interactive=not active, variant="secondary" if active else "primary"),
            **{name: gr.Button(interactive=active) for name in RUN_BUTTONS},
            **({"continue_btn": gr.Button(interactive=False)} if active else {})}


def continuable_run(ctx) -> tuple[Path, int, str] | None:
    """The run Continue carries on, the step it goes on from and its state: the last run (this app's, or after a
    restart the workspace's newest) when it is paused, stopped, interrupted or failed with a complete checkpoint
    (:func:`trainer.run.rundir.continue_step`); None otherwise."""
    last = ctx.runner.state.run_dir
    if not last:
        runs = list_runs(ctx.runs_dir)
        last = runs[-1] if runs else None
    if not last:
        return None
    status = run_status(last)
    step = continue_step(last, status)
    return (Path(last), step, str(status["status"])) if step is not None else None


CONTINUE_OUTPUTS = ["train_msg", "start_btn", *RUN_BUTTONS, "continue_btn", "poll_timer"]


def continue_view(ctx, run: Path, step: int | None, lang: str) -> dict[str, Any]:
    """Continue ``run`` from ``step`` (Train's Continue, Review's Continue this run; the caller has refused while a
    run trains): the Train step's message, its buttons as while a run trains and its poll's pace
    (:data:`CONTINUE_OUTPUTS`). A run that cannot go on is the runner's one message."""
    ctx.sweeps.release()  # the Review step's model makes room for the run
    ok, _ = ctx.runner.continue_run(run)
    if not ok:
        raise UserError(t("err_run_active", lang))
    return {"train_msg": ok_box(t("continued", lang, run=ctx.run_rel(run), step=step)), **run_buttons(True),
            "poll_timer": pace(RUN_POLL_S)}


def offered_now(ctx, snap: RunSnapshot) -> tuple[Path, int, str] | None:
    """:func:`continuable_run` while no run trains; None while one does."""
    return None if snap.active else continuable_run(ctx)


def train_status(ctx, snap: RunSnapshot, lang: str, run_label: str | None,
                 found: tuple[Path, int, str] | None) -> str:
    """The status box's words: :func:`ui.live.status_line`, and while no run trains what Continue would carry on
    (``found``: :func:`offered_now`; after a restart too: a run the app, the terminal or the computer interrupted is
    found and offered)."""
    status = live.status_line(snap, lang, run_label)
    if found is None:
        return status
    run, step, state = found
    return f"{status}\n\n{t(f'continue_hint_{state}', lang, run=ctx.run_rel(run), step=step)}"


def live_plots(runner, snap: RunSnapshot, state: dict[str, Any], lang: str, rev: str,
               whole: bool) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The message that brings a tab's plots up to date (None when no row arrived) and what the tab holds
    after it: ``full`` (the id of its whole figures), ``drawn`` (their rows), ``rows``, ``carry``. Whole
    figures, decimated, on a first look, a new run or language, a page that lost track, rows that add markers,
    or once the lines grew by REDRAW_AFTER points since; else only the points of the rows that arrived."""
    held: dict[str, Any] = {k: state[k] for k in ("full", "drawn", "rows", "carry") if k in state}
    if not whole and held.get("rows") == snap.rows:
        return None, held
    if (not whole and held.get("drawn") and snap.rows - held["drawn"] <= REDRAW_AFTER
            and not plots.changes_shape(snap.metrics, held["carry"])):
        points, carry = plots.new_points(snap.metrics, held["carry"])
        message = {"full": held["full"], "from": held["rows"], "rows": snap.rows, **points}
        return message, {**held, "rows": snap.rows, "carry": carry}
    rows = runner.snapshot().metrics if state.get("rows") else snap.metrics
    cfg = getattr(runner.state, "config", None)
    max_norm = cfg.optim.max_grad_norm if cfg is not None else 0.0
    full = (state.get("full") or 0) + 1
    message = {"full": full, "rows": len(rows), "figures": plots.live_figures(rows, max_norm, lang, rev)}
    return message, {"full": full, "drawn": len(rows), "rows": len(rows), "carry": plots.live_carry(rows)}


def status_body(status: str) -> str:
    """The status line (:func:`ui.live.status_line`: paragraphs, **bold**, `code`, a ``> `` quoted message) as
    HTML, every word escaped."""
    paragraphs = []
    for para in status.split("\n\n"):
        quote = para.startswith("> ")
        text = html.escape(para[2:] if quote else para)
        text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
        text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
        paragraphs.append(f"<blockquote><p>{text}</p></blockquote>" if quote else f"<p>{text}</p>")
    return "".join(paragraphs)


def status_html(status: str) -> str:
    """The status box's value: :func:`status_body` in the element the light look writes into, with the hash of its
    words, so the page knows whether the box still shows what it was last sent."""
    return f'<div class="ld-status-line" data-hash="{status_hash(status)}">{status_body(status)}</div>'


def moved_of(snap: RunSnapshot, run_label: str | None) -> dict[str, Any]:
    """What the full poll brings beyond the plots and the status: the light look presses it when this changes."""
    return {"samples": len(snap.samples), "alerts": len(snap.alerts), "findings": len(snap.findings),
            "status": str(snap.status), "active": snap.active, "run": run_label}


def status_hash(status: str) -> str:
    return f"{hash(status) & 0xFFFFFFFF:x}"


def light_look(ui: UI, view: dict[str, Any]) -> dict[str, Any]:
    """One light look for a page (``view``: what it holds, as this function last returned it in ``held``, plus the
    language it wants and whether its plots show): ``plots``, the message :func:`live_plots` makes (None: no new row);
    ``status``, the status box's HTML when its words changed (None: unchanged); ``moved``, what the full poll
    brings (samples, alerts, findings, the run's state), for the page to compare with what it saw; ``every``, the
    seconds until its next look (None: no run trains, stop looking); ``held``, what to send back next time."""
    ctx, runner = ui.ctx, ui.ctx.runner
    lang: str = view["lang"] if view.get("lang") in words.LANGS else ctx.lang
    held_in: dict[str, Any] = {k: view[k] for k in ("full", "drawn", "rows", "carry") if k in view}
    if not isinstance(held_in.get("rows", 0), int) or not isinstance(held_in.get("carry", {}), dict):
        held_in = {}  # not what this function sent: start over with whole figures
    run_label = ctx.run_rel(runner.state.run_dir)
    whole = view.get("drawn_in") != lang or view.get("run") != run_label or "rows" not in held_in
    snap = runner.snapshot(rows_from=0 if whole else held_in["rows"])
    if ctx.run_rel(snap.run_dir) != run_label:  # another run started just now
        whole, snap = True, runner.snapshot()
        run_label = ctx.run_rel(snap.run_dir)
    message, held = live_plots(runner, snap, {"full": view.get("full") or 0} if whole else held_in, lang,
                               run_label or "idle", whole=whole)
    if view.get("active") and not snap.active:  # paused or ended: the page draws its last points now
        message = {**(message or {}), "settle": True}
    status = train_status(ctx, snap, lang, run_label, offered_now(ctx, snap))
    words_hash = status_hash(status)
    moved = moved_of(snap, run_label)
    changed = whole or words_hash != view.get("status_hash")
    return {"plots": message, "status": {"html": status_body(status), "hash": words_hash} if changed else None,
            "moved": moved, "every": look_every(runner, snap, bool(view.get("shown", True)), message is not None),
            "held": {**held, "drawn_in": lang, "run": run_label, "status_hash": words_hash, "active": snap.active}}


def poll_view(ui: UI, state: dict[str, Any], lang: str, view: dict[str, Any] | None = None,
              picture: Callable[[Path], Any] = live.open_rgb) -> dict[str, Any]:
    """What changed since this tab's last look: nothing at all when the runner's version is the same and the
    page holds the plots this tab was sent (``view``: what the page says it holds; API clients say nothing).
    ``picture`` makes a sample file a gallery item (the app passes its :class:`GalleryCopies`)."""
    ctx, runner = ui.ctx, ui.ctx.runner
    # a page with the light look (ui/live_view.js) takes the plots and the status from it: this poll only starts it
    light = bool(view and view.get("light"))
    lost = not light and bool(view and (view.get("full"), view.get("rows")) != (state.get("full"), state.get("rows")))
    shown = (view or {}).get("shown", True)  # API clients see everything
    moved = state.get("version") != runner.version
    if not moved and state.get("lang") == lang and not lost:
        every = poll_every(runner.active, shown, moved=False, light=light)
        if "every" in state and every == state["every"]:  # (None: the timer is stopped)
            return {}
        return {"poll_state": {**state, "every": every}, "poll_timer": pace(every)}
    snap = runner.snapshot(rows_from=None if light else state.get("rows", 0))  # the look brings the plots
    samples, alerts = snap.samples, snap.alerts
    new: dict[str, Any] = {"version": snap.version, "lang": lang, "run": snap.run_dir, "samples": len(samples),
           "alerts": len(alerts), "findings": len(snap.findings), "active": snap.active, "status": str(snap.status)}
    fresh = state.get("lang") != lang or state.get("run") != snap.run_dir
    run_label = ctx.run_rel(snap.run_dir)
    out: dict[str, Any] = {"poll_state": new}
    offered = offered_now(ctx, snap)  # read once: the status's words and Continue's state
    status = train_status(ctx, snap, lang, run_label, offered)
    new["status_hash"] = hash(status)  # the words, not the version: a progress event may change nothing shown
    if fresh or (not light and new["status_hash"] != state.get("status_hash")):
        out["status_md"] = status_html(status)
    new["every"] = poll_every(snap.active, shown or (not state and snap.active), moved=True, light=light)
    if "every" not in state or new["every"] != state["every"]:  # (it jumps to Train)
        out["poll_timer"] = pace(new["every"])
    if light:
        message: dict[str, Any] | None = {"light": {"lang": lang, "active": snap.active,
                                                    "moved": moved_of(snap, run_label)}}
    else:
        message, held = live_plots(runner, snap, state, lang, run_label or "idle", whole=fresh or lost)
        new.update(held)
        if state.get("active") and not snap.active:  # paused or ended: the page draws its last points now
            message = {**(message or {}), "settle": True}
    if message is not None:
        out["live_plots"] = message
    if fresh or len(samples) != state.get("samples"):
        out["samples_gallery"] = live.gallery_items(snap, lang, picture)
    if fresh or len(alerts) != state.get("alerts") or snap.status != state.get("status"):
        alert = live.guard_alert(snap)
        rx = live.top_prescription(snap.run_dir, alert, lang) if alert else None
        out["alert_html"] = live.alert_html(snap, lang, rx)
        out["to_troubleshoot"] = gr.Button(visible=alert is not None)
    if fresh or len(alerts) != state.get("alerts") or len(snap.findings) != state.get("findings"):
        out["warnings_md"] = live.warnings_markdown(snap, lang)
    if fresh or snap.status != state.get("status"):
        out["verdict_md"] = live.ended_verdict_markdown(snap, lang)
    if fresh or snap.active != state.get("active"):
        out.update(run_buttons(snap.active))
    if fresh or snap.status != state.get("status"):
        out["continue_btn"] = gr.Button(interactive=offered is not None)
    ended = snap.status in TERMINAL and snap.status != state.get("status")
    if ended:  # "Stopping after this step…" and the like are done with
        out["train_msg"] = ""
    if snap.run_dir and (fresh or ended):
        choices = ctx.run_choices(lang)
        out["review_run"] = gr.Dropdown(choices=choices, value=run_label)
        out["ts_run"] = gr.Dropdown(choices=choices, value=run_label)
        out.update(gates.unlocks_for_runs(ui))
    if not state and snap.active:  # a tab opened (or reopened) while a run trains: show it
        out.update(gates.open_all())
        out["wizard"] = gates.go("train")
    return out
