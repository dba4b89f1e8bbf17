"""Settings Start asks to confirm, and the learning rate far from the preset's (``risk.*``)."""

TEXTS = {
    "risk.lr_far": ("the learning rate {lr:g} is {times} preset's {preset_lr:g} ({name})",
                    "학습률 {lr:g}은(는) 프리셋({name})의 {preset_lr:g}의 {times}입니다"),
    "risk.lr_far_start": ("The learning rate {lr:g} is {times} preset's {preset_lr:g} ({name}): {advice}.",
                          "학습률 {lr:g}은(는) 프리셋({name})의 {preset_lr:g}의 {times}입니다. {advice}."),
    "risk.times_more": ("{ratio:,.3g}× the", "{ratio:,.3g}배"),
    "risk.times_less": ("1/{inverse:,.3g} of the", "1/{inverse:,.3g}"),
    "risk.breaks": ("it can break the numbers (nan) within a few steps", "몇 스텝 만에 수치가 깨질(nan) 수 있습니다"),
    "risk.learns_nothing": ("it may learn nothing in this run's steps", "이 스텝 수로는 거의 배우지 못할 수 있습니다"),
    "risk.dose_far": ("The dose {dose:.3g} is {times:.3g}× the top of this preset's zone ({low:g}–{high:g}): expect "
                      "memorised, burnt pictures.",
                      "학습량 {dose:.3g}은(는) 이 프리셋 범위({low:g}–{high:g}) 상한의 {times:.3g}배입니다. "
                      "그림을 외우고 색이 탈 수 있습니다."),
}  # fmt: skip
