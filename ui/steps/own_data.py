"""A user's own dataset takes the demo's place: on a scan (or an upload) of a new folder its captions propose the
trigger, the sample prompts are made for that trigger from those captions, and the run gets the folder's name,
never one whose files hold another dataset's settings.

``dataset_origin`` (a hidden JSON the page keeps, a reload included) records what the fields were made for:
``folder`` (the resolved dataset folder of the last scan), ``trigger`` and whether the user ``edited`` it for that
folder, ``prompts_for`` ([folder, trigger] of the sample prompts) and ``named_for`` (the folder the run name came
from). A trigger the user typed wins over a later proposal for the same folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from trainer.config.names import clash, free_run_name
from trainer.data.proposals import caption_texts, propose_trigger, run_name_for, sample_prompts_for
from trainer.errors import UserError

from ..binding import UI
from ..context import DEMO_DATASET, AppContext
from ..fields import config_from_values
from ..i18n import t
from ..paths import safe_name

ORIGIN = "dataset_origin"
PROPOSED = ["trigger", "sample_prompts", "run_name", ORIGIN]  # what a scan may set besides its report


def initial_origin(ctx: AppContext) -> dict[str, Any]:
    """What the starting values were made for: the demo folder, its trigger, its prompts and its run name."""
    folder = _folder(ctx, ctx.defaults.get("dataset_path") or "")
    trigger = ctx.defaults.get("trigger") or ""
    return {"folder": folder, "trigger": trigger, "edited": False, "prompts_for": [folder, trigger],
            "named_for": folder}


def build(ui: UI) -> None:
    ui.add(ORIGIN, gr.JSON(initial_origin(ui.ctx), visible=False))


def _folder(ctx: AppContext, text: str, lang: str = "en") -> str:
    """The folder a typed path names, resolved as the scan resolves it; the text itself where it names none."""
    try:
        return str(ctx.policy.resolve(text, "dataset.path", lang))
    except UserError:
        return (text or "").strip()


def prompts_for(ctx: AppContext, folder: str, trigger: str, captions: dict[str, str]) -> list[str]:
    """The demo's own prompts on the demo's folder and trigger (its measures were calibrated on them), else the
    four kinds made from this trigger and these captions."""
    from trainer.demo import TRIGGER, demo_sample_prompts

    if folder == str((ctx.datasets_dir / DEMO_DATASET).resolve()) and trigger == TRIGGER:
        return demo_sample_prompts()
    return sample_prompts_for(trigger, captions)


def propose(ui: UI, values: dict[str, Any], lang: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Before a scan: (the values to scan with, the fields that changed, a note saying what changed and why)."""
    ctx = ui.ctx
    cfg = config_from_values(values, ctx.runs_dir, [ctx.presets_dir])
    ctx.policy.resolve_folders(cfg, lang)
    folder = cfg.dataset.path
    origin = values.get(ORIGIN) or initial_origin(ctx)
    trigger = (values.get("trigger") or "").strip()
    edited = trigger != origin.get("trigger") or (origin.get("folder") == folder and bool(origin.get("edited")))
    captions = caption_texts(cfg.dataset)
    notes = []
    out: dict[str, Any] = {}
    if not edited:
        proposed = propose_trigger(captions)
        if proposed and proposed != trigger:
            trigger = out["trigger"] = proposed
            opening = sum(1 for text in captions.values() if text.lower().startswith(proposed.lower()))
            notes.append(t("trigger_proposed", lang, trigger=proposed, n=opening, total=len(captions)))
    if [folder, trigger] != origin.get("prompts_for"):
        out["sample_prompts"] = "\n".join(prompts_for(ctx, folder, trigger, captions))
        notes.append(t("prompts_rebuilt", lang, trigger=trigger))
    named_for = origin.get("named_for")
    if named_for != folder:
        wanted = safe_name(run_name_for(folder), "run")
        name = out["run_name"] = free_run_name(wanted, folder, ctx.configs_dir, ctx.runs_dir)
        notes.append(t("run_named", lang, name=name) if name == wanted else
                     t("run_named_free", lang, name=name, taken=f"configs/{wanted}.toml"))
        named_for = folder
    out[ORIGIN] = {"folder": folder, "trigger": trigger, "edited": edited, "prompts_for": [folder, trigger],
                   "named_for": named_for}
    return {**values, **out}, out, "".join(notes)


def trigger_typed(ui: UI, trigger: str, dataset_path: str, report_state: Any, origin: dict[str, Any] | None,
                  lang: str = "en") -> dict[str, Any]:
    """A trigger typed by hand: the sample prompts made for it, and the record that it was typed for the folder
    in the path box (later scans of that folder keep it). Nothing when it is the trigger already in effect."""
    origin = origin or initial_origin(ui.ctx)
    trigger = (trigger or "").strip()
    if trigger == origin.get("trigger"):
        return {}
    folder = _folder(ui.ctx, dataset_path, lang)
    report = (report_state or {}).get("report")
    if report is not None and report.root == folder:
        captions = {it.rel: it.caption for it in report.items if not it.prior and it.caption_source == "file"}
    else:
        try:
            captions = caption_texts(config_from_values({"dataset_path": folder}, ui.ctx.runs_dir).dataset)
        except UserError:  # a folder not there yet: the prompts are made from the trigger alone
            captions = {}
    return {"sample_prompts": "\n".join(prompts_for(ui.ctx, folder, trigger, captions)),
            ORIGIN: {**origin, "folder": folder, "trigger": trigger, "edited": True, "prompts_for": [folder, trigger]}}


def wire(ui: UI) -> None:
    def typed(*, lang: str, trigger: str, dataset_path: str, report_state: Any,
              dataset_origin: dict[str, Any] | None) -> dict[str, Any]:
        return trigger_typed(ui, trigger, dataset_path, report_state, dataset_origin, lang)

    ui.on([ui["trigger"].blur, ui["trigger"].submit], typed,
          ["lang", "trigger", "dataset_path", "report_state", ORIGIN], ["sample_prompts", ORIGIN],
          show_progress="hidden", trigger_mode="always_last")


def name_clash_note(ui: UI, name: str, dataset_path: str, lang: str) -> str:
    """A warning when Start would write over another dataset's settings under this run name; "" when not."""
    ctx = ui.ctx
    safe = safe_name(name, "config")
    folder = _folder(ctx, dataset_path, lang) if dataset_path else ""
    found = clash(safe, folder, ctx.configs_dir, ctx.runs_dir) if folder else None
    if found is None:
        return ""
    file, owner = found
    shown = file.relative_to(ctx.workspace).as_posix() if file.is_relative_to(ctx.workspace) else str(file)
    return t("run_name_taken", lang, file=shown, dataset=Path(owner).name,
             free=free_run_name(safe, folder, ctx.configs_dir, ctx.runs_dir))
