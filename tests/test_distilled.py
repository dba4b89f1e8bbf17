"""A distilled base is recognised from its own configs before anything is loaded, by the rule Start uses: the plan
step and ``python -m trainer plan`` say the refusal Start would give (with the advice, in English and Korean) for a
base whose folder name says nothing, and say nothing of the plain bases; FLUX.1-dev gets its guidance note. Each
folder here is a family's shipped configs (no weights), edited to a distilled variant's and given a neutral name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import words
from tests.helpers import tiny_config, write_toy_dataset
from trainer.config.schema import from_dict
from trainer.models.base import MODEL_CONFIG_DIR, load_pipeline
from trainer.models.base_files import BaseConfigs
from trainer.models.distilled import configs_on_disk, detect_distilled, distillation_check
from trainer.models.family import family

LANGS = ("en", "ko")
EULER_A_TRAILING = {  # SDXL-Turbo's own scheduler config
    "_class_name": "EulerAncestralDiscreteScheduler", "beta_end": 0.012, "beta_schedule": "scaled_linear",
    "beta_start": 0.00085, "num_train_timesteps": 1000, "prediction_type": "epsilon", "steps_offset": 1,
    "timestep_spacing": "trailing", "trained_betas": None}
SCHNELL = {"_class_name": "FlowMatchEulerDiscreteScheduler", "num_train_timesteps": 1000, "shift": 1.0,
           "use_dynamic_shifting": False}  # FLUX.1-schnell's own scheduler config

# name: (shipped config folder, {file: changes}, what the reason names). Each is a distilled variant.
DISTILLED = {
    "sd15-lcm-scheduler": ("sd15", {"scheduler/scheduler_config.json": {"_class_name": "LCMScheduler"},
                                    "model_index.json": {"scheduler": ["diffusers", "LCMScheduler"]}}, "LCMScheduler"),
    "sd15-tcd-listed": ("sd15", {"model_index.json": {"scheduler": ["diffusers", "TCDScheduler"]}}, "TCDScheduler"),
    "sd15-lcm-unet": ("sd15", {"unet/config.json": {"time_cond_proj_dim": 256}}, "time_cond_proj_dim"),
    "sdxl-turbo": ("sdxl", {"scheduler/scheduler_config.json": EULER_A_TRAILING,
                            "model_index.json": {"scheduler": ["diffusers", "EulerAncestralDiscreteScheduler"]}},
                   "EulerAncestralDiscreteScheduler"),
    "sdxl-saved-from-lightning": ("sdxl", {"unet/config.json": {"_name_or_path": "ByteDance/SDXL-Lightning"}},
                                  "ByteDance/SDXL-Lightning"),
    "sd3-large-turbo": ("sd3-large", {"transformer/config.json": {
        "_name_or_path": "/hf/models--stabilityai--stable-diffusion-3.5-large-turbo/snapshots/ab12/transformer"}},
        "SD3.5 Large Turbo"),
    "flux-schnell": ("flux", {"scheduler/scheduler_config.json": SCHNELL,
                              "transformer/config.json": {"guidance_embeds": False}}, "FLUX.1-schnell"),
    "zimage-turbo": ("zimage-turbo", {}, "Z-Image-Turbo"),
    "zimage-saved-from-turbo": ("zimage", {"scheduler/scheduler_config.json": {
        "_name_or_path": "Tongyi-MAI/Z-Image-Turbo"}}, "Z-Image-Turbo"),
}
PLAIN = {  # the bases themselves: nothing to refuse
    "sd15": ("sd15", {}), "sdxl": ("sdxl", {}), "sd3-large": ("sd3-large", {}), "sd3-medium": ("sd3", {}),
    "flux-dev": ("flux", {}), "zimage": ("zimage", {}),
    # no guidance embedding with FLUX.1-dev's dynamic shift: a de-distilled base
    "flux-de-distilled": ("flux", {"transformer/config.json": {"guidance_embeds": False}}),
    # zero terminal SNR spaces its steps trailing for its own reason (v-prediction, rescaled betas)
    "sd15-zero-snr": ("sd15", {"scheduler/scheduler_config.json": {
        "timestep_spacing": "trailing", "rescale_betas_zero_snr": True, "prediction_type": "v_prediction"}}),
}


def configs_folder(root: Path, shipped: str, changes: dict[str, dict]) -> Path:
    """The shipped config folder ``shipped`` copied to ``root/my-model`` (a name with no distilled word in it), each
    of its files given ``changes``."""
    folder = root / "my-model"
    shutil.copytree(MODEL_CONFIG_DIR / shipped, folder)
    for name, change in changes.items():
        path = folder / name
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    return folder


def base_md(tmp_path: Path, base: str, lang: str, allow: bool = False) -> str:
    from trainer.train.runner import Runner
    from ui.binding import UI
    from ui.context import AppContext
    from ui.paths import PathPolicy
    from ui.steps.plan import base_check

    ui = UI(AppContext(workspace=tmp_path, policy=PathPolicy(tmp_path, False), runner=Runner()))
    cfg = from_dict({"model": {"base": base, "allow_distilled": allow}})
    return base_check(ui, cfg, lang)


@pytest.mark.parametrize("case", sorted(DISTILLED))
def test_the_plan_step_refuses_a_distilled_base_by_its_configs_as_start_would(tmp_path, case):
    shipped, changes, named = DISTILLED[case]
    folder = configs_folder(tmp_path, shipped, changes)
    check = distillation_check(from_dict({"model": {"base": str(folder)}}).model)
    assert check.distilled and check.refusal is not None and check.refusal.code == "error.train.distilled"
    for lang in LANGS:
        shown = base_md(tmp_path, str(folder), lang)
        assert shown == f"⚠️ {words.say(check.refusal, lang)}"
        assert named in shown and "model.allow_distilled" in shown, shown
    assert "증류" in base_md(tmp_path, str(folder), "ko")
    # allowed: what the run will say as it starts instead (the base.distilled alert and its advice)
    for lang in LANGS:
        allowed = base_md(tmp_path, str(folder), lang, allow=True)
        assert words.say("base.distilled", lang, reason=check.reason) in allowed
        assert "model.allow_distilled = true" not in allowed


@pytest.mark.parametrize("case", sorted(PLAIN))
def test_the_plain_bases_are_not_called_distilled(tmp_path, case):
    shipped, changes = PLAIN[case]
    folder = configs_folder(tmp_path, shipped, changes)
    check = distillation_check(from_dict({"model": {"base": str(folder)}}).model)
    assert not check.distilled and check.refusal is None and check.unread is None
    note = ["flux.note.guidance_distilled"] if case == "flux-dev" else []  # dev trains, with what it costs said
    assert [m.code for m in check.messages] == note
    for lang in LANGS:
        assert base_md(tmp_path, str(folder), lang).startswith(words.say("ui.base_ok", lang, base=str(folder)))
    if note:
        for lang in LANGS:
            assert words.say(check.warnings[0], lang) in base_md(tmp_path, str(folder), lang)


def test_the_cli_plan_says_the_refusal_and_flux1_devs_note_once(tmp_path, capsys):
    from trainer.cli import main

    data = write_toy_dataset(tmp_path / "data", n=2)
    schnell = configs_folder(tmp_path / "a", *DISTILLED["flux-schnell"][:2])
    dev = configs_folder(tmp_path / "b", "flux", {})

    def plan(base: Path, *args: str) -> str:
        path = tmp_path / "plan.toml"
        path.write_text(tiny_config(data, tmp_path / "runs", {"train.max_steps": 1}, base=str(base)).to_toml())
        capsys.readouterr()
        assert main(["plan", str(path), *args]) == 0
        return capsys.readouterr().out

    for lang in LANGS:
        said = plan(schnell, "--lang", lang)
        refusal = distillation_check(from_dict({"model": {"base": str(schnell)}}).model).refusal
        assert f"  - {words.say(refusal, lang)}" in said and "FLUX.1-schnell" in said
        note = plan(dev, "--lang", lang)
        assert note.count(words.say("flux.note.guidance_distilled", lang, guidance=1.0, sample=3.5)) == 1, note
    out = json.loads(plan(schnell, "--json"))
    assert out["base"]["distilled"] and out["base"]["refused"]
    assert "model.allow_distilled" in out["base"]["messages"][0]["en"] and "증류" in out["base"]["messages"][0]["ko"]


def test_a_single_file_says_it_by_its_own_metadata_and_a_thumbnail_says_nothing(tmp_path):
    tensor = {"model.diffusion_model.input_blocks.0.0.weight": torch.zeros(2, 2)}
    titled = tmp_path / "model.safetensors"
    save_file(tensor, str(titled), metadata={"modelspec.title": "Dreamy XL Lightning 4-step"})
    pictured = tmp_path / "other.safetensors"
    save_file(tensor, str(pictured), metadata={"modelspec.title": "Dreamy", "modelspec.thumbnail":
                                               "data:image/png;base64,iVBOR/lcm+turbo/hyper+Lightning"})
    check = distillation_check(from_dict({"model": {"base": str(titled)}}).model)
    assert check.refusal is not None and check.reason.code == "base.distilled_metadata"
    assert "modelspec.title" in words.say(check.refusal, "ko") and "lightning" in words.say(check.refusal, "ko")
    assert not distillation_check(from_dict({"model": {"base": str(pictured)}}).model).distilled


def test_a_hub_id_is_read_from_the_local_cache_and_never_fetched(tmp_path, monkeypatch):
    """In the cache: its configs say it. Not there: only the name was checked, and the plan says so."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    snapshot = tmp_path / "hub" / "models--someone--fast-xl" / "snapshots" / "c0ffee"
    shutil.copytree(configs_folder(tmp_path, *DISTILLED["sdxl-turbo"][:2]), snapshot)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("c0ffee")
    check = distillation_check(from_dict({"model": {"base": "someone/fast-xl"}}).model)
    assert check.refusal is not None and check.reason.code == "base.distilled_trailing"
    missing = distillation_check(from_dict({"model": {"base": "someone/elsewhere"}}).model)
    assert not missing.distilled and [m.code for m in missing.messages] == ["base.configs_unread"]
    for lang in LANGS:
        assert "someone/elsewhere" in base_md(tmp_path, "someone/elsewhere", lang)


def test_start_reads_the_files_the_plan_read(tmp_path):
    """A loaded model's ``_name_or_path`` is the folder this run loaded it from; the file's is what a saved copy
    recorded. Start judges the file's, as the plan does, and both give the same reason; a tiny built-in base, which
    has no files, is judged by its own configs as built."""
    from trainer.cli import main

    assert main(["tiny-model", "sdxl", str(tmp_path / "tiny")]) == 0
    folder = tmp_path / "renamed"
    shutil.copytree(tmp_path / "tiny", folder)
    path = folder / "unet" / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "_name_or_path": "stabilityai/sdxl-turbo"}))
    model = from_dict({"model": {"base": str(folder), "allow_distilled": True}}).model
    _, info = load_pipeline(model)
    planned = distillation_check(model)
    assert info.distilled and info.distilled_reason == planned.reason
    assert info.distilled_reason.code == "base.distilled_config"
    assert [w.code for w in info.warnings] == [m.code for m in planned.messages] == ["base.distilled"]
    for base in ("tiny-flux", "tiny-zimage", "tiny-sd3"):
        model = from_dict({"model": {"base": base}}).model
        _, info = load_pipeline(model)
        assert info.warnings == distillation_check(model).messages, base
    # the loaded pipe's configs and the files' agree wherever no saved name is involved
    pipe, _ = load_pipeline(from_dict({"model": {"base": str(tmp_path / "tiny")}}).model)
    _, on_disk = configs_on_disk(str(tmp_path / "tiny"), "folder", family("sdxl"))
    assert detect_distilled("x", pipe, "sdxl") == detect_distilled("x", family="sdxl", configs=on_disk) == (False, "")


def test_each_familys_rule_reads_the_configs_not_the_pipeline():
    """The families' one hook over :class:`BaseConfigs`: a part that was not read says nothing (a FLUX.1 base whose
    scheduler config is missing is not taken for schnell)."""
    flux = family("flux")
    transformer = json.loads((MODEL_CONFIG_DIR / "flux" / "transformer" / "config.json").read_text())
    assert flux.distilled_reason(BaseConfigs(denoiser={**transformer, "guidance_embeds": False})) is None
    assert flux.distilled_reason(BaseConfigs(denoiser={**transformer, "guidance_embeds": False},
                                             scheduler=SCHNELL)).code == "flux.distilled.timestep"
    sd3 = family("sd3").distilled_reason(BaseConfigs(metadata={"modelspec.title": "SD3.5 Large Turbo"}))
    assert sd3 is not None and sd3.code == "sd3.distilled_turbo"
    assert "SD3.5 Large Turbo" in words.say(sd3, "ko") and "증류" in words.say(sd3, "ko")
    for name in ("sd15", "sdxl", "sd3", "flux", "zimage"):
        assert family(name).distilled_reason(BaseConfigs()) is None, name
