"""Big bases on small cards: ``model.base_quant`` (the frozen denoiser's Linear weights as bitsandbytes int8 / NF4 or
fp8 with row scales) and ``model.block_swap`` (the last N blocks in CPU memory, visiting the device for their forward
and backward), on the tiny SD3.5. What runs on this CPU runs here for real: bitsandbytes 0.50's CPU backend
quantizes and trains both int8 and NF4 (its CPU int8 training path dequantizes and multiplies, where a GPU multiplies
in int8), fp8 is torch's own. Block swap's "offload" and "compute" devices are both the CPU here, so the test checks
the copies themselves (each visit is a real copy at another address, the parked tensors stay where they were) and
that the numbers do not change by a bit. The memory plan and Fit are checked on SD3.5 Large at 1024 px."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import words
from tests.helpers import tiny_config, tiny_model_folder, write_toy_dataset
from trainer.cli import main as cli_main
from trainer.config.schema import from_dict
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.models import lowmem
from trainer.models.lowmem import CPU, Fp8Linear, check_quant
from trainer.plan.memory import GIB, estimate_memory, shapes_for
from trainer.plan.memory_fit import _apply, fit_to_memory
from trainer.plan.memory_lowmem import linear_bytes
from trainer.run.events import MemorySink
from trainer.train.distributed import Dist
from trainer.train.loop import run_training
from trainer.train.modelset import load_models

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "trainer" / "models" / "model_configs"
CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_model_folder(tmp_path_factory, "sd3")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


def _config(base, dataset, out, **extra):
    return tiny_config(dataset, out, {"train.max_steps": 3, **extra}, base=str(base))


def _train(cfg):
    result = run_training(cfg, MemorySink())
    assert result.status == "finished", result.message
    return result, [r["loss"] for r in read_jsonl(result.run_dir / "metrics.jsonl")]


@pytest.fixture(scope="module")
def plain(base, dataset, tmp_path_factory):
    return _train(_config(base, dataset, tmp_path_factory.mktemp("plain"), **{"sample.enabled": True}))


# --------------------------------------------------------------------------------------------- quantization


@pytest.mark.parametrize("mode, layer", [("int8", "Linear8bitLt"), ("nf4", "Linear4bit"), ("fp8", "Fp8Linear")])
def test_each_storage_quantizes_every_linear_before_the_lora_and_peft_wraps_it(base, dataset, tmp_path, mode, layer):
    models = load_models(_config(base, dataset, tmp_path, **{"model.base_quant": mode}), Dist())
    from peft.tuners.lora import LoraLayer

    lora_layers = [m for m in models.denoiser.modules() if isinstance(m, LoraLayer)]
    assert lora_layers and all(type(m.base_layer).__name__ == layer for m in lora_layers)
    assert not [n for n, m in models.denoiser.named_modules() if type(m) is torch.nn.Linear and "lora_" not in n]
    stored = {m.base_layer.weight.dtype for m in lora_layers}
    assert stored == {"int8": {torch.int8}, "nf4": {torch.uint8}, "fp8": {torch.float8_e4m3fn}}[mode]
    assert all(p.dtype == torch.float32 for p in models.trainable)  # the LoRA on top keeps its precision
    if mode != "fp8":  # peft's own bitsandbytes LoRA layer, which knows how to merge into one
        assert {type(m).__module__ for m in lora_layers} == {"peft.tuners.lora.bnb"}


@pytest.mark.parametrize("mode", ["int8", "nf4", "fp8"])
def test_a_quantized_base_trains_draws_and_exports_a_lora_the_plain_pipeline_loads(base, dataset, tmp_path, plain,
                                                                                  mode):
    from diffusers import StableDiffusion3Pipeline

    result, losses = _train(_config(base, dataset, tmp_path, **{"model.base_quant": mode, "sample.enabled": True}))
    plain_result, plain_losses = plain
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    # the frozen weights are rounded, so the loss moves a little, not much (same seed, same batches)
    assert losses != plain_losses and max(abs(a - b) for a, b in zip(losses, plain_losses)) < 0.1
    manifest = json.loads((result.run_dir / "samples" / "step-000003" / "manifest.json").read_text())
    assert manifest["samples"] and all((result.run_dir / "samples" / "step-000003" / s["file"]).is_file()
                                       for s in manifest["samples"])
    files = ("lora_diffusers.safetensors", "lora.safetensors")
    saved = {f: load_file(str(result.run_dir / "final" / f)) for f in files}
    reference = {f: load_file(str(plain_result.run_dir / "final" / f)) for f in files}
    for f in files:  # the same keys, shapes and dtypes as without quantization: the file does not know of it
        assert {k: (v.shape, v.dtype) for k, v in saved[f].items()} == {k: (v.shape, v.dtype) for k, v in reference[f].items()}
    assert any(k.endswith("lora_B.weight") and v.abs().max() > 0 for k, v in saved[files[0]].items())  # it trained
    pipe = StableDiffusion3Pipeline.from_pretrained(str(base))
    pipe.load_lora_weights(str(result.run_dir / "final"), weight_name=files[0], adapter_name="run")
    for key, tensor in saved[files[0]].items():
        module, ab = key.removeprefix("transformer.").rsplit(".lora_", 1)
        loaded = getattr(pipe.transformer.get_submodule(module), f"lora_{ab[0]}")["run"].weight
        assert torch.equal(loaded.float(), tensor.float()), key
    if mode == "fp8":  # the strength sweep draws on the base stored as the run stored it
        from trainer.review.strength import SweepPipelines, strength_sweep

        pipelines = SweepPipelines()
        drawn = strength_sweep(result.run_dir, result.run_dir / "final" / "lora.safetensors", (0.0, 1.0),
                               pipelines=pipelines)
        assert drawn and all(Path(d["file"]).is_file() for d in drawn)
        assert pipelines._held is not None  # kept for the next sweep, quantized
        to_q = pipelines._held[0].transformer.transformer_blocks[0].attn.to_q
        assert type(getattr(to_q, "base_layer", to_q)).__name__ == "Fp8Linear"


def test_the_strength_sweep_of_a_swapped_run_swaps_its_blocks_and_draws_the_same_pictures(base, dataset, tmp_path):
    """A base that fitted the card only with blocks in CPU memory is drawn that way in Review too: the sweep's
    swapped blocks visit the device, and the pictures are the bits the same sweep draws with every block resident."""
    from trainer.review.strength import SweepPipelines, strength_sweep
    from trainer.run.contents import load_run_config

    result, _ = _train(_config(base, dataset, tmp_path / "swap", **{"model.block_swap": 2}))
    resident = tmp_path / "resident"
    shutil.copytree(result.run_dir, resident)
    config = resident / "config.toml"
    assert "block_swap = 2" in config.read_text()
    config.write_text(config.read_text().replace("block_swap = 2", "block_swap = 0"))
    pictures = {}
    for run in (result.run_dir, resident):
        pipelines = SweepPipelines()
        drawn = strength_sweep(run, run / "final" / "lora.safetensors", (0.0, 1.0), pipelines=pipelines)
        pictures[run] = [Path(d["file"]).read_bytes() for d in drawn]
        if run == result.run_dir:
            assert pipelines.swap is not None and len(pipelines.swap.blocks) == 2
            steps = load_run_config(run).sample.steps  # each swapped block at every denoising step of each strength
            assert pipelines.swap.visits == 2 * 2 * steps, (pipelines.swap.visits, steps)
            assert not pipelines.swap.present  # and let go after each
        else:
            assert pipelines.swap is None
    assert pictures[result.run_dir] == pictures[resident]
    assert pictures[resident][0] != pictures[resident][-1]  # the LoRA at 1.0 changes what is drawn


def test_fp8_rounds_each_row_to_its_own_scale_and_keeps_fp8_for_the_backward():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    with torch.no_grad():
        linear.weight[0] *= 1e-3  # a row of tiny weights keeps its precision under its own scale
    q = Fp8Linear(linear, torch.float32, CPU)
    x = torch.randn(4, 64, requires_grad=True)
    y = q(x)
    assert q.weight.dtype == torch.float8_e4m3fn and q.scale.shape == (32,)
    rel = ((q.weight.float() * q.scale[:, None]) - linear.weight).abs() / linear.weight.abs().amax(1, keepdim=True)
    assert rel.max() < 2**-4  # e4m3: 3 mantissa bits, within half a step of the row's largest weight
    assert torch.allclose(y, linear(x), atol=0.05, rtol=0.1)
    y.sum().backward()
    assert torch.allclose(x.grad, linear.weight.sum(0).expand(4, -1), atol=0.05, rtol=0.1)


# --------------------------------------------------------------------------------------------- block swap


@pytest.mark.parametrize("checkpointing", [False, True])
def test_block_swap_trains_to_the_same_losses_bit_for_bit(base, dataset, tmp_path, plain, checkpointing):
    """Each visit copies the frozen weights exactly and runs the same kernels on them, so the losses are the same
    bits (tolerance 0), with gradient checkpointing too (its recomputation finds the block still on the device)."""
    if checkpointing:
        _, reference = _train(_config(base, dataset, tmp_path / "ref", **{"train.gradient_checkpointing": True}))
    else:
        reference = plain[1]
    _, losses = _train(_config(base, dataset, tmp_path / "swap", **{"model.block_swap": 2, "sample.enabled": True,
                                                                    "train.gradient_checkpointing": checkpointing}))
    assert losses == reference


@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_swapped_block_is_copied_in_for_its_forward_and_its_backward_and_let_go_after(base, dataset, tmp_path,
                                                                                       checkpointing):
    models = load_models(_config(base, dataset, tmp_path, **{"model.block_swap": 1,
                                                             "train.gradient_checkpointing": checkpointing}), Dist())
    swap, denoiser = models.swap, models.denoiser
    block = denoiser.transformer_blocks[-1]
    assert swap is not None and swap.blocks == [block] and (swap.device, swap.offload) == (CPU, CPU)
    frozen = block.attn.to_q.base_layer.weight
    kept = denoiser.transformer_blocks[0].attn.to_q.base_layer.weight  # a resident block is never copied
    lora = block.attn.to_q.lora_A["default"].weight  # the LoRA weights stay where the optimizer has them
    parked, resident, trainable = frozen.data_ptr(), kept.data_ptr(), lora.data_ptr()
    seen: list[tuple[str, int]] = []
    block.attn.to_q.register_forward_pre_hook(lambda m, a: seen.append(("forward", frozen.data_ptr())))

    class Spy(torch.autograd.Function):  # runs inside the block's backward, between its gradients' products
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            seen.append(("backward", frozen.data_ptr()))
            return g

    block.attn.to_q.register_forward_hook(lambda m, a, out: Spy.apply(out))
    noisy = torch.randn(1, 16, 8, 8)
    hidden, pooled = torch.randn(1, 8, 64), torch.randn(1, 64)
    out = models.adapter.predict(denoiser, noisy, torch.tensor([500.0]), hidden, pooled, [(64, 64)])
    assert frozen.data_ptr() == parked and swap.visits == 1 and not swap.present  # let go after its forward
    out.float().pow(2).mean().backward()
    assert frozen.data_ptr() == parked and swap.visits == 2 and not swap.present and not swap.held
    inside = [ptr for _, ptr in seen]
    assert [kind for kind, _ in seen][-1] == "backward" and parked not in inside  # copies, every time
    assert kept.data_ptr() == resident and lora.data_ptr() == trainable and lora.grad is not None
    assert swap.bytes_moved == 2 * sum(t.numel() * t.element_size() for t in _frozen_tensors(block))
    with torch.no_grad():  # sampling: a visit per forward, nothing held
        models.adapter.predict(denoiser, noisy, torch.tensor([500.0]), hidden, pooled, [(64, 64)])
    assert swap.visits == 3 and not swap.present and frozen.data_ptr() == parked


def _frozen_tensors(block):
    return [p for p in block.parameters() if not p.requires_grad] + list(block.buffers())


def test_quantized_and_swapped_together_train(base, dataset, tmp_path):
    """The swapped blocks' bitsandbytes layers travel with their scales (8-bit's row scales, 4-bit's block scales)."""
    for mode in ("int8", "nf4"):
        _, losses = _train(_config(base, dataset, tmp_path / mode, **{"model.base_quant": mode, "model.block_swap": 1,
                                                                      "train.gradient_checkpointing": True}))
        _, reference = _train(_config(base, dataset, tmp_path / f"{mode}-ref", **{"model.base_quant": mode,
                                                                                   "train.gradient_checkpointing": True}))
        assert losses == reference, mode


# --------------------------------------------------------------------------------------------- errors


def _said(error: UserError) -> dict[str, str]:
    return {lang: words.say(error.msg, lang) for lang in ("en", "ko")}


@pytest.mark.parametrize("base_name, swap, fix", [("tiny-sd15", 1, "model.block_swap = 0"),
                                                  ("tiny-sd3", 3, "model.block_swap")])
def test_a_swap_the_model_cannot_do_is_refused_by_name(dataset, tmp_path, base_name, swap, fix):
    cfg = tiny_config(dataset, tmp_path, {"model.block_swap": swap}, base=base_name)
    for attempt in (lambda: load_models(cfg, Dist()), lambda: estimate_memory(cfg)):  # the run and the plan alike
        with pytest.raises(UserError) as e:
            attempt()
        for said in _said(e.value).values():
            assert f"model.block_swap = {swap}" in said and fix in said, said
    assert "2" in _said(e.value)["en"] if swap == 3 else True  # the tiny SD3.5 has 2 blocks


def test_quantization_where_it_cannot_run_is_refused_by_name(monkeypatch):
    for mode in ("int8", "nf4", "fp8"):  # bitsandbytes and fp8 on a device they lack (meta: no kernels at all)
        with pytest.raises(UserError) as e:
            check_quant(mode, torch.device("meta"), torch.bfloat16)
        for said in _said(e.value).values():
            assert f'model.base_quant = "{mode}"' in said and "meta" in said and '"none"' in said, said
    monkeypatch.setattr(lowmem, "FP8", None)  # a torch without float8
    with pytest.raises(UserError) as e:
        check_quant("fp8", CPU, torch.bfloat16)
    assert all(torch.__version__ in s and '"int8"' in s for s in _said(e.value).values())


# --------------------------------------------------------------------------------------------- the plan and Fit


def _large(folder: Path, **extra):
    return from_dict({"model": {"base": str(folder), "family": "sd3", **extra}, "dataset": {"resolution": 1024},
                     "lora": {"rank": 16, "alpha": 16.0},
                     "train": {"precision": "bf16", "gradient_checkpointing": True}})


@pytest.fixture(scope="module")
def large_without_t5(tmp_path_factory) -> Path:
    """SD3.5 Large's configs without T5-XXL (a base loaded without it)."""
    out = tmp_path_factory.mktemp("cfg") / "sd3-large"
    shutil.copytree(CONFIGS / "sd3-large", out)
    shutil.rmtree(out / "text_encoder_3")
    return out


def test_the_plan_counts_each_storage_from_the_meta_model():
    cfg = _large(CONFIGS / "sd3-large")
    shapes = shapes_for(cfg.model)
    linear = [(s[0], s[1]) for _, kind, s in shapes.unet_layers if kind == "Linear"]
    weights = sum(o * i for o, i in linear)
    assert 0.99 * shapes.unet < weights < shapes.unet  # the Linear weights are nearly all of it
    plain = estimate_memory(cfg, device=CUDA, free=None, bf16=True)
    for mode, per_weight in (("int8", 1.0), ("fp8", 1.0), ("nf4", 0.5)):
        plan = estimate_memory(_large(CONFIGS / "sd3-large", base_quant=mode), device=CUDA, free=None, bf16=True)
        stored = plan.parts[f"unet_linear_{mode}"]
        assert per_weight * weights < stored < (per_weight + 0.02) * weights, mode  # the scales: a few %
        assert plan.parts["unet_other_weights"] == 2 * (shapes.unet - weights)  # norms, biases, embeddings in bf16
        assert plan.parts["quant_dequant"] == 2 * max(o * i for o, i in linear)  # one layer at a time
        assert plan.total < plain.total - (2 - per_weight - 0.1) * weights
        assert plan.low_memory["base_quant"]["provisional"] and any(
            n.code == f"memory.lowmem.quant.{mode}" for n in plan.notes)


def test_the_plan_counts_what_quantization_really_stores(base, dataset, tmp_path):
    """The tiny SD3.5 quantized for real: the bytes of its Linear weights and their scales are the plan's."""
    for mode in ("int8", "nf4", "fp8"):
        models = load_models(_config(base, dataset, tmp_path, **{"model.base_quant": mode}), Dist())
        real = 0
        for m in models.denoiser.modules():
            layer = getattr(m, "base_layer", None)
            if layer is None or not hasattr(layer, "weight"):
                continue
            scb = getattr(getattr(layer, "state", None), "SCB", None)  # the 8-bit row scales, after a first forward
            tensors = [layer.weight.data, getattr(layer, "scale", None), getattr(layer.weight, "SCB", None) if scb is None else scb]
            quant = getattr(layer.weight, "quant_state", None)
            while quant is not None:
                tensors += [quant.absmax, quant.code, getattr(quant, "offset", None)]
                quant = quant.state2
            real += sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
        planned = sum(linear_bytes(mode, o, i, 4) for o, i in
                      ((m.base_layer.out_features, m.base_layer.in_features) for m in models.denoiser.modules()
                       if hasattr(m, "base_layer") and hasattr(m.base_layer, "out_features")))
        assert real == pytest.approx(planned, rel=0.01), mode


def test_block_swap_takes_the_last_blocks_off_the_gpu_and_adds_one_in_flight():
    cfg = _large(CONFIGS / "sd3-large", base_quant="nf4", block_swap=10)
    shapes = shapes_for(cfg.model)
    assert shapes.blocks is not None and len(shapes.blocks) == 38
    plan = estimate_memory(cfg, device=CUDA, free=None, bf16=True)
    parked, in_flight = -plan.parts["block_swap_parked"], plan.parts["block_swap_in_flight"]
    per_block = plan.parts["unet_linear_nf4"] / 38
    assert 9 * per_block < parked < 11 * per_block and 0.5 * per_block < in_flight < 1.5 * per_block
    swap = plan.low_memory["block_swap"]
    assert swap["pinned_host_bytes"] == round(parked) and swap["in_flight_blocks"] == 1 and swap["provisional"]
    assert swap["bytes_copied_per_step"] == round(2 * parked) and 1 < swap["slowdown"] < 1.5
    cpu = estimate_memory(cfg, device=CPU, free=None)  # nothing leaves a CPU's memory
    assert "block_swap_parked" not in cpu.parts and [w.code for w in cpu.warnings] == ["memory.warn.swap_shared"]


OFF = {"model.offload_text_encoders": True}


@pytest.mark.parametrize("budget, expected", [
    (24, {}),  # fits as it is
    (16, {"model.base_quant": "int8"}),  # the text encoders' offload was tried first, then found not needed
    (12, {**OFF, "model.base_quant": "int8"}),
    (8, {**OFF, "model.base_quant": "nf4"}),
    (6, {**OFF, "model.base_quant": "nf4", "model.block_swap": 11}),
    (4, {**OFF, "model.base_quant": "nf4", "model.block_swap": 28}),
])
def test_fit_quantizes_then_swaps_the_fewest_blocks_for_sd35_large_at_1024_px(large_without_t5, budget, expected):
    """SD3.5 Large without T5 (its 8.9 GiB would hold the encoding phase above 12 GB: the next test), 1024 px, bf16,
    gradient checkpointing, on a GPU: int8 first, NF4 when that is not enough, then the fewest blocks that fit."""
    fit = fit_to_memory(_large(large_without_t5), budget * GIB, device=CUDA, bf16=True)
    assert fit.fits, fit.message
    changes = {c["key"]: c["new"] for c in fit.changes}
    assert {k: v for k, v in changes.items() if k.startswith("model.")} == expected
    whys = {c["key"]: words.say(c["why"], "en") for c in fit.changes}
    if "model.base_quant" in changes:
        assert "changes the numerics" in whys["model.base_quant"] and "provisional" in whys["model.base_quant"]
    if n := changes.get("model.block_swap"):
        assert "the same numbers, only slower" in whys["model.block_swap"] and "(provisional)" in whys["model.block_swap"]
        fewer = _apply(fit.config, [[("model.block_swap", n - 1)]])
        assert estimate_memory(fewer, device=CUDA, free=budget * GIB, bf16=True).total > 0.85 * budget * GIB


def test_twelve_gb_with_t5_is_held_by_the_encoding_and_no_block_is_swapped_for_nothing():
    fit = fit_to_memory(_large(CONFIGS / "sd3-large"), 12 * GIB, device=CUDA, bf16=True)
    assert not fit.fits and fit.after.phase == "encode"
    assert "model.block_swap" not in {c["key"] for c in fit.changes}


# --------------------------------------------------------------------------------------------- kohya


def test_kohya_export_and_import_carry_both_switches(base, tmp_path):
    from trainer.kohya.exporter import to_kohya

    cfg = from_dict({"model": {"base": str(base), "family": "sd3", "base_quant": "fp8", "block_swap": 4}})
    args, _, _, rep = to_kohya(cfg, tmp_path)
    assert args["fp8_base"] is True and args["blocks_to_swap"] == 4
    cfg.model.base_quant = "nf4"  # no 4-bit switch in sd-scripts: fp8, said so
    args, _, _, rep = to_kohya(cfg, tmp_path)
    changed = {e["key"]: e for e in rep.of("changed")}
    assert args["fp8_base"] is True and "nf4" in words.say(changed["model.base_quant"]["note"], "en")
    sd15 = from_dict({"model": {"family": "sd15", "block_swap": 2}})
    args, _, _, rep = to_kohya(sd15, tmp_path)
    assert "blocks_to_swap" not in args and "model.block_swap" in {e["key"] for e in rep.of("unsupported")}


def test_the_gpu_benchmark_runs_its_path_on_the_cpu():
    """bench/bench_lowmem.py (bench/gpu_check.sh part 7) on the tiny SD3.5: every cell places, trains and times."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "bench/bench_lowmem.py", "--smoke", "--steps", "1"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    cells, measured = lines[:-1], lines[-1]["measured"]
    assert [(c["mode"], c["block_swap"]) for c in cells] == [("none", 0), ("int8", 0), ("nf4", 0), ("fp8", 0),
                                                             ("none", 2)]
    assert cells[-1]["copied_bytes_per_step"] > 0 and set(measured["quant_slowdown"]) == {"int8", "nf4", "fp8"}


@pytest.mark.parametrize("family", ["flux", "zimage"])
def test_the_big_families_swap_their_blocks_bit_for_bit_and_train_on_quantized_weights(dataset, tmp_path, family):
    """Flux.1 (double then single blocks) and Z-Image (refiners then main blocks) name their blocks for block swap:
    the losses are the same bits with two blocks swapped, and a quantized base trains (its LoRA moves)."""
    base = tmp_path / f"tiny-{family}"
    assert cli_main(["tiny-model", family, str(base)]) == 0
    _, reference = _train(_config(base, dataset, tmp_path / "plain"))
    _, swapped = _train(_config(base, dataset, tmp_path / "swap", **{"model.block_swap": 2}))
    assert swapped == reference
    _, losses = _train(_config(base, dataset, tmp_path / "fp8", **{"model.base_quant": "fp8"}))
    assert all(map(math.isfinite, losses)) and losses != reference
