"""What the Train step shows from a runner snapshot: the status line, the guard's alert box with its top
prescription, the run's warnings as they are raised, its verdict once it ended, the sample gallery. Pure
functions of the snapshot (and the run folder)."""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

import words
from trainer.data.images import for_display
from trainer.doctor.judge_files import chosen_judge
from trainer.doctor.verdict import run_verdict
from trainer.errors import UserError
from trainer.plan.steps import Schedule
from trainer.run.events import Alert, NonFiniteAlert, RunStatus, Started, given
from trainer.train.runner import RunSnapshot

from .i18n import TEXTS, signal_label, t
from .steps.troubleshoot import LEVEL_ICON
from .verdict_view import verdict_markdown

MAX_GALLERY = 48
MAX_FILES_SHOWN = 8
# The page's side of the live plots (run on page load): it keeps the figures and appends the new points.
PAGE_JS = (Path(__file__).parent / "live_view.js").read_text(encoding="utf-8")


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _mib(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 1024:.1f} GiB" if v >= 1024 else f"{v:.0f} MiB"


def status_line(snap: RunSnapshot, lang: str, run_label: str | None = None) -> str:
    """One line: status, step / total, it/s, ETA, memory; then a progress line and the runner's message."""
    status = snap.status
    parts = [f"**{t(f'status_{status}', lang)}**"]
    if snap.total_steps:
        parts.append(t("status_step", lang, step=snap.step, total=snap.total_steps))
    if snap.it_per_sec:
        parts.append(f"{snap.it_per_sec:.2f} it/s")
    if snap.active and snap.eta_seconds is not None:
        parts.append(t("status_eta", lang, eta=_clock(snap.eta_seconds)))
    mem = snap.memory or {}
    if mem.get("rss_mib") is not None:
        parts.append(f"RAM {_mib(mem['rss_mib'])}")
    if mem.get("vram_mib") is not None:
        parts.append(f"VRAM {_mib(mem['vram_mib'])} ({t('peak', lang)} {_mib(mem.get('vram_peak_mib'))})")
    if snap.best_val:  # advisory: the save nearest it is worth a look; nothing is deleted
        parts.append(t("status_val_best", lang, val=f"{snap.best_val['val_loss']:.4g}", step=snap.best_val["step"]))
    if run_label:
        parts.append(f"`{run_label}`")
    lines = [" · ".join(parts)]
    progress = snap.progress
    if snap.active and progress and (progress.done or 0) < (progress.total or 0):
        lines.append(t("progress_" + (progress.task or "other"), lang, done=progress.done, total=progress.total))
    sampling = sampling_step(snap)
    if sampling is not None:
        lines.append(t("progress_sampling", lang, step=sampling))
    if snap.message and status in (RunStatus.FAILED, RunStatus.STOPPED, RunStatus.GUARD_STOPPED):
        lines.append(f"> {words.say(snap.refusal, lang) if snap.refusal is not None else snap.message}")
    return "\n\n".join(lines)


def sampling_step(snap: RunSnapshot) -> int | None:
    """The step whose sample pictures are being drawn right now, judged from the plan in the start event."""
    if not snap.active:
        return None
    started = next((e for e in snap.events if isinstance(e, Started)), None)
    if started is None:
        return None
    step = snap.step
    done = {e.step for e in snap.samples}
    return step if step in Schedule.from_plan_json(started.plan, "sample") and step not in done else None


def guard_alert(snap: RunSnapshot) -> NonFiniteAlert | None:
    """The first non-finite alert of the run (what broke first), if any."""
    return next((a for a in snap.alerts if isinstance(a, NonFiniteAlert)), None)


def top_prescription(run_dir: str | Path | None, alert: Alert, lang: str) -> dict[str, str] | None:
    """The first prescription for this alert: from the run's diagnosis when it is about this failure, else from
    the knowledge base ranked for the alert's signal and the run's config."""
    if run_dir:
        diag = Path(run_dir) / "diagnosis.json"
        if diag.is_file():
            try:
                data = json.loads(diag.read_text(encoding="utf-8"))
                about_this = any(f.get("signal") == alert.kind for f in data.get("observed", []))
                for p in data.get("prescriptions", []) if about_this else []:
                    if p.get("applicable", True):
                        change = (p.get("change") or {}).get("describe", {}).get(lang, "")
                        return {"title": p["title"][lang], "detail": p["detail"][lang], "change": change}
            except (OSError, ValueError, KeyError):
                pass
    from trainer.doctor.diagnose import alert_prescription

    rx = alert_prescription(run_dir, alert.kind, lang)  # weighed as the diagnosis weighs it
    return {**rx, "change": words.say(rx["change"], lang) if rx["change"] else ""} if rx else None


def _short(v: Any) -> str:
    """A number as people read it (lr 9.98, not 9.979871469976196); "—" when there is none."""
    if v is None:
        return "—"
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def alert_html(snap: RunSnapshot, lang: str, prescription: dict[str, str] | None) -> str:
    """The prominent box: what broke first, where, at which step, the batch files, the top prescription."""
    alert = guard_alert(snap)
    if alert is None:
        return ""
    e = html.escape
    first = alert.first or alert.kind.removeprefix("nonfinite_")
    stopped = snap.status == RunStatus.GUARD_STOPPED or alert.action == "stop"
    files = [str(f) for f in alert.files or []]
    shown = ", ".join(e(f) for f in files[:MAX_FILES_SHOWN]) + (f" … (+{len(files) - MAX_FILES_SHOWN})"
                                                                if len(files) > MAX_FILES_SHOWN else "")
    rows = [
        (t("alert_first", lang), t("broke_" + first, lang) if first in ("loss", "grad", "param", "ema") else first),
        (t("alert_where", lang), f"<code>{e(str(alert.module or '—'))}</code>"),
        (t("alert_step", lang), e(str(given(alert.broke_at_step, given(alert.step, "—"))))),
        (t("alert_files", lang), shown or "—"),
        (t("alert_numbers", lang), e(f"lr {_short(given(alert.lr))} · {given(alert.precision)} · loss scale "
                                     f"{_short(given(alert.loss_scale))}")),
    ]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    rx = ""
    if prescription:
        change = f" <code>{e(prescription['change'])}</code>" if prescription.get("change") else ""
        rx = (f"<p class='ld-rx'><b>{t('alert_try', lang)}</b> {e(prescription['title'])}{change}<br>"
              f"{e(prescription['detail'])}</p>")
    action = str(given(alert.action, ""))
    action = t(f"action_{action}", lang) if f"action_{action}" in TEXTS else action
    title = t("alert_stopped" if stopped else "alert_seen", lang, action=e(action))
    return f"<div class='ld-alert' id='ld-alert-box'><h3>🛑 {title}</h3><table>{body}</table>{rx}</div>"


def warnings_markdown(snap: RunSnapshot, lang: str) -> str:
    """The run's warnings as they are raised: the detectors' findings (gradient spikes, weight growth, burn, a
    slowdown…; the latest of each signal) and the alerts other than the guard's (precision fallback, distilled
    base, a refused save)."""
    lines = []
    latest = {f.signal: f for f in snap.findings}  # a continued run may raise a signal again: its last word
    for f in latest.values():
        lines.append(f"- {LEVEL_ICON.get(f.level, '•')} **{signal_label(f.signal, lang)}**: {words.say(f.message, lang)}")
    for a in snap.alerts:
        if isinstance(a, NonFiniteAlert):
            continue
        message = a.message or ""  # a precision fallback of a run from before codes says it in English alone
        lines.append(f"- ⚠️ **{signal_label(str(a.kind), lang)}**: "
                     f"{message if isinstance(message, str) else words.say(message, lang)}")
    return f"**{t('run_warnings', lang)}**\n\n" + "\n".join(lines) if lines else ""


JUDGED = (RunStatus.FINISHED, RunStatus.STOPPED, RunStatus.GUARD_STOPPED)  # a paused run is not over


def ended_verdict_markdown(snap: RunSnapshot, lang: str) -> str:
    """The doctor's verdict on the run once it ended (finished, stopped, stopped by the guard), as Review and
    Troubleshoot show it; empty while it trains or when it cannot be judged (a run that failed)."""
    if snap.active or snap.status not in JUDGED or not snap.run_dir:
        return ""
    verdict = _verdict(snap.run_dir, str(snap.status), len(snap.checkpoints), chosen_judge(snap.run_dir))
    if verdict is None:
        return ""
    return f"{verdict_markdown(verdict, lang, evidence=4)}\n\n{t('verdict_more', lang)}"


@functools.lru_cache(maxsize=8)
def _verdict(run_dir: str, status: str, checkpoints: int, judge: str) -> dict | None:
    """The verdict's JSON, judged once per ended run (every tab and every poll after it reads this one); the
    status, the number of saves and the judge chosen in Review key it too, so a run continued and ended again, or
    read by another judge, is judged again."""
    try:
        return run_verdict(run_dir).to_json()
    except (UserError, OSError):  # the folder went, or holds no run
        return None


def open_rgb(path: Path) -> Image.Image | None:
    """A picture file as an RGB image; None when it cannot be read."""
    try:
        with Image.open(path) as im:
            return for_display(im)
    except OSError:
        return None


def gallery_items(snap: RunSnapshot, lang: str,
                  picture: Callable[[Path], Any] = open_rgb) -> list[tuple[Any, str]]:
    """Sample pictures, newest first, each as ``picture`` gives its file (an image by default; not the run's
    path: gradio serves only what it copied itself); a file it cannot give (None) is left out."""
    out = []
    for ev in reversed(snap.samples):
        folder = Path(ev.path or "")
        for rec in ev.samples or []:
            img = picture(folder / rec["file"])
            if img is None:
                continue
            weights = " (EMA)" if rec.get("weights") == "ema" else ""
            out.append((img, f"{t('step', lang)} {rec.get('step', ev.step)} · {t('kind_' + rec['kind'], lang)}"
                             f"{weights}"))
            if len(out) >= MAX_GALLERY:
                return out
    return out
