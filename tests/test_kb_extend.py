"""Adding a symptom is an edit of kb.toml only: a new [[symptom]] in a copy of the file shows up in the
Troubleshoot list, is found from its signal, and feeds the cause ranking, with no code naming it."""

from __future__ import annotations

import ast
from pathlib import Path

from trainer.doctor.kb import load_kb
from trainer.doctor.knowledge import KB_PATH
from ui.steps.troubleshoot import symptom_choices

NEW_SYMPTOM = '''
[[symptom]]
id = "gradients_jump_at_the_end"
group = "numerics"
title_en = "Gradients jump in the last steps"
title_ko = "마지막 스텝에서 그라디언트가 튐"
description_en = "The gradient norm was calm for most of the run and leapt near its end."
description_ko = "실행 대부분 동안 잔잔하던 그라디언트 노름이 끝 무렵에 뛰었다."
signals = ["grad_spike"]
causes = ["lr_too_high"]
'''


def test_a_symptom_added_to_kb_toml_appears_in_the_troubleshooting_list(tmp_path):
    path = tmp_path / "kb.toml"
    path.write_text(KB_PATH.read_text(encoding="utf-8") + NEW_SYMPTOM, encoding="utf-8")
    kb = load_kb(path)
    assert "gradients_jump_at_the_end" not in load_kb().symptoms  # the shipped file is untouched
    for lang, title in (("en", "Gradients jump in the last steps"), ("ko", "마지막 스텝에서 그라디언트가 튐")):
        labels = dict((value, label) for label, value in symptom_choices(lang, kb))
        assert title in labels["gradients_jump_at_the_end"]
    assert kb.symptom("gradients_jump_at_the_end") in kb.symptoms_for_signal("grad_spike")
    ranked = kb.rank_causes({"grad_spike": 1.0})
    evidence = {pair for r in ranked if r.cause.id == "lr_too_high" for pair in r.evidence}
    assert ("grad_spike", "gradients_jump_at_the_end") in evidence


def emitted_signals() -> set[str]:
    """Every signal id a detector names in a ``Finding("…", …)`` call under trainer/, read from the source."""
    out = set()
    for path in (Path(__file__).resolve().parents[1] / "trainer").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out.add(node.args[0].value)
    return out


def test_every_signal_a_detector_emits_is_in_kb_toml_with_a_symptom():
    kb = load_kb()
    signals = emitted_signals()
    assert {"grad_spike", "dose_over", "sample_burn", "step_slowdown"} <= signals  # the scan sees multi-line calls
    for sig in signals:
        assert sig in kb.signals and kb.symptoms_for_signal(sig), f"{sig}: give it a [[signal]] and a [[symptom]]"
