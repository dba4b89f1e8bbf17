"""One micro-batch's loss: captions, latents, noise and timesteps drawn from the run's seed, the denoiser's
prediction against the target, the family's loss weights (min-SNR for DDPM) and prior-image weights. How a
picture is noised, what the denoiser is called with and what it learns are the family adapter's."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainer.data.batches import LatentCache, process_caption
from trainer.train.parts import TrainerParts


class LossMixin(TrainerParts):
    """The Trainer's forward pass (models and data are set up by PreparationMixin)."""

    def compute_loss(self, batch, epoch: int, micro: int, pos: int = 0) -> torch.Tensor:
        cfg = self.config
        # Every random draw of this micro-batch comes from (seed, step, micro) or from its place in the
        # epoch: identical after a resume, and computable ahead of time by the prefetcher.
        # Each rank draws its own noise, timesteps and caption choices; rank 0 the same as a single process.
        key = (cfg.train.seed, self.global_step, micro, *((self.dist.rank,) if self.dist.rank else ()))
        gen = torch.Generator().manual_seed(hash(key) & 0x7FFF_FFFF)
        crng = caption_rng(cfg.train.seed, epoch, self.global_step, micro, self.dist.rank)
        flips = self._flips(epoch, pos, len(batch))
        captions = [process_caption(s.caption, cfg.dataset, crng) for s in batch]
        if self.latents is not None:
            latents = self.latents.batch(batch, flips)
        else:
            pixels = self._batch_pixels(batch, epoch, pos, flips)
            with torch.no_grad():
                latents = LatentCache.encode(self._encoder(), pixels)
        latents = self.hooks.batch_latents(self, latents)
        noise = torch.randn(latents.shape, generator=gen).to(self.device)
        if cfg.train.noise_offset:
            noise = noise + cfg.train.noise_offset * torch.randn((*latents.shape[:2], 1, 1), generator=gen).to(self.device)
        noise = self.hooks.noise(self, noise)
        timesteps = self.schedule.draw(latents.shape[0], gen).to(self.device)
        noisy, target = self.schedule.noised(latents, noise, timesteps)
        with self.precision.autocast():
            hidden, pooled = self.text(captions)
            pred = self.adapter.predict(self.denoiser, noisy.to(self.precision.weight_dtype),
                                        self.schedule.model_timesteps(timesteps), hidden, pooled,
                                        [s.bucket for s in batch])
        loss = F.mse_loss(pred.float(), target.float(), reduction="none").mean(dim=(1, 2, 3))
        weights = self.schedule.weights(timesteps, cfg.train.min_snr_gamma)
        if weights is not None:
            loss = loss * weights
        if cfg.dataset.prior_loss_weight != 1.0 and any(s.prior for s in batch):
            loss = loss * torch.tensor([cfg.dataset.prior_loss_weight if s.prior else 1.0 for s in batch],
                                       device=loss.device)
        return loss.mean()


def caption_rng(seed: int, epoch: int, step: int, micro: int, rank: int = 0):
    import random

    return random.Random(f"{seed}:{epoch}:{step}:{micro}:{f'{rank}:' if rank else ''}captions")
