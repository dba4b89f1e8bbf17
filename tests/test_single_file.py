"""Single-file (original LDM / A1111 layout) checkpoints: write, read back with diffusers, shipped configs.

All offline: the tiny pipelines are built from configs, read back with ``local_files_only`` and the hub's
offline switch on, and the real-size shipped configs are only instantiated on the meta device.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from trainer.config.schema import ModelConfig
from trainer.models.base import MODEL_CONFIG_DIR, load_pipeline
from trainer.models.families import ldm as single_file
from trainer.models.tiny import build_tiny_pipeline, save_pipeline

FAMILIES = ("sd15", "sdxl")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    # The hub libraries read HF_HUB_OFFLINE once at import, so set their constants too, not only the env.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import diffusers.utils.constants
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(diffusers.utils.constants, "HF_HUB_OFFLINE", True, raising=False)


def _modules(pipe) -> dict[str, torch.nn.Module]:
    return {k: v for k, v in pipe.components.items() if isinstance(v, torch.nn.Module)}


def _assert_same_weights(a, b):
    mods_a, mods_b = _modules(a), _modules(b)
    assert set(mods_a) == set(mods_b)
    for name, module in mods_a.items():
        sa, sb = module.state_dict(), mods_b[name].state_dict()
        assert set(sa) == set(sb), name
        for key, tensor in sa.items():
            other = sb[key]
            assert not other.is_meta, f"{name}.{key} was never loaded"
            assert other.dtype == torch.float32, f"{name}.{key}"
            assert torch.equal(tensor, other), f"{name}.{key} differs after the round trip"


def _image(pipe):
    out = pipe(
        "a photo of a cat",
        num_inference_steps=2,
        generator=torch.Generator().manual_seed(0),
        output_type="np",
    )
    return out.images


def _public(config) -> dict:
    return {
        k: v for k, v in config.items() if not k.startswith("_")
    }  # not the _use_default_values bookkeeping


def _assert_same_pipeline(original, loaded):
    _assert_same_weights(original, loaded)
    assert type(loaded.scheduler) is type(original.scheduler)
    assert _public(loaded.scheduler.config) == _public(original.scheduler.config)
    diff = abs(_image(original) - _image(loaded)).max()
    assert diff <= 1e-5, diff


@pytest.mark.parametrize("family", FAMILIES)
def test_single_file_round_trip(tmp_path, family):
    pipe = build_tiny_pipeline(family)
    path = save_pipeline(pipe, tmp_path / "out", single_file=True)
    assert path.name == "model.safetensors"
    config_files = {
        p.relative_to(path.parent / "config").as_posix() for p in (path.parent / "config").rglob("*")
    }
    assert {
        "model_index.json",
        "scheduler/scheduler_config.json",
        "unet/config.json",
        "vae/config.json",
    } <= config_files
    assert not any(f.endswith((".safetensors", ".bin")) for f in config_files), (
        "the config folder holds weights"
    )

    loaded, info = load_pipeline(ModelConfig(base=str(path)))
    assert (info.kind, info.family) == ("single_file", family)
    _assert_same_pipeline(pipe, loaded)


@pytest.mark.parametrize("family", FAMILIES)
def test_diffusers_folder_round_trip(tmp_path, family):
    pipe = build_tiny_pipeline(family)
    folder = save_pipeline(pipe, tmp_path / "folder")
    loaded, info = load_pipeline(ModelConfig(base=str(folder)))
    assert (info.kind, info.family) == ("folder", family)
    _assert_same_pipeline(pipe, loaded)


@pytest.mark.parametrize("family", FAMILIES)
def test_single_file_uses_the_original_names(tmp_path, family):
    """Checked against the original layout itself, not only against diffusers' reader."""
    pipe = build_tiny_pipeline(family)
    path = single_file.save_single_file(pipe, tmp_path / "m.safetensors")
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        keys = set(f.keys())
        get = f.get_tensor
        roots = {k.split(".")[0] for k in keys}
        text_root = "conditioner" if family == "sdxl" else "cond_stage_model"
        assert roots == {"model", "first_stage_model", text_root}

        unet, vae = pipe.unet, pipe.vae
        assert torch.equal(get("model.diffusion_model.input_blocks.0.0.weight"), unet.conv_in.weight)
        assert torch.equal(get("model.diffusion_model.out.2.weight"), unet.conv_out.weight)
        assert torch.equal(
            get("model.diffusion_model.middle_block.2.out_layers.3.weight"),
            unet.mid_block.resnets[1].conv2.weight,
        )
        # Step 3 is the first down block's downsampler (2 layers per block); the last output step is resnet 2 of
        # the last up block.
        assert torch.equal(
            get("model.diffusion_model.input_blocks.3.0.op.weight"),
            unet.down_blocks[0].downsamplers[0].conv.weight,
        )
        assert torch.equal(
            get("model.diffusion_model.output_blocks.5.0.in_layers.2.weight"),
            unet.up_blocks[1].resnets[2].conv1.weight,
        )
        # The decoder's levels are numbered from the bottom: up.0 is diffusers' last up block.
        assert torch.equal(
            get("first_stage_model.decoder.up.0.block.0.conv1.weight"),
            vae.decoder.up_blocks[-1].resnets[0].conv1.weight,
        )
        q = get("first_stage_model.encoder.mid.attn_1.q.weight")
        assert q.shape == (*vae.encoder.mid_block.attentions[0].to_q.weight.shape, 1, 1)

        if family == "sd15":
            assert torch.equal(
                get("cond_stage_model.transformer.text_model.final_layer_norm.weight"),
                pipe.text_encoder.final_layer_norm.weight,
            )
            assert not any("label_emb" in k for k in keys)
        else:
            assert torch.equal(
                get("model.diffusion_model.label_emb.0.0.weight"), unet.add_embedding.linear_1.weight
            )
            assert (
                "conditioner.embedders.0.transformer.text_model.embeddings.position_embedding.weight" in keys
            )
            te2 = pipe.text_encoder_2
            attn = te2.text_model.encoder.layers[1].self_attn
            prefix = "conditioner.embedders.1.model."
            fused = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
            assert torch.equal(get(prefix + "transformer.resblocks.1.attn.in_proj_weight"), fused)
            assert torch.equal(get(prefix + "text_projection"), te2.text_projection.weight.T)
            assert torch.equal(
                get(prefix + "positional_embedding"), te2.text_model.embeddings.position_embedding.weight
            )
            assert prefix + "transformer.resblocks.0.mlp.c_fc.weight" in keys
    # One tensor per weight, except OpenCLIP's fused q/k/v: 6 tensors become 2 in each of te2's layers.
    fused_away = 4 * pipe.text_encoder_2.config.num_hidden_layers if family == "sdxl" else 0
    assert len(keys) == sum(len(m.state_dict()) for m in _modules(pipe).values()) - fused_away


def test_sdxl_second_text_encoder_reads_back_on_its_own(tmp_path):
    """The helper that keeps diffusers from filling text_encoder_2 with the first encoder's weights.

    diffusers' loader picks text_encoder_2's source by the first encoder's key and a width check; the tiny
    model's two encoders are equally wide, so without the helper it loads te1's weights into te2.
    """
    pipe = build_tiny_pipeline("sdxl")
    path = save_pipeline(pipe, tmp_path / "out", single_file=True)
    te2 = single_file.load_open_clip_text_encoder(path, path.parent / "config", torch.float32)
    original = pipe.text_encoder_2.state_dict()
    loaded = te2.state_dict()
    assert set(loaded) == set(original)
    assert all(torch.equal(original[k], loaded[k]) for k in original)


def test_unexpressible_unet_is_refused():
    from diffusers import UNet2DConditionModel

    unet = UNet2DConditionModel(
        sample_size=8,
        block_out_channels=(32, 32),
        layers_per_block=(1, 2),
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        norm_num_groups=32,
    )
    with pytest.raises(single_file.LayoutError, match="layers_per_block"):
        single_file.unet_to_ldm(unet)


# Parameter counts of the released models (SD1.5, SDXL base 1.0).
SHIPPED_COUNTS = {
    "sd15": {"unet": 859_520_964, "vae": 83_653_863, "text_encoder": 123_060_480},
    "sdxl": {
        "unet": 2_567_463_684,
        "vae": 83_653_863,
        "text_encoder": 123_060_480,
        "text_encoder_2": 694_659_840,
    },
}


@pytest.fixture(scope="module", params=FAMILIES)
def shipped(request):
    """A shipped config folder and its real-size models, built on the meta device (no memory, no weights)."""
    import diffusers
    import transformers

    family = request.param
    folder = MODEL_CONFIG_DIR / family
    index = json.loads((folder / "model_index.json").read_text(encoding="utf-8"))
    models = {}
    for name in SHIPPED_COUNTS[family]:
        library, class_name = index[name]
        cls = getattr({"diffusers": diffusers, "transformers": transformers}[library], class_name)
        with torch.device("meta"):
            if library == "diffusers":
                models[name] = cls.from_config(cls.load_config(folder / name))
            else:
                models[name] = cls(cls.config_class.from_pretrained(folder / name))
    return family, folder, index, models


def test_shipped_configs_describe_the_real_models(shipped):
    import diffusers
    import transformers

    from trainer.models.tokenizer import clip_tokenizer

    family, folder, index, models = shipped
    expected_class = "StableDiffusionXLPipeline" if family == "sdxl" else "StableDiffusionPipeline"
    assert index["_class_name"] == expected_class
    assert not [p for p in folder.rglob("*") if p.suffix in (".safetensors", ".bin", ".ckpt")]
    for name, expected in SHIPPED_COUNTS[family].items():
        assert sum(p.numel() for p in models[name].parameters()) == expected, name

    scheduler_cls = getattr(diffusers, index["scheduler"][1])
    scheduler = scheduler_cls.from_pretrained(folder, subfolder="scheduler")
    assert scheduler.config.prediction_type == "epsilon" and scheduler.config.beta_schedule == "scaled_linear"
    assert models["vae"].config.scaling_factor == (0.13025 if family == "sdxl" else 0.18215)

    pads = {"tokenizer": "<|endoftext|>", "tokenizer_2": "!"}
    for name in ("tokenizer", "tokenizer_2") if family == "sdxl" else ("tokenizer",):
        tok = transformers.CLIPTokenizer.from_pretrained(folder / name)
        assert tok.pad_token == pads[name] and tok.model_max_length == 77
        text = "a photo of sks person, best quality"
        assert tok(text).input_ids == clip_tokenizer(pad_token=pads[name])(text).input_ids


def test_real_size_layout_is_what_diffusers_reads(shipped):
    """At full SD1.5/SDXL size (meta tensors: names and shapes only), diffusers' own converters map the
    written layout back to exactly the model's keys and shapes, and recognise the model type unaided."""
    from diffusers.loaders import single_file_utils as sfu

    family, _, _, models = shipped
    unet, vae, te1 = models["unet"], models["vae"], models["text_encoder"]
    ck = {single_file.UNET_PREFIX + k: v for k, v in single_file.unet_to_ldm(unet).items()}
    ck |= {single_file.VAE_PREFIX + k: v for k, v in single_file.vae_to_ldm(vae).items()}
    clip_prefix = single_file.SDXL_CLIP_PREFIX if family == "sdxl" else single_file.SD15_CLIP_PREFIX
    ck |= single_file.clip_to_ldm(te1, clip_prefix)
    if family == "sdxl":
        te2 = models["text_encoder_2"]
        ck |= {
            single_file.SDXL_OPEN_CLIP_PREFIX + k: v for k, v in single_file.clip_to_open_clip(te2).items()
        }
    assert sfu.infer_diffusers_model_type(ck) == {"sd15": "v1", "sdxl": "xl_base"}[family]

    def shapes(state):
        return {k: tuple(v.shape) for k, v in state.items() if not k.endswith("position_ids")}

    assert shapes(sfu.convert_ldm_unet_checkpoint(ck, dict(unet.config))) == shapes(unet.state_dict())
    assert shapes(sfu.convert_ldm_vae_checkpoint(ck, dict(vae.config))) == shapes(vae.state_dict())
    te1_back = {k.removeprefix("text_model."): v for k, v in sfu.convert_ldm_clip_checkpoint(ck).items()}
    assert shapes(te1_back) == shapes(te1.state_dict())
    if family == "sdxl":
        prefix = single_file.SDXL_OPEN_CLIP_PREFIX
        te2_back = sfu.convert_open_clip_checkpoint(te2, ck, prefix=prefix)
        assert shapes(te2_back) == shapes(te2.state_dict())


def test_a_single_files_header_is_read_once_per_version(tmp_path, monkeypatch):
    """Telling the family, the model size and whether T5 is inside each ask for the tensor names: one read of the
    header serves them all, and a file written again is read again."""
    import safetensors
    from safetensors.torch import save_file

    from trainer.models.base_files import checkpoint_keys

    opened = []
    real = safetensors.safe_open

    def counting(*args, **kwargs):
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(safetensors, "safe_open", counting)
    path = tmp_path / "model.safetensors"
    save_file({"model.diffusion_model.joint_blocks.0.x": torch.zeros(1)}, str(path))
    assert checkpoint_keys(path) == {"model.diffusion_model.joint_blocks.0.x"}
    assert checkpoint_keys(path) == checkpoint_keys(tmp_path / "." / "model.safetensors")
    assert len(opened) == 1
    save_file({"model.diffusion_model.joint_blocks.37.x": torch.zeros(2)}, str(path))
    assert checkpoint_keys(path) == {"model.diffusion_model.joint_blocks.37.x"} and len(opened) == 2
    assert checkpoint_keys(tmp_path / "model.ckpt") == frozenset()
