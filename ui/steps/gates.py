"""Which wizard steps are open: a later step unlocks when the earlier ones validate."""

from __future__ import annotations

from typing import Any

import gradio as gr

from trainer.data.scan import DatasetReport
from trainer.errors import UserError
from trainer.plan.steps import make_plan

from ..binding import UI
from ..fields import config_from_values
from ..i18n import t

STEP_IDS = {"dataset": 0, "plan": 1, "preset": 2, "train": 3, "review": 4, "troubleshoot": 5}
# the steps that open, and the line saying why Review and Troubleshoot are not open yet
UNLOCKS = ["step_plan", "step_preset", "step_train", "step_review", "step_troubleshoot", "locked_hint"]


def open_step() -> Any:
    return gr.Tab(interactive=True)


def go(step: str) -> Any:
    """The update that shows wizard step ``step`` (a key of STEP_IDS)."""
    return gr.Tabs(selected=STEP_IDS[step])


def unlocks_after_scan(ui: UI, values: dict[str, Any], report: DatasetReport, lang: str) -> dict[str, Any]:
    """Steps: after a usable scan. Preset: when the plan works out. Train: when the whole config validates."""
    out: dict[str, Any] = {}
    if not report.usable:
        return out
    out["step_plan"] = open_step()
    try:
        cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
        make_plan(cfg, report)
        out["step_preset"] = open_step()
        ui.ctx.policy.check_base(cfg.model.base, lang)
        out["step_train"] = open_step()
    except UserError:
        pass
    out.update(unlocks_for_runs(ui))
    return out


def locked_hint(ui: UI) -> None:
    """The line over the steps that says why Review and Troubleshoot are grey: shown until the workspace holds a
    run (a greyed tab gives no reason of its own)."""
    lang = ui.ctx.lang
    ui.add("locked_hint", gr.Markdown(t("locked_hint", lang), visible=not ui.ctx.run_choices(),
                                      elem_id="ld-locked-hint"), "locked_hint", "value")


def unlocks_for_runs(ui: UI) -> dict[str, Any]:
    """Review and Troubleshoot: as soon as the workspace holds a run."""
    if ui.ctx.run_choices():
        return {"step_review": open_step(), "step_troubleshoot": open_step(), "locked_hint": gr.Markdown(visible=False)}
    return {}


def open_all() -> dict[str, Any]:
    return {**{name: open_step() for name in UNLOCKS if name.startswith("step_")},
            "locked_hint": gr.Markdown(visible=False)}
