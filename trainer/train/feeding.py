"""A step's pictures as latents: from the latent cache when there is one, otherwise loaded ahead on a worker
thread and encoded by the VAE; flipped by a seeded draw, so a resumed run sees the same pictures."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import torch
import torch.nn.functional as F

from trainer.config.schema import Config
from trainer.data.batches import LatentCache, Sample, image_tensor
from trainer.data.masks import mask_weights, masked_mean
from trainer.train.distributed import Dist
from trainer.train.modelset import TrainingModels


class Feeder:
    """The training pictures of one rank. ``cache_latents`` encodes them all once (when the config says so);
    without a cache each step's pictures are read by a worker thread while the step before computes."""

    def __init__(self, config: Config, dist: Dist, models: TrainingModels, samples: list[Sample]):
        self.config, self.dist, self.models, self.samples = config, dist, models, samples
        self.cache: LatentCache | None = None
        self._loader: ThreadPoolExecutor | None = None
        self._pixels: dict[tuple[int, int], Future] = {}
        self._encoder: LatentCache | None = None  # the VAE encoder of steps whose latents are not cached
        self._weights: dict[tuple, torch.Tensor] = {}  # (picture, flip, latent size) → its loss weights (masked loss)

    def cache_latents(self, progress: Callable[[int, int, float], None]) -> None:
        """Encode every picture (and its flip, when flips are on) once, into memory or the disk cache; the VAE
        then leaves the device until it is needed to sample. ``progress(done, total, t0)``."""
        cfg, models = self.config, self.models
        if not cfg.dataset.cache_latents:
            return
        disk = Path(cfg.save.output_dir) / ".cache" / "latents" if cfg.dataset.cache_to_disk else None
        if disk is not None:
            disk.mkdir(parents=True, exist_ok=True)
        self.cache = LatentCache(models.pipe.vae, models.device, models.precision.vae_dtype, disk)
        flips = (False, True) if cfg.dataset.flip else (False,)
        t0 = time.perf_counter()
        self.cache.fill(self.samples, flips, lambda done, total: progress(done, total, t0))
        if models.device.type != "cpu":
            models.pipe.vae.to("cpu")  # the VAE is only needed to sample now

    def flips(self, epoch: int, pos: int, n: int) -> list[bool]:
        if not self.config.dataset.flip:
            return [False] * n
        rank = f":{self.dist.rank}" if self.dist.rank else ""  # rank 0 draws what a single process draws
        rng = random.Random(f"{self.config.train.seed}:{epoch}:{pos}{rank}:flip")
        return [rng.random() < 0.5 for _ in range(n)]

    def prefetch(self, epoch: int, start: int, group) -> None:
        """Without a latent cache, load the next step's images on a worker thread while this step computes
        (PIL decoding and resizing release the GIL), so data loading is off the critical path."""
        if self.cache is not None or not group:
            return
        if self._loader is None:
            self._loader = ThreadPoolExecutor(max_workers=max(1, self.config.train.num_workers),
                                              thread_name_prefix="lora-data")
        for i, batch in enumerate(group):
            key = (epoch, start + i)
            if key not in self._pixels:
                self._pixels[key] = self._loader.submit(_load_pixels, batch, self.flips(epoch, start + i, len(batch)))

    def latents(self, batch: list[Sample], epoch: int, pos: int, flips: list[bool]) -> torch.Tensor:
        """The batch's latents: cached, or its pictures (prefetched when they were) through the VAE."""
        if self.cache is not None:
            return self.cache.batch(batch, flips)
        future = self._pixels.pop((epoch, pos), None)
        pixels = future.result() if future is not None else _load_pixels(batch, flips)
        if self._encoder is None:
            self._encoder = LatentCache(self.models.pipe.vae, self.models.device, self.models.precision.vae_dtype, None)
        with torch.no_grad():
            return LatentCache.encode(self._encoder, pixels)

    def loss(self, pred: torch.Tensor, target: torch.Tensor, batch: list[Sample], flips: list[bool]) -> torch.Tensor:
        """Each picture's loss: the mean squared error, over its mask's part when the loss is masked
        (:mod:`trainer.data.masks`)."""
        err = F.mse_loss(pred.float(), target.float(), reduction="none")
        if not self.config.dataset.masked_loss:
            return err.mean(dim=(1, 2, 3))
        return masked_mean(err, self.loss_weights(batch, flips, tuple(err.shape[-2:])).to(err.device))

    def loss_weights(self, batch: list[Sample], flips: list[bool], size: tuple[int, ...]) -> torch.Tensor:
        """(B, 1, H, W): 1 inside each picture's mask, ``dataset.unmasked_weight`` outside; 1 without a mask."""
        floor = self.config.dataset.unmasked_weight
        out = []
        for s, flip in zip(batch, flips):
            key = (s.path, flip, size)
            if key not in self._weights:
                w = None if s.prior else mask_weights(s.path, s.bucket, flip, (size[0], size[1]), floor)
                self._weights[key] = torch.ones(1, *size) if w is None else w
            out.append(self._weights[key])
        return torch.stack(out)

    def set_vae_dtype(self, dtype: torch.dtype) -> None:
        for cache in (self.cache, self._encoder):
            if cache is not None:
                cache.vae_dtype = dtype

    def close(self) -> None:
        if self._loader is not None:
            self._loader.shutdown(wait=False, cancel_futures=True)
        self._pixels.clear()


def caption_rng(seed: int, epoch: int, step: int, micro: int, rank: int = 0) -> random.Random:
    """The caption shuffles and dropouts of one micro-batch: from its place in the run, never from a global draw."""
    return random.Random(f"{seed}:{epoch}:{step}:{micro}:{f'{rank}:' if rank else ''}captions")


def _load_pixels(batch, flips: list[bool]) -> torch.Tensor:
    return torch.stack([image_tensor(s.path, s.bucket, f) for s, f in zip(batch, flips)])
