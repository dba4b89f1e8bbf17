"""Step 1, Dataset: a folder (or an upload into the workspace), the trigger word, the scan report, thumbnails
and the caption editor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

import words
from trainer.caption.journal import apply_changes
from trainer.data.scan import DatasetReport, scan_dataset
from trainer.errors import UserError
from trainer.message import msg

from ..binding import UI, ok_box
from ..context import DEMO_DATASET, DEMO_HELD_OUT, DEMO_PRIOR
from ..fields import NAMES, config_from_values
from ..i18n import t
from ..paths import import_uploads, safe_name
from ..step_charts import histogram_figure
from ..widgets import field_widgets
from . import captioning, gates, masking, own_data

MAX_THUMBS = 48
THUMB_SIDE = 160
MAX_CAPTION_CHARS = 10_000  # CLIP reads 77 tokens; a long tag list is a few hundred characters


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    ui.add("ds_intro", gr.Markdown(t("ds_intro", lang)), "ds_intro", "value")
    with gr.Row():
        with gr.Column(scale=3):
            field_widgets(ui, "dataset")
            with gr.Row():
                ui.add("scan_btn", gr.Button(t("scan", lang), variant="primary"), "scan", "value")
                ui.add("ds_next", gr.Button(t("next_steps", lang)), "next_steps", "value")
        with gr.Column(scale=2), gr.Accordion(t("upload_title", lang), open=False) as acc:
            ui.add("upload_acc", acc, "upload_title")
            ui.add("upload_files", gr.File(label=t("upload_files", lang), file_count="multiple", elem_id="ld-upload",
                                           file_types=[".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".txt", ".zip"]),
                   "upload_files")
            ui.add("upload_name", gr.Textbox(label=t("upload_name", lang), value="my-dataset"), "upload_name")
            ui.add("import_btn", gr.Button(t("import", lang)), "import", "value")
    ui.add("ds_msg", gr.HTML(""))
    ui.add("ds_summary", gr.Markdown(""))
    ui.add("ds_problems", gr.Dataframe(headers=_problem_headers(lang), interactive=False, wrap=True,
                                       label=t("problems", lang)), "problems")
    with gr.Row():
        ui.add("ds_size_hist", gr.Plot(show_label=False))
        ui.add("ds_aspect_hist", gr.Plot(show_label=False))
    with gr.Row():
        ui.add("ds_buckets", gr.Dataframe(interactive=False, label=t("buckets", lang)), "buckets")
        ui.add("ds_tags", gr.Dataframe(interactive=False, label=t("tags", lang), max_height=300), "tags")
    ui.add("ds_tag_warnings", gr.Markdown(""))
    ui.add("ds_thumbs_note", gr.Markdown("", elem_id="ld-thumbs-note"))
    ui.add("ds_gallery", gr.Gallery(label=t("thumbnails", lang), columns=8, height=320, allow_preview=False,
                                           elem_id="ld-thumbs", elem_classes="ld-captions"),
           "thumbnails")
    with gr.Row():
        ui.add("cap_file", gr.Textbox(label=t("caption_file", lang), interactive=False, scale=1,
                                           elem_id="ld-cap-file"), "caption_file")
        ui.add("cap_text", gr.Textbox(label=t("caption_text", lang), scale=3, elem_id="ld-cap-text"), "caption_text")
        ui.add("cap_save", gr.Button(t("caption_save", lang), scale=0), "caption_save", "value")
    captioning.build(ui)
    masking.build(ui)
    own_data.build(ui)


REPORT_OUTPUTS = ["report_state", "ds_summary", "ds_problems", "ds_size_hist", "ds_aspect_hist", "ds_buckets",
                  "ds_tags", "ds_tag_warnings", "ds_thumbs_note", "ds_gallery", "ds_msg", "dataset_path", "reg_path",
                  "val_path", *own_data.PROPOSED, *gates.UNLOCKS]


DEMO_FOLDERS = (("reg_path", "dataset.reg_path", DEMO_PRIOR, "demo_prior_dropped"),
                ("val_path", "validation.path", DEMO_HELD_OUT, "demo_held_out_dropped"))
"""The demo's own folders beside its dataset: its prior images and its held-out (validation) pictures."""


def demo_folders_left_behind(ctx, values: dict[str, Any], lang: str) -> list[str]:
    """The fields (of :data:`DEMO_FOLDERS`) that still hold a demo folder while the dataset is no longer the
    demo's: the demo character's world scenes would train into the user's LoRA, and its held-out pictures
    would score it."""
    if not values.get("dataset_path"):
        return []
    if ctx.policy.resolve(values["dataset_path"], "dataset.path", lang) == (ctx.datasets_dir / DEMO_DATASET).resolve():
        return []
    left = []
    for name, what, folder, _ in DEMO_FOLDERS:
        text = (values.get(name) or "").strip()
        if text and ctx.policy.resolve(text, what, lang) == (ctx.datasets_dir / folder).resolve():
            left.append(name)
    return left


def _dropped_note(dropped: list[str], lang: str) -> str:
    return "".join(t(note, lang) for name, _, _, note in DEMO_FOLDERS if name in dropped)


def _without_demo_folders(ui: UI, values: dict[str, Any], lang: str) -> tuple[dict[str, Any], list[str]]:
    """``values`` with the demo folders left behind (:func:`demo_folders_left_behind`) emptied, and their names."""
    dropped = demo_folders_left_behind(ui.ctx, values, lang)
    return {**values, **{name: "" for name in dropped}}, dropped


def scan_view(ui: UI, lang: str, values: dict[str, Any], progress: Any = None, done: str | None = None) -> dict[str, Any]:
    """A new scan of the dataset and every view of it (:data:`REPORT_OUTPUTS`): after the Scan button, and after
    anything that changed the captions (the editor, the captioner, the caption tools, Undo). Where ``values``
    carry ``dataset_origin``, a new folder's captions first propose its trigger, sample prompts and run name
    (:func:`own_data.propose`). ``done``: the message's first sentence (else "Scanned: …")."""
    progress = progress or (lambda *a, **k: None)
    progress(0, desc=t("scanning", lang))
    values, dropped = _without_demo_folders(ui, values, lang)
    proposed: dict[str, Any] = {}
    note = ""
    if own_data.ORIGIN in values:
        values, proposed, note = own_data.propose(ui, values, lang)
    report, state = scan_for(ui, values, lang, force=True, progress=progress)
    progress(1.0, desc=t("drawing_thumbnails", lang))
    out = render_report(report, lang)
    out.update(proposed)
    out["report_state"] = {**state, "lang": lang}
    out["ds_msg"] = ok_box((done or t("scan_done", lang, n=report.own_images)) + note + _dropped_note(dropped, lang))
    out["dataset_path"] = report.root
    out["reg_path"] = values.get("reg_path") or ""
    out["val_path"] = values.get("val_path") or ""
    out.update(gates.unlocks_after_scan(ui, values, report, lang))
    return out


def leave_demo_folders(ui: UI, lang: str, values: dict[str, Any]) -> dict[str, Any]:
    """A folder typed over the demo's and left without Scan (Tab, then Next: steps or Start): the demo's prior and
    held-out folders come out of their fields at once, as Scan takes them out, so no step plans or trains the demo's
    world scenes into this LoRA."""
    dropped = demo_folders_left_behind(ui.ctx, values, lang)
    return {**{name: "" for name in dropped}, "ds_msg": ok_box(_dropped_note(dropped, lang).strip())} if dropped else {}


def opening_scan(ui: UI, lang: str, report_state: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The scan the page makes as it opens, of the preselected dataset (the demo), so every step that validates is
    open. A folder typed before it ran is scanned as Scan would scan it: without the demo's prior and held-out
    folders beside it (they were in the fields still), and the fields say so."""
    if not values.get("dataset_path"):
        return {}
    values, dropped = _without_demo_folders(ui, values, lang)
    report, state = scan_for(ui, values, lang, report_state)
    out = {**render_report(report, lang), "report_state": {**state, "lang": lang}, **{name: "" for name in dropped}}
    if dropped:
        out["ds_msg"] = ok_box(_dropped_note(dropped, lang).strip())
    return {**out, **gates.unlocks_after_scan(ui, values, report, lang)}


def wire(ui: UI) -> None:
    ctx = ui.ctx

    def scan(*, lang: str, report_state: Any, progress=gr.Progress(), **values: Any) -> dict[str, Any]:  # noqa: B008
        return scan_view(ui, lang, values, progress)

    scan_inputs = ["lang", "report_state", own_data.ORIGIN, *NAMES]
    ui.on(ui["scan_btn"].click, scan, scan_inputs, REPORT_OUTPUTS, api_name="scan", message="ds_msg",
          reset=empty_report)
    ui.on(ui["dataset_path"].submit, scan, scan_inputs, REPORT_OUTPUTS, message="ds_msg", reset=empty_report)

    def leave(*, lang: str, **values: Any) -> dict[str, Any]:
        return leave_demo_folders(ui, lang, values)

    ui.on(ui["dataset_path"].blur, leave, ["lang", *NAMES], ["reg_path", "val_path", "ds_msg"], message="ds_msg",
          show_progress="hidden")

    def import_files(*, lang: str, upload_files: list | None, upload_name: str, report_state: Any,
                     progress=gr.Progress(), **values: Any) -> dict[str, Any]:  # noqa: B008
        if not upload_files:
            raise UserError(t("err_no_upload", lang))
        progress(0, desc=t("importing", lang))
        dest = ctx.datasets_dir / safe_name(upload_name)
        counts = import_uploads([getattr(f, "name", f) for f in upload_files], dest, lang)
        values = {**values, "dataset_path": str(dest)}
        done = t("imported", lang, n=counts["files"], skipped=counts["skipped"], folder=dest)
        return {**scan_view(ui, lang, values, progress, done), "upload_files": None}

    ui.on(ui["import_btn"].click, import_files, ["lang", "upload_files", "upload_name", "report_state", own_data.ORIGIN,
                                                 *NAMES],
          [*REPORT_OUTPUTS, "upload_files"], api_name="import_dataset", message="ds_msg")

    def pick_caption(evt: gr.SelectData, *, report_state: Any, **values: Any) -> dict[str, Any]:
        report: DatasetReport | None = (report_state or {}).get("report")
        if report is None or evt.index is None or evt.index >= len(report.items):
            return {}
        item = report.items[evt.index]
        cfg = config_from_values(values, ctx.runs_dir, [ctx.presets_dir])
        return {"cap_file": item.rel, "cap_text": _read_caption(Path(item.path).with_suffix(cfg.dataset.caption_ext))}

    ui.on(ui["ds_gallery"].select, pick_caption, ["report_state", *NAMES], ["cap_file", "cap_text"])

    def save_caption(*, lang: str, report_state: Any, cap_file: str, cap_text: str, **values: Any) -> dict[str, Any]:
        report: DatasetReport | None = (report_state or {}).get("report")
        if report is None or not cap_file:
            raise UserError(t("err_pick_picture", lang))
        cfg = config_from_values(values, ctx.runs_dir, [ctx.presets_dir])
        caption = caption_path(ui, report, cap_file, cfg.dataset.caption_ext, lang)
        # journaled like every caption change the app makes: Undo puts the caption back as it was
        apply_changes(Path(report.root), {caption: checked_caption(cap_text, lang)},
                      msg("caption.change.edit", file=cap_file))
        return scan_view(ui, lang, values, done=t("caption_saved", lang, file=cap_file))

    ui.on(ui["cap_save"].click, save_caption, ["lang", "report_state", "cap_file", "cap_text", own_data.ORIGIN, *NAMES],
          REPORT_OUTPUTS, api_name="save_caption", message="ds_msg")

    rerender_on(ui, ui["lang"].change)
    own_data.wire(ui)

    def next_step(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
        report, _ = scan_for(ui, values, lang, report_state=report_state)
        if not report.usable:
            raise UserError(t("err_no_usable", lang))
        return {"wizard": gates.go("plan"), **gates.unlocks_after_scan(ui, values, report, lang)}

    ui.on(ui["ds_next"].click, next_step, ["lang", "report_state", *NAMES], ["wizard", *gates.UNLOCKS],
          message="ds_msg")
    captioning.wire(ui)
    masking.wire(ui)


def rerender_on(ui: UI, trigger: Any) -> None:
    """Show the session's scan report again (in the language chosen by then) when ``trigger`` fires."""

    def rerender(*, lang: str, report_state: Any) -> dict[str, Any]:
        state = report_state or {}
        # a report this step never showed (no "lang": the Steps page scanned the fields as they stood, e.g. a folder
        # typed with the demo's prior folder still beside it) is not put on show here
        if state.get("report") is None or state.get("lang") in (None, lang):
            return {}
        return {**render_report(state["report"], lang), "report_state": {**state, "lang": lang}}

    ui.on(trigger, rerender, ["lang", "report_state"],
          [o for o in REPORT_OUTPUTS if o.startswith("ds_") and o != "ds_msg"] + ["report_state"],
          show_progress="hidden")


# ------------------------------------------------------------------------------------------ helpers


def scan_for(ui: UI, values: dict[str, Any], lang: str, report_state: Any = None, force: bool = False,
             progress: Any = None) -> tuple[DatasetReport, dict[str, Any]]:
    """The scan report for these settings and the session state holding it: the report already in the session
    when the dataset settings match, else a new scan (``progress``: a gr.Progress told of each picture)."""
    cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
    ui.ctx.policy.resolve_folders(cfg, lang)
    key = cfg.dataset.model_dump_json()
    state = report_state or {}
    if not force and state.get("key") == key and state.get("report") is not None:
        return state["report"], state
    report = scan_dataset(cfg.dataset, progress=progress and (
        lambda done, total: progress((done, total), desc=t("scanning", lang), unit=t("col_images", lang))))
    return report, {"key": key, "report": report}


def caption_path(ui: UI, report: DatasetReport, cap_file: str, caption_ext: str, lang: str) -> Path:
    """The caption file of a picture the scan listed (by its name in the report), and no other: a free name
    would create files and folders anywhere under the dataset."""
    item = next((it for it in report.items if it.rel == cap_file), None)
    if item is None:
        raise UserError(t("err_not_in_dataset", lang, file=cap_file))
    # resolved again: while shared, the caption may not be (or have become) a link out of the workspace
    return ui.ctx.policy.resolve(str(Path(item.path).with_suffix(caption_ext)), "caption", lang)


def checked_caption(text: str | None, lang: str) -> str:
    text = (text or "").strip()
    if len(text) > MAX_CAPTION_CHARS:
        raise UserError(t("err_caption_too_long", lang, n=f"{len(text):,}", limit=f"{MAX_CAPTION_CHARS:,}"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(t("err_not_utf8", lang, what=t("caption_text", lang))) from None
    return text


def _problem_headers(lang: str) -> list[str]:
    return [t("col_file", lang), t("col_severity", lang), t("col_what_to_do", lang)]


def render_report(report: DatasetReport, lang: str) -> dict[str, Any]:
    """Every view of a scan report, in ``lang``."""
    problems = [[p["file"], t(f"sev_{p['severity']}", lang), words.say(p["message"], lang)]
                for p in sorted(report.problems, key=lambda p: ("error", "warning", "info").index(p["severity"]))]
    warnings = caption_doctor_markdown(report, lang)
    tags = [[tag, n, f"{100 * n / max(1, report.captions):.0f}%"] for tag, n in list(report.tags.items())[:60]]
    buckets = [[f"{b['width']}×{b['height']}", b["images"], b["image_repeats"]] for b in report.buckets]
    gallery = thumbnails(report)
    return {
        "ds_summary": summary_markdown(report, lang),
        "ds_problems": gr.Dataframe(value=problems or [["—", "—", t("no_problems", lang)]],
                                    headers=_problem_headers(lang)),
        "ds_size_hist": histogram_figure(report.size_histogram, t("size_hist", lang), lang),
        "ds_aspect_hist": histogram_figure(report.aspect_histogram, t("aspect_hist", lang), lang),
        "ds_buckets": gr.Dataframe(value=buckets, headers=[t("col_bucket", lang), t("col_images", lang),
                                                             t("col_image_repeats", lang)]),
        "ds_tags": gr.Dataframe(value=tags, headers=[t("col_tag", lang), t("col_captions", lang), t("col_share", lang)]),
        "ds_tag_warnings": warnings,
        "ds_gallery": gallery,
        "ds_thumbs_note": t("thumbs_shown", lang, shown=len(gallery), total=len(report.items))
        if len(gallery) < len(report.items) else "",
    }


def caption_doctor_markdown(report: DatasetReport, lang: str) -> str:
    """The caption doctor's findings (trainer/data/caption_doctor.py) under a heading; "" when it found nothing."""
    if not report.caption_findings:
        return ""
    lines = [f"**{t('cap_doctor', lang)}**"]
    for f in sorted(report.caption_findings, key=lambda f: f["severity"] != "warning"):
        where = f" — {f['file']}" if f["file"] else ""
        lines.append(f"- {'⚠️' if f['severity'] == 'warning' else 'ℹ️'} {words.say(f['message'], lang)}{where}")
    return "\n".join(lines)


def empty_report(lang: str) -> dict[str, Any]:
    """The report views when a scan fails: nothing of the dataset scanned before stays under the error."""
    return {
        "report_state": None, "ds_summary": "", "ds_tag_warnings": "", "ds_thumbs_note": "", "ds_gallery": [],
        "ds_problems": gr.Dataframe(value=[], headers=_problem_headers(lang)),
        "ds_size_hist": None, "ds_aspect_hist": None,
        "ds_buckets": gr.Dataframe(value=[]), "ds_tags": gr.Dataframe(value=[]),
    }


def summary_markdown(report: DatasetReport, lang: str) -> str:
    counts = {s: sum(1 for p in report.problems if p["severity"] == s) for s in ("error", "warning", "info")}
    lines = [t("summary", lang, images=report.own_images, captions=report.captions,
               repeats=report.image_repeats, errors=counts["error"], warnings=counts["warning"], infos=counts["info"])]
    for f in report.folders:
        lines.append(t("summary_folder", lang, name=f["name"], repeats=f["repeats"], images=f["images"]))
    if report.prior_images:
        lines.append(t("summary_prior", lang, n=report.prior_images))
    if report.trigger_share is not None:
        lines.append(t("summary_trigger", lang, trigger=report.trigger, share=f"{100 * report.trigger_share:.0f}"))
    return "\n".join(lines)


def thumbnails(report: DatasetReport) -> list[tuple[Image.Image, str]]:
    """Small pictures (not file paths: the dataset may sit outside what gradio serves), first MAX_THUMBS."""
    out = []
    for item in report.items[:MAX_THUMBS]:
        try:
            with Image.open(item.path) as opened:
                im = opened.convert("RGB")
                im.thumbnail((THUMB_SIDE, THUMB_SIDE))
                out.append((im.copy(), item.rel))
        except OSError:
            continue
    return out


def _read_caption(path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""
