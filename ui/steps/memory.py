"""The Preset step's memory block: the estimated peak device memory of the settings, part by part, with the
verdict against the device's free memory, and "Fit to memory", which applies the fewest changes that fit.

The numbers come from :mod:`trainer.plan.memory` and :mod:`trainer.plan.memory_fit`; this module only shows them.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

import words
from trainer.errors import UserError
from trainer.plan.memory import MemoryPlan, estimate_memory, gib
from trainer.plan.memory_fit import fit_to_memory

from ..binding import UI, ok_box
from ..fields import BY_NAME, FIELDS, NAMES, config_from_values, to_widget
from ..i18n import t

BY_PATH = {f.path: f for f in FIELDS}
# the settings the estimate reads; a change to any of them refreshes it
WATCHED = ("base", "resolution", "batch_size", "precision", "optimizer", "grad_ckpt", "cache_latents", "offload_te",
           "base_quant", "block_swap", "rank", "conv_rank", "targets", "train_te", "ema")


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    ui.add("memory_md", gr.Markdown(""))
    ui.add("memory_fit", gr.Button(t("memory_fit", lang), size="sm"), "memory_fit", "value")


def _buckets(ui: UI, values: dict[str, Any], lang: str, report_state: Any) -> list[dict] | None:
    from .dataset import scan_for

    try:
        report, _ = scan_for(ui, values, lang, report_state)
    except UserError:  # no dataset yet: the square resolution stands in for the largest bucket
        return None
    return report.buckets


def memory_markdown(ui: UI, values: dict[str, Any], lang: str, report_state: Any = None) -> str:
    cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
    plan = estimate_memory(cfg, _buckets(ui, values, lang, report_state))
    return f"**{t('memory_title', lang)}**\n\n{_table(plan, lang)}"


def _table(plan: MemoryPlan, lang: str) -> str:
    """The estimate as a Markdown table by part (by phase, when the text encoders leave the device after encoding
    the captions), and the verdict on the device."""

    def rows_of(parts: dict[str, int]) -> list[str]:
        return [f"| {words.say(f'memory.part.{k}', lang)} | {gib(v)} |" for k, v in parts.items() if v]

    if plan.encode:
        rows = []
        for phase, parts in (("encode", plan.encode), ("train", plan.parts)):
            rows += [f"| *{words.say(f'memory.phase.{phase}', lang)}* | |", *rows_of(parts),
                     f"| {words.say('memory.phase.total', lang)} | {gib(sum(parts.values()))} |"]
        rows.append(f"| **{words.say(f'memory.peak.{plan.phase}', lang)}** | **{gib(plan.total)}** |")
    else:
        rows = rows_of(plan.parts)
        rows.append(f"| **{words.say('memory.total', lang)}** | **{gib(plan.total)}** |")
    free = gib(plan.free) if plan.free is not None else "?"
    w, h = plan.resolution
    verdict = words.say("memory.summary", lang, verdict=words.say(f"memory.verdict.{plan.verdict}", lang),
                        device=plan.device_words(), free=free, w=w, h=h)
    # what the low-memory switches cost in speed and numerics, then the warnings
    lowmem = [n for n in plan.notes if getattr(n, "code", "").startswith("memory.lowmem.")]
    warnings = [f"- {words.say(w, lang)}" for w in (*lowmem, *plan.warnings)]
    return "\n".join([words.say("memory.table_head", lang) + "\n|---|---:|", *rows, "", verdict,
                      *(["", *warnings] if warnings else [])])


def wire(ui: UI) -> None:
    field_outputs = [n for n in NAMES if n in ui.c]

    def refresh(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
        return {"memory_md": memory_markdown(ui, values, lang, report_state)}

    inputs = ["lang", "report_state", *NAMES]
    triggers = [ui[n].change for n in WATCHED if n in ui.c and n in BY_NAME]
    triggers += [ui["step_preset"].select, ui["lang"].change]
    ui.on(triggers, refresh, inputs, ["memory_md"], api_name="memory", message="preset_msg", toast=False,
          trigger_mode="always_last", show_progress="hidden")

    def fit(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
        cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
        buckets = _buckets(ui, values, lang, report_state)
        free = estimate_memory(cfg, buckets).free
        if free is None:
            raise UserError(t("memory_free_unknown", lang))
        result = fit_to_memory(cfg, free, buckets)
        out: dict[str, Any] = {}
        for c in result.changes:
            field = BY_PATH.get(c["key"])
            if field is not None and field.name in ui.c:
                out[field.name] = to_widget(field, c["new"])
        message = result.message
        assert message is not None  # fit_to_memory always says what it did
        lines = [words.say(message, lang), *(f"- `{c['key']}`: {c['old']} → {c['new']} "
                                             f"({words.say(c['why'], lang)})" for c in result.changes)]
        out["memory_md"] = memory_markdown(ui, {**values, **out}, lang, report_state) + "\n\n" + "\n".join(lines)
        out["preset_msg"] = ok_box(words.say(message, lang))
        return out

    ui.on(ui["memory_fit"].click, fit, inputs, [*field_outputs, "memory_md", "preset_msg"], api_name="fit_memory",
          message="preset_msg")
