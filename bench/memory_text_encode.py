"""Measured live bytes of a frozen text encoder encoding captions without gradients, at full width on the CPU: what
``model.offload_text_encoders`` adds to the text encoders' weights while it encodes before training
(``trainer.plan.memory.TEXT_ENCODE``).

Each encoder of SD3.5 Medium's shipped configs (CLIP-L, OpenCLIP-G, T5-XXL; SD1.5's and SDXL's CLIPs are the same
shapes) is built with 2 and 3 layers, random weights, in the run's weight dtype, and encodes a batch of captions of
its full token length as the trainer does (under bf16 autocast for half; the CLIPs with every hidden state kept, T5
outside autocast). The peak above the start is counted as :mod:`bench.memory_probe` counts a training step (live
tensor bytes, and the allocator's own total beside it), and carried to the real depth through the two.

    python bench/memory_text_encode.py         # ~10 minutes on 2 cores (T5 in bf16 is slow on a CPU), ~3 GB of memory
    python bench/memory_text_encode.py qwen3   # Z-Image's Qwen3-4B alone
"""

from __future__ import annotations

import contextlib
import json
import sys

import torch

sys.path.insert(0, ".")

from bench.memory_probe import peaks
from trainer.models.family import family as model_family

# kind → (the family whose shipped configs hold it, its component, tokens a caption); Z-Image's Qwen3-4B reads the
# chat-templated caption padded to 512 tokens and keeps every hidden state (it asks for the second-to-last)
KINDS = {"clip_l": ("sd3", "text_encoder", 77), "clip_g": ("sd3", "text_encoder_2", 77),
         "t5": ("sd3", "text_encoder_3", 256), "qwen3": ("zimage", "text_encoder", 512)}
DTYPES = {"fp32": torch.float32, "half": torch.bfloat16}


def build(kind: str, layers: int, dtype: torch.dtype):
    import transformers

    folder = model_family(KINDS[kind][0]).config_dir / KINDS[kind][1]
    config = transformers.AutoConfig.from_pretrained(str(folder))
    full = config.num_layers if kind == "t5" else config.num_hidden_layers
    if kind == "t5":
        config.num_layers = layers
    else:
        config.num_hidden_layers = layers
    cls = {"t5": transformers.T5EncoderModel, "qwen3": transformers.Qwen3Model}.get(
        kind, transformers.CLIPTextModelWithProjection)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        model = cls(config).eval()
    finally:
        torch.set_default_dtype(previous)
    return model, full, config.vocab_size


def measure(kind: str, precision: str, layers: int, batch: int) -> dict[str, int]:
    model, _, vocab = build(kind, layers, DTYPES[precision])
    ids = torch.randint(0, vocab, (batch, KINDS[kind][2]))
    half = precision == "half" and kind != "t5"  # T5 never runs under autocast (families/sd3.py)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if half else contextlib.nullcontext()

    def encode():
        with torch.no_grad(), autocast:
            if kind == "t5":
                return model(ids)[0]
            if kind == "qwen3":
                return model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True
                             ).hidden_states[-2]
            out = model(ids, output_hidden_states=True)
            return out.hidden_states[-2], out.text_embeds

    encode()  # the first call allocates what later calls reuse
    return peaks(encode)


def main() -> None:
    for kind in sys.argv[1:] or KINDS:
        full = build(kind, 1, torch.float32)[1]
        for precision in DTYPES:
            cells = {(n, b): measure(kind, precision, n, b) for n in (2, 3) for b in (1, 2)}
            for b in (1, 2):
                two, three = cells[(2, b)]["tensors"], cells[(3, b)]["tensors"]
                carried = two + (three - two) * (full - 2)
                print(json.dumps({"kind": kind, "precision": precision, "batch": b, "layers_2": two,
                                  "layers_3": three, "full_depth": full, "estimate": carried,
                                  "allocator_2": cells[(2, b)]["allocator"],
                                  "allocator_3": cells[(3, b)]["allocator"]}))


if __name__ == "__main__":
    main()
