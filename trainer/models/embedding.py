"""Training the trigger word's own token embeddings beside the LoRA ("pivotal tuning").

A trigger such as ``zxc`` is a rare word: the base model's text encoder gives it a vector that carries little,
so the UNet LoRA has to pull the whole character out of a weak signal and tends to tie it to the other words
of the captions instead (the character then shows up without its trigger). Training the trigger's input
embeddings gives the LoRA a strong, distinct signal to attach the character to.

The trained part is a delta per trigger token, added to the text encoder's input embeddings only where the
trigger's whole token sequence appears (other words that share one of its word pieces are left alone); it
starts at zero, so step 0 is the base model. The result is written as a textual-inversion file
(``embedding.safetensors``: ``emb_params`` for SD1.5, ``clip_l``/``clip_g`` for SDXL) that AUTOMATIC1111,
Forge, ComfyUI and diffusers' ``load_textual_inversion`` load under the trigger's name, beside the LoRA.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import load_file

from trainer.errors import UserError
from trainer.message import msg
from trainer.models.conditioning import text_pairs
from trainer.models.family import families
from trainer.models.family import family as model_family
from trainer.tensor_files import save_safetensors

if TYPE_CHECKING:
    from transformers import PreTrainedModel

EMBEDDING_FILE = "embedding.safetensors"
EMBEDDING_EMA_FILE = "embedding_ema.safetensors"  # beside lora_ema.safetensors


def trigger_token_ids(tokenizer, trigger: str) -> list[int]:
    ids = tokenizer(trigger, add_special_tokens=False).input_ids
    if not ids:
        raise UserError(msg("error.trigger.no_tokens", trigger=trigger))
    return list(ids)


class TriggerEmbedding(torch.nn.Module):
    """Trainable deltas for the trigger's tokens in each text encoder, applied by forward hooks on the encoders'
    token-embedding layers. ``deltas[i]`` has one row per token of the trigger in encoder ``i``."""

    def __init__(self, encoders: list[PreTrainedModel], tokenizers: list, trigger: str):
        super().__init__()
        if not trigger.strip():
            raise UserError(msg("error.trigger.needed"))
        self.trigger = trigger
        self.encoders = encoders
        self.token_ids = [trigger_token_ids(tok, trigger) for tok in tokenizers]
        self.deltas = torch.nn.ParameterList(
            torch.nn.Parameter(torch.zeros(len(ids), enc.get_input_embeddings().embedding_dim))  # type: ignore[call-overload]  # CLIP's is an nn.Embedding
            for ids, enc in zip(self.token_ids, encoders)
        )
        # the token sequences as tensors, moved with the module: nothing is copied to the device per forward
        for i, ids in enumerate(self.token_ids):
            self.register_buffer(f"_pattern{i}", torch.tensor(ids), persistent=False)
        self._handles: list = []

    def install(self) -> TriggerEmbedding:
        self.remove()
        for i, enc in enumerate(self.encoders):
            self._handles.append(enc.get_input_embeddings().register_forward_hook(self._hook(i)))
        return self

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def _hook(self, i: int):
        def hook(_module, args, output):
            return output + _placed(args[0], getattr(self, f"_pattern{i}"), self.deltas[i]).to(output.dtype)

        return hook

    def vectors(self) -> list[torch.Tensor]:
        """The trigger's input embeddings as trained (base rows + deltas), fp32 on the CPU, one per encoder."""
        out = []
        for ids, delta, enc in zip(self.token_ids, self.deltas, self.encoders):
            base = enc.get_input_embeddings().weight[ids].detach().float().cpu()  # type: ignore[index]  # an nn.Embedding's weight
            out.append(base + delta.detach().float().cpu())
        return out


def _placed(input_ids: torch.Tensor, pattern: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """``delta``'s rows at the positions of every complete occurrence of ``pattern`` (token ids) in ``input_ids``
    (B, L), zeros elsewhere: shape (B, L, dim)."""
    n = len(pattern)
    b, length = input_ids.shape
    placed = torch.zeros(b, length, delta.shape[1], device=delta.device, dtype=delta.dtype)
    if length < n:
        return placed
    starts = (input_ids.unfold(1, n, 1) == pattern).all(-1).to(delta.dtype)  # (B, L - n + 1)
    for j in range(n):
        mask = torch.nn.functional.pad(starts, (j, n - 1 - j))  # token j of an occurrence sits j after its start
        placed = placed + mask.unsqueeze(-1) * delta[j]
    return placed


def write_embedding(path: Path, emb: TriggerEmbedding, family: str, metadata: dict[str, str] | None = None) -> Path:
    vectors = emb.vectors()
    tensors = {key: v.to(torch.float16).contiguous() for key, v in zip(model_family(family).embedding_keys, vectors)}
    save_safetensors(tensors, path, {"trigger": emb.trigger, **(metadata or {})})
    return path


def embedding_beside(lora_file: str | Path) -> Path | None:
    """The trigger embedding saved with a LoRA file (the EMA one for ``lora_ema``), or None."""
    lora_file = Path(lora_file)
    path = lora_file.parent / (EMBEDDING_EMA_FILE if "_ema" in lora_file.stem else EMBEDDING_FILE)
    return path if path.is_file() else None


def load_embedding(pipe, path: str | Path, trigger: str) -> None:
    """Load a trained trigger embedding into a diffusers pipeline (undo with ``unload_embedding``).

    A trigger its tokenizer already holds as a token ("star", "woman", "tok") cannot be added under its own name
    (diffusers' ``load_textual_inversion`` refuses it), so its vectors go in as training put them: a delta on the
    trigger's tokens wherever the whole trigger appears (:class:`TriggerEmbedding`)."""
    tensors = load_file(str(path))
    # the file's keys say whose it is (textual-inversion keys per text encoder: one for SD1.5, SDXL's named
    # after the CLIP models)
    for f in families():
        if all(key in tensors for key in f.embedding_keys):
            pairs = [(getattr(pipe, te.tokenizer), getattr(pipe, te.component), tensors[te.embedding_key])
                     for te in f.text_encoders]
            if any(taken(tok, trigger) for tok, _, _ in pairs):
                pipe.__dict__[_HOOKED] = _hooked(pairs, trigger)
                return
            for tok, enc, vectors in pairs:
                pipe.load_textual_inversion(vectors, token=trigger, text_encoder=enc, tokenizer=tok)
            return
    expected = ", or ".join(" and ".join(f.embedding_keys) for f in families())
    raise UserError(msg("error.trigger.not_embedding", path=path, expected=expected))


_HOOKED = "_trigger_embedding_hooked"  # the pipeline's attribute holding a hooked embedding (load_embedding)


def taken(tokenizer, trigger: str) -> bool:
    """Whether ``trigger`` is already one of the tokenizer's tokens (or the name of an embedding's second vector),
    so that a textual-inversion file cannot be added under it."""
    vocab = tokenizer.get_vocab()
    return trigger in vocab or f"{trigger}_1" in vocab


def _hooked(pairs: list, trigger: str) -> TriggerEmbedding:
    """The file's vectors (per encoder: its tokenizer, encoder and vectors) as a :class:`TriggerEmbedding` hooked
    into the encoders."""
    emb = TriggerEmbedding([enc for _, enc, _ in pairs], [tok for tok, _, _ in pairs], trigger)
    with torch.no_grad():
        for i, ((_, enc, vectors), ids) in enumerate(zip(pairs, emb.token_ids)):
            if vectors.shape[0] != len(ids):
                raise ValueError(f"the file holds {vectors.shape[0]} vector(s) where the trigger {trigger!r} is "
                                 f"{len(ids)} token(s)")
            base = enc.get_input_embeddings().weight[ids].detach().float().cpu()
            emb.deltas[i].copy_(vectors.float() - base)
    return emb.to(pairs[0][1].device).install()


def _loaded_tokens(tokenizer, trigger: str) -> list[str]:
    """The tokens diffusers added for a loaded embedding: the trigger, and ``trigger_1``... for more vectors."""
    extra = re.compile(re.escape(trigger) + r"_\d+")
    return [tok for tok in tokenizer.get_added_vocab() if tok == trigger or extra.fullmatch(tok)]


def unload_embedding(pipe, trigger: str) -> None:
    """Undo ``load_embedding``: every token it added goes (diffusers' unload takes them by name), or its hook."""
    hooked = pipe.__dict__.pop(_HOOKED, None)
    if hooked is not None:
        hooked.remove()
    for tokenizer, encoder in text_pairs(pipe):
        tokens = _loaded_tokens(tokenizer, trigger)
        if tokens:
            pipe.unload_textual_inversion(tokens, tokenizer=tokenizer, text_encoder=encoder)
