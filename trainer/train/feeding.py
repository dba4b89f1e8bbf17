"""A step's pictures: loaded ahead on a worker thread when latents are not cached, flipped by a seeded draw,
and encoded by the VAE when there is no latent cache."""

from __future__ import annotations

import torch

from trainer.data.batches import LatentCache, image_tensor
from trainer.train.parts import TrainerParts


class FeedingMixin(TrainerParts):
    """The Trainer's picture loading (``self._loader`` and ``self._pixels`` are set in its ``__init__``)."""

    def prefetch(self, epoch: int, start: int, group) -> None:
        """Without a latent cache, load the next step's images on a worker thread while this step computes
        (PIL decoding and resizing release the GIL), so data loading is off the critical path."""
        if self.latents is not None or not group:
            return
        if self._loader is None:
            from concurrent.futures import ThreadPoolExecutor

            self._loader = ThreadPoolExecutor(max_workers=max(1, self.config.train.num_workers),
                                              thread_name_prefix="lora-data")
        for i, batch in enumerate(group):
            pos = start + i
            key = (epoch, pos)
            if key not in self._pixels:
                flips = self._flips(epoch, pos, len(batch))
                self._pixels[key] = self._loader.submit(_load_pixels, batch, flips)

    def _flips(self, epoch: int, pos: int, n: int) -> list[bool]:
        if not self.config.dataset.flip:
            return [False] * n
        import random

        rank = f":{self.dist.rank}" if self.dist.rank else ""  # rank 0 draws what a single process draws
        rng = random.Random(f"{self.config.train.seed}:{epoch}:{pos}{rank}:flip")
        return [rng.random() < 0.5 for _ in range(n)]

    def _batch_pixels(self, batch, epoch: int, pos: int, flips: list[bool]) -> torch.Tensor:
        future = self._pixels.pop((epoch, pos), None)
        if future is not None:
            return future.result()
        return torch.stack([image_tensor(s.path, s.bucket, f) for s, f in zip(batch, flips)])

    def _encoder(self) -> LatentCache:
        if self._pixel_encoder is None:
            self._pixel_encoder = LatentCache(self.pipe.vae, self.device, self.precision.vae_dtype, None)
        return self._pixel_encoder


def _load_pixels(batch, flips: list[bool]) -> torch.Tensor:
    return torch.stack([image_tensor(s.path, s.bucket, f) for s, f in zip(batch, flips)])
