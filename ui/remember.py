"""The wizard's inputs survive a reload: the browser keeps every field (and what the dataset's proposals were made
for) in localStorage, as it keeps the language, and puts them back when the page opens, before the first scan.

Saving costs no server call (a script on each change). Reading back goes through the server once, which keeps only
values that still fit: a preset or choice that is gone, a field this version no longer has, or another
workspace's values (the same address may serve another workspace after a restart) are left as the app starts.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gradio as gr

from .binding import UI
from .fields import BY_NAME, NAMES
from .steps import own_data

INPUTS_KEY = "lora-doctor-inputs"


def remembered(ui: UI) -> list[str]:
    """The inputs kept: every settings field on the page, and what the proposals were made for."""
    return [n for n in NAMES if n in ui.c] + [own_data.ORIGIN]


def workspace_token(ui: UI) -> str:
    return hashlib.sha256(str(ui.ctx.workspace).encode()).hexdigest()[:16]


def save_js(names: list[str], token: str) -> str:
    return f"""(...values) => {{
    const names = {json.dumps(names)};
    const kept = {{}};
    names.forEach((name, i) => {{ kept[name] = values[i]; }});
    try {{ window.localStorage.setItem("{INPUTS_KEY}", JSON.stringify({{workspace: "{token}", values: kept}})); }}
    catch (e) {{}}
}}"""


READ_JS = f"""() => {{
    try {{ return JSON.parse(window.localStorage.getItem("{INPUTS_KEY}") || "null"); }} catch (e) {{ return null; }}
}}"""


def restorable(ui: UI, saved: Any) -> dict[str, Any]:
    """The saved values that still fit this app: this workspace's, of fields it has, choices it offers."""
    from .steps.preset import preset_choices

    if not isinstance(saved, dict) or saved.get("workspace") != workspace_token(ui):
        return {}
    values = saved.get("values")
    if not isinstance(values, dict):
        return {}
    out = {}
    for name in remembered(ui):
        if name not in values:
            continue
        value = values[name]
        f = BY_NAME.get(name)
        if f is not None and f.kind == "choice":
            offered = [v for _, v in preset_choices(ui, ui.ctx.lang)] if name == "preset" else list(f.choices)
            if value not in offered:
                continue
        if name == own_data.ORIGIN and not isinstance(value, dict):
            continue
        out[name] = value
    return out


def remember_inputs(ui: UI, demo: gr.Blocks) -> Any:
    """Wire the saving and the reading back; returns the page-load event after which the inputs are back."""
    names = remembered(ui)
    ui.add("saved_inputs", gr.JSON(None, visible=False))
    gr.on([ui[n].change for n in names], None, [ui[n] for n in names], None, js=save_js(names, workspace_token(ui)),
          queue=False, show_progress="hidden")

    def restore(*, saved_inputs: Any) -> dict[str, Any]:
        return restorable(ui, saved_inputs)

    read = demo.load(None, None, ui["saved_inputs"], js=READ_JS, queue=False, show_progress="hidden")
    return ui.on(read, restore, ["saved_inputs"], names, show_progress="hidden")
