"""The Dataset step's mask maker: "Masks for masked training" (CLIPSeg from a few words, or an ONNX background
remover), a preview of four pictures with what the mask leaves out dimmed, a run over the folder with a progress
bar, and Undo. Masks go through their own journal (trainer/caption/journal.py, ``masks``); after a run or an Undo
the dataset is scanned again, so the report says which pictures still lack a mask when masked training is on.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np

import words
from trainer.caption.journal import undo_last
from trainer.caption.run import pictures_of
from trainer.data.images import load_image_rgb
from trainer.data.masks import mask_image
from trainer.masking.makers import KINDS, choose, load_masker
from trainer.masking.run import MODES, MaskRun, Mode, check, mask_folder, overlay

from ..binding import UI, ok_box
from ..fields import NAMES
from ..i18n import t
from .captioning import PREVIEW_PICTURES, TabStops, config_of, picture_progress

INPUTS = ["mask_kind", "mask_model", "mask_prompt", "mask_threshold", "mask_expand", "mask_mode"]


def _kind_choices(lang: str) -> list[tuple[str, str]]:
    return [(words.say(f"mask.kind.{k}", lang), k) for k in KINDS]


def _mode_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"mask_mode_{m}", lang), m) for m in MODES]


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    with gr.Accordion(t("mask_title", lang), open=False, elem_id="ld-masks") as acc:
        ui.add("mask_acc", acc, "mask_title")
        ui.add("mask_intro", gr.Markdown(t("mask_intro", lang)), "mask_intro", "value")
        with gr.Row():
            ui.add("mask_kind", gr.Radio(choices=_kind_choices(lang), value="clipseg", label=t("mask_kind", lang),
                                         elem_id="ld-mask-kind"), "mask_kind")
            ui.add("mask_model", gr.Textbox(value="", label=t("mask_model", lang), elem_id="ld-mask-model"),
                   "mask_model")
            ui.add("mask_prompt", gr.Textbox(value="", label=t("mask_prompt", lang), elem_id="ld-mask-prompt"),
                   "mask_prompt")
        with gr.Row():
            ui.add("mask_threshold", gr.Slider(0, 0.95, value=0.4, step=0.05, label=t("mask_threshold", lang),
                                               elem_id="ld-mask-threshold"), "mask_threshold")
            ui.add("mask_expand", gr.Number(value=8, minimum=0, maximum=256, precision=0,
                                            label=t("mask_expand", lang), elem_id="ld-mask-expand"), "mask_expand")
            ui.add("mask_mode", gr.Radio(choices=_mode_choices(lang), value="fill", label=t("mask_mode", lang),
                                         elem_id="ld-mask-mode"), "mask_mode")
        with gr.Row():
            ui.add("mask_preview_btn", gr.Button(t("mask_preview", lang)), "mask_preview", "value")
            ui.add("mask_run_btn", gr.Button(t("mask_run", lang), variant="primary"), "mask_run", "value")
            ui.add("mask_stop_btn", gr.Button(t("cap_stop", lang), variant="stop"), "cap_stop", "value")
            ui.add("mask_undo_btn", gr.Button(t("mask_undo", lang)), "mask_undo", "value")
        ui.add("mask_msg", gr.HTML("", elem_id="ld-mask-msg"))
        ui.add("mask_gallery", gr.Gallery(label=t("mask_gallery", lang), columns=4, height=260, allow_preview=True,
                                          elem_id="ld-mask-gallery"), "mask_gallery")


def _message(run: MaskRun, lang: str, preview: bool) -> str:
    text = t("mask_preview_done", lang, n=len(run.results)) if preview else words.say(
        "mask.summary", lang, written=run.written, kept=run.kept, failed=len(run.failed), seconds=run.seconds)
    if run.odd:
        text += " " + words.say("mask.odd", lang, n=len(run.odd), files=", ".join(r["file"] for r in run.odd[:5]))
    if run.stopped:
        text += " " + t("mask_stopped", lang)
    if run.failed:
        text += " " + t("cap_failed", lang, files=", ".join(f["file"] for f in run.failed[:5]))
    if run.change:
        text += " " + words.say("mask.turn_on", lang)
    return text


def _shown(run: MaskRun, root: Path) -> list[tuple[Any, str]]:
    """Each masked picture with the rest dimmed: the preview's own masks, else the masks just written."""
    out = []
    for r in run.results[:PREVIEW_PICTURES * 4]:
        picture = load_image_rgb(root / r["file"])
        mask = run.masks.get(r["file"])
        if mask is None:
            found = mask_image(root / r["file"])
            if found is None:
                continue
            mask = np.asarray(found.resize(picture.size))
        out.append((overlay(picture, mask), f"{r['file']} · {r['coverage']:.0%}"))
    return out


def wire(ui: UI) -> None:
    from .dataset import REPORT_OUTPUTS, scan_view

    stops = TabStops()

    def masked(lang: str, values: dict[str, Any], settings: dict[str, Any], preview: bool,
               progress: Any = None, stop: threading.Event | None = None) -> tuple[MaskRun, Path]:
        cfg = config_of(ui, values, lang)
        root, _ = pictures_of(cfg.dataset.path, cfg.dataset.caption_ext)  # a folder without pictures is named first
        threshold, expand = float(settings["mask_threshold"] or 0), int(settings["mask_expand"] or 0)
        check(threshold, expand)
        # no words for CLIPSeg: said before a model is loaded
        masker = load_masker(choose(settings["mask_kind"] or "clipseg", settings["mask_model"] or "",
                                    settings["mask_prompt"] or ""))
        try:
            mode: Mode = "overwrite" if settings["mask_mode"] == "overwrite" else "fill"
            run = mask_folder(root, masker, prompt=settings["mask_prompt"] or "", mode=mode, threshold=threshold,
                              expand=expand, caption_ext=cfg.dataset.caption_ext,
                              limit=PREVIEW_PICTURES if preview else None, write=not preview, keep=preview,
                              progress=progress, stop=stop.is_set if stop else None)
        finally:
            masker.close()
        return run, root

    def preview(*, lang: str, **values: Any) -> dict[str, Any]:
        settings = {k: values.pop(k) for k in INPUTS}
        run, root = masked(lang, values, settings, preview=True)
        return {"mask_gallery": _shown(run, root), "mask_msg": ok_box(_message(run, lang, preview=True))}

    ui.on(ui["mask_preview_btn"].click, preview, ["lang", *INPUTS, *NAMES], ["mask_gallery"],
          api_name="mask_preview", message="mask_msg")

    def run_all(request: gr.Request, *, lang: str, progress=gr.Progress(), **values: Any) -> dict[str, Any]:  # noqa: B008
        settings = {k: values.pop(k) for k in INPUTS}
        stop = stops.start(request)
        progress(0, desc=t("mask_loading", lang))
        run, root = masked(lang, values, settings, preview=False, progress=picture_progress(progress, lang), stop=stop)
        out = scan_view(ui, lang, values)
        out.update({"mask_gallery": _shown(run, root), "mask_msg": ok_box(_message(run, lang, preview=False))})
        return out

    ui.on(ui["mask_run_btn"].click, run_all, ["lang", *INPUTS, *NAMES], [*REPORT_OUTPUTS, "mask_gallery"],
          api_name="mask_all", message="mask_msg")

    def stop_run(request: gr.Request, *, lang: str) -> dict[str, Any]:
        stops.stop(request)
        return {"mask_msg": ok_box(t("mask_stopping", lang))}

    ui.on(ui["mask_stop_btn"].click, stop_run, ["lang"], [], message="mask_msg", concurrency_limit=None)

    def undo(*, lang: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        change = undo_last(Path(cfg.dataset.path), journal="masks")
        out = scan_view(ui, lang, values)
        out.update({"mask_gallery": [],
                    "mask_msg": ok_box(words.say("mask.undone", lang, what=change.what, n=len(change.files)))})
        return out

    ui.on(ui["mask_undo_btn"].click, undo, ["lang", *NAMES], [*REPORT_OUTPUTS, "mask_gallery"],
          api_name="mask_undo", message="mask_msg")

    def relabel(*, lang: str, mask_kind: str, mask_mode: str) -> dict[str, Any]:
        return {"mask_kind": gr.Radio(choices=_kind_choices(lang), value=mask_kind),
                "mask_mode": gr.Radio(choices=_mode_choices(lang), value=mask_mode)}

    ui.on(ui["lang"].change, relabel, ["lang", "mask_kind", "mask_mode"], ["mask_kind", "mask_mode"],
          show_progress="hidden")
