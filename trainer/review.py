"""Review a run from its folder: the checkpoint × prompt grid, leakage per checkpoint, a recommended
checkpoint.

Everything here reads pictures only (numpy, no torch); the strength sweep, which draws, is ``trainer.strength``. The seeds' rule for picking:
the best checkpoint sits between "fits" and "starting to overfit", and the last save is rarely it. With the
demo character the pictures can be measured (likeness, adherence); for any run the no-trigger sample can be
compared with the base model's (leakage) and the trigger samples with step 0 (burn).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .config import Config, from_dict, read_toml
from .errors import UserError
from .io import read_jsonl
from .rundir import RunPaths, checkpoint_matches_marker

LEAKAGE_LIMIT = 0.5  # the no-trigger sample has drifted this far from the base model's: the LoRA leaks
BURN_LIMIT = 0.5  # trigger samples this burnt against step 0: colours deepen, lines roughen
FIT_LIKENESS = 0.85  # share of the best likeness at which the character counts as "fits"
ADHERENCE_SLACK = 0.15  # adherence this far under its best counts as "the prompt starts to be ignored"
BASE_LIKENESS_LIMIT = 0.3  # step 0 looking this much like the character: the likeness measure is void
MEASURE_SIDE = 128  # pictures are measured at most this big: the measures need shapes and colours, not detail

Progress = Callable[[int, int], None]


# ------------------------------------------------------------------------------------------- reading


def load_run_config(run_dir: str | Path) -> Config:
    paths = RunPaths(Path(run_dir))
    if not paths.config.is_file():
        raise UserError(f"{run_dir} is not a run folder (no config.toml)")
    return from_dict(read_toml(paths.config), origin=str(paths.config))


def sample_manifests(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``samples/step-*/manifest.json``, by step, each with its folder as ``dir``."""
    out = []
    for m in sorted(RunPaths(Path(run_dir)).samples.glob("step-*/manifest.json")):
        try:
            data = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # a manifest being written right now; the next look sees it
        data["dir"] = str(m.parent)
        out.append(data)
    return sorted(out, key=lambda d: d["step"])


def _column(sample: dict[str, Any], kinds_seen: dict[str, int]) -> str:
    """The grid column of a sample: its kind, or kind#index where two prompts share a kind."""
    return sample["kind"] if kinds_seen.get(sample["kind"], 0) <= 1 else f"{sample['kind']}#{sample['index']}"


def review_grid(run_dir: str | Path, weights: str = "live") -> dict[str, Any]:
    """Sample pictures as a grid: ``steps`` (rows), ``kinds`` (columns, the prompt kinds in prompt order),
    ``cells`` {(step, kind): file path}, and ``prompts`` {kind: prompt text}."""
    manifests = sample_manifests(run_dir)
    steps: list[int] = []
    kinds: list[str] = []
    cells: dict[tuple[int, str], str] = {}
    prompts: dict[str, str] = {}
    for m in manifests:
        chosen = [s for s in m["samples"] if s.get("weights", "live") == weights]
        per_kind: dict[str, int] = {}
        for s in chosen:
            per_kind[s["kind"]] = per_kind.get(s["kind"], 0) + 1
        for s in sorted(chosen, key=lambda s: s["index"]):
            col = _column(s, per_kind)
            if col not in kinds:
                kinds.append(col)
            prompts.setdefault(col, s["prompt"])
            cells[(m["step"], col)] = str(Path(m["dir"]) / s["file"])
        if chosen:
            steps.append(m["step"])
    return {"steps": steps, "kinds": kinds, "cells": cells, "prompts": prompts}


def checkpoint_files(run_dir: str | Path) -> list[dict[str, Any]]:
    """The LoRA files a user can pick: every ``checkpoints/step-N/lora*.safetensors`` (live and EMA), then
    ``final/``. ``label`` is the path inside the run folder."""
    paths = RunPaths(Path(run_dir))
    out = []
    if paths.checkpoints.is_dir():
        for d in sorted(d for d in paths.checkpoints.glob("step-*") if checkpoint_matches_marker(d) is not False):
            step = int(d.name.split("-")[1])
            for name in ("lora.safetensors", "lora_ema.safetensors"):
                if (d / name).is_file():
                    out.append({"step": step, "file": str(d / name), "label": f"checkpoints/{d.name}/{name}",
                                "weights": "ema" if "ema" in name else "live", "final": False})
    if paths.final.is_dir():
        final_step = max((c["step"] for c in out), default=0)
        for name in ("lora.safetensors", "lora_ema.safetensors"):
            if (paths.final / name).is_file():
                out.append({"step": final_step, "file": str(paths.final / name), "label": f"final/{name}",
                            "weights": "ema" if "ema" in name else "live", "final": True})
    return out


def resolve_checkpoint(run_dir: str | Path, checkpoint: str | Path) -> Path:
    """A checkpoint given by label or path, which must be a LoRA file inside the run folder."""
    root = Path(run_dir).resolve()
    p = Path(checkpoint)
    p = (p if p.is_absolute() else root / p).resolve()
    if not p.is_relative_to(root) or p.suffix != ".safetensors" or not p.is_file():
        raise UserError(f"{checkpoint}: not a LoRA file of this run; pick one of its checkpoints")
    return p


# ------------------------------------------------------------------------------------------ measures


def _picture(path: str | Path) -> np.ndarray:
    with Image.open(path) as im:
        im = im.convert("RGB")
        if max(im.size) > MEASURE_SIDE:
            im.thumbnail((MEASURE_SIDE, MEASURE_SIDE), Image.Resampling.BICUBIC)
        return np.asarray(im)


def _demo_expectations(config: Config) -> dict[str, dict[str, Any]] | None:
    """prompt text → what a good demo picture shows, when this run trained the built-in demo character."""
    from .demo import TRIGGER, demo_prompt_specs

    root = Path(config.dataset.path)
    if config.dataset.trigger != TRIGGER or not (root / "demo_manifest.json").is_file():
        return None
    return {p.prompt: p.expected for p in demo_prompt_specs()}


def measure_steps(run_dir: str | Path) -> list[dict[str, Any]]:
    """Per sampled step after 0: ``leakage`` (no-trigger sample vs step 0's, the base model's picture; for the
    demo character, what the picture shows rather than its pixels),
    ``burn`` (mean over trigger samples vs step 0), and for the demo character ``likeness`` and ``adherence``
    (means over trigger samples). Values are None where the pictures needed are missing."""
    from .demo.measures import adherence, burn, leakage_scores, likeness, world_leakage_scores

    manifests = sample_manifests(run_dir)
    base = next((m for m in manifests if m["step"] == 0), None)
    if base is None:
        return []
    try:
        expected = _demo_expectations(load_run_config(run_dir))
    except UserError:
        expected = None
    ref = {s["index"]: Path(base["dir"]) / s["file"] for s in base["samples"] if s.get("weights", "live") == "live"}
    if expected is not None:
        # likeness only means something where the base model does not already "show" the character (pure
        # noise from an untrained tiny model is full of magenta and yellow)
        base_like = [likeness(_picture(ref[s["index"]])) for s in base["samples"]
                     if s["index"] in ref and s["kind"] != "no_trigger" and ref[s["index"]].is_file()]
        if not base_like or float(np.mean(base_like)) >= BASE_LIKENESS_LIMIT:
            expected = None
    out = []
    for m in manifests:
        if m["step"] == 0:
            continue
        row: dict[str, Any] = {"step": m["step"], "leakage": None, "drift": None, "burn": None,
                               "likeness": None, "adherence": None}
        burns, likes, adh = [], [], []
        for s in m["samples"]:
            if s.get("weights", "live") != "live" or s["index"] not in ref:
                continue
            path = Path(m["dir"]) / s["file"]
            if not path.is_file() or not ref[s["index"]].is_file():
                continue
            img, ref_img = _picture(path), _picture(ref[s["index"]])
            if s["kind"] == "no_trigger":
                # the demo world's pictures can be read: count what changed rather than pixels that moved
                scores = (world_leakage_scores if expected is not None else leakage_scores)(img, ref_img)
                row["leakage"], row["drift"] = scores["leakage"], scores["drift"]
            else:
                burns.append(burn(img, ref_img)["burn_score"])
                if expected is not None:
                    likes.append(likeness(img))
                    if s["prompt"] in expected:
                        adh.append(adherence(img, expected[s["prompt"]]))
        row["burn"] = float(np.mean(burns)) if burns else None
        row["likeness"] = float(np.mean(likes)) if likes else None
        row["adherence"] = float(np.mean(adh)) if adh else None
        out.append(row)
    return out


def leakage_by_step(run_dir: str | Path) -> list[dict[str, Any]]:
    """How far the no-trigger sample drifted from step 0's (the base model's picture), per sampled step."""
    return [{"step": r["step"], "leakage": r["leakage"], "drift": r["drift"]}
            for r in measure_steps(run_dir) if r["leakage"] is not None]


def dose_by_step(run_dir: str | Path, config: Config | None = None) -> dict[int, float]:
    """The dose reached at each step: (alpha / rank) × the sum of the lr actually used up to it."""
    config = config or load_run_config(run_dir)
    ratio = config.lora.alpha / config.lora.rank
    total, out = 0.0, {}
    for r in read_jsonl(RunPaths(Path(run_dir)).metrics):
        if r.get("skipped"):
            continue
        lr = r.get("lr")
        total += float(lr) if isinstance(lr, int | float) and math.isfinite(lr) else 0.0
        out[int(r["step"])] = total * ratio
    return out


# ------------------------------------------------------------------------------------ recommendation


def _degraded(row: dict[str, Any] | None) -> bool:
    if row is None:
        return False
    return (row["leakage"] or 0.0) > LEAKAGE_LIMIT or (row["burn"] or 0.0) > BURN_LIMIT


def _reason(en: str, ko: str) -> dict[str, str]:
    return {"en": en, "ko": ko}


def recommend_checkpoint(run_dir: str | Path) -> dict[str, Any] | None:
    """The checkpoint to use, with the reason in English and Korean, or None when the run saved none.

    Demo character (measurable likeness): the checkpoints whose likeness reached the "fits" plateau, with
    leakage, burn and adherence not yet degraded; the best of them by likeness + adherence − leakage − burn.
    Any other run: the dose reached at each checkpoint against the preset's zone, the last checkpoint
    inside it (nearest the zone's middle) before leakage or burn set in.
    """
    config = load_run_config(run_dir)
    ckpts = {c["step"]: c for c in checkpoint_files(run_dir) if c["weights"] == "live" and not c["final"]}
    if not ckpts:
        finals = [c for c in checkpoint_files(run_dir) if c["weights"] == "live"]
        if not finals:
            return None
        ckpts = {finals[0]["step"]: finals[0]}
    measured = {r["step"]: r for r in measure_steps(run_dir)}
    steps = sorted(ckpts)
    likes = {s: measured[s]["likeness"] for s in steps if s in measured and measured[s]["likeness"] is not None}
    if likes:
        pick, reason = _pick_by_likeness(steps, measured, likes)
    else:
        pick, reason = _pick_by_dose(steps, measured, dose_by_step(run_dir, config), config)
    c = ckpts[pick]
    return {"step": pick, "file": c["file"], "label": c["label"], "reason": reason,
            "measures": [measured.get(s) or {"step": s} for s in steps]}


def _pick_by_likeness(steps, measured, likes) -> tuple[int, dict[str, str]]:
    best_like = max(likes.values())
    if best_like < 0.3:
        last = steps[-1]
        return last, _reason(
            f"The character has not appeared yet (best likeness {best_like:.2f}); step {last} is the furthest "
            "along. Train longer or raise the learning rate.",
            f"아직 캐릭터가 나타나지 않았습니다(최고 닮음 {best_like:.2f}). {last}스텝이 가장 많이 진행됐습니다. "
            "더 오래 학습하거나 학습률을 올리세요.")
    adh = [measured[s]["adherence"] for s in likes if measured[s]["adherence"] is not None]
    best_adh = max(adh) if adh else None
    fits = [s for s in likes if likes[s] >= FIT_LIKENESS * best_like]
    healthy = [s for s in fits if not _degraded(measured[s]) and (
        best_adh is None or measured[s]["adherence"] is None or measured[s]["adherence"] >= best_adh - ADHERENCE_SLACK)]

    def score(s: int) -> float:
        r = measured[s]
        return likes[s] + (r["adherence"] or 0.0) - (r["leakage"] or 0.0) - (r["burn"] or 0.0)

    pool = healthy or fits
    pick = max(pool, key=lambda s: (score(s), -s))
    r = measured[pick]
    nums = (f"likeness {likes[pick]:.2f} (best {best_like:.2f}), adherence {_fmt(r['adherence'])}, "
            f"leakage {_fmt(r['leakage'])}, burn {_fmt(r['burn'])}")
    later = [s for s in steps if s > pick]
    tail_en = f" Later checkpoints ({', '.join(map(str, later))}) add little and drift further." if later else ""
    tail_ko = f" 이후 체크포인트({', '.join(map(str, later))})는 더 닮지 않고 더 흐트러집니다." if later else ""
    if healthy:
        return pick, _reason(
            f"Step {pick}: the character fits ({nums}) while the prompt is still followed and nothing leaks or "
            f"burns.{tail_en}",
            f"{pick}스텝: 캐릭터가 충분히 닮았고({nums}) 프롬프트를 아직 따르며 누출이나 색 탐이 없습니다.{tail_ko}")
    return pick, _reason(
        f"Step {pick} is the least damaged of the checkpoints that look like the character ({nums}); every one "
        "of them already leaks, burns or ignores the prompt. Lower the dose (lr or steps) and train again.",
        f"닮은 체크포인트 중 {pick}스텝이 가장 덜 망가졌습니다({nums}). 모두 이미 누출되거나 색이 타거나 프롬프트를 "
        "무시합니다. 학습량(학습률이나 스텝)을 낮춰 다시 학습하세요.")


def _pick_by_dose(steps, measured, doses, config: Config) -> tuple[int, dict[str, str]]:
    low, high = config.dose.fit_low, config.dose.fit_high
    dose = {s: doses.get(s, 0.0) for s in steps}
    first_bad = next((s for s in steps if _degraded(measured.get(s))), None)
    usable = [s for s in steps if first_bad is None or s < first_bad] or steps[:1]
    inside = [s for s in usable if low <= dose[s] <= high]
    middle = math.sqrt(low * high)
    if inside:
        pick = min(inside, key=lambda s: (abs(math.log(max(dose[s], 1e-12) / middle)), -s))
        en = (f"Step {pick} reached a dose of {dose[pick]:.3g}, inside this preset's zone {low:g}–{high:g} where a "
              "LoRA usually fits")
        ko = f"{pick}스텝의 학습량은 {dose[pick]:.3g}로, LoRA가 보통 알맞게 되는 이 프리셋의 범위 {low:g}–{high:g} 안입니다"
    elif all(dose[s] < low for s in usable):
        pick = usable[-1]
        en = (f"Every checkpoint is under this preset's zone (step {pick}: dose {dose[pick]:.3g} < {low:g}); the "
              "latest is the furthest along. It may not look alike yet: train longer")
        ko = (f"모든 체크포인트가 이 프리셋의 범위보다 아래입니다({pick}스텝: 학습량 {dose[pick]:.3g} < {low:g}). "
              "가장 나중 것이 가장 많이 배웠지만 아직 덜 닮았을 수 있으니 더 학습하세요")
    else:
        pick = usable[0] if dose[usable[0]] > high else max(s for s in usable if dose[s] < low)
        en = (f"Step {pick} (dose {dose[pick]:.3g}) is the checkpoint nearest the zone {low:g}–{high:g}; later ones "
              "are past it and likely memorise the training pictures")
        ko = (f"{pick}스텝(학습량 {dose[pick]:.3g})이 범위 {low:g}–{high:g}에 가장 가깝습니다. 이후 것은 범위를 넘어 "
              "학습 그림을 외웠을 가능성이 큽니다")
    if first_bad is not None:
        r = measured[first_bad]
        en += (f". From step {first_bad} the pictures degrade (leakage {_fmt(r['leakage'])}, burn {_fmt(r['burn'])}), "
               "so later checkpoints are left out")
        ko += (f". {first_bad}스텝부터 그림이 망가져(누출 {_fmt(r['leakage'])}, 탐 {_fmt(r['burn'])}) 이후 체크포인트는 "
               "뺐습니다")
    return pick, _reason(en + ". Check it with the strength sweep.", ko + ". 강도 비교로 확인하세요.")


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"
