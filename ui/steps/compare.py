"""Review's "Compare two runs": two run pickers, the settings that differ, the loss / gradient norm / validation
curves of both overlaid, and the two sample grids side by side (:func:`trainer.review.compare.compare_runs`)."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from trainer.review.compare import compare_runs

from .. import plots
from ..binding import UI
from ..i18n import t

OUTPUTS = ["compare_source", "compare_diff", "compare_loss", "compare_grad", "compare_val", "compare_grid_a",
           "compare_grid_b", "compare_state"]
PLOTS = {"compare_loss": "loss", "compare_grad": "grad", "compare_val": "val"}


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    a, b = default_pair(ui.ctx.run_choices(lang))
    with gr.Accordion(t("compare_title", lang), open=False, elem_id="ld-compare") as box:
        ui.add("compare_box", box, "compare_title")
        with gr.Row():
            ui.add("compare_a", gr.Dropdown(choices=ui.ctx.run_choices(lang), value=a, label=t("compare_a", lang),
                                            scale=3, allow_custom_value=True, elem_id="ld-compare-a"), "compare_a")
            ui.add("compare_b", gr.Dropdown(choices=ui.ctx.run_choices(lang), value=b, label=t("compare_b", lang),
                                            scale=3, allow_custom_value=True, elem_id="ld-compare-b"), "compare_b")
            ui.add("compare_btn", gr.Button(t("compare_btn", lang), scale=0, elem_id="ld-compare-btn"),
                   "compare_btn", "value")
        ui.add("compare_msg", gr.HTML(""))
        ui.add("compare_source", gr.Markdown("", elem_id="ld-compare-source"))
        ui.add("compare_diff", gr.Dataframe(interactive=False, label=t("compare_diff", lang), wrap=True,
                                            elem_id="ld-compare-diff"), "compare_diff")
        with gr.Row():
            for name in PLOTS:
                ui.add(name, gr.Plot(show_label=False, elem_id=f"ld-{name.replace('_', '-')}"))
        with gr.Row():
            ui.add("compare_grid_a", gr.HTML("", elem_id="ld-compare-grid-a"))
            ui.add("compare_grid_b", gr.HTML("", elem_id="ld-compare-grid-b"))
        ui.add("compare_state", gr.State(None))


def default_pair(choices: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    """The newest run as B and the one before it as A (choices come newest first)."""
    values = [v for _, v in choices]
    return (values[1] if len(values) > 1 else None), (values[0] if values else None)


def wire(ui: UI) -> None:
    ctx = ui.ctx

    def compare(*, lang: str, compare_a: str | None, compare_b: str | None,
                progress=gr.Progress()) -> dict[str, Any]:  # noqa: B008 (gradio swaps in a tracker)
        progress(0, desc=t("compare_loading", lang))
        return compare_view(ui, compare_a, compare_b, lang)

    ui.on(ui["compare_btn"].click, compare, ["lang", "compare_a", "compare_b"], OUTPUTS, api_name="compare",
          message="compare_msg")

    def again(*, lang: str, compare_state: Any) -> dict[str, Any]:
        """The shown comparison in the new language (nothing when none is shown)."""
        if not compare_state:
            return {}
        return compare_view(ui, compare_state[0], compare_state[1], lang)

    ui.on(ui["lang"].change, again, ["lang", "compare_state"], OUTPUTS, message="compare_msg", toast=False)

    def pickers(*, lang: str, compare_a: str | None, compare_b: str | None) -> dict[str, Any]:
        """Opening Review offers the runs trained since; the chosen ones stay chosen."""
        choices = ctx.run_choices(lang)
        a, b = default_pair(choices)
        return {"compare_a": gr.Dropdown(choices=choices, value=compare_a or a),
                "compare_b": gr.Dropdown(choices=choices, value=compare_b or b)}

    ui.on(ui["step_review"].select, pickers, ["lang", "compare_a", "compare_b"], ["compare_a", "compare_b"],
          show_progress="hidden")


def compare_view(ui: UI, rel_a: str | None, rel_b: str | None, lang: str) -> dict[str, Any]:
    """Everything the Compare view shows for runs ``rel_a`` and ``rel_b`` (folders inside runs/)."""
    from .review import grid_html

    if not rel_a or not rel_b:
        return {"compare_msg": "", "compare_source": t("compare_pick", lang)}
    run_a, run_b = ui.ctx.run_path(rel_a, lang), ui.ctx.run_path(rel_b, lang)
    result = compare_runs(run_a, run_b)
    names = {"a": rel_a, "b": rel_b}
    if rel_a == rel_b:
        source = t("compare_same_run", lang)
    elif not result["diff"]:
        source = t("compare_no_diff", lang)
    else:
        source = t(f"compare_from_{result['diff_source']}", lang, n=len(result["diff"]))
    rows = [[key, _shown(va), _shown(vb)] for key, va, vb in result["diff"]]
    headers = [t("col_setting", lang), f"A: {rel_a}", f"B: {rel_b}"]
    kinds = result["grids"]["kinds"]
    out: dict[str, Any] = {name: plots.as_figure(plots.compare_figure(result["series"], figure, names, lang))
                           for name, figure in PLOTS.items()}
    for side, name in (("a", "compare_grid_a"), ("b", "compare_grid_b")):
        grid = {**result["grids"][side], "kinds": kinds}  # the same columns on both sides
        out[name] = (f"<div class='ld-compare-grid'><h4>{side.upper()}: {html.escape(names[side])}</h4>"
                     f"{grid_html(grid, None, lang)}</div>")
    return {**out, "compare_source": source, "compare_diff": gr.Dataframe(value=rows, headers=headers),
            "compare_state": [rel_a, rel_b], "compare_msg": ""}


def _shown(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or "—"
    return f"{v:g}" if isinstance(v, float) else str(v)
