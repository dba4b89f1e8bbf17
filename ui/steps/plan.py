"""Step 2, Steps: repeats, epochs, batch, accumulation or a max-steps target; the formula with the numbers
filled in, the bucket-aware total against the naive one, and the dose gauge.

:func:`refresh` also renders what every other settings view derives from the fields (the resolved TOML,
the CLI line, the base-model check), so one handler keeps them all in step.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import gradio as gr

import words
from trainer.config.presets import PRESET_DIR, preset_config
from trainer.config.schema import Config, diff_configs, dumps_toml
from trainer.doctor.verdict import LABEL_TEXT, plan_verdict
from trainer.errors import UserError
from trainer.models.distilled import distillation_check
from trainer.plan.steps import Plan, make_plan

from ..binding import UI, error_box
from ..fields import BY_NAME, NAMES, config_from_values
from ..i18n import t
from ..step_charts import dose_gauge
from ..verdict_view import verdict_markdown
from ..widgets import field_widgets
from . import gates
from .dataset import scan_for
from .own_data import name_clash_note

REFRESH_OUTPUTS = ["plan_formula", "plan_buckets", "dose_plot", "dose_md", "preset_dose", "config_toml", "cli_cmd",
                   "base_md", "run_name_md", "report_state", "plan_msg", "step_preset", "step_train"]


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    ui.add("plan_intro", gr.Markdown(t("plan_intro", lang)), "plan_intro", "value")
    with gr.Row():
        with gr.Column(scale=2):
            field_widgets(ui, "steps")
        with gr.Column(scale=3):
            ui.add("plan_formula", gr.Markdown(""))
            ui.add("plan_buckets", gr.Dataframe(interactive=False, label=t("per_bucket", lang)), "per_bucket")
    with gr.Row():  # side by side, or one above the other on a phone (the gauge's title needs ~300 px)
        ui.add("dose_plot", gr.Plot(show_label=False, min_width=300))
        with gr.Column(min_width=300):  # a Markdown's own min_width does not reach the page
            ui.add("dose_md", gr.Markdown(""))
    ui.add("plan_msg", gr.HTML(""))
    ui.add("plan_next", gr.Button(t("next_preset", lang), variant="primary"), "next_preset", "value")


def wire(ui: UI) -> None:
    def refresh(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"plan_msg": ""}
        cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
        out["config_toml"] = cfg.to_toml()
        out["cli_cmd"] = cli_lines(cfg, ui, lang)
        out["base_md"] = base_check(ui, cfg, lang)
        out["run_name_md"] = name_clash_note(ui, values.get("run_name") or "", values.get("dataset_path") or "", lang)
        try:
            report, state = scan_for(ui, values, lang, report_state)
        except UserError as e:
            out["plan_msg"] = error_box(t("err_scan_first", lang, error=e.say(lang)))
            return out
        try:
            plan = make_plan(cfg, report)
        except UserError as e:  # a setting that cannot work with this base, e.g. lora.conv_blocks
            out["plan_msg"] = error_box(e.say(lang))
            return out
        out.update(render_plan(plan, lang))
        out["report_state"] = state
        out.update({k: v for k, v in gates.unlocks_after_scan(ui, values, report, lang).items()
                    if k in ("step_preset", "step_train")})
        return out

    inputs = ["lang", "report_state", *NAMES]
    triggers = [ui[n].change for n in NAMES if BY_NAME[n].kind not in ("text", "lines", "csv")]
    triggers += [ev for n in NAMES if BY_NAME[n].kind in ("text", "lines", "csv") for ev in (ui[n].blur, ui[n].submit)]
    triggers += [ui["step_plan"].select, ui["step_preset"].select, ui["lang"].change]
    ui.on(triggers, refresh, inputs, REFRESH_OUTPUTS, api_name="plan", message="plan_msg", toast=False,
          trigger_mode="always_last", show_progress="hidden")

    def next_step(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
        out = refresh(lang=lang, report_state=report_state, **values)
        if out.get("plan_msg"):
            return out
        return {**out, "wizard": gates.go("preset"), "step_preset": gates.open_step()}

    ui.on(ui["plan_next"].click, next_step, inputs, [*REFRESH_OUTPUTS, "wizard"], message="plan_msg")


def render_plan(plan: Plan, lang: str) -> dict[str, Any]:
    formula = "\n\n".join([
        f"**{words.say(plan.formula, lang)}**",
        t("plan_totals", lang, total=plan.total_steps, naive=plan.naive_total_steps_ceil,
          spe=plan.steps_per_epoch, epochs=plan.epochs_effective),
        t("plan_saves", lang, ckpts=_steps_list(plan.checkpoint_steps), samples=_steps_list(plan.sample_steps))
        + (" " + t("plan_validation", lang, steps=_steps_list(plan.validation_steps())) if plan.validation_every is not None
           else ""),
    ])
    buckets = [[f"{b['width']}×{b['height']}", b["image_repeats"], b["batches"]] for b in plan.per_bucket]
    verdict = plan_verdict(plan)  # the words Review and Troubleshoot use for the run, forecast from the dose
    dose_text = [verdict_markdown(verdict, lang, evidence=0), words.say(plan.dose_formula, lang),
                 words.say(plan.dose_explanation, lang)]
    if plan.dose_note:
        dose_text.append(words.say(plan.dose_note, lang))
    zone = words.say(LABEL_TEXT[verdict.label], lang)
    return {
        "plan_formula": formula,
        "plan_buckets": gr.Dataframe(value=buckets, headers=[t("col_bucket", lang), t("col_image_repeats", lang),
                                                               t("col_batches", lang)]),
        "dose_plot": dose_gauge(plan.dose, plan.dose_low, plan.dose_high, lang),
        "dose_md": "\n\n".join(dose_text),
        "preset_dose": t("preset_dose_own_step" if plan.dose_note else "preset_dose", lang, dose=f"{plan.dose:.3g}",
                         low=f"{plan.dose_low:g}", high=f"{plan.dose_high:g}", zone=zone, total=plan.total_steps),
    }


def _steps_list(steps: Sequence[int], limit: int = 12) -> str:
    shown = ", ".join(str(s) for s in steps[:limit])
    return shown + (f", … ({len(steps)})" if len(steps) > limit else "")


def _toml_value(value: Any) -> str:
    return dumps_toml({"v": value}).strip().removeprefix("v = ")


def cli_lines(cfg: Config, ui: UI, lang: str) -> str:
    """The two exact commands: the written config file, or the preset plus one ``--set`` per difference."""
    path = ui.ctx.configs_dir / f"{cfg.save.name}.toml"
    preset_ref, base = "", Config()
    if cfg.preset:
        builtin = (PRESET_DIR / f"{cfg.preset}.toml").is_file()
        preset_ref = cfg.preset if builtin else str(ui.ctx.presets_dir / f"{cfg.preset}.toml")
        base = preset_config(cfg.preset, [ui.ctx.presets_dir])
    sets = [f"preset={_toml_value(preset_ref)}"] if preset_ref else []
    sets += [f"{k}={_toml_value(new)}" for k, (_, new) in diff_configs(base, cfg).items()]
    return "\n".join([
        f"# {t('cli_file', lang, path=path)}",
        f"python -m trainer train {shlex.quote(str(path))}",
        "",
        f"# {t('cli_sets', lang)}",
        "python -m trainer train " + " ".join(f"--set {shlex.quote(s)}" for s in sets),
    ])


def base_check(ui: UI, cfg: Config, lang: str) -> str:
    """The base model as the policy and the loader see it: what Start will say of it, read from its own configs
    (a distilled base refused, or the warnings the run will give; trainer/models/distilled.py)."""
    try:
        model = cfg.model.model_copy(update={"base": ui.ctx.policy.check_base(cfg.model.base, lang)})
        check = distillation_check(model)
    except UserError as e:
        return f"⚠️ {e.say(lang)}"
    if check.refusal is not None:  # Start stops here: nothing else it would say matters yet
        return f"⚠️ {words.say(check.refusal, lang)}"
    return "\n\n".join([t("base_ok", lang, base=cfg.model.base),
                        *(f"⚠️ {words.say(m, lang)}" for m in check.messages)])
