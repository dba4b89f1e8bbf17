"""Step 5, Review: the checkpoint × prompt grid, leakage per checkpoint, the recommended checkpoint with its
reason, a strength sweep on demand, and the download of the chosen LoRA file."""

from __future__ import annotations

import base64
import html
import io
import math
import shutil
import tempfile
import weakref
import zipfile
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

import words
from trainer.data.images import for_display
from trainer.doctor import pictures
from trainer.doctor.clip_judge import CLIP_JUDGE
from trainer.doctor.held_out import val_loss_by_step
from trainer.doctor.judge_files import chosen_judge
from trainer.errors import UserError
from trainer.models.embedding import embedding_beside
from trainer.review import grid as review
from trainer.review import more, strength
from trainer.run import contents
from trainer.run.rundir import continue_step

from ..binding import UI, ok_box
from ..i18n import kind_label, t
from ..verdict_view import checkpoint_labels, verdict_markdown
from ..widgets import run_picker
from . import compare, gates
from .train_poll import CONTINUE_OUTPUTS, continue_view

GRID_THUMB = 256


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    run_picker(ui, "review_run", "review_refresh")
    # a run that paused, stopped, was interrupted or failed goes on from here too, not only the newest (Train's)
    ui.add("review_continue", gr.Button(t("continue_this_run", lang), visible=False, elem_id="ld-review-continue"),
           "continue_this_run", "value")
    ui.add("review_msg", gr.HTML(""))
    ui.add("rec_md", gr.Markdown("", elem_id="ld-recommend"))
    ui.add("grid_html", gr.HTML("", elem_id="ld-grid"))
    ui.add("leak_df", gr.Dataframe(interactive=False, label=t("measures", lang), elem_id="ld-measures"), "measures")
    ui.add("model_plot", gr.Plot(visible=False, elem_id="ld-model-measures", show_label=False))
    ui.add("model_md", gr.Markdown("", elem_id="ld-model-meaning"))
    with gr.Row():
        ui.add("ckpt", gr.Dropdown(choices=[], label=t("checkpoint", lang), scale=3, allow_custom_value=True), "checkpoint")
        ui.add("sweep_btn", gr.Button(t("sweep", lang), scale=0), "sweep", "value")
        ui.add("more_btn", gr.Button(t("more_pictures", lang), scale=0), "more_pictures", "value")
        ui.add("judge_btn", gr.Button(t("read_with_judge", lang), scale=0, elem_id="ld-read-with-judge"),
               "read_with_judge", "value")
        ui.add("download_btn", gr.Button(t("download", lang), scale=0), "download", "value")
    # the whole sweep at once: a row per strength, a column per prompt, captions whole (CSS: #ld-sweep)
    ui.add("sweep_gallery", gr.Gallery(label=t("sweep_title", lang), columns=4, height="auto", elem_id="ld-sweep",
                                       elem_classes="ld-captions"), "sweep_title")
    ui.add("more_gallery", gr.Gallery(label=t("more_title", lang), columns=6, height="auto", elem_id="ld-more",
                                      elem_classes="ld-captions"), "more_title")
    ui.add("download_file", gr.File(label=t("download_file", lang), interactive=False), "download_file")
    compare.build(ui)
    ui.add("review_next", gr.Button(t("next_troubleshoot", lang)), "next_troubleshoot", "value")


class DownloadFolder:
    """Where a download's copy waits for gradio to take it into its own cache (the workspace may lie outside
    what gradio serves): one temp folder per app, emptied before each download, removed when the app goes.
    Downloads run one at a time (the event's concurrency limit), each copied out before the next begins."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def fresh(self) -> Path:
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix="lora-doctor-"))
            weakref.finalize(self, shutil.rmtree, self.path, True)
        for old in self.path.iterdir():  # the last download's file, already in gradio's cache
            old.unlink()
        return self.path


def wire(ui: UI) -> None:
    ctx = ui.ctx
    downloads = DownloadFolder()
    compare.wire(ui)

    def continue_chosen(*, lang: str, review_run: str | None) -> dict[str, Any]:
        """Continue the run chosen here from its newest complete checkpoint, and show it training."""
        if ctx.runner.active:
            raise UserError(t("err_run_active", lang))
        run = ctx.run_path(review_run or "", lang)
        return {**continue_view(ctx, run, continue_step(run), lang), "wizard": gates.go("train"),
                "review_continue": gr.Button(visible=False)}

    ui.on(ui["review_continue"].click, continue_chosen, ["lang", "review_run"],
          [*CONTINUE_OUTPUTS, "wizard", "review_continue"], api_name="continue_chosen", message="review_msg")

    def show(*, lang: str, review_run: str | None, progress=gr.Progress()) -> dict[str, Any]:  # noqa: B008
        progress(0, desc=t("review_loading", lang))
        return review_view(ui, review_run, lang)

    outputs = VIEW_OUTPUTS
    ui.on(ui["review_refresh"].click, show, ["lang", "review_run"], outputs, api_name="review", message="review_msg")
    ui.on([ui["review_run"].input, ui["step_review"].select, ui["lang"].change], show, ["lang", "review_run"], outputs,
          message="review_msg", toast=False)

    def drawing_run(lang: str, review_run: str | None, ckpt: str | None) -> tuple[Path, str]:
        """The run and checkpoint to draw: not while training (the same memory and cores), and one is picked."""
        if ctx.runner.active:
            raise UserError(t("err_sweep_while_training", lang))
        if not ckpt:
            raise UserError(t("err_pick_checkpoint", lang))
        return ctx.run_path(review_run or "", lang), ckpt

    def sweep(*, lang: str, review_run: str | None, ckpt: str | None,
              progress=gr.Progress()) -> dict[str, Any]:  # noqa: B008 (gradio swaps in a tracker)
        run, ckpt = drawing_run(lang, review_run, ckpt)

        def report(done: float, total: int, at: float | None) -> None:
            desc = (t("sweep_loading", lang) if at is None else
                    t("sweeping_at", lang, strength=f"{at:g}", done=min(int(done) + 1, total), total=total))
            progress(done / max(total, 1), desc=desc)

        records = strength.strength_sweep(run, ckpt, progress=report, pipelines=ctx.sweeps)
        items = []
        for r in records:
            with Image.open(r["file"]) as im:
                items.append((im.convert("RGB"), f"×{r['strength']:g} · {kind_label(r['kind'], lang)}"))
        columns = len({r["index"] for r in records}) or 4
        return {"sweep_gallery": gr.Gallery(value=items, columns=columns),
                "review_msg": ok_box(t("sweep_done", lang, n=len(items), ckpt=ckpt))}

    ui.on(ui["sweep_btn"].click, sweep, ["lang", "review_run", "ckpt"], ["sweep_gallery", "review_msg"],
          api_name="sweep", message="review_msg")

    def more_of(*, lang: str, review_run: str | None, ckpt: str | None,
                progress=gr.Progress()) -> dict[str, Any]:  # noqa: B008
        run, ckpt = drawing_run(lang, review_run, ckpt)

        def report(done: float, total: int, at: float | None) -> None:
            desc = (t("sweep_loading", lang) if at is None else
                    t("more_drawing", lang, done=min(int(done) + 1, total), total=total))
            progress(done / max(total, 1), desc=desc)

        drawn = more.more_pictures(run, ckpt, progress=report, pipelines=ctx.sweeps)
        items = []
        for r in drawn["samples"]:
            with Image.open(r["file"]) as im:
                items.append((im.convert("RGB"), f"{kind_label(r['kind'], lang)} · seed {r['seed']}"))
        # a judge's readings of the larger draw stand for the save in the verdict: the view is read again
        return {**review_view(ui, review_run, lang), "ckpt": gr.Dropdown(value=ckpt),
                "more_gallery": gr.Gallery(value=items, columns=min(drawn["per_prompt"], 6)),
                "review_msg": ok_box(more_message(drawn, ckpt, lang))}

    ui.on(ui["more_btn"].click, more_of, ["lang", "review_run", "ckpt"], [*VIEW_OUTPUTS, "more_gallery"],
          api_name="more_pictures", message="review_msg")

    def read_with_judge(*, lang: str, review_run: str | None, judge: str | None,
                        progress=gr.Progress()) -> dict[str, Any]:  # noqa: B008
        """The picture judge chosen under Preset → Advanced settings reads this run from now on (its verdict,
        table and larger draws); with none chosen there, the run goes back to the judge it trained with."""
        if ctx.runner.active:
            raise UserError(t("err_sweep_while_training", lang))
        run = ctx.run_path(review_run or "", lang)
        name = ctx.policy.check_judge(judge or "", lang)
        if not name and not chosen_judge(run):
            raise UserError(t("err_no_judge_chosen", lang))
        progress(0, desc=t("judge_reading", lang))
        pictures.read_with_judge(run, name)  # a model that does not load is one message, and not kept
        view = review_view(ui, review_run, lang)
        said = t("judge_back_to_own", lang)
        if name:  # who read it: the chosen judge, or a more trusted one (measured for the view, read from its cache)
            read_by = {r["judge"] for r in pictures.measure_steps(run)} - {None}
            said = (t("judge_reads_run", lang, judge=name) if CLIP_JUDGE in read_by else
                    t("judge_outranked", lang, judge=name, other=", ".join(sorted(read_by))) if read_by else
                    t("judge_no_pictures", lang, judge=name))
        return {**view, "review_msg": ok_box(said)}

    ui.on(ui["judge_btn"].click, read_with_judge, ["lang", "review_run", "judge"], VIEW_OUTPUTS,
          api_name="read_with_judge", message="review_msg")

    def download(*, lang: str, review_run: str | None, ckpt: str | None,
                 progress=gr.Progress()) -> dict[str, Any]:  # noqa: B008
        if not ckpt:
            raise UserError(t("err_pick_checkpoint", lang))
        progress(0, desc=t("download_preparing", lang))
        run = ctx.run_path(review_run or "", lang)
        src = contents.resolve_checkpoint(run, ckpt)
        # a copy in the temp dir: the workspace may lie outside what gradio serves, and no path is added to it
        name = f"{run.parent.name}-{run.name}-{src.parent.name}-{src.name}"
        folder = downloads.fresh()
        embedding = embedding_beside(src)
        if embedding is None:
            dest = folder / name
            shutil.copyfile(src, dest)
            return {"download_file": str(dest), "review_msg": ok_box(t("download_ready", lang, name=name))}
        # a trained trigger embedding belongs with the LoRA; named after the trigger, as UIs name embeddings
        trigger = contents.load_run_config(run).dataset.trigger
        dest = folder / (Path(name).stem + ".zip")
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as z:
            z.write(src, name)
            z.write(embedding, f"{trigger}.safetensors")
        return {"download_file": str(dest),
                "review_msg": ok_box(t("download_ready_embedding", lang, name=dest.name, trigger=trigger))}

    def next_step(*, lang: str, review_run: str | None) -> dict[str, Any]:
        out = {"wizard": gates.go("troubleshoot"), "step_troubleshoot": gates.open_step()}
        if review_run:
            out["ts_run"] = gr.Dropdown(choices=ctx.run_choices(lang), value=review_run)
        return out

    ui.on(ui["review_next"].click, next_step, ["lang", "review_run"], ["wizard", "step_troubleshoot", "ts_run"])

    ui.on(ui["download_btn"].click, download, ["lang", "review_run", "ckpt"], ["download_file", "review_msg"],
          api_name="download", message="review_msg")


VIEW_OUTPUTS = ["grid_html", "leak_df", "model_plot", "model_md", "rec_md", "ckpt", "review_continue", "review_msg"]


def review_view(ui: UI, review_run: str | None, lang: str) -> dict[str, Any]:
    """Grid, measures, recommendation and the checkpoint choices of one run."""
    if not review_run:
        return {"review_msg": "", "grid_html": t("no_runs", lang), "review_continue": gr.Button(visible=False)}
    run = ui.ctx.run_path(review_run, lang)
    grid = review.review_grid(run)
    rec = ui.ctx.recommend(run)
    labels = [c["label"] for c in contents.checkpoint_files(run)]
    value = rec["label"] if rec else (labels[-1] if labels else None)
    verdicts = checkpoint_labels(rec.get("verdict") if rec else None, lang)
    return {
        "grid_html": grid_html(grid, rec["step"] if rec else None, lang, verdicts),
        "leak_df": measures_table(run, lang, rec),
        **model_measures_view(run, rec["step"] if rec else None, lang),
        "rec_md": recommendation_markdown(rec, lang, run, saved=bool(labels)),
        "ckpt": gr.Dropdown(choices=labels, value=value),
        "review_continue": gr.Button(visible=not ui.ctx.runner.active and continue_step(run) is not None),
        "review_msg": "",
    }


def more_message(drawn: dict[str, Any], ckpt: str, lang: str) -> str:
    """What a draw of more pictures says: how many, and the judge's readings where one read them; without a judge,
    what to look for."""
    n = drawn["per_prompt"]
    head = t("more_done", lang, n=n, ckpt=ckpt)
    readings = drawn.get("readings") or {}
    if not drawn.get("judge") or not readings:
        return f"{head} {t('more_look', lang)}"
    parts = [f"{t('col_' + k, lang)} {v:.2f}" for k, v in readings.items() if k in ("likeness", "adherence", "leakage")]
    said = f"{head} {t('more_judged', lang, judge=drawn['judge'], readings=', '.join(parts))}"
    return f"{said} {t('more_stands', lang)}" if drawn.get("weights") == "live" and drawn.get("step") else said


def _data_uri(path: str | list[str]) -> str:
    """A picture inline at a size a person can judge: tiny samples enlarged pixel for pixel (PNG, crisp), big ones
    shrunk (JPEG, light). Several files (one prompt's seeds) are tiled in one picture of the same size."""
    paths = [path] if isinstance(path, str) else path
    pictures = []
    for p in paths:
        try:
            with Image.open(p) as im:
                pictures.append(im.convert("RGB"))
        except (OSError, ValueError):  # cut short or gone: a grey tile in its place, the rest of the grid shown
            pictures.append(Image.new("RGB", (64, 64), "#bbbbbb"))
    side = math.ceil(math.sqrt(len(pictures)))
    tile = GRID_THUMB // side
    small = max(pictures[0].size) <= 96
    thumb = Image.new("RGB", (tile * side, tile * math.ceil(len(pictures) / side)), "white")
    for i, pic in enumerate(pictures):
        shown = for_display(pic, tile)
        shown.thumbnail((tile, tile))
        thumb.paste(shown, ((i % side) * tile, (i // side) * tile))
    fmt = "png" if small else "jpeg"
    buf = io.BytesIO()
    thumb.save(buf, format=fmt.upper(), quality=85)
    return f"data:image/{fmt};base64,{base64.b64encode(buf.getvalue()).decode()}"


def grid_html(grid: dict[str, Any], recommended: int | None, lang: str, verdicts: dict[int, str] | None = None) -> str:
    """Steps as rows, prompt kinds as columns; the pictures inline (small), the recommended row marked, each
    checkpoint's verdict under its step."""
    if not grid["steps"]:
        return f"<p>{t('no_samples', lang)}</p>"
    e = html.escape
    head = "".join(f"<th title='{e(grid['prompts'].get(k, ''))}'>{e(kind_label(k, lang))}<br>"
                   f"<small>{e(grid['prompts'].get(k, ''))}</small></th>" for k in grid["kinds"])
    rows = []
    for step in grid["steps"]:
        mark = " ⭐" if step == recommended else ""
        cells = []
        for k in grid["kinds"]:
            path = grid.get("files", {}).get((step, k)) or grid["cells"].get((step, k))
            cells.append(f"<td><img src='{_data_uri(path)}' alt='{e(k)} {step}'></td>" if path else "<td>—</td>")
        cls = " class='ld-rec'" if step == recommended else ""
        judged = f"<br><small>{e(verdicts[step])}</small>" if verdicts and step in verdicts else ""
        rows.append(f"<tr{cls}><th>{t('step', lang)} {step}{mark}{judged}</th>{''.join(cells)}</tr>")
    return (f"<table class='ld-grid'><thead><tr><th></th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def model_measures_view(run: Path, recommended: int | None, lang: str) -> dict[str, Any]:
    """The model measures' chart over the saves, and one line on what each means (hidden without them)."""
    from trainer.doctor import model_lines, verdict
    from trainer.doctor.model_measures import measures_by_step

    from ..step_charts import model_measures_figure

    rows = {s: r for s, r in measures_by_step(run).items() if r.get("trigger_hold") is not None}
    if len(rows) < 2:
        return {"model_plot": gr.Plot(visible=False), "model_md": ""}
    fig = model_measures_figure(rows, recommended, verdict.HOLD_SHOWS, verdict.DRIFT_LIMIT, lang)
    said = t("model_measures_meaning", lang, shows=verdict.HOLD_SHOWS, limit=verdict.DRIFT_LIMIT)
    if any(r.get("trigger_share") is not None for r in rows.values()):  # a masked run's
        said += "\n\n" + t("model_measures_masked", lang, line=model_lines.SHARE_LINE)
    return {"model_plot": gr.Plot(value=fig, visible=True), "model_md": said}


def measures_table(run: Path, lang: str, rec: dict[str, Any] | None = None) -> Any:
    from trainer.doctor.model_measures import measures_by_step

    doses = pictures.dose_by_step(run)
    verdicts = checkpoint_labels(rec.get("verdict") if rec else None, lang)
    measured = {r["step"]: r for r in pictures.measure_steps(run)}
    model = {s: r for s, r in measures_by_step(run).items() if s > 0}
    vals = val_loss_by_step(run)  # the validation loss, when the run held pictures out for it
    best = min(vals, key=lambda s: (vals[s], s)) if vals else None
    share = any(m.get("trigger_share") is not None for m in model.values())  # a masked run's
    rows = []
    for step in sorted(set(measured) | set(vals) | set(model)):
        r, m = measured.get(step, {}), model.get(step, {})
        row = [step, verdicts.get(step, "—"), _num(doses.get(step)), _num(m.get("trigger_hold")),
               _num(m.get("trigger_gain")), _num(m.get("prior_drift")),
               *([_share(m.get("trigger_share"))] if share else []), _num(r.get("leakage")), _num(r.get("burn")),
               _num(r.get("likeness")) + (f" ({t('per_prompt_short', lang, n=r['judged_per_prompt'])})"
                                          if r.get("judged_per_prompt") and r.get("likeness") is not None else ""),
               _num(r.get("adherence"))]
        if vals:  # the lowest so far is marked: advisory, nothing is deleted
            row.append(_num(vals.get(step)) + (" ★" if step == best else ""))
        rows.append(row)
    headers = [t("step", lang), t("col_verdict", lang), t("col_dose", lang), t("col_trigger_hold", lang),
               t("col_trigger_gain", lang), t("col_prior_drift", lang),
               *([t("col_trigger_share", lang)] if share else []), t("col_leakage", lang),
               t("col_burn", lang), t("col_likeness", lang), t("col_adherence", lang)]
    return gr.Dataframe(value=rows, headers=headers + ([t("col_val_loss", lang)] if vals else []))


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.3g}"


def _share(v: float | None) -> str:
    """The trigger share as the verdict's words and the meaning line say it: a percentage."""
    return "—" if v is None else f"{v:.0%}"


def recommendation_markdown(rec: dict[str, Any] | None, lang: str, run: Path | None = None, saved: bool = False) -> str:
    """The verdict and the checkpoint to use; with none to recommend, the run's verdict all the same (what stopped a
    failed run, "nothing to judge" for one that trained no step, a run still training, a broken one), and that it
    saved no checkpoint when it saved none (``saved``)."""
    if rec is None:
        if run is None:
            return t("no_checkpoints", lang)
        from trainer.doctor.verdict import run_verdict

        return verdict_markdown(run_verdict(run), lang) + ("" if saved else f"\n\n{t('no_checkpoints', lang)}")
    verdict = rec.get("verdict")
    head = f"{verdict_markdown(verdict, lang)}\n\n" if verdict is not None else ""
    return f"{head}**⭐ {t('recommended', lang, label=rec['label'])}**" + ("" if head else f"\n\n{words.say(rec['reason'], lang)}")
