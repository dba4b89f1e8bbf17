"""The strength sweep of the Review step: one LoRA file drawn at several strengths on the run's sample prompts
(the seeds: good at 0.6-0.8 but too much at 1.0 is a little over-trained, so use it lower or an earlier save;
like the character only at 1.2 is under-trained, so more steps or a higher lr)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import UserError
from .io import atomic_write_bytes, atomic_write_json
from .review import Progress, load_run_config, resolve_checkpoint

STRENGTHS = (0.6, 0.8, 1.0, 1.2)


def load_lora_onto(pipe, lora: Path, adapter_name: str) -> Path:
    """Load a run's LoRA file onto a diffusers pipeline; returns the file actually read.

    The diffusers-layout twin written beside the kohya file (``export.DIFFUSERS_TWIN``) is read when present: it
    carries every module's alpha in its adapter metadata, while diffusers' kohya loader keeps only the most common
    alpha when they differ (e.g. attention layers outnumbered by convolutions with another alpha)."""
    from .export import DIFFUSERS_TWIN  # local, like torch in strength_sweep: export imports torch

    twin = DIFFUSERS_TWIN.get(lora.name)
    if twin is not None and (lora.parent / twin).is_file():
        lora = lora.parent / twin
    pipe.load_lora_weights(str(lora.parent), weight_name=lora.name, adapter_name=adapter_name)
    return lora


def strength_sweep(
    run_dir: str | Path,
    checkpoint_file: str | Path,
    strengths: tuple[float, ...] = STRENGTHS,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Render the run's sample prompts with one LoRA file at each strength (same seed as the samples).

    Pictures go to ``review/<checkpoint>/s<strength>_<NN>.png`` with a ``manifest.json``; a sweep already on
    disk for the same file, strengths and prompts is returned as it is. Returns
    ``[{strength, prompt, kind, index, file}]``.
    """
    import torch

    from .embedding import embedding_beside, load_embedding
    from .models import load_pipeline
    from .precision import decide_precision, resolve_device
    from .sampling import expand_prompts, png_bytes, render, sampling_pipeline

    root = Path(run_dir).resolve()
    config = load_run_config(root)
    lora = resolve_checkpoint(root, checkpoint_file)
    label = lora.relative_to(root).with_suffix("").as_posix().replace("/", "_")
    out_dir = root / "review" / label
    prompts = expand_prompts(config.sample.prompts, config.dataset.trigger)
    wanted = [float(s) for s in strengths]
    cached = _cached_sweep(out_dir, lora, wanted, prompts)
    if cached is not None:
        return cached
    total = len(wanted) * len(prompts)
    if progress:
        progress(0, total)
    device = resolve_device(config.train.device)
    plan = decide_precision(config.train.precision, device)
    pipe, info = load_pipeline(config.model, plan.weight_dtype)
    pipe.to(device)
    try:
        load_lora_onto(pipe, lora, "review")
        embedding = embedding_beside(lora)
        if embedding is not None:  # trained with lora.trigger_embedding: the trigger's vectors come with it
            load_embedding(pipe, embedding, config.dataset.trigger)
    except (ValueError, KeyError, RuntimeError) as e:
        raise UserError(f"{lora.name}: could not load it onto the base model ({str(e).splitlines()[0][:200]})") from None
    sampler = sampling_pipeline(pipe, info.prediction_type)
    size = (config.dataset.resolution, config.dataset.resolution)
    records, done = [], 0
    with torch.no_grad():
        for strength in wanted:
            pipe.set_adapters(["review"], adapter_weights=[strength])
            for p in prompts:
                image = render(sampler, p["prompt"], config.sample, size, device, plan, config.sample.seed)
                name = f"s{strength:g}_{p['index']:02d}.png"
                atomic_write_bytes(out_dir / name, png_bytes(image))
                records.append({"strength": strength, "prompt": p["prompt"], "kind": p["kind"],
                                "index": p["index"], "file": str(out_dir / name)})
                done += 1
                if progress:
                    progress(done, total)
    atomic_write_json(out_dir / "manifest.json", {
        "lora": str(lora), "lora_mtime": lora.stat().st_mtime, "strengths": wanted,
        "prompts": [p["prompt"] for p in prompts], "samples": records,
    })
    return records


def _cached_sweep(out_dir: Path, lora: Path, strengths: list[float], prompts: list[dict]) -> list[dict] | None:
    manifest = out_dir / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    same = (data.get("lora") == str(lora) and data.get("lora_mtime") == lora.stat().st_mtime
            and data.get("strengths") == strengths and data.get("prompts") == [p["prompt"] for p in prompts])
    if not same or not all(Path(r["file"]).is_file() for r in data["samples"]):
        return None
    return data["samples"]
