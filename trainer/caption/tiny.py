"""Random-weight captioners of the real architectures, for tests and demos without a model hub
(``python -m trainer tiny-captioner KIND OUT_DIR``), the way :mod:`trainer.models.tiny` builds the bases.

Each is saved in the layout its loader reads from a real download: the tagger as ``model.onnx`` (one NHWC float32
BGR input, one probability output) and ``selected_tags.csv``; Florence-2 and BLIP by ``save_pretrained`` with
their processors. Their captions are nonsense, but every line of the code users run is taken.
"""

from __future__ import annotations

import csv
import json
import string
from pathlib import Path

import numpy as np

from trainer.models.tokenizer import _bytes_to_unicode

TAGGER_SIZE = 32
# (name, category) in the CSV's order: ratings, general tags, character names, as the real file mixes them
TINY_TAGS = [("general", 9), ("sensitive", 9), ("questionable", 9), ("explicit", 9),
             ("1girl", 0), ("solo", 0), ("hat", 0), ("red_hat", 0), ("outdoors", 0), ("grass", 0), ("smile", 0),
             ("simple_background", 0), ("^_^", 0), ("zxc_(demo)", 4), ("other_character", 4)]  # fmt: skip
MAX_TINY_TOKENS = 6  # the tiny generators' own limit (their generation_config): a short caption, quickly


def build_tiny_captioner(kind: str, out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny captioner of ``kind`` ("tagger", "florence2", "blip") into ``out_dir``; return the folder."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    {"tagger": _tagger, "florence2": _florence2, "blip": _blip}[kind](out, seed)
    return out


def _tagger(out: Path, seed: int) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    n = len(TINY_TAGS)
    # mean colour (0-255, BGR) -> a linear layer -> sigmoid: probabilities that differ with the picture's colours
    weight = numpy_helper.from_array((rng.standard_normal((3, n)) / 40).astype(np.float32), "weight")
    bias = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias")
    nodes = [
        helper.make_node("ReduceMean", ["input"], ["mean"], axes=[1, 2], keepdims=0),
        helper.make_node("MatMul", ["mean", "weight"], ["logits_raw"]),
        helper.make_node("Add", ["logits_raw", "bias"], ["logits"]),
        helper.make_node("Sigmoid", ["logits"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny-wd14-tagger",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", TAGGER_SIZE, TAGGER_SIZE, 3])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", n])],
        initializer=[weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # every onnxruntime since 1.10 reads it
    onnx.checker.check_model(model)
    onnx.save(model, out / "model.onnx")
    with open(out / "selected_tags.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["tag_id", "name", "category", "count"])
        for i, (name, category) in enumerate(TINY_TAGS):
            w.writerow([i, name, category, 1000 - i])


def _short_generation(model, suppress: list[int]) -> None:
    """A few tokens and none of the special ones: the random decoder's caption is short and not empty."""
    model.generation_config.max_new_tokens = MAX_TINY_TOKENS
    model.generation_config.min_new_tokens = 2
    model.generation_config.suppress_tokens = suppress


def _florence2(out: Path, seed: int) -> None:
    import torch
    from transformers import (
        BartTokenizer,
        CLIPImageProcessor,
        Florence2Config,
        Florence2ForConditionalGeneration,
        Florence2Processor,
    )

    # a byte-level BPE vocabulary with no merges: every text encodes, letter by letter
    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", *_bytes_to_unicode().values(),
                                         "<mask>", "<image>"])}
    tokenizer = BartTokenizer(vocab=vocab, merges=[], extra_special_tokens={"image_token": "<image>"})
    # one DaViT stage of stride 4 on 32 px: 8 × 8 patches and the pooled token
    images = CLIPImageProcessor(size={"height": 32, "width": 32}, do_center_crop=False, image_seq_length=65)
    config = Florence2Config(
        text_config={"model_type": "bart", "vocab_size": len(tokenizer), "max_position_embeddings": 256,
                     "encoder_layers": 1, "decoder_layers": 1, "encoder_ffn_dim": 16, "decoder_ffn_dim": 16,
                     "encoder_attention_heads": 1, "decoder_attention_heads": 1, "d_model": 16,
                     "bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2},
        vision_config={"depths": [1], "patch_size": [7], "patch_stride": [4], "patch_padding": [3],
                       "patch_prenorm": [False], "embed_dim": [16], "num_heads": [1], "num_groups": [1],
                       "window_size": 4, "projection_dim": 16},
        image_token_id=tokenizer.image_token_id)
    torch.manual_seed(seed)
    model = Florence2ForConditionalGeneration(config)
    # only lowercase letters and spaces come out: a byte-level decoder's random bytes would not be UTF-8
    space = _bytes_to_unicode()[ord(" ")]
    keep = {vocab[c] for c in string.ascii_lowercase} | {vocab[space], vocab["</s>"]}
    _short_generation(model, [i for i in vocab.values() if i not in keep])
    model.save_pretrained(out)
    Florence2Processor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)


def _blip(out: Path, seed: int) -> None:
    import torch
    from transformers import (
        BertTokenizer,
        BlipConfig,
        BlipForConditionalGeneration,
        BlipImageProcessor,
        BlipProcessor,
    )

    words = ["a", "picture", "of", "the", "red", "hat", "on", "grass", "with", "and"]
    pieces = list(string.ascii_lowercase + string.digits)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *pieces, *("##" + c for c in pieces), "[DEC]"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    tokenizer = BertTokenizer(vocab=vocab, bos_token="[DEC]")  # BLIP's decoder starts from [DEC]
    config = BlipConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                     "intermediate_size": 32, "max_position_embeddings": 64, "bos_token_id": vocab["[DEC]"],
                     "pad_token_id": 0, "sep_token_id": 3, "eos_token_id": 3},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16, image_text_hidden_size=16)
    torch.manual_seed(seed)
    model = BlipForConditionalGeneration(config)
    _short_generation(model, [0, 1, 2, 4, vocab["[DEC]"]])
    model.save_pretrained(out)
    BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tokenizer).save_pretrained(out)
    (out / "tiny.json").write_text(json.dumps({"kind": "blip", "seed": seed}) + "\n", encoding="utf-8")
