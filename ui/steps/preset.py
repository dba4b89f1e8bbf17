"""Step 3, Preset: one-click preset cards, rank/alpha/lr, the advanced settings, the base model, user presets,
and the resolved config with the exact CLI command."""

from __future__ import annotations

import time
from typing import Any, Literal

import gradio as gr

from trainer.config.presets import PRESET_DIR, list_presets, load_preset, preset_config, presets_by_family
from trainer.config.schema import Config, flatten, save_config
from trainer.data.buckets import upscaling
from trainer.doctor.risks import subject_of
from trainer.errors import UserError
from trainer.io import atomic_write_text
from words import both

from ..binding import UI, error_box, ok_box
from ..fields import BY_NAME, NAMES, config_from_values, fields_of, values_from_config
from ..i18n import t
from ..paths import safe_name
from ..widgets import field_widget, field_widgets
from . import gates, memory

# What a preset never changes: the user's pictures (held-out ones too), trigger, base model, run name, sample prompts
# and the picture judge (a model on this computer, not a recipe's).
KEPT_ON_PRESET = ("dataset_path", "reg_path", "val_path", "trigger", "base", "run_name", "sample_prompts", "judge")
# Left out of a saved user preset: they belong to one dataset, not to a recipe.
NOT_IN_USER_PRESET = {"dataset.path", "dataset.reg_path", "validation.path", "dataset.trigger", "save.output_dir", "save.name", "sample.prompts",
                      "model.base", "measure.judge", "preset", "version"}


def preset_choices(ui: UI, lang: str) -> list[tuple[str, str]]:
    return [(p.label(lang), p.id) for p in list_presets([ui.ctx.presets_dir])]


def build(ui: UI) -> None:
    ctx, lang = ui.ctx, ui.ctx.lang
    ui.add("preset_intro", gr.Markdown(t("preset_intro", lang)), "preset_intro", "value")
    with gr.Row(elem_id="ld-card-families"):  # the cards by family, side by side where they fit: 15 in a row were a wall
        for family, presets in presets_by_family(list_presets()):
            with gr.Column(elem_classes="ld-card-group", min_width=0):
                gr.Markdown(f"**{family}**")
                with gr.Row(equal_height=True, elem_classes="ld-cards"):
                    for p in presets:
                        with gr.Column(variant="panel", min_width=150):
                            ui.add(f"card_{p.id}", gr.Button(p.label(lang), elem_id=f"ld-card-{p.id}",
                                                             variant=card_variant(p.id, ctx.defaults["preset"])))
                            ui.add(f"card_{p.id}_md", gr.Markdown(p.blurb(lang), elem_classes="ld-card-text"))
                            ui.cards.append(p.id)
    with gr.Row():
        field_widget(ui, BY_NAME["preset"], ctx.defaults["preset"], choices=preset_choices(ui, lang))
        ui.add("preset_load", gr.Button(t("preset_load", lang), scale=0), "preset_load", "value")
        ui.add("user_preset_name", gr.Textbox(label=t("user_preset_name", lang), scale=1), "user_preset_name")
        ui.add("preset_save", gr.Button(t("preset_save", lang), scale=0), "preset_save", "value")
    with gr.Row():
        with gr.Column():
            field_widgets(ui, "preset", skip=("preset",))
        with gr.Column():
            ui.add("base_md", gr.Markdown(""))
            ui.add("run_name_md", gr.Markdown("", elem_id="ld-run-name-note"))
            ui.add("preset_dose", gr.Markdown(""))
            memory.build(ui)
    with gr.Accordion(t("advanced", lang), open=False) as acc:
        ui.add("advanced_acc", acc, "advanced")
        ui.add("device_md", gr.Markdown(device_text(ui, lang)))
        with gr.Row():
            for group in _chunks([f.name for f in fields_of("advanced")], 6):
                with gr.Column(min_width=180):
                    for name in group:
                        field_widget(ui, BY_NAME[name], ctx.defaults.get(name))
        with gr.Row():
            field_widgets(ui, "sample")
        with gr.Row():  # the validation loss's held-out pictures: a row of their own, the folder given room
            field_widgets(ui, "validation")
        with gr.Row():  # the picture judge: a model name or folder, given room
            field_widgets(ui, "judge")
    with gr.Accordion(t("config_and_cli", lang), open=True) as acc2:
        ui.add("config_acc", acc2, "config_and_cli")
        with gr.Row():
            ui.add("config_toml", gr.Code(language=None, label="config.toml", max_lines=30))
            with gr.Column():
                ui.add("cli_cmd", gr.Code(language="shell", label="CLI"))
                ui.add("write_config", gr.Button(t("write_config", lang)), "write_config", "value")
    build_kohya_import(ui)
    ui.add("preset_msg", gr.HTML(""))
    ui.add("preset_next", gr.Button(t("next_train", lang), variant="primary"), "next_train", "value")


def card_variant(card: str, chosen: str | None) -> Literal["primary", "secondary"]:
    """The chosen preset's card stands out (primary); the others stay plain."""
    return "primary" if card == chosen else "secondary"


def device_text(ui: UI, lang: str) -> str:
    return t("device_info", lang, device=ui.ctx.device, bf16=t("yes" if ui.ctx.bf16 else "no", lang))


def _chunks(items: list[str], n: int) -> list[list[str]]:
    return [items[i : i + n] for i in range(0, len(items), n)]


def apply_preset(ui: UI, preset_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """Every field from the preset, except those a preset never changes."""
    cfg = preset_config(preset_id, [ui.ctx.presets_dir])
    out = values_from_config(cfg)
    for name in KEPT_ON_PRESET:
        if name in values:
            out[name] = values[name]
    out["preset"] = preset_id
    return out


def applied(ui: UI, preset_id: str, values: dict[str, Any], report_state: Any, lang: str) -> dict[str, Any]:
    """The preset's fields and the message saying so; a warning instead when its resolution enlarges the scanned
    pictures (a 512 px preset on 64 px pictures), with the resolution that would not."""
    out = apply_preset(ui, preset_id, values)
    report = (report_state or {}).get("report")
    sizes = [(it.width, it.height) for it in report.items if not it.prior] if report is not None else []
    cfg = config_from_values({**values, **out}, ui.ctx.runs_dir, [ui.ctx.presets_dir])
    enlarged = upscaling(sizes, cfg.dataset)
    if enlarged is None:
        return {**out, "preset_msg": ok_box(t("preset_applied", lang, name=preset_id))}
    return {**out, "preset_msg": error_box(t("preset_upscales", lang, name=preset_id, res=cfg.dataset.resolution,
                                             total=len(sizes), **enlarged))}


def wire(ui: UI) -> None:
    ctx = ui.ctx
    field_outputs = [n for n in NAMES if n in ui.c]

    def make_card_handler(preset_id: str):
        def use_card(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
            return applied(ui, preset_id, values, report_state, lang)

        use_card.__name__ = f"use_card_{preset_id}"
        return use_card

    for pid in ui.cards:
        ui.on(ui[f"card_{pid}"].click, make_card_handler(pid), ["lang", "report_state", *NAMES],
              [*field_outputs, "preset_msg"], message="preset_msg")

    def mark_card(*, preset: str | None) -> dict[str, Any]:
        return {f"card_{pid}": gr.Button(variant=card_variant(pid, preset)) for pid in ui.cards}

    ui.on(ui["preset"].change, mark_card, ["preset"], [f"card_{pid}" for pid in ui.cards], show_progress="hidden")

    def load(*, lang: str, report_state: Any = None, **values: Any) -> dict[str, Any]:
        if not values.get("preset"):
            raise UserError(t("err_pick_preset", lang))
        return applied(ui, values["preset"], values, report_state, lang)

    ui.on(ui["preset_load"].click, load, ["lang", "report_state", *NAMES], [*field_outputs, "preset_msg"],
          api_name="preset", message="preset_msg")

    def save(*, lang: str, user_preset_name: str, **values: Any) -> dict[str, Any]:
        path = save_user_preset(ui, user_preset_name, values, lang)
        return {"preset": gr.Dropdown(choices=preset_choices(ui, lang), value=path.stem),
                "preset_msg": ok_box(t("preset_saved", lang, path=path))}

    ui.on(ui["preset_save"].click, save, ["lang", "user_preset_name", *NAMES], ["preset", "preset_msg"],
          api_name="save_preset", message="preset_msg")

    def write(*, lang: str, **values: Any) -> dict[str, Any]:
        cfg = config_from_values(values, ctx.runs_dir, [ctx.presets_dir])
        path = ctx.configs_dir / f"{safe_name(cfg.save.name, 'config')}.toml"
        save_config(cfg, path)
        return {"preset_msg": ok_box(t("config_written", lang, path=path))}

    ui.on(ui["write_config"].click, write, ["lang", *NAMES], ["preset_msg"], api_name="write_config",
          message="preset_msg")

    def next_step(*, lang: str, **values: Any) -> dict[str, Any]:
        cfg = config_from_values(values, ctx.runs_dir, [ctx.presets_dir])
        ctx.policy.resolve_folders(cfg, lang)
        ctx.policy.check_base(cfg.model.base, lang)
        ctx.policy.check_judge(cfg.measure.judge, lang)
        return {"wizard": gates.go("train"), "step_train": gates.open_step(),
                "preset_msg": ""}

    ui.on(ui["preset_next"].click, next_step, ["lang", *NAMES], ["wizard", "step_train", "preset_msg"],
          message="preset_msg")
    wire_kohya_import(ui)


    memory.wire(ui)


def save_user_preset(ui: UI, name: str, values: dict[str, Any], lang: str):
    """Write the settings that differ from the defaults as ``<workspace>/presets/<name>.toml``."""
    pid = safe_name(name, "")
    if not pid:
        raise UserError(t("err_preset_name", lang))
    if (PRESET_DIR / f"{pid}.toml").is_file():
        raise UserError(t("err_preset_builtin", lang, name=pid))
    cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
    defaults = flatten(Config().to_dict())
    sparse: dict[str, Any] = {}
    for key, value in flatten(cfg.to_dict()).items():
        if key not in NOT_IN_USER_PRESET and defaults.get(key) != value:
            section, leaf = key.split(".")
            sparse.setdefault(section, {})[leaf] = value
    stamp = time.strftime("%Y-%m-%d %H:%M")
    meta = {"version": 1, "name_en": name.strip(), "name_ko": name.strip(),
            **{f"description_{k}": v for k, v in both("ui.preset_saved_from_app", stamp=stamp).items()}}
    subject = subject_of(cfg, [ui.ctx.presets_dir])  # a style stays a style for the doctor (docs/doctor.md)
    if subject not in (None, "character"):
        meta["subject"] = subject
    from trainer.config.schema import dumps_toml

    path = ui.ctx.presets_dir / f"{pid}.toml"
    atomic_write_text(path, dumps_toml({"preset": meta, **sparse}))
    load_preset(str(path))  # it must read back; a UserError names what is wrong
    preset_config(pid, [ui.ctx.presets_dir])
    return path


# ------------------------------------------------------------------------------------ kohya import


def build_kohya_import(ui: UI) -> None:
    """An accordion with an upload for a kohya_ss .json or sd-scripts .toml (plus its dataset config)."""
    lang = ui.ctx.lang
    with gr.Accordion(t("kohya_import", lang), open=False) as acc:
        ui.add("kohya_acc", acc, "kohya_import")
        ui.add("kohya_intro", gr.Markdown(t("kohya_intro", lang)), "kohya_intro", "value")
        ui.add("kohya_file", gr.File(label=t("kohya_file", lang), file_count="multiple", file_types=[".json", ".toml"],
                                     type="filepath"), "kohya_file")
        ui.add("kohya_report", gr.Markdown(""))


def import_kohya_files(ui: UI, files: list[str], lang: str) -> tuple[Config, str, Any]:
    """(our config, the report as Markdown, where the full config was saved) from the uploaded files: a kohya_ss
    .json or sd-scripts .toml, and optionally the sd-scripts dataset config beside it."""
    import tomllib
    from pathlib import Path

    from trainer.kohya.importer import import_kohya
    from words import say

    paths = [Path(f) for f in files or []]
    if not paths:
        raise UserError(t("err_kohya_no_file", lang))

    def is_dataset_config(p: Path) -> bool:
        try:
            return p.suffix.lower() == ".toml" and "datasets" in tomllib.loads(p.read_text(encoding="utf-8-sig"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return False

    datasets = [p for p in paths if is_dataset_config(p)]
    mains = [p for p in paths if p not in datasets]
    if len(mains) != 1 or len(datasets) > 1:
        raise UserError(t("err_kohya_files", lang))
    # while shared, no file or folder a kohya file names is read (they may lie outside the workspace)
    cfg, report = import_kohya(mains[0], datasets[0] if datasets else None, bf16=ui.ctx.bf16,
                               follow_paths=not ui.ctx.policy.restricted)
    path = ui.ctx.configs_dir / f"{safe_name(mains[0].stem, 'kohya')}-kohya.toml"
    save_config(cfg, path)
    return cfg, report.markdown(say, lang), path


def wire_kohya_import(ui: UI) -> None:
    field_outputs = [n for n in NAMES if n in ui.c]

    def use_kohya(*, lang: str, kohya_file: list[str] | None) -> dict[str, Any]:
        cfg, markdown, path = import_kohya_files(ui, kohya_file or [], lang)
        return {**values_from_config(cfg), "kohya_report": markdown,
                "preset_msg": ok_box(t("kohya_imported", lang, path=path))}

    ui.on(ui["kohya_file"].upload, use_kohya, ["lang", "kohya_file"],
          [*field_outputs, "kohya_report", "preset_msg"], message="preset_msg")
