"""How a family trains its denoiser: how a timestep is drawn, how a picture is noised at it, what the denoiser
learns to predict there, and how each sample's loss is weighted. Not a family itself (it registers nothing): the
family adapters build one of these for a run (:meth:`trainer.models.family.ModelFamily.noise_schedule`).

Everywhere outside this file a timestep is an integer ``t`` in ``[0, num_timesteps)``, more noise as it grows, so
the validation loss and the model measures pick theirs the same way for every family;
:meth:`NoiseSchedule.model_timesteps` turns it into what the family's denoiser takes.
"""

from __future__ import annotations

import torch


class NoiseSchedule:
    """The base: subclasses implement the four steps."""

    num_timesteps: int

    def draw(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` training timesteps (integers on the CPU) from ``generator``."""
        raise NotImplementedError

    def noised(self, x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the noisy latents, the denoiser's target) of clean latents ``x0`` with ``noise`` at timesteps ``t``."""
        raise NotImplementedError

    def model_timesteps(self, t: torch.Tensor) -> torch.Tensor:
        """What the denoiser is given for timesteps ``t``."""
        return t

    def weights(self, t: torch.Tensor, min_snr_gamma: float) -> torch.Tensor | None:
        """Each sample's loss weight at timesteps ``t`` (None: all 1)."""
        return None


class DDPMSchedule(NoiseSchedule):
    """Denoising diffusion (SD1.5, SDXL): timesteps drawn uniformly, ``x_t = √ᾱ·x0 + √(1−ᾱ)·ε``, the target the
    noise (epsilon) or the velocity (v-prediction), min-SNR-γ weights when asked."""

    def __init__(self, scheduler_config, prediction_type: str):
        from diffusers import DDPMScheduler

        self.scheduler = DDPMScheduler.from_config(scheduler_config, prediction_type=prediction_type)
        self.prediction_type = prediction_type
        self.num_timesteps = int(self.scheduler.config.num_train_timesteps)

    def draw(self, n, generator):
        return torch.randint(0, self.num_timesteps, (n,), generator=generator)

    def noised(self, x0, noise, t):
        noisy = self.scheduler.add_noise(x0, noise, t)
        if self.prediction_type == "v_prediction":
            return noisy, self.scheduler.get_velocity(x0, noise, t)
        return noisy, noise

    def weights(self, t, min_snr_gamma):
        if min_snr_gamma <= 0:
            return None
        return min_snr_weights(self.scheduler, t, min_snr_gamma, self.prediction_type)


def min_snr_weights(scheduler, timesteps, gamma: float, prediction_type: str) -> torch.Tensor:
    """Min-SNR-γ loss weights (Hang et al. 2023, arXiv:2303.09556): min(SNR, γ) / SNR, or / (SNR + 1) for v."""
    from diffusers.training_utils import compute_snr

    snr = compute_snr(scheduler, timesteps)
    clipped = torch.minimum(snr, torch.full_like(snr, gamma))
    return clipped / (snr + 1) if prediction_type == "v_prediction" else clipped / snr


class FlowMatchSchedule(NoiseSchedule):
    """Rectified flow (SD3.5, Flux.1): ``x_t = (1−σ)·x0 + σ·ε`` and the target the velocity ``ε − x0``. The
    noise levels σ are the base's own (its scheduler's ``shift`` bends them towards noise, as it samples);
    training timesteps are drawn logit-normal (the SD3 paper's default, as diffusers' and sd-scripts' SD3 and Flux
    trainers draw them) or uniformly, and every sample weighs the same."""

    logit_mean = 0.0
    logit_std = 1.0
    """The logit-normal draw's mean and standard deviation (the SD3 paper's; an sd-scripts export writes them)."""

    def __init__(self, scheduler_config, sampling: str = "logit_normal"):
        from diffusers import FlowMatchEulerDiscreteScheduler

        scheduler = FlowMatchEulerDiscreteScheduler.from_config(scheduler_config)
        self.num_timesteps = int(scheduler.config.num_train_timesteps)
        # the scheduler's training timesteps run from the most noise down; ours count up with the noise
        self.timesteps = scheduler.timesteps.flip(0).float()
        self._on_device: dict[torch.device, torch.Tensor] = {}  # the timesteps copied once to each device
        self.sampling = sampling

    def draw(self, n, generator):
        if self.sampling == "uniform":
            return torch.randint(0, self.num_timesteps, (n,), generator=generator)
        u = torch.sigmoid(torch.randn((n,), generator=generator) * self.logit_std + self.logit_mean)
        return (u * self.num_timesteps).long().clamp(max=self.num_timesteps - 1)

    def _timesteps_on(self, device: torch.device) -> torch.Tensor:
        if device not in self._on_device:
            self._on_device[device] = self.timesteps.to(device)
        return self._on_device[device]

    def _sigmas(self, t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        sigma = self._timesteps_on(t.device)[t] / self.num_timesteps
        return sigma.to(like.dtype).view(-1, *([1] * (like.ndim - 1)))

    def noised(self, x0, noise, t):
        sigma = self._sigmas(t, x0)
        return (1.0 - sigma) * x0 + sigma * noise, noise - x0

    def model_timesteps(self, t):
        return self._timesteps_on(t.device)[t]
