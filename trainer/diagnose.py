"""``diagnose(run_dir)``: what was observed, the likely causes ranked by that evidence, prescriptions in order.

Reads only the run folder (config, plan, metrics, events, samples, journal), so it works on a finished, a
stopped or a crashed run, and on runs from another machine. Writes ``diagnosis.json``.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from .config import Config, diff_configs, from_dict, read_toml
from .detectors import Finding, metric_findings, nonfinite_findings, sample_findings
from .errors import UserError
from .events import as_float
from .io import atomic_write_json, read_jsonl
from .rundir import RunPaths, run_status

LEVEL_WEIGHT = {"error": 1.0, "warning": 0.6, "info": 0.3}
NONFINITE_WEIGHT = 5.0


def _load_config(paths: RunPaths) -> Config:
    return from_dict(read_toml(paths.config), origin=str(paths.config))


def _bf16_available() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def collect_findings(run_dir: Path, config: Config | None = None, with_samples: bool = True) -> list[Finding]:
    paths = RunPaths(Path(run_dir))
    config = config or _load_config(paths)
    plan = json.loads(paths.plan.read_text()) if paths.plan.is_file() else {}
    rows = read_jsonl(paths.metrics)
    events = read_jsonl(paths.events)
    findings = nonfinite_findings(events)
    findings += metric_findings(rows, plan, config) if plan else []
    if with_samples and paths.samples.is_dir():
        findings += sample_findings(paths.samples)
    for ev in events:
        if ev.get("type") == "alert" and ev.get("kind") == "distilled_base":
            findings.append(Finding("distilled_base", "warning", {"en": ev["message"], "ko": ev["message"]}))
    return findings


def _prescriptions(kb, ranked, config: Config) -> list[dict[str, Any]]:
    from .kb import describe_change

    out, seen = [], set()
    for rc in ranked:
        for p in kb.prescriptions_for(rc.cause.id):
            if p.id in seen:
                continue
            seen.add(p.id)
            change = None
            applicable = True
            if p.change is not None:
                if "bf16_supported" in p.change.requires and not _bf16_available():
                    applicable = False
                try:
                    from .kb import apply_change

                    new_cfg = apply_change(config, p.change)
                    diff = diff_configs(config, new_cfg)
                except (UserError, ValueError):
                    diff = {}
                if not diff:
                    applicable = False  # already so in this config: no change to make
                change = {
                    "key": p.change.key, "op": p.change.op, "value": p.change.value,
                    "requires": list(p.change.requires),
                    "diff": {k: list(v) for k, v in diff.items()},
                    "describe": {"en": describe_change(p.change, "en", config) if diff else "",
                                 "ko": describe_change(p.change, "ko", config) if diff else ""},
                }
            out.append({
                "id": p.id, "for_cause": rc.cause.id,
                "title": {"en": p.text("title", "en"), "ko": p.text("title", "ko")},
                "detail": {"en": p.text("detail", "en"), "ko": p.text("detail", "ko")},
                "change": change, "applicable": applicable,
            })
    return out


def _loss_summary(rows: list[dict]) -> dict[str, Any]:
    losses = [as_float(r.get("loss")) for r in rows if not r.get("skipped")]
    losses = [v for v in losses if v is not None and math.isfinite(v)]
    tail = losses[-max(1, len(losses) // 4) :] if losses else []
    return {"steps": len(rows), "final_loss_mean": statistics.fmean(tail) if tail else None,
            "nonfinite_rows": sum(1 for r in rows if r.get("nonfinite"))}


def compare_with_parent(paths: RunPaths, findings: list[Finding]) -> dict[str, Any] | None:
    if not paths.journal.is_file():
        return None
    journal = json.loads(paths.journal.read_text())
    parent = journal.get("parent")
    if not parent or not RunPaths(Path(parent)).config.is_file():
        return None
    ppaths = RunPaths(Path(parent))
    parent_findings = {f.signal for f in collect_findings(ppaths.root, with_samples=False)}
    mine = {f.signal for f in findings}
    changes = diff_configs(_load_config(ppaths), _load_config(paths))
    return {
        "parent": parent,
        "changes": {k: list(v) for k, v in changes.items()},
        "one_change": len(changes) == 1,
        "parent_status": run_status(ppaths.root).get("status"),
        "status": run_status(paths.root).get("status"),
        "resolved": sorted(parent_findings - mine),
        "new": sorted(mine - parent_findings),
        "still": sorted(parent_findings & mine),
        "loss": {"parent": _loss_summary(read_jsonl(ppaths.metrics)), "this": _loss_summary(read_jsonl(paths.metrics))},
    }


def diagnose(run_dir: str | Path, write: bool = True) -> dict[str, Any]:
    """Findings, ranked causes and prescriptions for a run folder; also written to ``diagnosis.json``."""
    from .kb import load_kb

    paths = RunPaths(Path(run_dir))
    if not paths.config.is_file():
        raise UserError(f"{run_dir} is not a run folder (no config.toml)")
    config = _load_config(paths)
    findings = collect_findings(paths.root, config)
    kb = load_kb()
    signals: dict[str, float] = {}
    for f in findings:
        if f.signal in kb.signals:
            # A non-finite failure outranks any number of softer findings: it is what stopped the run.
            weight = NONFINITE_WEIGHT if f.signal.startswith("nonfinite_") else LEVEL_WEIGHT[f.level]
            signals[f.signal] = max(signals.get(f.signal, 0.0), weight)
    ranked = kb.rank_causes(signals, config) if signals else []
    result = {
        "run_dir": str(paths.root),
        "status": run_status(paths.root).get("status"),
        "observed": [f.to_json() for f in findings],
        "causes": [
            {"id": rc.cause.id, "score": round(rc.score, 4),
             "title": {"en": rc.cause.text("title", "en"), "ko": rc.cause.text("title", "ko")},
             "explanation": {"en": rc.cause.text("explanation", "en"), "ko": rc.cause.text("explanation", "ko")},
             "evidence": [list(e) for e in rc.evidence]}
            for rc in ranked
        ],
        "prescriptions": _prescriptions(kb, ranked, config),
        "parent": compare_with_parent(paths, findings),
        "healthy": not any(f.level in ("warning", "error") for f in findings),
    }
    if write:
        atomic_write_json(paths.diagnosis, result)
    return result


def format_diagnosis(result: dict[str, Any], lang: str = "en") -> str:
    lines = [f"run: {result['run_dir']}  status: {result.get('status')}"]
    lines.append("observed:" if lang == "en" else "관찰:")
    for f in result["observed"] or []:
        lines.append(f"  [{f['level']}] {f['message'][lang]}")
    if not result["observed"]:
        lines.append("  nothing unusual" if lang == "en" else "  특이사항 없음")
    if result["causes"]:
        lines.append("likely causes:" if lang == "en" else "가능한 원인:")
        for c in result["causes"][:5]:
            lines.append(f"  {c['score']:.2f}  {c['title'][lang]}")
        lines.append("prescriptions (change one at a time):" if lang == "en" else "처방 (한 번에 하나만):")
        for p in [p for p in result["prescriptions"] if p["applicable"]][:6]:
            extra = f"  [{p['change']['describe'][lang]}]" if p["change"] and p["change"]["describe"][lang] else ""
            lines.append(f"  - {p['title'][lang]}{extra}")
    if result.get("parent"):
        par = result["parent"]
        lines.append(f"compared with parent {par['parent']}: changes {par['changes']}, resolved {par['resolved']}, "
                     f"new {par['new']}")
    return "\n".join(lines)
