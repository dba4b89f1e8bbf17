"""Step 6, Troubleshoot: this run's automatic findings, every symptom of the knowledge base with its causes and
prescriptions, "start a new run with this one change", and the journal of runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gradio as gr

import words
from trainer.config.changes import WHERE_RUNS_GO
from trainer.config.schema import diff_configs
from trainer.doctor.diagnose import already_followed, cause_strength, change_refusal, earlier_checkpoint
from trainer.doctor.evidence import STRENGTH_TEXT
from trainer.doctor.kb import GROUPS, apply_change, describe_change, load_kb, moves_as_meant
from trainer.doctor.symptoms import symptom_causes, symptom_reading
from trainer.errors import UserError
from trainer.run.contents import load_run_config
from trainer.run.rundir import list_runs, run_status, workspace_presets

from ..binding import UI, ok_box
from ..context import status_label
from ..i18n import signal_label, t
from ..verdict_view import verdict_markdown
from ..widgets import run_picker
from . import gates

LEVEL_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵"}


def symptom_choices(lang: str, kb: Any = None) -> list[tuple[str, str]]:
    """Every symptom of the knowledge base (the shipped one unless ``kb`` is given), grouped, in file order."""
    kb = kb or load_kb()
    ordered = sorted(kb.symptoms.values(), key=lambda s: GROUPS.index(s.group))
    return [(f"{t('group_' + s.group, lang)} · {s.text('title', lang)}", s.id) for s in ordered]


def build(ui: UI) -> None:
    lang = ui.ctx.lang
    run_picker(ui, "ts_run", "ts_refresh")
    ui.add("ts_msg", gr.HTML(""))
    ui.add("findings_md", gr.Markdown("", elem_id="ld-findings"))
    ui.add("symptom", gr.Dropdown(choices=symptom_choices(lang), value=None, label=t("symptom", lang)), "symptom")
    ui.add("symptom_md", gr.Markdown(""))
    with gr.Row():  # advice that is no setting, as buttons that go where it is done
        ui.add("ts_go_dataset", gr.Button("", visible=False, elem_id="ld-go-dataset"))
        ui.add("ts_go_review", gr.Button("", visible=False, elem_id="ld-go-review"))
    with gr.Row():
        ui.add("rx", gr.Dropdown(choices=[], value=None, label=t("one_change", lang), scale=3, allow_custom_value=True), "one_change")
        ui.add("start_change", gr.Button(t("start_change", lang), variant="primary", scale=1), "start_change",
               "value")
    ui.add("rx_md", gr.Markdown(""))
    ui.add("journal_df", gr.Dataframe(interactive=False, label=t("journal", lang), wrap=True), "journal")


def wire(ui: UI) -> None:
    ctx = ui.ctx

    def findings(*, lang: str, ts_run: str | None, symptom: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"journal_df": journal_table(ui, lang), "ts_msg": "",
                               "symptom": gr.Dropdown(choices=symptom_choices(lang), value=symptom)}
        if not ts_run:
            return {**out, "findings_md": t("no_runs", lang)}
        run = ctx.run_path(ts_run, lang)
        diag = run_diagnosis(run)
        out["findings_md"] = findings_markdown(diag, lang)
        out["rx"] = gr.Dropdown(choices=rx_choices(run, diag, symptom, lang), value=None)
        return {**out, **action_buttons(diag, lang)}

    outputs = ["findings_md", "rx", "journal_df", "symptom", "ts_msg", "ts_go_dataset", "ts_go_review"]
    ui.on(ui["ts_refresh"].click, findings, ["lang", "ts_run", "symptom"], outputs, api_name="troubleshoot",
          message="ts_msg")
    ui.on([ui["ts_run"].change, ui["step_troubleshoot"].select, ui["lang"].change], findings, ["lang", "ts_run", "symptom"], outputs,
          message="ts_msg", toast=False)

    def show_symptom(*, lang: str, symptom: str | None, ts_run: str | None) -> dict[str, Any]:
        if not symptom:
            return {"symptom_md": ""}
        run = ctx.run_path(ts_run, lang) if ts_run else None
        diag = run_diagnosis(run) if run else None
        cfg = load_run_config(run) if run else None
        return {"symptom_md": symptom_markdown(symptom, run, lang, diag),
                "rx": gr.Dropdown(choices=rx_choices(run, diag, symptom, lang), value=None),
                **action_buttons(diag, lang, symptom, cfg)}

    ui.on([ui["symptom"].change, ui["lang"].change], show_symptom, ["lang", "symptom", "ts_run"],
          ["symptom_md", "rx", "ts_go_dataset", "ts_go_review"],
          api_name="symptom", message="ts_msg")

    def preview(*, lang: str, rx: str | None, ts_run: str | None) -> dict[str, Any]:
        if not rx:
            return {"rx_md": ""}
        p = kb_entry("prescription", rx, lang)
        run = ctx.run_path(ts_run, lang) if ts_run else None
        cfg = load_run_config(run) if run else None
        own = workspace_presets(run) if run else None
        change = words.say(describe_change(p.change, cfg, own), lang) if p.change else ""
        return {"rx_md": f"**{p.text('title', lang)}** `{change}`\n\n{p.text('detail', lang)}"}

    ui.on(ui["rx"].change, preview, ["lang", "rx", "ts_run"], ["rx_md"], message="ts_msg")

    def start_change(*, lang: str, ts_run: str | None, rx: str | None) -> dict[str, Any]:
        if ctx.runner.active:
            raise UserError(t("err_run_active", lang))
        if not rx:
            raise UserError(t("err_pick_rx", lang))
        run = ctx.run_path(ts_run or "", lang)
        new_cfg, line = one_change_config(ui, run, rx, lang)
        ctx.sweeps.release()  # the Review step's model makes room for the run
        ok, _ = ctx.runner.start(new_cfg, parent=str(run))
        if not ok:
            raise UserError(t("err_run_active", lang))
        return {"ts_msg": ok_box(t("change_started", lang, change=line)), "journal_df": journal_table(ui, lang)}

    ui.on(ui["start_change"].click, start_change, ["lang", "ts_run", "rx"], ["ts_msg", "journal_df"],
          api_name="start_change", message="ts_msg")

    def go_dataset() -> dict[str, Any]:
        return {"wizard": gates.go("dataset")}

    def go_review(*, lang: str, ts_run: str | None) -> dict[str, Any]:
        """Review, showing the run diagnosed here (its checkpoints to pick from, its Continue this run)."""
        from .review import review_view  # (review → train_poll → live → troubleshoot: not at the top)

        out: dict[str, Any] = {"wizard": gates.go("review")}
        if ts_run:
            out |= {"review_run": gr.Dropdown(choices=ctx.run_choices(lang), value=ts_run),
                    **review_view(ui, ts_run, lang)}
        return out

    from .review import VIEW_OUTPUTS

    ui.on(ui["ts_go_dataset"].click, go_dataset, [], ["wizard"])
    ui.on(ui["ts_go_review"].click, go_review, ["lang", "ts_run"], ["wizard", "review_run", *VIEW_OUTPUTS],
          message="ts_msg")


def run_diagnosis(run: Path) -> dict[str, Any] | None:
    """``trainer.doctor.diagnose.diagnose`` on the run (written to diagnosis.json); None where it is unavailable."""
    try:
        from trainer.doctor.diagnose import diagnose
    except ImportError:
        return None
    try:
        return diagnose(run, write=False)  # the page only reads; the loop writes the run's own diagnosis
    except TypeError:
        return diagnose(run)


def one_change_config(ui: UI, run: Path, rx: str, lang: str):
    """The parent's config with exactly the prescription's change; refused when it changes nothing or needs
    what this machine lacks."""
    ctx = ui.ctx
    p = kb_entry("prescription", rx, lang)
    if p.change is None:
        raise UserError(t("err_rx_no_change", lang))
    if "bf16_supported" in p.change.requires and not ctx.bf16:
        raise UserError(t("err_needs_bf16", lang))
    cfg = load_run_config(run)
    own = workspace_presets(run)
    new = apply_change(cfg, p.change, own)
    diff = diff_configs(cfg, new)
    if not diff:
        raise UserError(t("err_rx_noop", lang))
    if not moves_as_meant(cfg, p.change, own):
        key, (old, value) = next(iter(diff.items()))
        raise UserError(t("err_rx_wrong_way", lang, setting=key, old=old, new=value))
    ctx.policy.resolve_folders(new, lang)
    ctx.policy.check_base(new.model.base, lang)
    new.measure.judge = ctx.policy.check_judge(new.measure.judge, lang)
    new.save.output_dir = str(ctx.runs_dir)
    line = "; ".join(f"{k}: {a} → {b}" for k, (a, b) in diff.items())
    return new, line


def findings_markdown(diag: dict[str, Any] | None, lang: str) -> str:
    if diag is None:
        return t("no_diagnose", lang)
    status = {"status": diag.get("status") or "?", "resume_step": diag.get("resume_step")}
    lines = [f"### {t('findings_title', lang, status=status_label(status, lang))}"]
    verdict = diag.get("verdict")
    if verdict:
        lines.append(verdict_markdown(verdict, lang, evidence=4) + "\n")
    observed = diag.get("observed") or []
    lines.append(f"**{t('observed', lang)}**")
    lines += [f"- {LEVEL_ICON.get(f['level'], '•')} {words.say(f['message'], lang)}" + (f" ({t('weak_signal', lang)})" if f.get("weak")
              else "") for f in observed] or [f"- {t('nothing_unusual', lang)}"]
    causes = diag.get("causes") or []
    main, lesser = [c for c in causes if not c.get("lesser")], [c for c in causes if c.get("lesser")]
    if main:
        lines.append(f"\n**{t('likely_causes', lang)}**")
        for i, c in enumerate(main[:5], 1):
            lines.append(f"{i}. {c['title'][lang]} — {_strength(c, lang)}")
    if lesser:
        lines.append(f"\n**{t('lesser_causes', lang)}**")
        lines += [f"- {c['title'][lang]} — {_strength(c, lang)}; {c['why_lesser'][lang]}" for c in lesser[:5]]
    rxs = [p for p in diag.get("prescriptions") or [] if p.get("applicable", True) and not p.get("lesser")]
    if not rxs and verdict and verdict["label"] == "fit":
        lines.append(f"\n{t('nothing_to_fix', lang)}")
    if rxs:
        lines.append(f"\n**{t('prescriptions', lang)}**")
        for i, p in enumerate(rxs[:6], 1):
            change = (p.get("change") or {}).get("describe", {}).get(lang, "")
            lines.append(f"{i}. **{p['title'][lang]}**" + (f" `{change}`" if change else "") + f" — {p['detail'][lang]}")
    parent = diag.get("parent")
    if parent:
        changes = "; ".join(f"{k}: {a} → {b}" for k, (a, b) in parent["changes"].items()) or "—"
        signals = {k: ", ".join(signal_label(s, lang) for s in parent[k]) or "—" for k in ("resolved", "new", "still")}
        lines += [f"\n**{t('parent_compare', lang)}**", f"- {t('parent_changed', lang, changes=changes)}",
                  f"- {t('parent_findings', lang, **signals)}"]
        if (parent.get("outcome") or {}).get("said"):
            lines.append(f"- {parent['outcome']['said'][lang]}")
    return "\n".join(lines)


def _strength(cause: dict[str, Any], lang: str) -> str:
    """A cause's weight in words (a diagnosis.json from before words had only the score)."""
    return words.say(STRENGTH_TEXT[cause.get("strength") or cause_strength(cause["score"])], lang)


def action_buttons(diag: dict[str, Any] | None, lang: str, symptom: str | None = None, cfg: Any = None) -> dict[str, Any]:
    """The first piece of advice that is done on the Dataset or Review step (the diagnosis', then the chosen
    symptom's causes that agree with the verdict), as a button going there."""
    titles = [(p["step"], p["title"][lang]) for p in (diag or {}).get("prescriptions") or []
              if p.get("step") and p.get("applicable", True) and not p.get("lesser")]
    if symptom:
        kb = load_kb()
        titles += [(p.step, p.text("title", lang)) for c, lesser in symptom_causes(symptom, (diag or {}).get("verdict"), cfg)
                   if not lesser for p in kb.prescriptions_for(c.id) if p.step and not _not_for_run(p, cfg, diag, lang)]
    out = {}
    for step in ("dataset", "review"):
        title = next((title for s, title in titles if s == step), None)
        out[f"ts_go_{step}"] = gr.Button(f"{title} →" if title else "", visible=title is not None)
    return out


def _change_words(p: Any, cfg: Any, own: list[Path] | None, lang: str) -> str:
    """The prescription's change as this run would take it, quoted; "" for none, or for one this run cannot take
    (out of range, a preset that cannot be read): then the prescription is advice, its title alone."""
    if p.change is None:
        return ""
    try:
        return f" `{words.say(describe_change(p.change, cfg, own), lang)}`"
    except (UserError, ValueError):
        return ""


def _not_for_run(p: Any, cfg: Any, diag: dict[str, Any] | None, lang: str) -> str | None:
    """Why a prescription does not fit this run (a checkpoint it lacks, a change the wrong way), or None."""
    verdict = (diag or {}).get("verdict")
    if p.id == "earlier_checkpoint" and verdict is not None and earlier_checkpoint(verdict) is None:
        return t("no_earlier_checkpoint", lang)
    if p.id in ("continue_run", "restart_run") and diag is not None:
        found = [o for o in diag.get("observed") or [] if o.get("signal") == "run_unfinished"]
        resumable = bool(found) and (found[0].get("values") or {}).get("resume_step") is not None
        if p.id == "continue_run" and not resumable:
            return t("not_continuable", lang)
        ended_early = bool(found) or diag.get("status") == "failed"  # a failed one without a checkpoint: run_failed
        if p.id == "restart_run" and (resumable or not ended_early):
            return t("continuable", lang) if resumable else t("not_continuable", lang)
    if already_followed(p, cfg):  # "add prior images" to a run that had them
        return t("rx_already", lang, setting=p.unless_set, value=cfg.get(p.unless_set))
    own = workspace_presets(diag["run_dir"]) if diag and diag.get("run_dir") else None
    refusal = change_refusal(cfg, p.change, own) if p.change is not None and cfg is not None else None
    if refusal == "needs_bf16":
        return t("err_needs_bf16", lang)
    if refusal == "wrong_way":
        return t("rx_wrong_way", lang, setting=p.change.key)
    if refusal == "already":  # "turn the noise offset off" where it is 0
        return t("rx_already", lang, setting=p.change.key, value=cfg.get(p.change.key))
    return None  # out of range for this config: offered as advice, never as a change (rx_choices)


def kb_entry(kind: str, entry_id: str, lang: str) -> Any:
    """A knowledge-base entry by id; an id it does not hold (an API client's value) is a message, not a KeyError."""
    try:
        return load_kb().get(kind, entry_id)
    except KeyError:
        raise UserError(t("err_unknown_kb_id", lang, kind=kind, id=entry_id)) from None


def symptom_markdown(symptom_id: str, run: Path | None, lang: str, diag: dict[str, Any] | None = None) -> str:
    """The symptom's causes and prescriptions, read in the light of the run's verdict: causes that point away
    from it come last, marked, and advice this run cannot take (a checkpoint it lacks, a change the wrong way)
    says so instead of being offered."""
    kb = load_kb()
    s = kb.symptom(symptom_id)
    cfg = load_run_config(run) if run else None
    own = workspace_presets(run) if run else None
    verdict = (diag or {}).get("verdict")
    lines = [f"### {s.text('title', lang)}", s.text("description", lang)]
    reading = symptom_reading(symptom_id, verdict, cfg)
    if reading:
        lines.append(f"\n> {words.say(reading, lang)}")
    lines.append(f"\n**{t('causes', lang)}**")
    for i, (c, lesser) in enumerate(symptom_causes(symptom_id, verdict, cfg), 1):
        why = f" *({t('lesser_here', lang)})*" if lesser else ""
        lines.append(f"{i}. **{c.text('title', lang)}**{why} — {c.text('explanation', lang)}")
        for p in kb.prescriptions_for(c.id):
            not_here = _not_for_run(p, cfg, diag, lang)
            if not_here:
                lines.append(f"    - ~~{p.text('title', lang)}~~ ({not_here})")
                continue
            lines.append(f"    - {p.text('title', lang)}{_change_words(p, cfg, own, lang)}")
    return "\n".join(lines)


def rx_choices(run: Path | None, diag: dict[str, Any] | None, symptom: str | None, lang: str) -> list[tuple[str, str]]:
    """Prescriptions that are one config change: the run's findings first, then the chosen symptom's."""
    kb = load_kb()
    cfg = load_run_config(run) if run else None
    own = workspace_presets(run) if run else None
    rxs = [p for p in (diag or {}).get("prescriptions", []) if p.get("change") and p.get("applicable", True)]
    ids: list[str] = [p["id"] for p in rxs if not p.get("lesser")]
    if symptom:
        for c, _ in symptom_causes(symptom, (diag or {}).get("verdict"), cfg):
            ids += [p.id for p in kb.prescriptions_for(c.id) if p.change]
    ids += [p["id"] for p in rxs if p.get("lesser")]
    out = []
    for pid in dict.fromkeys(ids):
        p = kb.prescription(pid)
        change = p.change  # every id above is a prescription with a change
        if change is None or (cfg is not None and change_refusal(cfg, change, own)):
            continue  # out of range, the wrong way, already so, or bf16 on a device without it
        out.append((f"{p.text('title', lang)} — {words.say(describe_change(change, cfg, own), lang)}", pid))
    return out


def journal_table(ui: UI, lang: str) -> Any:
    """Every run: its parent, the one change between them, the outcome and the best checkpoint."""
    ctx = ui.ctx
    rows = []
    for run in reversed(list_runs(ctx.runs_dir)):
        entry = {}
        journal = run / "journal.json"
        if journal.is_file():
            try:
                entry = json.loads(journal.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                entry = {}
        parent = ctx.run_rel(entry.get("parent")) or (entry.get("parent") or "—")
        changes = "; ".join(f"{k}: {a} → {b}" for k, (a, b) in (entry.get("changes") or {}).items()
                            if k not in WHERE_RUNS_GO) or "—"
        rec = ctx.recommend(run)
        rows.append([ctx.run_rel(run), parent, changes, status_label(run_status(run), lang),
                     f"{t('step', lang)} {rec['step']}" if rec else "—"])
    headers = [t("run", lang), t("col_parent", lang), t("col_change", lang), t("col_status", lang),
               t("col_best", lang)]
    return gr.Dataframe(value=rows, headers=headers)
