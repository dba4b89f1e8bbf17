"""Florence-2 and BLIP through transformers' own classes (no remote code): a picture in, a sentence out.

Florence-2 (base 0.23B, large 0.77B) runs its detailed-caption task, the one fluxgym captions with; BLIP (large,
0.47B) is the small fallback for a machine where Florence-2 will not load. Both decode with a few beams, greedy
and seedless, so the same picture gets the same caption (the preview and the full run agree).
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from trainer.caption.models import free_memory, torch_device, unreadable

FLORENCE_TASK = "<DETAILED_CAPTION>"
MAX_NEW_TOKENS = 160  # a detailed caption is 40-90 tokens; this only stops a model that never ends
NUM_BEAMS = 3  # what both model cards caption with


class _Generator:
    """A loaded image-to-text model: processor and network on one device, in half precision on a GPU."""

    def __init__(self, kind: str, model: str, net: Any, processor: Any, device: str, prompt: str | None):
        self.kind, self.model, self.net, self.processor = kind, model, net, processor
        self.device, self.prompt = device, prompt

    def caption(self, images: list[Image.Image]) -> list[str]:
        import torch

        images = [im.convert("RGB") for im in images]
        kwargs: dict[str, Any] = {"images": images, "return_tensors": "pt"}
        if self.prompt is not None:
            kwargs.update(text=[self.prompt] * len(images), padding=True)
        inputs = self.processor(**kwargs).to(self.device)
        inputs["pixel_values"] = inputs["pixel_values"].to(self.net.dtype)
        # a model's own limit (its generation_config.json) wins over ours
        limit = getattr(self.net.generation_config, "max_new_tokens", None) or MAX_NEW_TOKENS
        with torch.inference_mode():
            out = self.net.generate(**inputs, max_new_tokens=limit, num_beams=NUM_BEAMS, do_sample=False)
        return [" ".join(text.split()) for text in self.processor.batch_decode(out, skip_special_tokens=True)]

    def close(self) -> None:
        self.net = None
        free_memory()


def _load(kind: str, model: str, device: str, model_class: str, prompt: str | None) -> _Generator:
    import torch
    import transformers
    from transformers import AutoProcessor

    dev = torch_device(device)
    dtype = torch.float16 if dev == "cuda" else torch.float32
    try:
        processor = AutoProcessor.from_pretrained(model)
        net = getattr(transformers, model_class).from_pretrained(model, dtype=dtype).to(dev).eval()
    except Exception as e:  # missing files, unknown hub id, offline, another architecture: one answer for the user
        raise unreadable(model, kind, e) from None
    return _Generator(kind, model, net, processor, dev, prompt)


def load_florence2(model: str, device: str = "auto") -> _Generator:
    return _load("florence2", model, device, "Florence2ForConditionalGeneration", FLORENCE_TASK)


def load_blip(model: str, device: str = "auto") -> _Generator:
    return _load("blip", model, device, "BlipForConditionalGeneration", None)
