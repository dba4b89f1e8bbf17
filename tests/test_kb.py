"""The knowledge base: it loads, validates, ranks causes from signals, and every change is exactly one change."""

from __future__ import annotations

import copy
import itertools
import math
import re
import tomllib

import pytest

import words
from trainer.config.schema import Config, diff_configs, from_dict
from trainer.doctor.kb import GROUPS, KBError, apply_change, describe_change, load_kb, parse_kb, text
from trainer.doctor.knowledge import KB_PATH
from trainer.errors import UserError

HANGUL = re.compile(r"[\uac00-\ud7a3]")

# A config where every prescription's change has something to change: fp16, text encoder on, EMA on,
# clipping off, 8-bit Adam, accumulation 4, noise offset and a high caption dropout.
STRESSED = {
    "train": {"precision": "fp16", "batch_size": 4, "grad_accum": 4, "noise_offset": 0.1, "fp16_growth_interval": 100},
    "lora": {"train_text_encoder": True, "rank": 32, "alpha": 32.0},
    "optim": {"optimizer": "adamw8bit", "max_grad_norm": 0.0, "lr": 2e-4},
    "ema": {"enabled": True},
    "dataset": {"caption_dropout": 0.3, "shuffle_tags": False},
}


@pytest.fixture(scope="module")
def kb():
    return load_kb()


@pytest.fixture
def raw():
    return tomllib.loads(KB_PATH.read_text(encoding="utf-8"))


def all_entries(kb):
    return [e for table in kb.tables.values() for e in table.values()] + [kb.strength]


# ------------------------------------------------------------------------------------------ loading


def test_kb_loads_validates_and_is_cached(kb):
    assert load_kb() is kb
    assert len(kb.symptoms) >= 15 and len(kb.causes) >= 15 and len(kb.prescriptions) >= 30
    assert {s.group for s in kb.symptoms.values()} == set(GROUPS)


def test_every_cross_reference_resolves_and_nothing_is_orphaned(kb):
    used_signals = {sig for s in kb.symptoms.values() for sig in s.signals}
    used_causes = {c for s in kb.symptoms.values() for c in s.causes}
    used_rx = {p for c in kb.causes.values() for p in c.prescriptions}
    used_rx |= {p for cl in kb.checklists.values() for p in cl.items}
    used_rx |= {p for r in kb.strength_rules.values() for p in r.prescriptions}
    assert (
        used_signals <= set(kb.signals) and used_causes <= set(kb.causes) and used_rx <= set(kb.prescriptions)
    )
    # every defined entry is reachable, so the Troubleshoot page never shows a dead end or dead data
    assert set(kb.signals) == used_signals
    assert set(kb.causes) == used_causes
    assert set(kb.prescriptions) == used_rx
    for cl in kb.checklists.values():
        assert cl.symptom in kb.symptoms
    for s in kb.symptoms.values():
        for sig in s.signals:
            assert s in kb.symptoms_for_signal(sig)


def test_brief_signal_ids_exist(kb):
    for sig in ("nonfinite_grad", "nonfinite_param", "nonfinite_ema", "nonfinite_loss", "loss_scale_collapse",
                "grad_spike", "clip_saturated", "loss_trending_up", "weight_norm_growth", "dose_over",
                "dose_under", "ema_drift", "learning_stalled", "sample_burn", "leakage", "low_likeness",
                "low_adherence", "loss_scale_growing", "sample_prompt_seen"):  # fmt: skip
        assert kb.symptoms_for_signal(sig), sig


def test_korean_texts_are_non_empty_hangul_and_english_texts_are_not(kb):
    for e in all_entries(kb):
        assert e.texts, e.id
        for field, langs in e.texts.items():
            assert langs["ko"].strip() and HANGUL.search(langs["ko"]), (e.id, field)
            assert langs["en"].strip() and not HANGUL.search(langs["en"]), (e.id, field)


def test_text_picks_the_language_and_falls_back_to_english(kb):
    rx = kb.prescription("switch_to_bf16")
    assert "bf16" in text(rx, "title", "en") and HANGUL.search(text(rx, "title", "ko"))
    assert text(rx, "title", "fr") == text(rx, "title", "en") == rx.text("title")
    with pytest.raises(KeyError, match="no text 'nope'"):
        text(rx, "nope")


def test_unknown_ids_raise_a_clear_key_error(kb):
    with pytest.raises(KeyError, match="no cause with id 'gremlins'"):
        kb.cause("gremlins")


# ------------------------------------------------------------------------------- seed coverage


def test_checklist_a_b_c_hold_the_seed_items(kb):
    assert kb.checklists["A"].symptom == "loss_nan"
    assert list(kb.checklists["A"].items) == [
        "switch_to_bf16", "lower_lr", "clip_grad_1", "clip_grad_05", "check_unscale_clip_order",
        "text_encoder_off", "ema_off_compare",
    ]  # fmt: skip
    assert kb.checklists["B"].symptom == "samples_melt_late"
    assert set(kb.checklists["B"].items) == {
        "lower_rank", "lower_alpha", "fewer_steps", "earlier_checkpoint", "clean_captions",
        "lower_trigger_frequency", "compare_ema_and_raw",
    }  # fmt: skip
    assert kb.checklists["C"].symptom == "breaks_with_trigger"
    assert list(kb.checklists["C"].items) == [
        "separate_trigger",
        "switch_to_bf16",
        "fixed_validation_prompts",
    ]


def test_checklist_a_changes_are_the_right_config_moves(kb):
    rx = kb.prescriptions
    assert (rx["switch_to_bf16"].change.key, rx["switch_to_bf16"].change.value) == ("train.precision", "bf16")
    assert rx["switch_to_bf16"].change.requires == ("bf16_supported",)
    assert (rx["lower_lr"].change.key, rx["lower_lr"].change.op) == ("optim.lr", "mul")
    assert rx["lower_lr"].change.value < 1 and rx["lower_lr_strong"].change.value == pytest.approx(0.1)
    assert rx["clip_grad_1"].change.value == 1.0 and rx["clip_grad_05"].change.value == 0.5
    assert rx["text_encoder_off"].change.value is False and rx["ema_off_compare"].change.value is False
    # the unscale-before-clip check is advice, not a setting, and says this app already does it
    assert rx["check_unscale_clip_order"].change is None
    assert "already" in rx["check_unscale_clip_order"].text("detail")


def test_settings_table_six_rows_lead_with_the_seed_cause(kb):
    rows = {
        "not_alike": ("underfit", {"raise_steps", "raise_lr", "raise_rank", "check_features_not_captioned"}),
        "same_pose_background": ("data_monotonous", {"diversify_data", "caption_pose_background"}),
        "outfit_stuck": ("outfit_absorbed", {"caption_outfit", "add_other_outfits"}),
        "burnt_colours": ("overtraining", {"earlier_checkpoint", "lower_lr"}),
        "everyone_is_character": (
            "concept_bleed",
            {"lower_strength", "fewer_steps", "use_regularization_images"},
        ),
        "style_changes_too": ("style_learned", {"add_varied_styles", "lower_rank"}),
    }
    for sid, (first_cause, rx) in rows.items():
        sym = kb.symptom(sid)
        assert sym.group == "pictures" and sym.causes[0] == first_cause, sid
        found = {p.id for c in sym.causes for p in kb.prescriptions_for(c)}
        assert rx <= found, (sid, rx - found)
    assert "lr_too_high" in kb.symptom("burnt_colours").causes


def test_numerics_knowledge_is_there(kb):
    # three EMA pitfalls, optimizer state, loss scaling, text encoder under fp16
    for cid in ("ema_low_precision", "ema_wrong_targets", "ema_mixed_weights", "optimizer_state_precision",
                "loss_scaling_wrong", "fp16_overflow", "text_encoder_fp16"):  # fmt: skip
        assert cid in kb.causes
    assert kb.cause("ema_low_precision").only_when == {"ema.enabled": (True,)}
    fp16 = kb.cause("fp16_overflow").text("explanation")
    for condition in ("learning rate", "accumulation", "text encoder", "rank", "loss weighting", "bf16"):
        assert condition in fp16, condition
    assert "Ampere" in kb.prescription("switch_to_bf16").text("detail")
    assert kb.prescriptions_for("optimizer_state_precision")[0].change.value == "adamw"
    assert "lora_ema.safetensors" in kb.prescription("compare_ema_and_raw").text("detail")


def test_principles_stages_and_data_advice(kb):
    for pid in ("one_change_at_a_time", "fix_prompts_and_seeds", "write_down_changes", "half_are_data",
                "no_distilled_training", "pictures_over_loss"):  # fmt: skip
        assert pid in kb.principles
    seq = kb.principles["one_change_at_a_time"].sequence
    assert seq[0] == "switch_to_bf16" and "switch_to_adamw" in seq
    assert list(kb.stages) == ["early", "resembling", "fit", "overfit_starting", "overfit"]
    assert [s.id for s in kb.stages.values() if s.pick] == ["fit", "overfit_starting"]
    assert list(kb.sample_prompts) == ["trigger_only", "unseen_pose_background", "other_outfit", "no_trigger"]
    assert kb.symptom("settings_dont_help").causes == ("data_problem",)
    assert kb.cause("distilled_base").prescriptions == ("train_on_base_model",)
    assert kb.symptoms_for_signal("distilled_base")[0].id == "blurry_on_distilled"


def test_strength_rules(kb):
    assert kb.strengths == (0.6, 0.8, 1.0, 1.2)
    for best in (0.6, 0.8):
        rule = kb.strength_verdict(best)
        assert rule.verdict == "slightly_overtrained"
        assert rule.prescriptions == ("lower_strength", "earlier_checkpoint")
    done = kb.strength_verdict(1.0)
    assert done.verdict == "fit" and done.prescriptions == ()
    under = kb.strength_verdict(1.2)
    assert under.verdict == "undertrained" and set(under.prescriptions) == {"raise_steps", "raise_lr"}
    assert kb.symptom(under.symptom).causes == ("underfit",)


# ---------------------------------------------------------------------------------------- changes


def test_every_change_validates_and_changes_exactly_its_own_key(kb):
    default, stressed = Config(), from_dict(STRESSED)
    changes = [p for p in kb.prescriptions.values() if p.change]
    assert len(changes) >= 15
    for p in changes:
        on_default = diff_configs(default, apply_change(default, p))
        assert set(on_default) <= {p.change.key}, (p.id, on_default)  # may be a no-op: already so by default
        after = apply_change(stressed, p)
        assert isinstance(after, Config)
        assert list(diff_configs(stressed, after)) == [p.change.key], p.id


def test_apply_change_halves_lr_and_keeps_the_input_untouched(kb):
    cfg = Config()
    new = apply_change(cfg, kb.prescription("lower_lr"))
    assert new.optim.lr == pytest.approx(5e-5) and cfg.optim.lr == pytest.approx(1e-4)
    assert apply_change({"optim": {"lr": 3e-4}}, {"key": "optim.lr", "op": "mul", "value": 0.5}).optim.lr == (
        pytest.approx(1.5e-4)
    )


def test_clip_cap_turns_clipping_on_and_never_loosens_it(kb):
    cap = kb.prescription("clip_grad_1")
    assert apply_change({"optim": {"max_grad_norm": 0.0}}, cap).optim.max_grad_norm == 1.0  # 0 = off
    assert apply_change({"optim": {"max_grad_norm": 5.0}}, cap).optim.max_grad_norm == 1.0
    assert apply_change({"optim": {"max_grad_norm": 0.3}}, cap).optim.max_grad_norm == 0.3


def test_counts_stay_whole_and_run_length_follows_max_steps(kb):
    assert apply_change(Config(), kb.prescription("lower_rank")).lora.rank == 8
    assert (
        apply_change({"train": {"grad_accum": 1}}, kb.prescription("lower_grad_accum")).train.grad_accum == 1
    )
    assert apply_change({"train": {"epochs": 1}}, kb.prescription("fewer_steps")).train.epochs == 1
    cfg = from_dict({"train": {"max_steps": 2000, "epochs": 10}})
    after = apply_change(cfg, kb.prescription("fewer_steps"))
    assert diff_configs(cfg, after) == {"train.max_steps": (2000, 1000)}


def test_apply_change_keeps_the_preset_name_and_rejects_out_of_range(kb):
    cfg = from_dict({"preset": "stability-first"})
    after = apply_change(cfg, kb.prescription("lower_lr"))
    assert after.preset == "stability-first" and after.optim.lr == pytest.approx(cfg.optim.lr / 2)
    with pytest.raises(UserError, match=r"lora\.rank"):
        apply_change({"lora": {"rank": 1024}}, kb.prescription("raise_rank"))
    with pytest.raises(ValueError, match="not a config change"):
        apply_change(Config(), kb.prescription("earlier_checkpoint"))


def test_describe_change_in_both_languages(kb):
    rx = kb.prescription("lower_lr")
    assert words.say(describe_change(rx)) == "multiply optim.lr by 0.5"
    assert words.say(describe_change(rx, Config()), "ko") == "optim.lr 값을 0.5배로 바꿉니다 (0.0001 → 5e-05)"
    bf16 = words.say(describe_change(kb.prescription("switch_to_bf16"), {"train": {"precision": "fp16"}}))
    assert bf16 == "set train.precision to bf16 (fp16 → bf16)"
    steps = words.say(describe_change(kb.prescription("fewer_steps"), {"train": {"max_steps": 1000}}))
    assert steps == "multiply train.max_steps by 0.5 (1000 → 500)"


# ---------------------------------------------------------------------------------------- ranking


def test_grad_first_under_fp16_blames_overflow_and_scaling(kb):
    ranked = kb.rank_causes({"nonfinite_grad": 1, "loss_scale_collapse": 1}, from_dict(STRESSED))
    top = ranked[0]
    assert top.cause.id in {"fp16_overflow", "loss_scaling_wrong"}
    assert {r.cause.id for r in ranked[:2]} == {"fp16_overflow", "loss_scaling_wrong"}
    rx = [p.id for p in kb.prescriptions_for(top.cause.id)]
    assert "switch_to_bf16" in rx and "lower_lr" in rx
    assert ("nonfinite_grad", "nan_grad_first") in top.evidence
    assert ("loss_scale_collapse", "loss_scale_falling") in top.evidence
    assert all(a.score >= b.score for a, b in itertools.pairwise(ranked))


def test_config_rules_out_causes_that_cannot_happen(kb):
    bf16 = kb.rank_causes({"nonfinite_grad": 1, "loss_scale_collapse": 1}, Config())
    ids = [r.cause.id for r in bf16]
    assert "fp16_overflow" not in ids and "loss_scaling_wrong" not in ids
    assert ids[0] == "input_scale"
    assert [c.id for c in kb.causes_for("nan_ema_first", Config())] == []
    assert [c.id for c in kb.causes_for("nan_ema_first", {"ema": {"enabled": True}})] == [
        "ema_low_precision", "ema_wrong_targets",
    ]  # fmt: skip


def test_param_first_blames_optimizer_state_and_ema(kb):
    ranked = [r.cause.id for r in kb.rank_causes({"nonfinite_param": 1.0})]
    assert ranked[0] == "optimizer_state_precision" and ranked[1].startswith("ema_")
    stressed = [r.cause.id for r in kb.rank_causes({"nonfinite_param": 1.0}, STRESSED)]
    assert stressed[:2] == ranked[:2]
    grad_first = [r.cause.id for r in kb.rank_causes({"nonfinite_grad": 1.0})]
    assert "optimizer_state_precision" not in grad_first[:2]
    # an EMA-only nan points at the averaging
    assert kb.rank_causes({"nonfinite_ema": 1.0})[0].cause.id == "ema_low_precision"


def test_ranking_ignores_absent_zero_and_nan_signals_and_weights_by_value(kb):
    assert kb.rank_causes({}) == []
    assert kb.rank_causes({"nonfinite_grad": 0, "nonfinite_param": math.nan, "unknown": 1}) == []
    weak = kb.rank_causes({"leakage": 0.5})[0]
    assert weak.cause.id == "concept_bleed" and weak.score == pytest.approx(0.5)


def test_ties_keep_kb_order(kb):
    ranked = kb.rank_causes({"nonfinite_grad": 1, "loss_scale_collapse": 1})
    assert ranked[0].score == ranked[1].score
    order = list(kb.causes)
    assert order.index(ranked[0].cause.id) < order.index(ranked[1].cause.id)


# --------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["symptom"][0]["causes"].append("gremlins"), "loss_nan.*unknown cause 'gremlins'"),
        (
            lambda d: d["cause"][0]["prescriptions"].append("magic"),
            "fp16_overflow.*unknown prescription 'magic'",
        ),
        (lambda d: d["symptom"][0]["signals"].append("vibes"), "unknown signal 'vibes'"),
        (lambda d: d["checklist"][0]["items"].append("pray"), "checklist.*'A'.*unknown prescription 'pray'"),
        (lambda d: d["prescription"][0].pop("title_ko"), "switch_to_bf16.*missing title_ko"),
        (
            lambda d: d["prescription"][0].update(detail_ko="in English"),
            "switch_to_bf16.*detail_ko has no Korean",
        ),
        (lambda d: d["prescription"][0]["change"].update(key="optim.speed"), "optim.speed.*not a config key"),
        (lambda d: d["prescription"][0]["change"].update(key="optim"), "'optim'.*not a config key"),
        (lambda d: d["prescription"][0]["change"].update(value="fp8"), "switch_to_bf16.*default config"),
        (lambda d: d["prescription"][0]["change"].update(op="double"), "switch_to_bf16.*op"),
        (lambda d: d["symptom"][0].update(group="misc"), "loss_nan.*group 'misc'"),
        (lambda d: d["symptom"][0].update(colour="red"), "loss_nan.*unknown key 'colour'"),
        (lambda d: d["cause"].append(copy.deepcopy(d["cause"][0])), "fp16_overflow.*defined twice"),
        (
            lambda d: d["cause"][0]["only_when"].update({"train.speed": ["fast"]}),
            "train.speed.*not a config key",
        ),
        (lambda d: d["strength_rule"][1].update(best_strength_range=[0.8, 1.1]), "overlaps"),
        (lambda d: d["symptom"][0].update(causes=[]), "loss_nan.*no causes"),
    ],
)
def test_validation_names_the_broken_entry(raw, mutate, message):
    parse_kb(copy.deepcopy(raw))  # the unbroken data passes
    mutate(raw)
    with pytest.raises(KBError, match=message):
        parse_kb(raw)


def test_load_kb_reports_an_unreadable_file(tmp_path):
    bad = tmp_path / "kb.toml"
    bad.write_text("[[symptom]\n", encoding="utf-8")
    with pytest.raises(KBError, match="cannot read the knowledge base"):
        load_kb(bad)
