"""Min-SNR-γ weights (Hang et al. 2023) agree with diffusers' ``compute_snr``, the SNR the demo base's
pretraining uses, on SD1.5's noise schedule."""

import torch
from diffusers import DDPMScheduler
from diffusers.training_utils import compute_snr

from trainer.models.families.noise import min_snr_weights as _min_snr_weights

SD15 = {"beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear", "num_train_timesteps": 1000}


def test_min_snr_weights_are_min_snr_gamma_over_snr_with_diffusers_snr():
    sched = DDPMScheduler(**SD15)
    t = torch.tensor([0, 1, 250, 500, 750, 999])
    snr = compute_snr(sched, t)
    for gamma in (1.0, 5.0):
        eps = _min_snr_weights(sched, t, gamma, "epsilon")
        torch.testing.assert_close(eps, snr.clamp(max=gamma) / snr, rtol=1e-6, atol=0)
        v = _min_snr_weights(sched, t, gamma, "v_prediction")
        torch.testing.assert_close(v, snr.clamp(max=gamma) / (snr + 1), rtol=1e-6, atol=0)
    # noisy steps (SNR below γ) keep their full weight under epsilon; clean ones are turned down
    eps = _min_snr_weights(sched, t, 5.0, "epsilon")
    assert eps[-1] == 1.0 and eps[0] < 0.01
