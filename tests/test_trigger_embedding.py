"""lora.trigger_embedding: the trigger's own token embeddings trained beside the LoRA (pivotal tuning)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import tiny_config, write_toy_dataset
from trainer.models.embedding import (
    TriggerEmbedding,
    _placed,
    load_embedding,
    trigger_token_ids,
    unload_embedding,
)
from trainer.models.tiny import build_tiny_pipeline
from trainer.run.events import MemorySink
from trainer.train.loop import Hooks, run_training


def test_deltas_land_only_on_whole_occurrences_of_the_trigger():
    delta = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    ids = torch.tensor([[49406, 7, 8, 3, 7, 9, 7, 8]])  # 7 8 is the trigger; a lone 7 is another word's piece
    placed = _placed(ids, torch.tensor([7, 8]), delta)[0]
    assert placed[1].tolist() == [1.0, 0.0] and placed[2].tolist() == [0.0, 2.0]
    assert placed[6].tolist() == [1.0, 0.0] and placed[7].tolist() == [0.0, 2.0]
    assert placed[[0, 3, 4, 5]].abs().sum() == 0


def test_a_zero_delta_leaves_the_text_encoder_as_it_was():
    pipe = build_tiny_pipeline("sd15")
    ids = pipe.tokenizer(["zxc, on grass", "a red circle"], padding="max_length", return_tensors="pt").input_ids
    with torch.no_grad():
        before = pipe.text_encoder(ids)[0]
        emb = TriggerEmbedding([pipe.text_encoder], [pipe.tokenizer], "zxc").install()
        assert torch.equal(pipe.text_encoder(ids)[0], before)
        emb.deltas[0].add_(1.0)
        after = pipe.text_encoder(ids)[0]
        emb.remove()
        assert torch.equal(pipe.text_encoder(ids)[0], before)
    assert not torch.allclose(after[0], before[0])  # the trigger's prompt changed...
    assert torch.equal(after[1], before[1])  # ...a prompt without it did not


class Capture(Hooks):
    def after_step(self, trainer):
        self.trainer = trainer


@pytest.mark.slow
def test_trained_embedding_is_saved_and_loads_in_diffusers_as_trained(tmp_path):
    data = write_toy_dataset(tmp_path / "data", n=4)
    hooks = Capture()
    cfg = tiny_config(data, tmp_path / "runs", {"lora.trigger_embedding": True, "optim.embedding_lr": 5e-2,
                                                 "train.max_steps": 4, "ema.enabled": True})
    result = run_training(cfg, MemorySink(), hooks=hooks)
    assert result.status == "finished", result.message
    final = result.run_dir / "final"
    saved = load_file(str(final / "embedding.safetensors"))
    base = build_tiny_pipeline("sd15")
    ids = trigger_token_ids(base.tokenizer, "zxc")
    rows = base.text_encoder.get_input_embeddings().weight[ids].detach()
    assert saved["emb_params"].shape == rows.shape
    assert (saved["emb_params"].float() - rows).abs().max() > 1e-3  # it moved
    assert (final / "embedding_ema.safetensors").is_file()
    assert {p.name for p in (result.run_dir / "checkpoints").glob("step-*/embedding.safetensors")}
    assert "lora_te" not in "".join(load_file(str(final / "lora.safetensors")))  # the LoRA file stays a LoRA

    # what the trainer fed the UNet for a trigger prompt is what diffusers makes of the saved file
    trained_te = hooks.trainer.models.pipe.text_encoder
    prompt = "zxc, wearing a red hat, on grass"
    tok = base.tokenizer
    with torch.no_grad():
        trained = trained_te(tok(prompt, padding="max_length", return_tensors="pt").input_ids)[0]
        load_embedding(base, final / "embedding.safetensors", "zxc")
        converted = base.maybe_convert_prompt(prompt, base.tokenizer)
        loaded = base.text_encoder(base.tokenizer(converted, padding="max_length", return_tensors="pt").input_ids)[0]
        assert torch.allclose(trained, loaded, atol=2e-3)  # fp16 file
        unload_embedding(base, "zxc")
        assert base.maybe_convert_prompt(prompt, base.tokenizer) == prompt  # every added token went
        plain = base.text_encoder(tok(prompt, padding="max_length", return_tensors="pt").input_ids)[0]
        load_embedding(base, final / "embedding.safetensors", "zxc")  # the next checkpoint loads as well
        unload_embedding(base, "zxc")
    assert not torch.allclose(plain, loaded, atol=1e-2)


@pytest.mark.slow
def test_resume_restores_the_embedding(tmp_path):
    from trainer.train.commands import Commands

    data = write_toy_dataset(tmp_path / "data", n=4)
    over = {"lora.trigger_embedding": True, "optim.embedding_lr": 5e-2, "train.max_steps": 8}
    straight = run_training(tiny_config(data, tmp_path / "a", over), MemorySink())
    commands = Commands()

    class StopAt(Hooks):
        def after_step(self, trainer):
            if trainer.state.global_step == 4:
                commands.stop()

    first = run_training(tiny_config(data, tmp_path / "b", over), MemorySink(), commands, hooks=StopAt())
    assert first.status == "stopped"
    resumed = run_training(tiny_config(data, tmp_path / "b", over), MemorySink(), resume=first.run_dir)
    assert resumed.status == "finished", resumed.message
    a = load_file(str(straight.run_dir / "final" / "embedding.safetensors"))["emb_params"]
    b = load_file(str(resumed.run_dir / "final" / "embedding.safetensors"))["emb_params"]
    assert torch.allclose(a.float(), b.float(), atol=1e-3)


def test_an_embedding_whose_trigger_is_already_a_token_loads_as_it_was_trained(tmp_path):
    """A trigger the tokenizer already holds ("star": an everyday word; "tok": a rare one that is still a token)
    cannot be added under its name, and Review failed to load such a run's saves ("Token star already in tokenizer
    vocabulary"). Its vectors now go in as training applied them, and come out again."""
    from trainer.models.embedding import taken, write_embedding

    trained, base = build_tiny_pipeline("sd15"), build_tiny_pipeline("sd15")
    tok = base.tokenizer
    assert taken(tok, "star") and taken(tok, "tok") and not taken(tok, "zxc") and not taken(tok, "ohwx")
    emb = TriggerEmbedding([trained.text_encoder], [trained.tokenizer], "star")
    with torch.no_grad():
        emb.deltas[0].normal_(0.0, 0.5)
    path = write_embedding(tmp_path / "embedding.safetensors", emb.install(), "sd15")

    def encoded(pipe, prompt: str) -> torch.Tensor:
        with torch.no_grad():
            return pipe.text_encoder(tok(prompt, padding="max_length", return_tensors="pt").input_ids)[0]

    with pytest.raises(ValueError, match="already in tokenizer vocabulary"):  # what diffusers says of it
        base.load_textual_inversion(load_file(str(path))["emb_params"], token="star", text_encoder=base.text_encoder,
                                    tokenizer=tok)
    prompts = ["star, wearing a red hat, on grass", "a red circle on grass"]
    before = [encoded(base, p) for p in prompts]
    load_embedding(base, path, "star")
    assert torch.allclose(encoded(base, prompts[0]), encoded(trained, prompts[0]), atol=2e-3)  # fp16 file
    assert not torch.allclose(encoded(base, prompts[0]), before[0], atol=1e-2)
    assert torch.equal(encoded(base, prompts[1]), before[1])  # a prompt without the trigger is the base's
    unload_embedding(base, "star")
    assert all(torch.equal(encoded(base, p), b) for p, b in zip(prompts, before))
    load_embedding(base, path, "star")  # the next checkpoint loads as well
    unload_embedding(base, "star")
    assert torch.equal(encoded(base, prompts[0]), before[0])
