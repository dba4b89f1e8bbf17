"""What SD1.5 and SDXL share: a UNet trained as denoising diffusion (DDPM noise, the noise or the velocity as the
target, min-SNR weights) and sampled with DDIM. Not a family itself (it registers nothing)."""

from __future__ import annotations

import inspect
from typing import ClassVar

from trainer.message import msg
from trainer.models.family import ModelFamily

FEW_STEP_SCHEDULERS = frozenset({"LCMScheduler", "TCDScheduler"})  # samplers made for consistency-distilled UNets


class UNetFamily(ModelFamily):
    denoiser_component: ClassVar[str] = "unet"
    denoiser_targets: ClassVar[dict[str, list[str]]] = {
        "attn": ["to_q", "to_k", "to_v", "to_out.0"],
        "attn_ff": ["to_q", "to_k", "to_v", "to_out.0", "ff.net.0.proj", "ff.net.2", "proj_in", "proj_out"],
        "cross_kv": ["attn2.to_k", "attn2.to_v"],  # cross-attention (attn2) reads the text; attn1 is self-attention
    }
    conv_lora: ClassVar[bool] = True
    writes_single_file: ClassVar[bool] = True  # families/ldm.py
    # SD1.5's pipeline: encode_prompt returns the two hidden states, the negative's "" (or the negative prompt's)
    prompt_embedding_names: ClassVar[tuple[str, ...]] = ("prompt_embeds", "negative_prompt_embeds")

    def noise_schedule(self, scheduler_config, prediction_type):
        from trainer.models.families.noise import DDPMSchedule

        return DDPMSchedule(scheduler_config, prediction_type)

    def predict(self, denoiser, noisy, timesteps, hidden, pooled, buckets):
        added = self.added_cond_kwargs(pooled, buckets, noisy.device)
        return denoiser(noisy, timesteps, hidden, added_cond_kwargs=added).sample

    def sampling_pipeline(self, pipe, prediction_type):
        from diffusers import DDIMScheduler

        # the copy keeps the settings its class takes (SD 1.5's requires_safety_checker: without it diffusers warns,
        # at every sampling, that the safety checker is off)
        settings = {k: v for k, v in pipe.config.items() if k in inspect.signature(type(pipe)).parameters
                    and k not in pipe.components}
        sampler = type(pipe)(**pipe.components, **settings)
        sampler.scheduler = DDIMScheduler.from_config(pipe.scheduler.config, prediction_type=prediction_type,
                                                      clip_sample=False)
        return sampler

    def distilled_reason(self, configs):
        """Few-step UNets by what their own configs carry: LCM's and TCD's schedulers (LCM, Hyper-SD), a guidance
        embedding (``time_cond_proj_dim``: LCM's guidance-conditioned UNets), or a scheduler that spaces its steps
        "trailing" for an epsilon model without a zero-terminal-SNR schedule: SDXL-Turbo ships its scheduler so (Euler
        Ancestral, trailing; diffusers' docs draw SD-Turbo the same way), and the ordinary bases do not (SD1.5 and
        SDXL ship "leading"; trailing otherwise goes with zero terminal SNR). SDXL-Lightning and most Hyper-SD
        releases ship no scheduler of their own: their name, or what their files record of it, is the only hint."""
        if configs.scheduler_class in FEW_STEP_SCHEDULERS:
            return msg("base.distilled_scheduler", scheduler=configs.scheduler_class)
        if (configs.denoiser or {}).get("time_cond_proj_dim"):
            return msg("base.distilled_guidance")
        scheduler = configs.scheduler or {}
        if (scheduler.get("timestep_spacing") == "trailing" and not scheduler.get("rescale_betas_zero_snr")
                and scheduler.get("prediction_type", "epsilon") == "epsilon"):
            return msg("base.distilled_trailing", scheduler=configs.scheduler_class)
        return super().distilled_reason(configs)

    def prediction_type(self, pipe):
        return pipe.scheduler.config.get("prediction_type", "epsilon")

    def models_from_configs(self, folder):
        import transformers
        from diffusers import AutoencoderKL, UNet2DConditionModel
        from transformers import CLIPTextConfig

        unet = UNet2DConditionModel.from_config(UNet2DConditionModel.load_config(str(folder / "unet")))
        vae = AutoencoderKL.from_config(AutoencoderKL.load_config(str(folder / "vae")))
        encoders = [getattr(transformers, te.model_class)(CLIPTextConfig.from_pretrained(str(folder / te.component)))
                    for te in self.text_encoders]
        return unet, vae, encoders

    def denoiser_from_config(self, config):
        from diffusers import UNet2DConditionModel

        return UNet2DConditionModel.from_config(config)

    def activation_width(self, denoiser_config):
        return sum(denoiser_config["block_out_channels"])


def ddim_scheduler(config: dict):
    """A DDIM scheduler from ``config`` (the tiny and demo bases sample with one)."""
    from diffusers import DDIMScheduler

    return DDIMScheduler(**config)
