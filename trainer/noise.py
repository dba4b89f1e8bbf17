"""Warnings of the libraries underneath that tell a user nothing they can act on, silenced once for the app and the
command line alike (``trainer/__init__``). Each is dropped by its own words: the rest of those loggers still speaks."""

from __future__ import annotations

import logging


def _drop(fragment: str):
    return lambda record: fragment not in record.getMessage()


def quiet() -> None:
    # peft imports bitsandbytes where it is installed, whose CPU backend then warns at every start that it could not
    # load its NF4 kernels from the hub ("pip install kernels"): nothing here runs NF4 on a CPU
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
    # "`CLIPImageProcessor` requires torchvision (not installed); falling back to `CLIPImageProcessorPil`": diffusers'
    # pipelines import the image processors at import, and the Pillow ones serve (torch's CPU wheel has no torchvision)
    logging.getLogger("transformers.utils.import_utils").addFilter(_drop("requires torchvision"))
    # diffusers warns at every ``.to(dtype)`` of a model, even one that keeps no module in float32 (it names an empty
    # list): the VAE and the denoiser are cast so on purpose
    logging.getLogger("diffusers.models.modeling_utils").addFilter(_drop("should be kept in float32: []"))
