"""What a run's sample pictures show, step by step: leakage, burn, and on the demo character likeness and adherence;
the dose each step reached; and the same pictures' findings while the run trains."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from trainer.config.schema import Config
from trainer.doctor.detectors import Finding
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.message import msg
from trainer.picture_measures import burn, leakage_scores
from trainer.run.contents import load_run_config, sample_manifests
from trainer.run.rundir import RunPaths
from trainer.run.samples import prompt_kind, sample_key

LEAKAGE_LIMIT = 0.5  # the no-trigger sample has drifted this far from the base model's: the LoRA leaks


BURN_LIMIT = 0.5  # trigger samples this burnt against step 0: colours deepen, lines roughen


ADHERENCE_SLACK = 0.15  # adherence this far under its best counts as "the prompt starts to be ignored"


BASE_LIKENESS_LIMIT = 0.3  # step 0 looking this much like the character: the likeness measure is void


MEASURE_SIDE = 128  # pictures are measured at most this big: the measures need shapes and colours, not detail


def _picture(path: str | Path) -> np.ndarray:
    with Image.open(path) as opened:
        im = opened.convert("RGB")
        if max(im.size) > MEASURE_SIDE:
            im.thumbnail((MEASURE_SIDE, MEASURE_SIDE), Image.Resampling.BICUBIC)
        return np.asarray(im)


def trains_the_demo_character(config: Config) -> bool:
    """Whether the run trained the built-in demo character: the demo's dataset folder and trigger. Only then are
    the demo world's measures used (and the demo imported)."""
    if not (Path(config.dataset.path) / "demo_manifest.json").is_file():
        return False
    from trainer.demo import TRIGGER

    return config.dataset.trigger == TRIGGER


def _demo_expectations(config: Config) -> dict[str, dict[str, Any]] | None:
    """prompt text → what a good demo picture shows, when this run trained the built-in demo character."""
    if not trains_the_demo_character(config):
        return None
    from trainer.demo import demo_prompt_specs

    return {p.prompt: p.expected for p in demo_prompt_specs()}


def measure_steps(run_dir: str | Path) -> list[dict[str, Any]]:
    """Per sampled step after 0: ``leakage`` (no-trigger sample vs step 0's, the base model's picture: its pixel
    drift; for the demo character, what the picture shows rather than its pixels),
    ``burn`` (mean over trigger samples vs step 0), and for the demo character ``likeness`` and ``adherence``
    (means over trigger samples). Values are None where the pictures needed are missing.

    Measured once per state of the run's files: Review, its recommendation, the verdict and the diagnosis
    each ask, and a page visit asked several times for the same pictures."""
    root = Path(run_dir).resolve()
    return [dict(row) for row in _measured(root, _sample_files_stamp(root))]


def _sample_files_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What :func:`measure_steps` reads (the config and every sample file), by name, size and time."""
    out = []
    for path in [root / "config.toml", *sorted(RunPaths(root).samples.glob("step-*/*"))]:
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _measured(root: Path, stamp: tuple) -> tuple[dict[str, Any], ...]:
    return tuple(_measure_steps(root))


def _measure_steps(run_dir: Path) -> list[dict[str, Any]]:
    manifests = sample_manifests(run_dir)
    base = next((m for m in manifests if m["step"] == 0), None)
    if base is None:
        return []
    try:
        expected = _demo_expectations(load_run_config(run_dir))
    except UserError:
        expected = None
    # a picture is compared with step 0's of the same prompt and seed (several seeds per prompt: each its own)
    ref = {sample_key(s): Path(base["dir"]) / s["file"] for s in base["samples"] if s.get("weights", "live") == "live"}
    if expected is not None:
        from trainer.demo import measures as demo

        # likeness only means something where the base model does not already "show" the character (pure
        # noise from an untrained tiny model is full of magenta and yellow)
        base_like = [demo.likeness(_picture(ref[sample_key(s)])) for s in base["samples"]
                     if sample_key(s) in ref and s["kind"] != "no_trigger" and ref[sample_key(s)].is_file()]
        if not base_like or float(np.mean(base_like)) >= BASE_LIKENESS_LIMIT:
            expected = None
    out = []
    for m in manifests:
        if m["step"] == 0:
            continue
        row: dict[str, Any] = {"step": m["step"], "leakage": None, "drift": None, "burn": None,
                               "likeness": None, "adherence": None}
        burns, likes, adh, leaks, drifts = [], [], [], [], []
        for s in m["samples"]:
            if s.get("weights", "live") != "live" or sample_key(s) not in ref:
                continue
            path = Path(m["dir"]) / s["file"]
            if not path.is_file() or not ref[sample_key(s)].is_file():
                continue
            img, ref_img = _picture(path), _picture(ref[sample_key(s)])
            if s["kind"] == "no_trigger":
                # the demo world's pictures can be read: count what changed rather than pixels that moved
                scores = (demo.world_leakage_scores if expected is not None else leakage_scores)(img, ref_img)
                leaks.append(scores["leakage"])
                drifts.append(scores["drift"])
            else:
                burns.append(burn(img, ref_img)["burn_score"])
                if expected is not None:
                    likes.append(demo.likeness(img))
                    if s["prompt"] in expected:
                        adh.append(demo.adherence(img, expected[s["prompt"]]))
        if leaks:
            row["leakage"], row["drift"] = float(np.mean(leaks)), float(np.mean(drifts))
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


# ------------------------------------------------------------------------------- live findings


def _leakage_measure(run_dir: Path) -> Callable[[Any, Any], dict[str, float]]:
    """Pixel drift from step 0 on any run; on the demo character's run the character showing up counts too (the
    demo's measure looks for its magenta body, which means nothing on a user's pictures)."""
    try:
        demo = trains_the_demo_character(load_run_config(run_dir))
    except UserError:
        demo = False
    if not demo:
        return leakage_scores
    from trainer.demo.measures import leakage_scores as demo_leakage_scores

    return demo_leakage_scores


def sample_findings(samples_dir: Path) -> list[Finding]:
    """Burn (saturation/contrast drift from step 0) and leakage (the no-trigger sample drifting from the base), as
    findings while the run trains; the verdict reads :func:`measure_steps`."""
    manifests = sorted(samples_dir.glob("step-*/manifest.json"))
    if len(manifests) < 2:
        return []
    leakage_of = _leakage_measure(samples_dir.parent)
    base_dir = manifests[0].parent
    base = {sample_key(s): s for s in json.loads(manifests[0].read_text())["samples"] if s["weights"] == "live"}
    burn_hits, leak_hits = [], []
    for m in manifests[1:]:
        data = json.loads(m.read_text())
        burns: dict[tuple[int, str], list[float]] = {}  # (prompt index, kind) -> burn per seed
        leaks: list[float] = []
        for s in data["samples"]:
            if s["weights"] != "live" or sample_key(s) not in base:
                continue
            img = Image.open(m.parent / s["file"]).convert("RGB")
            ref = Image.open(base_dir / base[sample_key(s)]["file"]).convert("RGB")
            burns.setdefault((s["index"], s["kind"]), []).append(burn(img, ref)["burn_score"])
            if s["kind"] == "no_trigger":
                leaks.append(leakage_of(img, ref)["leakage"])
        for (_, kind), values in burns.items():  # a prompt's pictures over their seeds
            b = sum(values) / len(values)
            if b > BURN_LIMIT:
                burn_hits.append((data["step"], kind, b))
        leak = sum(leaks) / len(leaks) if leaks else 0.0
        if leak > LEAKAGE_LIMIT:
            leak_hits.append((data["step"], leak))
    out = []
    if burn_hits:
        step, kind, b = burn_hits[0]
        out.append(Finding("sample_burn", "warning", msg("finding.sample_burn", burn=b, step=step, kind=prompt_kind(kind)),
                           sorted({h[0] for h in burn_hits}), {"burn": [[s, k, v] for s, k, v in burn_hits[:12]]}))
    if leak_hits:
        step, leak = leak_hits[0]
        out.append(Finding("leakage", "warning",
                           msg("finding.leakage", leak=leak, step=step),
                           [s for s, _ in leak_hits], {"leakage": [[s, v] for s, v in leak_hits]}))
    return out
