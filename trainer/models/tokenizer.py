"""A real CLIP BPE tokenizer built offline.

Tiny test and demo models need the same tokenizer as SD1.5/SDXL (49,408 tokens) without a model hub. The
``open-clip-torch`` wheel ships the BPE merges (``bpe_simple_vocab_16e6.txt.gz``); from them the vocabulary
is rebuilt the way CLIP defines it: the 256 byte-characters, the same with ``</w>``, every merge joined, then
the two special tokens. The package is installed without its dependencies (it is only a data source here) and
is never imported, so torchvision is not needed.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from trainer.errors import UserError
from trainer.message import msg

N_MERGES = 49152 - 256 - 2  # CLIP's vocabulary size minus byte tokens and specials, as open_clip slices it


def _bpe_file() -> Path:
    spec = importlib.util.find_spec("open_clip")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(msg("error.tokenizer.package"))
    path = Path(next(iter(spec.submodule_search_locations))) / "bpe_simple_vocab_16e6.txt.gz"
    if not path.is_file():
        raise UserError(msg("error.tokenizer.vocab", path=path))
    return path


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2/CLIP's reversible byte → printable-character table.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


@lru_cache(maxsize=1)
def clip_vocab_and_merges() -> tuple[dict[str, int], list[str]]:
    with gzip.open(_bpe_file()) as f:
        lines = f.read().decode("utf-8").split("\n")
    merges = lines[1 : N_MERGES + 1]
    byte_chars = list(_bytes_to_unicode().values())
    tokens = byte_chars + [c + "</w>" for c in byte_chars]
    tokens += ["".join(m.split()) for m in merges]
    tokens += ["<|startoftext|>", "<|endoftext|>"]
    return {t: i for i, t in enumerate(tokens)}, merges


def write_clip_tokenizer_files(out_dir: str | Path) -> Path:
    """Write ``vocab.json`` and ``merges.txt`` (the slow-tokenizer files every CLIP loader understands)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vocab, merges = clip_vocab_and_merges()
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (out / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return out


def clip_tokenizer(model_max_length: int = 77, pad_token: str = "<|endoftext|>"):
    """A ``CLIPTokenizer`` identical in vocabulary to SD1.5's (SDXL's second tokenizer pads with "!")."""
    from transformers import CLIPTokenizer

    vocab, merges = clip_vocab_and_merges()
    return CLIPTokenizer(
        vocab=dict(vocab),
        merges=[tuple(m.split()) for m in merges],  # type: ignore[misc]  # the BPE backend takes pairs; the hint says strings
        model_max_length=model_max_length,
        pad_token=pad_token,
    )


def tiny_t5_tokenizer(model_max_length: int = 256):
    """A T5 tokenizer for tiny test models: the real class and special tokens (pad 0, end 1, unknown 2), a
    vocabulary of single characters (with and without the word-start mark), so any caption tokenizes offline."""
    import string

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import T5Tokenizer

    chars = list(string.ascii_lowercase + string.digits + ",.!?-'()")
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    vocab += [("▁" + c, -3.0) for c in chars] + [(c, -4.0) for c in chars]
    backend = Tokenizer(models.Unigram(vocab, unk_id=2, byte_fallback=False))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    backend.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                           special_tokens=[("</s>", 1)])
    return T5Tokenizer(tokenizer_object=backend, eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                           extra_ids=0, model_max_length=model_max_length)
