"""The strength sweep of the Review step: one LoRA file drawn at several strengths on the run's sample prompts
(docs/training-guide.md, "The strength sweep": good at 0.6-0.8 but too much at 1.0 is a little over-trained, so
use it lower or an earlier save; like the character only at 1.2 is under-trained, so more steps or a higher
lr)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainer.config.schema import Config
from trainer.errors import UserError
from trainer.io import atomic_write_bytes, atomic_write_json
from trainer.message import msg
from trainer.run.contents import load_run_config, resolve_checkpoint

STRENGTHS = (0.6, 0.8, 1.0, 1.2)


def load_lora_onto(pipe, lora: Path, adapter_name: str) -> Path:
    """Load a run's LoRA file onto a diffusers pipeline; returns the file actually read.

    The diffusers-layout twin written beside the kohya file (``export.DIFFUSERS_TWIN``) is read when present: it
    carries every module's alpha in its adapter metadata, while diffusers' kohya loader keeps only the most common
    alpha when they differ (e.g. attention layers outnumbered by convolutions with another alpha)."""
    from trainer.export.lora_files import DIFFUSERS_TWIN

    twin = DIFFUSERS_TWIN.get(lora.name)
    if twin is not None and (lora.parent / twin).is_file():
        lora = lora.parent / twin
    pipe.load_lora_weights(str(lora.parent), weight_name=lora.name, adapter_name=adapter_name)
    return lora


SweepProgress = Callable[[float, int, "float | None"], None]
"""``(done, total, strength)``: pictures drawn of ``total`` (fractional while a batch is being drawn) and the
strength being drawn, None while the model loads."""


class SweepPipelines:
    """The base pipeline the last sweep drew with, kept for the next one: loading it is a fixed cost of every
    sweep (seconds on the demo, more for a real SD model). One is held at a time, and only between sweeps of the
    same base; :meth:`release` lets it go (call it before a training run needs the memory)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held while a sweep draws
        self._key: str | None = None
        self._held: tuple[Any, Any] | None = None
        self._drop = False  # release() was called while a sweep drew
        self.swap: Any = None  # the held pipeline's BlockSwap (model.block_swap), if it has one

    @contextmanager
    def pipeline(self, config: Config, weight_dtype, device) -> Iterator[tuple[Any, Any]]:
        """``(pipe, info)`` for the run's base, loaded unless the held one is it; one sweep at a time."""
        from trainer.models.base import load_pipeline
        from trainer.models.family import family as model_family

        key = f"{config.model.model_dump_json()}|{weight_dtype}|{device}"
        with self._lock:
            self._drop = False
            try:
                if self._key != key:
                    self._held = self._key = self.swap = None
                    pipe, info = load_pipeline(config.model, weight_dtype)
                    adapter = model_family(info.family)
                    adapter.prepare_weights(pipe, weight_dtype)
                    self.swap = _place(pipe, adapter, config, weight_dtype, device)
                    self._held, self._key = (pipe, info), key
                assert self._held is not None  # held with its key
                yield self._held
            except BaseException:  # a sweep that failed may have left its LoRA on: load afresh next time
                self._drop = True
                raise
            finally:
                if self._drop:
                    self._held = self._key = self.swap = None

    def release(self) -> None:
        """Drop the held pipeline now, or when the sweep drawing with it ends; never waits for it."""
        self._drop = True
        if self._lock.acquire(blocking=False):
            self._held = self._key = self.swap = None
            self._lock.release()


def _place(pipe, adapter, config: Config, weight_dtype, device):
    """Put the base on ``device`` as the run had it: a denoiser that fitted the card only quantized or with blocks
    kept in CPU memory (``model.base_quant``, ``model.block_swap``) is drawn that way too, its swapped blocks
    visiting the device one at a time (:mod:`trainer.models.blockswap`). Returns the swap, if any."""
    import torch

    from trainer.models.lowmem import is_low_memory, prepare_low_memory

    if not is_low_memory(config.model):
        pipe.to(device)
        return None
    denoiser = adapter.denoiser(pipe)
    for component in pipe.components.values():
        if isinstance(component, torch.nn.Module) and component is not denoiser:
            component.to(device)
    return prepare_low_memory(denoiser, adapter, config.model, device, weight_dtype)


def strength_sweep(
    run_dir: str | Path,
    checkpoint_file: str | Path,
    strengths: tuple[float, ...] = STRENGTHS,
    progress: SweepProgress | None = None,
    pipelines: SweepPipelines | None = None,
) -> list[dict[str, Any]]:
    """Render the run's sample prompts with one LoRA file at each strength (same seed as the samples).

    Pictures go to ``review/<checkpoint>/s<strength>_<NN>.png`` with a ``manifest.json``; a sweep already on
    disk for the same file, strengths and prompts is returned as it is. The prompts of one strength are drawn
    in one batch; ``pipelines`` keeps the base model loaded from one sweep to the next (the LoRA and trigger
    embedding come off it again afterwards). Returns ``[{strength, prompt, kind, index, file}]``.
    """
    from trainer.run.samples import expand_prompts

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
    report = progress or (lambda done, total, strength: None)
    report(0, total, None)
    with drawing(config, pipelines) as (pipe, info, plan, device, swap):
        records = _draw_sweep(pipe, info, config, lora, wanted, prompts, out_dir, plan, device, report, swap)
    atomic_write_json(out_dir / "manifest.json", {
        "lora": str(lora), "lora_mtime": lora.stat().st_mtime, "strengths": wanted,
        "prompts": [p["prompt"] for p in prompts], "samples": records,
    })
    return records


@contextmanager
def drawing(config: Config, pipelines: SweepPipelines | None = None) -> Iterator[tuple[Any, Any, Any, Any, Any]]:
    """``(pipe, info, precision plan, device, block swap)``: the run's base on the device and in the precision it
    trained with, from ``pipelines`` (kept for the next draw) or loaded for this one."""
    from trainer.models.precision import decide_precision, resolve_device

    device = resolve_device(config.train.device)
    plan = decide_precision(config.train.precision, device)
    pipelines = pipelines or SweepPipelines()
    with pipelines.pipeline(config, plan.weight_dtype, device) as (pipe, info):
        yield pipe, info, plan, device, pipelines.swap


def _draw_sweep(pipe, info, config: Config, lora: Path, wanted: list[float], prompts: list[dict], out_dir: Path,
                plan, device, report: SweepProgress, swap=None) -> list[dict[str, Any]]:
    """The sweep's pictures with ``lora`` (and its trigger embedding) on ``pipe``, taken off again after; ``swap``:
    the base's block swap, whose blocks' LoRA weights (loaded beside their parked weights) go to the device."""
    import torch

    from trainer.sampling import png_bytes, render_batch, sampling_pipeline

    with lora_loaded(pipe, info, lora, config.dataset.trigger, "review", swap):
        sampler = sampling_pipeline(pipe, info.family, info.prediction_type)
        size = (config.dataset.resolution, config.dataset.resolution)
        total, steps, records = len(wanted) * len(prompts), max(1, config.sample.steps), []
        with torch.no_grad():
            for i, strength in enumerate(wanted):
                done = i * len(prompts)
                pipe.set_adapters(["review"], adapter_weights=[strength])
                images = render_batch(
                    sampler, [p["prompt"] for p in prompts], config.sample, size, device, plan, config.sample.seed,
                    on_step=lambda k, done=done, strength=strength: report(  # type: ignore[misc]  # mypy cannot type a lambda's default arguments
                        done + len(prompts) * k / steps, total, strength))
                for p, image in zip(prompts, images):
                    name = f"s{strength:g}_{p['index']:02d}.png"
                    atomic_write_bytes(out_dir / name, png_bytes(image))
                    records.append({"strength": strength, "prompt": p["prompt"], "kind": p["kind"],
                                    "index": p["index"], "file": str(out_dir / name)})
                report(done + len(prompts), total, strength)
        return records


@contextmanager
def lora_loaded(pipe, info, lora: Path, trigger: str, adapter_name: str, swap=None) -> Iterator[None]:
    """``lora`` (and its trigger embedding, when the run trained one) on ``pipe`` for the block, taken off again
    after, so the base goes back as it was; a file that does not load is one UserError naming it. ``swap``: the
    base's block swap, whose blocks' LoRA weights (loaded beside their parked weights) go to the device."""
    from trainer.models.embedding import embedding_beside, load_embedding, unload_embedding

    embedding = embedding_beside(lora)
    try:
        try:
            load_lora_onto(pipe, lora, adapter_name)
            if swap is not None:
                from trainer.models.family import family as model_family

                swap.settle(model_family(info.family).denoiser(pipe))
            if embedding is not None:  # trained with lora.trigger_embedding: the trigger's vectors come with it
                load_embedding(pipe, embedding, trigger)
        except (ValueError, KeyError, RuntimeError) as e:
            raise UserError(msg("error.review.load", name=lora.name,
                                reason=str(e).splitlines()[0][:200])) from None
        yield
    finally:
        if embedding is not None:
            unload_embedding(pipe, trigger)
        pipe.unload_lora_weights()


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
