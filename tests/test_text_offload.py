"""model.offload_text_encoders: every caption and sample prompt encoded before training, the text encoders then off
the device. A run trains and draws exactly what it draws with them on the device (losses, validation, measures and
sample pictures byte for byte, on each tiny family), never calls them in the loop, and the memory plan counts them
only while they encode; configs where embeddings cannot be encoded once are refused by name."""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.config.schema import SampleConfig, from_dict, load_config
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.models.conditioning import CPU, ForeseenText, TextConditioner
from trainer.models.precision import decide_precision
from trainer.models.tiny import build_tiny_pipeline
from trainer.plan.memory import GIB, TIGHT_SHARE, estimate_memory
from trainer.plan.memory_fit import fit_to_memory
from trainer.run.events import Alert, MemorySink
from trainer.sampling import SamplingPipeline, render_batch, sampling_pipeline
from trainer.train.hooks import Hooks
from trainer.train.loop import run_training

REPO = Path(__file__).resolve().parent.parent
FAMILIES = ("sd15", "sdxl", "sd3", "flux")
CUDA = torch.device("cuda")


# ------------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize("key, value", [("lora.train_text_encoder", "true"), ("lora.trigger_embedding", "true"),
                                        ("dataset.shuffle_tags", "true"), ("dataset.tag_dropout", "0.1")])
def test_text_that_changes_every_step_cannot_be_encoded_up_front(key, value):
    with pytest.raises(UserError) as e:
        load_config(None, ["model.offload_text_encoders=true", "dataset.trigger=zxc", f"{key}={value}"])
    for lang in ("en", "ko"):
        said = words.say(e.value.msg, lang)
        assert key in said and "model.offload_text_encoders = false" in said, said
    # caption dropout is one more caption (the empty one), not a new one each step
    assert load_config(None, ["model.offload_text_encoders=true", "dataset.caption_dropout=0.3"]).model.offload_text_encoders


# --------------------------------------------------------------------------------------------- encoding


def _eval_pipe(family: str):
    pipe = build_tiny_pipeline(family)
    for part in pipe.components.values():
        if isinstance(part, torch.nn.Module):
            part.eval()  # as a loaded base is; the trainer sets its frozen text encoders so too
    return pipe


@pytest.mark.parametrize("family", ["sdxl", "sd3"])
def test_a_cached_embedding_does_not_depend_on_the_captions_first_encoded_beside_it(family):
    """The pooled projection's rounding changes with how many rows its batch has (under 4 rows another kernel on a
    CPU): each caption is encoded alone, so encoding all up front, or lazily in any grouping, or again after a
    resume, gives the same numbers."""
    captions = ["zxc, on grass", "zxc, on sky", "", "a person standing in a city street"]
    pipe = _eval_pipe(family)
    together = TextConditioner(pipe, family, CPU, cache=True)(captions)
    apart = TextConditioner(pipe, family, CPU, cache=True)
    singly = [apart([c]) for c in reversed(captions)][::-1]
    assert torch.equal(together[0], torch.cat([h for h, _ in singly]))
    assert torch.equal(together[1], torch.cat([p for _, p in singly]))


class Spy:
    """Records what the conditioner asks of the device: where its encoders were sent, and cache releases."""

    def __init__(self, monkeypatch, text: TextConditioner):
        self.moves: list = []
        self.released = 0

        def move(device):
            self.moves.append(device)
            text.encoders_device = CPU  # this machine computes on its CPU, whatever the device is called

        monkeypatch.setattr(text, "_move_encoders", move)
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda: setattr(self, "released", self.released + 1))


def test_the_encoders_go_to_the_device_to_encode_and_to_the_cpu_after(monkeypatch):
    pipe = _eval_pipe("sd15")
    text = TextConditioner(pipe, "sd15", CUDA, cache=True, offload=True)
    spy = Spy(monkeypatch, text)
    sampler = sampling_pipeline(pipe, "sd15", "epsilon").pipe
    text.encode_up_front(ForeseenText(["zxc, on grass", ""], [["zxc", "zxc, on sky"]], "blurry"),
                         contextlib.nullcontext(), sampler)
    assert spy.moves == [CUDA, CPU] and spy.released == 1 and text.offloaded
    text.device = CPU  # where the embeddings go for a step, here
    hidden, _ = text(["zxc, on grass"])
    assert hidden.shape == (1, 77, 32)
    assert set(text.prompt_kwargs(sampler, ["zxc", "zxc, on sky"], "blurry", CPU)) == {"prompt_embeds",
                                                                                       "negative_prompt_embeds"}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("negative", ["", "blurry, watermark"])
def test_samples_from_embeddings_are_the_pictures_the_prompts_draw(family, negative):
    """The sampling pipeline's own encode_prompt, run before training with the arguments its __call__ gets, stands in
    for the prompts: the same pixels exactly (tolerance 0), with and without a negative prompt; a batch nobody
    foresaw is encoded where the encoders are, said once, and draws the same too."""
    pipe = _eval_pipe(family)
    prompts = ["zxc", "zxc, wearing a red raincoat"]
    plan = decide_precision("fp32", CPU)
    cfg = SampleConfig(steps=2, guidance=3.0, negative_prompt=negative)
    with_prompts = sampling_pipeline(pipe, family, "epsilon")
    text = TextConditioner(pipe, family, CPU, cache=True, offload=True)
    text.encode_up_front(ForeseenText([], [prompts], negative), plan.autocast(), with_prompts.pipe)
    unforeseen: list = []
    text.on_unforeseen = lambda count, example: unforeseen.append((count, example))
    embedded = SamplingPipeline(with_prompts.pipe, with_prompts.latent_channels, text.prompt_kwargs)

    def draw(sampler, batch):
        return [np.asarray(im) for im in render_batch(sampler, batch, cfg, (64, 64), CPU, plan, 1234)]

    assert all(np.array_equal(a, b) for a, b in zip(draw(with_prompts, prompts), draw(embedded, prompts)))
    assert unforeseen == []
    other = ["a person standing in a city street"]
    assert np.array_equal(draw(with_prompts, other)[0], draw(embedded, other)[0])
    assert unforeseen == [(1, other[0])]
    kwargs = text.prompt_kwargs(with_prompts.pipe, prompts, negative, CPU)
    if family == "sdxl":  # no negative prompt: the pipeline's negative halves are zeros (force_zeros_for_empty_prompt)
        zeros = not kwargs["negative_prompt_embeds"].any() and not kwargs["negative_pooled_prompt_embeds"].any()
        assert zeros is (not negative)


# --------------------------------------------------------------------------------------------------- runs


class CountTextCalls(Hooks):
    """Counts the text encoders' forward calls from the first optimizer step on (after what was encoded before)."""

    def __init__(self) -> None:
        self.calls = 0
        self.trainer = None

    def before_step(self, trainer) -> None:
        if self.trainer is None:
            self.trainer = trainer
            for encoder in trainer.models.text.modules:
                encoder.register_forward_hook(self._count)

    def _count(self, *args) -> None:
        self.calls += 1


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"), n=4)


def _run(family: str, dataset: Path, out: Path, offload: bool):
    # every kind of text a run encodes: captions and the empty one (dropout), the held-out picture's for the
    # validation loss, the measures' (with and without the trigger, the trigger alone, the base model's own
    # step-0 pictures' prompts), sample prompts with a negative, two seeds each, live and EMA weights
    cfg = tiny_config(dataset, out, {
        "model.offload_text_encoders": offload, "train.max_steps": 2, "dataset.caption_dropout": 0.5,
        "validation.holdout": 1, "measure.enabled": True, "measure.pictures": 2, "measure.timesteps": 1,
        "sample.enabled": True, "sample.steps": 1, "sample.images_per_prompt": 2, "sample.negative_prompt": "blurry",
        "ema.enabled": True}, base=f"tiny-{family}")
    sink, hooks = MemorySink(), CountTextCalls()
    result = run_training(cfg, sink, hooks=hooks)
    assert result.status == "finished", result.message
    root = result.run_dir
    pictures = {p.relative_to(root).as_posix(): hashlib.sha1(p.read_bytes()).hexdigest()
                for p in sorted((root / "samples").rglob("*.png"))}
    measures = [{k: v for k, v in row.items() if k != "seconds"} for row in read_jsonl(root / "measures.jsonl")]
    rows = [(r["loss"], r["grad_norm"], r.get("val_loss")) for r in read_jsonl(root / "metrics.jsonl")]
    return rows, pictures, measures, hooks, sink


@pytest.mark.parametrize("family", FAMILIES)
def test_a_run_with_the_text_encoders_off_the_device_trains_and_draws_the_same(family, dataset, tmp_path):
    off = _run(family, dataset, tmp_path / "off", offload=False)
    on = _run(family, dataset, tmp_path / "on", offload=True)
    assert on[0] == off[0] and len(on[0]) == 2 and on[0][-1][2] is not None  # losses, grad norms, validation
    assert on[1] == off[1] and len(on[1]) == 4 * 2 * 3  # prompts × seeds × (step 0, live and EMA at the end)
    assert on[2] == off[2] and {"subject", "held_out", "base_samples"} <= set(on[2][-1])
    hooks, sink = on[3], on[4]
    text = hooks.trainer.models.text
    assert hooks.calls == 0 and text.offloaded and text.encoders_device == CPU
    assert all(p.device == CPU for encoder in text.modules for p in encoder.parameters())
    assert not [e for e in sink.events if isinstance(e, Alert) and e.kind == "text_not_foreseen"]
    # the count is real: a caption nobody foresaw runs the encoders (on the CPU) and is said once
    text(["zxc, a caption nobody foresaw"])
    assert hooks.calls > 0
    [said] = [e for e in sink.events if isinstance(e, Alert) and e.kind == "text_not_foreseen"]
    assert "a caption nobody foresaw" in words.say(said.message, "ko")


def test_the_denoiser_comes_to_the_device_after_the_encoders_left(monkeypatch, dataset, tmp_path):
    """The memory plan's two phases are the order the models move in: the text encoders alone to the device,
    then to the CPU, then the rest."""
    from trainer.train.distributed import Dist
    from trainer.train.modelset import load_models

    moves: list[tuple[str, str]] = []
    to = torch.nn.Module.to

    def record(self, *args, **kwargs):
        where = next((a for a in (*args, kwargs.get("device")) if isinstance(a, torch.device | str)), None)
        if where is not None:
            moves.append((type(self).__name__, str(where)))
        return to(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "to", record)
    cfg = tiny_config(dataset, tmp_path, {"model.offload_text_encoders": True}, base="tiny-sd15")
    models = load_models(cfg, Dist(), ForeseenText(["zxc, on grass"]))
    names = [name for name, _ in moves]
    assert names[:2] == ["CLIPTextModel", "CLIPTextModel"] and moves[1][1] == "cpu"
    assert {"UNet2DConditionModel", "AutoencoderKL"} <= set(names[2:]) and "CLIPTextModel" not in names[2:]
    assert models.text.offloaded


# ---------------------------------------------------------------------------------------------- the plan


def _sd3(**over):
    data = {"model": {"base": str(REPO / "trainer" / "models" / "model_configs" / "sd3"), "family": "sd3"},
            "dataset": {"resolution": 1024}, "train": {"precision": "bf16", "gradient_checkpointing": True}}
    for dotted, value in over.items():
        section, key = dotted.split(".")
        data.setdefault(section, {})[key] = value
    return from_dict(data)


def test_the_plan_counts_the_text_encoders_only_while_they_encode():
    off = estimate_memory(_sd3(), device=CUDA, free=16 * GIB, bf16=True)
    on = estimate_memory(_sd3(**{"model.offload_text_encoders": True}), device=CUDA, free=16 * GIB, bf16=True)
    weights = off.parts["text_encoder_weights"]
    assert weights == pytest.approx(10.39 * GIB, rel=0.01) and off.encode is None and off.phase == "train"
    assert on.parts["text_encoder_weights"] == 0 and on.train_total == off.total - weights
    assert on.encode is not None and on.encode["text_encoder_weights"] == weights
    assert 0 < on.encode["text_encode"] < 0.2 * GIB and on.encode["runtime"] == on.parts["runtime"]
    assert on.total == on.encode_total > on.train_total and on.phase == "encode"
    assert on.to_json()["phases"] == {"encode": on.encode_total, "train": on.train_total}
    # a CPU's memory is where the encoders would go: nothing saved there, and the plan says so
    cpu = estimate_memory(_sd3(**{"model.offload_text_encoders": True}), device=CPU, free=64 * GIB)
    assert cpu.encode is None and cpu.parts["text_encoder_weights"] == weights
    assert [w.code for w in cpu.warnings] == ["memory.warn.offload_shared"]


def test_the_fit_moves_the_text_encoders_off_before_changing_what_trains():
    fixed = fit_to_memory(_sd3(), 16 * GIB, device=CUDA, bf16=True)
    assert fixed.fits and [c["key"] for c in fixed.changes] == ["model.offload_text_encoders"]
    assert fixed.after.total <= TIGHT_SHARE * 16 * GIB < fixed.before.total
    # shuffled tags change every caption: the fit turns them off with the switch, after everything else
    shuffled = fit_to_memory(_sd3(**{"dataset.shuffle_tags": True}), 16 * GIB, device=CUDA, bf16=True)
    assert [c["key"] for c in shuffled.changes] == ["dataset.shuffle_tags", "model.offload_text_encoders"]
    assert "트리거" in words.say(shuffled.changes[0]["why"], "ko")
    # 12 GiB: the encoders' own weights are the peak; nothing about training lowers it, and the fit says so
    small = fit_to_memory(_sd3(), 12 * GIB, device=CUDA, bf16=True)
    assert not small.fits and small.after.phase == "encode"
    assert small.message is not None and small.message.code == "memory_fit.does_not_fit_encode"
    assert "10.39 GiB" in words.say(small.message) and "10.39 GiB" in words.say(small.message, "ko")
    # on a CPU it is never proposed
    assert "model.offload_text_encoders" not in {c["key"] for c in fit_to_memory(_sd3(), 16 * GIB, device=CPU).changes}


def test_the_plan_command_prints_both_phases_for_a_gpu_that_is_not_here(make_image, tmp_path):
    make_image(tmp_path / "d" / "1_zxc" / "a.png", size=(1024, 1024), caption="zxc, on grass")
    base = REPO / "trainer" / "models" / "model_configs" / "sd3"

    def plan(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "trainer", "plan", "--set", f"model.base={base}", "--set", "model.family=sd3",
             "--set", f"dataset.path={tmp_path / 'd'}", "--set", "dataset.resolution=1024",
             "--set", "train.gradient_checkpointing=true", "--device", "cuda", *args],
            cwd=REPO, capture_output=True, text=True, timeout=300)

    proc = plan("--fit-memory", "16GiB", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["memory"]["device"] == "cuda" and out["memory"]["free"] is None and out["memory"]["resolution"] == [1024, 1024]
    fit = out["memory_fit"]
    assert fit["fits"] and fit["sets"] == ["model.offload_text_encoders=true"]
    assert fit["after"]["peak_phase"] == "encode" and fit["after"]["phases"]["train"] < fit["after"]["phases"]["encode"]
    text = plan("--set", "model.offload_text_encoders=true", "--lang", "ko").stdout
    assert "학습 전 캡션 인코딩" in text and "텍스트 인코더는 CPU로 내림" in text and "합계(최대: 캡션 인코딩)" in text


# ----------------------------------------------------------------------------------------------- kohya


def test_kohya_cache_text_encoder_outputs_is_the_switch_both_ways(tmp_path):
    from tests.kohya_helpers import kohya_dataset
    from trainer.kohya.exporter import to_kohya
    from trainer.kohya.importer import import_kohya

    img = kohya_dataset(tmp_path)
    toml = tmp_path / "sdxl.toml"
    toml.write_text(f'pretrained_model_name_or_path = "/m/sdxl.safetensors"\ntrain_data_dir = {json.dumps(str(img))}\n'
                    'network_module = "networks.lora"\nnetwork_train_unet_only = true\n'
                    'cache_text_encoder_outputs = true\n')
    cfg, report = import_kohya(toml, bf16=True, compare_steps=False)
    assert cfg.model.offload_text_encoders is True
    assert any(e["key"] == "cache_text_encoder_outputs" and e["kind"] == "mapped" for e in report.entries)
    cfg.model.family = "sdxl"
    args, _, _, _ = to_kohya(cfg, tmp_path / "out")
    assert args["cache_text_encoder_outputs"] is True
    cfg.model.family = "sd15"  # train_network.py has no such switch: said, not written
    args, _, _, rep = to_kohya(cfg, tmp_path / "out")
    assert "cache_text_encoder_outputs" not in args
    [entry] = [e for e in rep.of("unsupported") if e["key"] == "model.offload_text_encoders"]
    assert "train_network.py" in words.say(entry["note"])
