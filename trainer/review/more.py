"""More pictures of one save: the run's sample prompts drawn again at more seeds than the run drew.

A run draws a few pictures a prompt at each save (4 in the presets), and at the save where the subject starts to
show, so few can go either way: on the demo world's pictures, the demo's own likeness read on the 4 pictures a
prompt of the 1x runs' step-400 saves fell on the other side of its line from the reading on 16 pictures a prompt
in up to a third of random draws of 4 (``docs/doctor.md``). Review draws more of the chosen save on demand: the
run's own seeds first (``sample.seed``, ``seed + 1``, …), so the first pictures are the run's, then new ones. Where
a picture judge applies to the run (the demo's measures on the demo character, or ``measure.judge``), it reads
them, against the base model's pictures of the same prompts and seeds.

Pictures go to ``review/<checkpoint>/more-<n>/`` with a ``manifest.json``, the base model's to
``review/base-more-<n>/``; a draw already on disk for the same file and prompts is returned as it is. The judge's
readings of a save's live weights then stand for that save in the verdict (:mod:`trainer.doctor.pictures`): read on
more pictures, in place of its reading of the run's own few.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.io import atomic_write_bytes, atomic_write_json
from trainer.review.strength import SweepPipelines, SweepProgress, drawing, lora_loaded
from trainer.run.contents import checkpoint_files, load_run_config, resolve_checkpoint

MORE_PER_PROMPT = 12


def more_pictures(run_dir: str | Path, checkpoint_file: str | Path, per_prompt: int = MORE_PER_PROMPT,
                  progress: SweepProgress | None = None, pipelines: SweepPipelines | None = None) -> dict[str, Any]:
    """Draw each sample prompt of the run at ``per_prompt`` seeds with one LoRA file at strength 1.

    Returns ``{"samples": [{prompt, kind, index, seed, file}], "judge": name or None, "readings": {likeness,
    adherence, leakage} means (those the judge reads) or {}, "per_prompt": n}``. ``progress`` is called as the
    strength sweep's, with None while the model loads and 1.0 while drawing.
    """
    from trainer.doctor.pictures import judged_means, run_judge
    from trainer.run.samples import expand_prompts

    root = Path(run_dir).resolve()
    config = load_run_config(root)
    lora = resolve_checkpoint(root, checkpoint_file)
    label = lora.relative_to(root).with_suffix("").as_posix().replace("/", "_")
    out_dir = root / "review" / label / f"more-{per_prompt}"
    prompts = expand_prompts(config.sample.prompts, config.dataset.trigger)
    seeds = [config.sample.seed + k for k in range(per_prompt)]
    jobs = [(p, s) for p in prompts for s in seeds]
    found = run_judge(root)  # from the run's step-0 pictures: is there a judge for this run at all?
    key = found[2] if found is not None else None
    files = _cached_files(out_dir, lora, jobs)
    if files is not None:
        cached = _manifest(out_dir)
        if cached.get("judge_key") == key:
            return cached
    # drawn before, read by another judge or none (one chosen since): the same pictures are read again
    base_dir = root / "review" / f"base-more-{per_prompt}"
    base_cached = _cached_files(base_dir, None, jobs) if found is not None else None
    need_base = found is not None and base_cached is None
    total = len(jobs) * (int(need_base) + int(files is None))
    report = progress or (lambda done, total, strength: None)
    report(0, total, None)
    if total:
        with drawing(config, pipelines) as (pipe, info, plan, device, swap):
            drawn = 0
            if need_base:  # the base model's pictures, for the judge's reference
                base_cached = _draw(pipe, info, config, jobs, base_dir, plan, device, lambda k: report(k, total, 0.0))
                atomic_write_json(base_dir / "manifest.json", {"prompts": _keys(jobs), "files": base_cached})
                drawn = len(jobs)
            if files is None:
                with lora_loaded(pipe, info, lora, config.dataset.trigger, "more", swap):
                    files = _draw(pipe, info, config, jobs, out_dir, plan, device,
                                  lambda k: report(drawn + k, total, 1.0))
    assert files is not None
    records = [{"prompt": p["prompt"], "kind": p["kind"], "index": p["index"], "seed": s, "file": f}
               for (p, s), f in zip(jobs, files)]
    readings: dict[str, float] = {}
    if found is not None and base_cached is not None:
        from trainer.doctor.judges import SamplePicture
        from trainer.doctor.pictures import picture_array

        readings = judged_means(found[1], [SamplePicture(r, picture_array(Path(r["file"])), picture_array(Path(b)))
                                           for r, b in zip(records, base_cached)])
    picked = next((c for c in checkpoint_files(root) if Path(c["file"]).resolve() == lora), None)
    result = {"samples": records, "judge": found[0].name if found is not None else None, "judge_key": key,
              "readings": readings,
              "per_prompt": per_prompt, "step": picked["step"] if picked else None,
              "weights": picked["weights"] if picked else None}
    atomic_write_json(out_dir / "manifest.json", {"lora": str(lora), "lora_mtime": lora.stat().st_mtime,
                                                  "prompts": _keys(jobs), **result})
    report(total, total, 1.0)
    return result


def edge_saves(run_dir: str | Path, per_prompt: int = MORE_PER_PROMPT) -> list[dict[str, Any]]:
    """The saves (their live weights, as :func:`checkpoint_files` lists them, one a step) whose judged likeness,
    read on fewer than ``per_prompt`` pictures a prompt, lies within ``LIKENESS_EDGE`` of the line at which the
    subject shows: where so few pictures can fall on either side of it. [] where no judge reads the run, or where
    the run itself drew ``per_prompt`` pictures a prompt or more."""
    from trainer.doctor.pictures import measure_steps
    from trainer.doctor.verdict import LIKENESS_EDGE, LIKENESS_SHOWS

    if load_run_config(Path(run_dir)).sample.images_per_prompt >= per_prompt:  # the run drew as many itself
        return []
    read = {r["step"]: r for r in measure_steps(run_dir) if r.get("likeness") is not None}
    out: list[dict[str, Any]] = []
    for save in checkpoint_files(run_dir):
        row = read.get(save["step"])
        if save["weights"] != "live" or row is None or any(o["step"] == save["step"] for o in out):
            continue
        if (row.get("judged_per_prompt") or 0) < per_prompt and abs(row["likeness"] - LIKENESS_SHOWS) < LIKENESS_EDGE:
            out.append(save)
    return out


def _draw(pipe, info, config, jobs: list[tuple[dict, int]], out_dir: Path, plan, device, done) -> list[str]:
    """Every (prompt, seed) of ``jobs`` drawn with what is on ``pipe`` now, as many in a batch as the sampler
    draws; ``done(k)`` after each denoising step (k pictures' worth, fractional). Returns the files written."""
    import torch

    from trainer.sampling import batch_size_for, png_bytes, render_batch, sampling_pipeline

    sampler = sampling_pipeline(pipe, info.family, info.prediction_type)
    size = (config.dataset.resolution, config.dataset.resolution)
    per_batch, steps, files = batch_size_for(size), max(1, config.sample.steps), []
    with torch.no_grad():
        for start in range(0, len(jobs), per_batch):
            chunk = jobs[start:start + per_batch]
            n = len(chunk)

            def step(k: int, start: int = start, n: int = n) -> None:
                done(start + n * k / steps)

            images = render_batch(sampler, [p["prompt"] for p, _ in chunk], config.sample, size, device, plan,
                                  [s for _, s in chunk], on_step=step)
            for (p, seed), image in zip(chunk, images):
                path = out_dir / f"{p['index']:02d}_seed{seed}.png"
                atomic_write_bytes(path, png_bytes(image))
                files.append(str(path))
            done(start + n)
    return files


def _keys(jobs: list[tuple[dict, int]]) -> list[list[Any]]:
    return [[p["prompt"], s] for p, s in jobs]


def _cached_files(folder: Path, lora: Path | None, jobs: list[tuple[dict, int]]) -> list[str] | None:
    """The files of a draw on disk for the same prompts and seeds (and LoRA file, unchanged), else None."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("prompts") != _keys(jobs):
        return None
    if lora is not None and (manifest.get("lora") != str(lora) or manifest.get("lora_mtime") != lora.stat().st_mtime):
        return None
    files = manifest.get("files") or [s["file"] for s in manifest.get("samples", [])]
    return files if len(files) == len(jobs) and all(Path(f).is_file() for f in files) else None


def _manifest(out_dir: Path) -> dict[str, Any]:
    """What :func:`more_pictures` returned for the draw in ``out_dir`` (its files checked by :func:`_cached_files`)."""
    manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    return {k: manifest.get(k) for k in ("samples", "judge", "judge_key", "readings", "per_prompt", "step", "weights")}

