"""Model families: every per-family difference lives in one adapter (trainer/models/families/sd15.py, sdxl.py) behind
``trainer.models.family``; the rest of the code never asks which family it is."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from trainer.config.schema import Config, from_dict
from trainer.errors import UserError
from trainer.models.families.sd15 import SD15
from trainer.models.family import (
    FAMILIES,
    FAMILY_ATTRIBUTES,
    ModelFamily,
    families,
    family,
    register,
    unregister,
)

REPO = Path(__file__).resolve().parent.parent
ADAPTERS = {REPO / "trainer" / "models" / "family.py", *(REPO / "trainer" / "models" / "families").glob("*.py")}
FAMILY_TEST = re.compile(r"family\s*(==|!=)|family\s+(not\s+)?in\s*\(")


def _sources():
    for folder in ("trainer", "ui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path not in ADAPTERS:
                yield path, path.read_text(encoding="utf-8")


def _strings_in(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_no_family_comparison_outside_the_adapters():
    found = [f"{path.relative_to(REPO)}:{i}: {line.strip()}"
             for path, text in _sources()
             for i, line in enumerate(text.splitlines(), 1)
             if FAMILY_TEST.search(line.split("#", 1)[0])]
    assert not found, "ask the family's adapter instead:\n" + "\n".join(found)


def test_no_per_family_table_outside_the_adapters():
    found = []
    for path, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Dict):
                keys = set().union(*(_strings_in(k) for k in node.keys if k is not None))
                if {"sd15", "sdxl"} <= keys:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, "a table keyed by family belongs in the adapters:\n" + "\n".join(found)


def test_the_scan_catches_what_it_forbids():
    # the two scans above would pass on an empty tree: they must see a comparison and a table when there is one
    assert FAMILY_TEST.search('if cfg.model.family == "sdxl":') and FAMILY_TEST.search("family in ('a', 'b')")
    table = ast.parse('ACT = {("sd15", "fp32"): 1, ("sdxl", "fp32"): 2}').body[0].value
    assert {"sd15", "sdxl"} <= set().union(*(_strings_in(k) for k in table.keys))


def test_the_built_in_families_are_registered_in_order():
    assert tuple(FAMILIES) == ("sd15", "sdxl", "sd3", "flux", "zimage")
    assert [f.name for f in families()] == ["sd15", "sdxl", "sd3", "flux", "zimage"]


@pytest.mark.parametrize("name", ["sd15", "sdxl", "sd3", "flux", "zimage"])
def test_each_family_has_every_attribute(name):
    adapter = family(name)
    assert adapter.name == name
    for attribute in FAMILY_ATTRIBUTES:
        assert getattr(adapter, attribute, None), f"{name} lacks {attribute}"
    assert set(adapter.activations) == {(p, c) for p in ("fp32", "half") for c in (False, True)}
    assert set(adapter.small_latent_activations) <= set(adapter.activations)
    roles = adapter.text_encoder_roles
    assert len(set(roles)) == len(roles) == len(adapter.embedding_keys)
    assert adapter.pipeline_class().__name__ == adapter.pipeline_class_name
    assert (adapter.config_dir / "model_index.json").is_file()
    for method in ("build_tiny", "encode_text", "noise_schedule", "predict", "sampling_pipeline", "prediction_type",
                   "models_from_configs", "denoiser_from_config", "activation_width"):
        assert getattr(type(adapter), method) is not getattr(ModelFamily, method), f"{name} lacks {method}"


def test_the_families_differ_where_sd15_and_sdxl_differ():
    sd15, sdxl = family("sd15"), family("sdxl")
    assert sd15.embedding_keys == ("emb_params",) and sdxl.embedding_keys == ("clip_l", "clip_g")
    assert sd15.text_encoder_roles == ("te",) and sdxl.text_encoder_roles == ("te1", "te2")
    assert [te.kohya_prefix for te in sdxl.text_encoders] == ["lora_te1", "lora_te2"]
    assert sd15.added_cond_kwargs(None, [(64, 48)], "cpu") is None
    added = sdxl.added_cond_kwargs("pooled", [(64, 48)], "cpu")
    assert added["text_embeds"] == "pooled" and added["time_ids"].tolist() == [[48, 64, 0, 0, 48, 64]]


def test_an_unknown_family_is_refused_by_name():
    with pytest.raises(UserError, match="unknown family 'sd9'; use sd15 or sdxl or sd3 or flux or zimage"):
        family("sd9")
    with pytest.raises(UserError, match=r"model\.family"):
        from_dict({"model": {"family": "sd9"}})


def test_a_file_dropped_into_the_families_folder_is_a_family(tmp_path, monkeypatch):
    """A throwaway flow-matching family (SD3.5's adapter under another name, uniform timesteps) dropped into the
    folder: the config takes its name, and it trains two steps on its tiny model with nothing else changed."""
    import trainer.models.families as folder
    from tests.helpers import tiny_config, write_toy_dataset
    from trainer.models import family as registry
    from trainer.run.events import MemorySink, Started
    from trainer.train.loop import run_training

    (tmp_path / "zz_other.py").write_text(
        "from trainer.models.families.noise import FlowMatchSchedule\n"
        "from trainer.models.families.sd3 import SD3\n"
        "from trainer.models.family import register\n\n\n"
        "@register\nclass Other(SD3):\n    name = 'zz-other'\n    label = 'Another flow model'\n\n"
        "    def noise_schedule(self, scheduler_config, prediction_type):\n"
        "        return FlowMatchSchedule(scheduler_config, sampling='uniform')\n", encoding="utf-8")
    monkeypatch.setattr(folder, "__path__", [*folder.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_discovered", False)  # the registry reads the folder again, as on a new start
    try:
        assert "zz-other" in FAMILIES
        assert from_dict({"model": {"family": "zz-other"}}).model.family == "zz-other"
        cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs", {"train.max_steps": 2},
                          base="tiny-zz-other")
        sink = MemorySink()
        result = run_training(cfg, sink)
        assert result.status == "finished", result.message
        started = next(e for e in sink.events if isinstance(e, Started))
        assert started.base["family"] == "zz-other"
        assert (result.run_dir / "final" / "lora_diffusers.safetensors").is_file()
    finally:
        unregister("zz-other")
        sys.modules.pop("trainer.models.families.zz_other", None)
    assert "zz-other" not in FAMILIES


def test_adding_a_family_is_one_adapter():
    @register
    class Other(SD15):
        name = "other-sd"
        label = "Another SD 1.5"

    try:
        assert "other-sd" in FAMILIES and tuple(FAMILIES)[-1] == "other-sd"
        assert family("other-sd").embedding_keys == ("emb_params",)
        assert from_dict({"model": {"family": "other-sd"}}).model.family == "other-sd"
        config = Config()
        config.model.family = "other-sd"  # assignment is validated too
    finally:
        unregister("other-sd")
    assert "other-sd" not in FAMILIES
    with pytest.raises(UserError):
        from_dict({"model": {"family": "other-sd"}})
