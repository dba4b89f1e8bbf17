"""Korean as it is written: a particle fits the value before it (no "2.08은(는)"), one term for one thing, and the
choices and device names a Korean page shows are worded."""

from __future__ import annotations

import re

import pytest

import words
from words.korean import PAIR_RE, ending, josa

# the fields a particle may follow: numbers and Korean words, whose last sound is known
SAYABLE = {"dose", "lr", "expected", "title"}
FIELD_BEFORE = re.compile(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}[\"'”’)]*$")


@pytest.mark.parametrize(("value", "pair", "fits"), [
    ("2.08", "은(는)", "은"),  # 이 점 영팔
    ("0.006", "이(가)", "이"),  # 영 점 영영육
    ("0.0062", "이(가)", "가"),  # … 육이
    ("2", "은(는)", "는"),
    ("10", "은(는)", "은"),  # 십
    ("1,000", "을(를)", "을"),  # 천
    ("1000000000000", "은(는)", "는"),  # 조
    ("7", "(으)로", "로"),  # 칠: ㄹ takes 로
    ("3", "(으)로", "으로"),  # 삼
    ("학습량", "이(가)", "이"),
    ("검토", "을(를)", "를"),
    ("“과적합”", "은(는)", "은"),  # the quotes are not read
    ("5%", "은(는)", "는"),  # 퍼센트
    ("GPU", "은(는)", "는"),  # 지피유
])
def test_a_particle_fits_the_sound_its_value_ends_with(value, pair, fits):
    assert josa(value, pair) == fits


def test_a_value_ending_in_neither_letter_nor_digit_has_no_known_sound():
    assert ending("—") is None and ending("") is None


@pytest.mark.parametrize("code", sorted(c for c, (_, ko) in words.TEXTS.items() if PAIR_RE.search(ko)))
def test_a_particle_pair_follows_only_a_value_whose_ending_is_known(code):
    """Paths, names and English words are unknown endings: the sentence is built so no particle follows them."""
    ko = words.TEXTS[code][1]
    for m in PAIR_RE.finditer(ko):
        before = FIELD_BEFORE.search(ko[: m.start()])
        assert before and before.group(1) in SAYABLE, f"{code}: {ko[max(0, m.start() - 30):m.end()]}"


@pytest.mark.parametrize("code", sorted(c for c, (_, ko) in words.TEXTS.items() if PAIR_RE.search(ko)))
def test_a_worded_message_never_shows_both_forms(code):
    values = {f: 2.08 for f in re.findall(r"\{(\w+)", words.TEXTS[code][1])}
    values.update({"title": "과적합", "where": "계획의"})
    text = words.say(code, "ko", **values)
    assert not PAIR_RE.search(text), text


def test_the_verdicts_dose_reads_2_08_eun():
    text = words.say("verdict.dose", "ko", where="계획의", dose=2.08, low=0.4, high=3, side="안")
    assert "학습량 2.08은 이 프리셋" in text


def test_one_term_for_review_and_for_prior_images():
    korean = "\n".join(ko for _, ko in words.TEXTS.values())
    assert words.say("ui.step_review", "ko") == "검토" and "리뷰" not in korean
    assert "정규화 그림" not in korean.replace("정규화 그림(우리의", "").replace("sd-scripts의 정규화 그림", "")


def test_a_choice_that_is_a_word_is_worded_and_a_name_stays_as_it_is():
    from ui.fields import BY_NAME

    assert BY_NAME["on_nonfinite"].choice_items("ko") == [("멈추기", "stop"), ("그 스텝 건너뛰기", "skip"),
                                                          ("되돌리고 한 가지 바꾸기", "rollback")]
    assert [v for _, v in BY_NAME["scheduler"].choice_items("ko")] == list(BY_NAME["scheduler"].choices)
    assert ("fp16", "fp16") in BY_NAME["precision"].choice_items("ko")
    for name in ("on_nonfinite", "captioner", "family", "scheduler"):
        for label, _ in BY_NAME[name].choice_items("ko"):
            assert not re.fullmatch(r"[a-z_ ]+", label), (name, label)


def test_the_memory_shared_with_the_system_is_worded_a_gpu_keeps_its_name():
    from trainer.plan.memory import SHARED_MEMORY, MemoryPlan

    cpu = MemoryPlan({}, 0, SHARED_MEMORY["cpu"], None, "unknown")
    assert words.say(cpu.device_words(), "ko") == "CPU (시스템 메모리)"
    assert words.say(cpu.device_words(), "en") == SHARED_MEMORY["cpu"]
    assert MemoryPlan({}, 0, "RTX 4060 (cuda:0)", None, "unknown").device_words() == "RTX 4060 (cuda:0)"
