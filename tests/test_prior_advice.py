"""Advice a run already follows is never offered: "Add prior images" to a run that had prior images
(dataset.reg_path, the Dataset step's 'Prior images folder': one name for them in both languages)."""

from __future__ import annotations

from PIL import Image

from tests.test_review import _world
from tests.test_verdict import _set_config, demo_run
from trainer.doctor.diagnose import diagnose
from ui.steps.troubleshoot import symptom_markdown


def test_add_prior_images_is_never_offered_to_a_run_that_had_them(tmp_path):
    run = demo_run(tmp_path, lambda step, kind: _world(), steps=(10, 20))
    offered = "    - Add prior images\n"
    assert offered in symptom_markdown("everyone_is_character", run, "en", diagnose(run, write=False)) + "\n"
    prior = tmp_path / "prior"
    prior.mkdir()
    for i in range(3):
        Image.new("RGB", (64, 64), (30 * i, 90, 200)).save(prior / f"person_{i}.png")
        (prior / f"person_{i}.txt").write_text("a person", encoding="utf-8")
    _set_config(run, dataset={"reg_path": str(prior)})
    diag = diagnose(run, write=False)
    panel = symptom_markdown("everyone_is_character", run, "en", diag) + "\n"
    assert offered not in panel
    assert f"~~Add prior images~~ (already so in this run: dataset.reg_path is {prior})" in panel
    ko = symptom_markdown("everyone_is_character", run, "ko", diag)
    assert "~~사전 보존 그림 추가~~" in ko and "정규화 그림 추가" not in ko
    assert not [p for p in diag["prescriptions"] if p["id"] == "use_regularization_images" and p["applicable"]]
