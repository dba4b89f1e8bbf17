"""Widgets for the fields of :mod:`ui.fields`, registered under the field's name."""

from __future__ import annotations

from typing import Any

import gradio as gr

from .binding import UI
from .fields import BY_NAME, Field, fields_of
from .i18n import t


def base_choices() -> list[str]:
    """The built-in bases offered in the base-model box (any folder, file or hub id can be typed too)."""
    from trainer.models.base import DEMO_BASE_DIR, TINY_BASES

    return (["demo"] if (DEMO_BASE_DIR / "model_index.json").is_file() else []) + list(TINY_BASES)


def judge_choices(ui: UI, lang: str) -> list[tuple[str, str]]:
    """The picture judges offered: none, then the CLIP and SigLIP models already in this computer's Hugging Face
    cache (a folder or another hub id can be typed too). While shared none are offered: hub ids are refused then."""
    from trainer.doctor.judge_files import local_judges

    found = [] if ui.ctx.policy.restricted else local_judges()
    return [(t("judge_none", lang), "")] + [(name, name) for name in found]


def run_picker(ui: UI, name: str, refresh: str) -> None:
    """One row: the workspace's runs (newest selected) and the button that reloads the chosen one."""
    lang = ui.ctx.lang
    choices = ui.ctx.run_choices(lang)
    with gr.Row():
        ui.add(name, gr.Dropdown(choices=choices, value=choices[0][1] if choices else None, label=t("run", lang),
                                 scale=3, allow_custom_value=True), "run")
        ui.add(refresh, gr.Button(t("refresh", lang), scale=0), "refresh", "value")


def field_widget(ui: UI, f: Field, value: Any, choices: list | None = None) -> Any:
    lang = ui.ctx.lang
    common: dict[str, Any] = {"label": f.label(lang), "info": f.help(lang), "elem_id": f"ld-f-{f.name}"}
    w: gr.Textbox | gr.Number | gr.Checkbox | gr.Dropdown
    if f.kind in ("text", "csv"):
        w = gr.Textbox(value=value, **common)
    elif f.kind == "lines":
        w = gr.Textbox(value=value, lines=4, **common)
    elif f.kind == "int":
        w = gr.Number(value=value, precision=0, **common)
    elif f.kind == "float":
        w = gr.Number(value=value, **common)
    elif f.kind == "check":
        w = gr.Checkbox(value=value, **common)
    elif f.kind == "base":
        w = gr.Dropdown(choices=base_choices(), value=value, allow_custom_value=True, **common)
    elif f.kind == "judge":
        w = gr.Dropdown(choices=judge_choices(ui, lang), value=value, allow_custom_value=True, **common)
    elif f.kind == "choice":
        w = gr.Dropdown(choices=choices if choices is not None else f.choice_items(lang), value=value, **common)
    else:  # pragma: no cover - the table only holds the kinds above
        raise ValueError(f"unknown field kind {f.kind!r}")
    return ui.add(f.name, w)


def field_widgets(ui: UI, step: str, skip: tuple[str, ...] = ()) -> list[Any]:
    """Every field of one wizard step, with the app's starting values."""
    return [field_widget(ui, f, ui.ctx.defaults.get(f.name)) for f in fields_of(step) if f.name not in skip]


def relabel_fields(ui: UI, lang: str) -> dict[str, Any]:
    """Every field's label and help line in ``lang``, and a choice field's choices (the preset's come from its step)."""
    out: dict[str, Any] = {}
    for name, f in BY_NAME.items():
        if name not in ui.c:
            continue
        choices: dict[str, Any] = {"choices": f.choice_items(lang)} if f.kind == "choice" and name != "preset" else {}
        if f.kind == "judge":
            choices = {"choices": judge_choices(ui, lang)}
        out[name] = gr.update(label=f.label(lang), info=f.help(lang), **choices)
    return out
