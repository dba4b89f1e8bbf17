"""The Dataset step's captioning: "Caption the pictures" (a captioner over the whole folder, with a preview, a
progress bar with time left, Stop and Undo) and the caption tools across the dataset (a tag/word frequency table,
replace or remove a tag everywhere, insert the trigger where it is missing, find captions by word).

Every change goes through the caption journal (trainer/caption/journal.py), so Undo takes back the newest one
exactly; after each change the dataset is scanned again, so the report, the caption doctor and the thumbnails'
captions show what is now on disk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

import words
from trainer.caption.compose import MODES, parse_words
from trainer.caption.journal import undo_last
from trainer.caption.models import choose, load_captioner
from trainer.caption.run import CaptionRun, caption_folder, pictures_of
from trainer.caption.tools import find, frequency, insert_trigger, replace_tag
from trainer.config.schema import Config
from trainer.errors import UserError

from ..binding import UI, ok_box
from ..fields import NAMES, config_from_values
from ..i18n import t
from ..widgets import field_widgets

PREVIEW_PICTURES = 4
MAX_ROWS = 200  # rows of a table sent to the browser; the frequency table of a big dataset is long


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    with gr.Accordion(t("cap_title", lang), open=False, elem_id="ld-captioning") as acc:
        ui.add("cap_acc", acc, "cap_title")
        ui.add("cap_intro", gr.Markdown(t("cap_intro", lang)), "cap_intro", "value")
        with gr.Row():
            field_widgets(ui, "caption")
        with gr.Row():
            ui.add("cap_mode", gr.Radio(choices=_mode_choices(lang), value="fill", label=t("cap_mode", lang),
                                        elem_id="ld-cap-mode"), "cap_mode")
            ui.add("cap_exclude", gr.Textbox(value="", label=t("cap_exclude", lang), info=t("cap_exclude_info", lang),
                                             elem_id="ld-cap-exclude"), "cap_exclude")
        with gr.Row():
            ui.add("cap_preview_btn", gr.Button(t("cap_preview", lang)), "cap_preview", "value")
            ui.add("cap_run_btn", gr.Button(t("cap_run", lang), variant="primary"), "cap_run", "value")
            ui.add("cap_stop_btn", gr.Button(t("cap_stop", lang), variant="stop"), "cap_stop", "value")
            ui.add("cap_undo_btn", gr.Button(t("cap_undo", lang)), "cap_undo", "value")
        ui.add("cap_msg", gr.HTML("", elem_id="ld-cap-msg"))
        ui.add("cap_results", gr.Dataframe(headers=_result_headers(lang), interactive=False, wrap=True,
                                           label=t("cap_results", lang), elem_id="ld-cap-results"), "cap_results")
    with gr.Accordion(t("cap_tools_title", lang), open=False, elem_id="ld-caption-tools") as tools:
        ui.add("cap_tools_acc", tools, "cap_tools_title")
        with gr.Row():
            ui.add("cap_freq_by", gr.Radio(choices=_by_choices(lang), value="tag", label=t("cap_freq_by", lang)),
                   "cap_freq_by")
            ui.add("cap_freq_btn", gr.Button(t("cap_freq", lang)), "cap_freq", "value")
        ui.add("cap_freq", gr.Dataframe(interactive=False, label=t("cap_freq_table", lang), max_height=300),
               "cap_freq_table")
        with gr.Row():
            ui.add("cap_tag", gr.Textbox(value="", label=t("cap_tag", lang), elem_id="ld-cap-tag"), "cap_tag")
            ui.add("cap_tag_new", gr.Textbox(value="", label=t("cap_tag_new", lang), elem_id="ld-cap-tag-new"), "cap_tag_new")
            ui.add("cap_replace_btn", gr.Button(t("cap_replace", lang)), "cap_replace", "value")
            ui.add("cap_remove_btn", gr.Button(t("cap_remove", lang)), "cap_remove", "value")
        with gr.Row():
            ui.add("cap_trigger_btn", gr.Button(t("cap_insert_trigger", lang)), "cap_insert_trigger", "value")
            ui.add("cap_find_text", gr.Textbox(value="", label=t("cap_find_text", lang), elem_id="ld-cap-find"), "cap_find_text")
            ui.add("cap_find_btn", gr.Button(t("cap_find", lang)), "cap_find", "value")
        ui.add("cap_found", gr.Dataframe(interactive=False, wrap=True, label=t("cap_found", lang)), "cap_found")


class TabStops:
    """Each browser tab's stop flag for the folder run it started (captioning, masks): Stop sets that one."""

    def __init__(self) -> None:
        self._flags: dict[str, threading.Event] = {}

    def start(self, request: gr.Request) -> threading.Event:
        flag = self._flags[request.session_hash or ""] = threading.Event()
        return flag

    def stop(self, request: gr.Request) -> None:
        flag = self._flags.get(request.session_hash or "")
        if flag is not None:
            flag.set()


def picture_progress(progress: Any, lang: str) -> Callable[[int, int, float | None], None]:
    """A folder run's ``progress(done, total, seconds_left)`` shown on gradio's progress bar."""

    def tell(done: int, total: int, left: float | None) -> None:
        desc = t("cap_progress", lang, done=done, total=total) + (
            t("cap_time_left", lang, s=f"{left:.0f}") if left is not None else "")
        progress((done, total), desc=desc, unit=t("col_images", lang))

    return tell


def _mode_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(f"cap_mode_{m}", lang), m) for m in MODES]


def _by_choices(lang: str) -> list[tuple[str, str]]:
    return [(t("cap_by_tag", lang), "tag"), (t("cap_by_word", lang), "word")]


def _result_headers(lang: str) -> list[str]:
    return [t("col_file", lang), t("cap_col_old", lang), t("cap_col_new", lang)]


def config_of(ui: UI, values: dict[str, Any], lang: str) -> Config:
    """The settings, with the dataset folder resolved (and, while shared, kept inside the workspace)."""
    cfg = config_from_values(values, ui.ctx.runs_dir, [ui.ctx.presets_dir])
    ui.ctx.policy.resolve_folders(cfg, lang)
    return cfg


def _results_table(run: CaptionRun, lang: str) -> Any:
    rows = [[r["file"], r["old"], r["new"]] for r in run.results[:MAX_ROWS]]
    return gr.Dataframe(value=rows, headers=_result_headers(lang))


def _run_message(run: CaptionRun, lang: str) -> str:
    text = words.say("caption.summary", lang, written=run.written, kept=run.kept, failed=len(run.failed),
                     seconds=run.seconds)
    if run.stopped:
        text += " " + t("cap_stopped", lang)
    if run.failed:
        text += " " + t("cap_failed", lang, files=", ".join(f["file"] for f in run.failed[:5]))
    return text


def wire(ui: UI) -> None:
    from .dataset import REPORT_OUTPUTS, scan_view

    stops = TabStops()

    def captioned(lang: str, values: dict[str, Any], cap_mode: str, cap_exclude: str, preview: bool,
                  progress: Any = None, stop: threading.Event | None = None) -> CaptionRun:
        cfg = config_of(ui, values, lang)
        pictures_of(cfg.dataset.path, cfg.dataset.caption_ext)  # a folder without pictures is named first
        c = cfg.caption
        captioner = load_captioner(choose(c.captioner, c.model, cfg.model.base, c.general_threshold,
                                          c.character_threshold))
        try:
            return caption_folder(cfg.dataset.path, captioner, mode=cap_mode if cap_mode in MODES else "fill",
                                  trigger=cfg.dataset.trigger, exclude=parse_words(cap_exclude),
                                  caption_ext=cfg.dataset.caption_ext, batch_size=c.batch_size,
                                  limit=PREVIEW_PICTURES if preview else None, write=not preview,
                                  progress=progress, stop=stop.is_set if stop else None)
        finally:
            captioner.close()

    def preview(*, lang: str, cap_mode: str, cap_exclude: str, **values: Any) -> dict[str, Any]:
        run = captioned(lang, values, cap_mode, cap_exclude, preview=True)
        return {"cap_results": _results_table(run, lang), "cap_msg": ok_box(t("cap_previewed", lang, n=len(run.results)))}

    ui.on(ui["cap_preview_btn"].click, preview, ["lang", "cap_mode", "cap_exclude", *NAMES],
          ["cap_results"], api_name="caption_preview", message="cap_msg")

    def run_all(request: gr.Request, *, lang: str, cap_mode: str, cap_exclude: str, progress=gr.Progress(),  # noqa: B008
                **values: Any) -> dict[str, Any]:
        stop = stops.start(request)
        progress(0, desc=t("cap_loading", lang))
        run = captioned(lang, values, cap_mode, cap_exclude, preview=False, progress=picture_progress(progress, lang),
                        stop=stop)
        out = scan_view(ui, lang, values)
        out.update({"cap_results": _results_table(run, lang), "cap_msg": ok_box(_run_message(run, lang))})
        return out

    ui.on(ui["cap_run_btn"].click, run_all, ["lang", "cap_mode", "cap_exclude", *NAMES],
          [*REPORT_OUTPUTS, "cap_results"], api_name="caption_all", message="cap_msg")

    def stop_run(request: gr.Request, *, lang: str) -> dict[str, Any]:
        stops.stop(request)
        return {"cap_msg": ok_box(t("cap_stopping", lang))}

    ui.on(ui["cap_stop_btn"].click, stop_run, ["lang"], [], message="cap_msg", concurrency_limit=None)

    def undo(*, lang: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        change = undo_last(Path(cfg.dataset.path))
        out = scan_view(ui, lang, values)
        out["cap_msg"] = ok_box(words.say("caption.undone", lang, what=change.what, n=len(change.files)))
        return out

    ui.on(ui["cap_undo_btn"].click, undo, ["lang", *NAMES], REPORT_OUTPUTS, api_name="caption_undo",
          message="cap_msg")

    def table(*, lang: str, cap_freq_by: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        _, pictures = pictures_of(cfg.dataset.path, cfg.dataset.caption_ext)
        rows = [[k, n, f"{100 * share:.0f}%"] for k, n, share in frequency(pictures, cap_freq_by)[:MAX_ROWS]]
        head = t("col_tag", lang) if cap_freq_by == "tag" else t("cap_col_word", lang)
        return {"cap_freq": gr.Dataframe(value=rows, headers=[head, t("col_captions", lang), t("col_share", lang)])}

    ui.on(ui["cap_freq_btn"].click, table, ["lang", "cap_freq_by", *NAMES], ["cap_freq"],
          api_name="caption_frequency", message="cap_msg")

    def edited(lang: str, values: dict[str, Any], change: Any) -> dict[str, Any]:
        out = scan_view(ui, lang, values)
        done = t("cap_tool_done", lang, what=words.say(change.what, lang), n=len(change.files)) if change else \
            words.say("caption.nothing_changed", lang)
        out["cap_msg"] = ok_box(done)
        return out

    def replace(*, lang: str, cap_tag: str, cap_tag_new: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        if not (cap_tag_new or "").strip():
            raise UserError(t("cap_err_no_new", lang))
        return edited(lang, values, replace_tag(cfg.dataset.path, cap_tag or "", cap_tag_new, cfg.dataset.caption_ext))

    def remove(*, lang: str, cap_tag: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        return edited(lang, values, replace_tag(cfg.dataset.path, cap_tag or "", "", cfg.dataset.caption_ext))

    def add_trigger(*, lang: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        return edited(lang, values, insert_trigger(cfg.dataset.path, cfg.dataset.trigger, cfg.dataset.caption_ext))

    ui.on(ui["cap_replace_btn"].click, replace, ["lang", "cap_tag", "cap_tag_new", *NAMES], REPORT_OUTPUTS,
          api_name="caption_replace", message="cap_msg")
    ui.on(ui["cap_remove_btn"].click, remove, ["lang", "cap_tag", *NAMES], REPORT_OUTPUTS,
          api_name="caption_remove", message="cap_msg")
    ui.on(ui["cap_trigger_btn"].click, add_trigger, ["lang", *NAMES], REPORT_OUTPUTS,
          api_name="caption_insert_trigger", message="cap_msg")

    def search(*, lang: str, cap_find_text: str, **values: Any) -> dict[str, Any]:
        cfg = config_of(ui, values, lang)
        _, pictures = pictures_of(cfg.dataset.path, cfg.dataset.caption_ext)
        rows = [[p.rel, p.old] for p in find(pictures, cap_find_text or "")[:MAX_ROWS]]
        return {"cap_found": gr.Dataframe(value=rows, headers=[t("col_file", lang), t("caption_text", lang)]),
                "cap_msg": ok_box(t("cap_found_n", lang, n=len(rows)))}

    ui.on(ui["cap_find_btn"].click, search, ["lang", "cap_find_text", *NAMES], ["cap_found"],
          api_name="caption_find", message="cap_msg")

    def relabel(*, lang: str, cap_mode: str, cap_freq_by: str, cap_results: Any) -> dict[str, Any]:
        rows = cap_results.values.tolist() if hasattr(cap_results, "values") else []
        return {"cap_mode": gr.Radio(choices=_mode_choices(lang), value=cap_mode),
                "cap_freq_by": gr.Radio(choices=_by_choices(lang), value=cap_freq_by),
                "cap_exclude": gr.Textbox(info=t("cap_exclude_info", lang)),
                "cap_results": gr.Dataframe(value=rows, headers=_result_headers(lang))}

    ui.on(ui["lang"].change, relabel, ["lang", "cap_mode", "cap_freq_by", "cap_results"],
          ["cap_mode", "cap_freq_by", "cap_exclude", "cap_results"], show_progress="hidden")

