"""Random-weight mask makers of the real kinds, for tests and demos without a model hub
(``python -m trainer tiny-masker KIND OUT_DIR``), saved in the layout their loaders read from a real download.

CLIPSeg is ``CLIPSegForImageSegmentation`` with its processor (the offline CLIP tokenizer, a 32 px image
processor): random, but every line users run is taken. The background remover is an ONNX graph of a fixed 32 px
input whose output is each pixel's brightness: on a picture of a light subject on a dark ground it finds the
subject, so a test can check where the mask lies.
"""

from __future__ import annotations

from pathlib import Path

REMOVER_SIZE = 32


def build_tiny_masker(kind: str, out_dir: str | Path, seed: int = 0) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    {"clipseg": _clipseg, "rembg": _remover}[kind](out, seed)
    return out


def _clipseg(out: Path, seed: int) -> None:
    import torch
    from transformers import CLIPSegConfig, CLIPSegForImageSegmentation, CLIPSegProcessor, ViTImageProcessor

    from trainer.models.tokenizer import clip_tokenizer

    tokenizer = clip_tokenizer()
    config = CLIPSegConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "max_position_embeddings": 77,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                     "pad_token_id": tokenizer.pad_token_id},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16, reduce_dim=8, extract_layers=[0, 1], decoder_num_attention_heads=2,
        decoder_intermediate_size=16)
    torch.manual_seed(seed)
    CLIPSegForImageSegmentation(config).save_pretrained(out)
    images = ViTImageProcessor(size={"height": 32, "width": 32}, image_mean=[0.485, 0.456, 0.406],
                               image_std=[0.229, 0.224, 0.225])
    CLIPSegProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)


def _remover(out: Path, seed: int) -> None:
    import onnx
    from onnx import TensorProto, helper

    del seed  # no weights: the graph is the brightness itself
    size = REMOVER_SIZE
    nodes = [helper.make_node("ReduceMean", ["input"], ["output"], axes=[1], keepdims=1)]
    graph = helper.make_graph(
        nodes, "tiny-background-remover",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, size, size])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / "model.onnx")
