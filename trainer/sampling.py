"""Sample pictures from the weights being trained, without disturbing the training.

The four prompt kinds of docs/training-guide.md ("Sample prompts that test generalisation") are the defaults:
trigger only; trigger with a pose/background absent from the data; trigger with another outfit; no trigger (does
the LoRA leak into everything?). Every checkpoint uses the same prompts and the same seed, so pictures line up
across steps. The training modules are used as they
are (no casting); train mode and the global RNG state are restored afterwards.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer.io import atomic_write_bytes, atomic_write_json


@contextmanager
def preserved_training_state(modules: list[torch.nn.Module]):
    modes = [m.training for m in modules]
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        for m in modules:
            m.eval()
        yield
    finally:
        for m, mode in zip(modules, modes):
            m.train(mode)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


PromptKwargs = Callable[[Any, list[str], str, Any], dict[str, Any]]
"""(pipeline, prompts, negative prompt or "", device) → the embeddings the pipeline takes in their place."""


@dataclass(frozen=True)
class SamplingPipeline:
    """A family's few-step sampling pipeline over the run's modules (a diffusers pipeline) and the channels of
    the latents it starts from (4 for SD1.5/SDXL, 16 for SD3.5). ``prompt_kwargs``: where the prompts' embeddings
    come from when the text encoders left the device (encoded before training); None: the pipeline encodes them."""

    pipe: Any
    latent_channels: int
    prompt_kwargs: PromptKwargs | None = None

    def __call__(self, **kwargs):
        return self.pipe(**kwargs)

    def text_kwargs(self, prompts: list[str], negative: str, device) -> dict[str, Any]:
        """What the pipeline is told of the text: the prompts and the negative prompt (once per prompt, or none),
        or the same prompts' embeddings from ``prompt_kwargs``."""
        if self.prompt_kwargs is not None:
            return self.prompt_kwargs(self.pipe, list(prompts), negative, device)
        return {"prompt": list(prompts), "negative_prompt": [negative] * len(prompts) if negative else None}

    @property
    def vae_scale_factor(self) -> int:
        return int(self.pipe.vae_scale_factor)


def sampling_pipeline(pipe, family: str, prediction_type: str, prompt_kwargs: PromptKwargs | None = None
                      ) -> SamplingPipeline:
    """A pipeline over the same modules with the family's deterministic few-step sampler (DDIM for SD1.5/SDXL)."""
    from trainer.models.family import family as model_family

    adapter = model_family(family)
    sampler = adapter.sampling_pipeline(pipe, prediction_type)
    sampler.set_progress_bar_config(disable=True)
    return SamplingPipeline(sampler, adapter.latent_channels(pipe), prompt_kwargs)


def png_bytes(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


# Pictures drawn in one batch hold at most this many pixels (16 of the demo's 64 px; one at 512 px): a batch saves
# time on a CPU, and a training run's samples must not claim a GPU's memory for a batch of full-size pictures.
BATCH_PIXELS = 16 * 64 * 64


def batch_size_for(size: tuple[int, int]) -> int:
    return max(1, BATCH_PIXELS // max(1, size[0] * size[1]))


def sample_batches(prompts: list[dict[str, Any]], sample_cfg, size: tuple[int, int]) -> list[list[tuple[dict, int]]]:
    """The pictures :func:`write_samples` draws for one set of weights, batch by batch: (prompt, k) for the k-th
    seed of each prompt, as many in a batch as :func:`batch_size_for` allows."""
    count = getattr(sample_cfg, "images_per_prompt", 1)
    jobs = [(p, k) for p in prompts for k in range(count)]
    per_batch = batch_size_for(size)
    return [jobs[start:start + per_batch] for start in range(0, len(jobs), per_batch)]


@torch.no_grad()
def render(sampler, prompt: str, sample_cfg, size: tuple[int, int], device, precision_plan, seed: int):
    return render_batch(sampler, [prompt], sample_cfg, size, device, precision_plan, seed)[0]


def _start_noise(sampler, size: tuple[int, int], seed: int) -> torch.Tensor:
    """The starting latents of one picture: what ``seed`` gives on the CPU, whatever the device."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    width, height = size
    shape = (1, sampler.latent_channels, height // sampler.vae_scale_factor, width // sampler.vae_scale_factor)
    return torch.randn(shape, generator=generator)


@torch.no_grad()
def render_batch(sampler, prompts: list[str], sample_cfg, size: tuple[int, int], device, precision_plan,
                 seed: int | list[int], on_step: Callable[[int], None] | None = None) -> list:
    """Several prompts drawn in one batch, each from the starting noise of its seed (``seed``: one for all, or one
    per prompt) as :func:`render` draws it alone: the same pictures up to float rounding, in about a third of the
    time on a CPU (one UNet call per denoising step for all of them). ``on_step(i)`` after each of the
    ``sample_cfg.steps`` denoising steps."""
    seeds = seed if isinstance(seed, list) else [seed] * len(prompts)
    width, height = size
    noise = {s: _start_noise(sampler, size, s) for s in dict.fromkeys(seeds)}
    latents = torch.cat([noise[s] for s in seeds]).to(device)

    def step_done(pipe, i, timestep, tensors):
        if on_step is not None:
            on_step(i + 1)
        return {}

    with precision_plan.autocast():
        out = sampler(
            **sampler.text_kwargs(prompts, sample_cfg.negative_prompt, device),
            num_inference_steps=sample_cfg.steps,
            guidance_scale=sample_cfg.guidance,
            width=width,
            height=height,
            latents=latents,
            output_type="pil",
            callback_on_step_end=step_done if on_step else None,
        )
    return out.images


def write_samples(
    sampler,
    modules: list[torch.nn.Module],
    prompts: list[dict[str, Any]],
    sample_cfg,
    size: tuple[int, int],
    precision_plan,
    out_dir: Path,
    step: int,
    weights: str = "live",
    ema=None,
) -> list[dict[str, Any]]:
    """Render every prompt ``sample_cfg.images_per_prompt`` times (seeds ``seed``, ``seed + 1``, …) per weight set
    ("live", and "ema" when an EMA is given) and write a manifest. The first seed's file is
    ``NN_kind.png`` (``NN_kind_ema.png``), the k-th's ``NN_kind_sK.png``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    weight_sets = [("live", None)] + ([("ema", ema)] if ema is not None else [])
    with preserved_training_state(modules):
        for label, source in weight_sets:
            ctx = source.swapped_in() if source is not None else _null()
            with ctx:
                for chunk in sample_batches(prompts, sample_cfg, size):
                    images = render_batch(sampler, [p["prompt"] for p, _ in chunk], sample_cfg, size,
                                          precision_plan.device, precision_plan,
                                          [sample_cfg.seed + k for _, k in chunk])
                    for (p, k), image in zip(chunk, images):
                        name = (f"{p['index']:02d}_{p['kind']}" + (f"_s{k}" if k else "")
                                + ("" if label == "live" else "_ema") + ".png")
                        atomic_write_bytes(out_dir / name, png_bytes(image))
                        records.append({**p, "file": name, "weights": label, "seed": sample_cfg.seed + k,
                                        "step": step})
    manifest_path = out_dir / "manifest.json"
    atomic_write_json(manifest_path, {"step": step, "size": list(size), "samples": records})
    return records


@contextmanager
def _null():
    yield
