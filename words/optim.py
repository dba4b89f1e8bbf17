"""Words about optimizers (trainer/train/optim.py names the codes)."""

TEXTS = {
    "optim.dose_note.prodigy": (
        "Prodigy sets its own step size, so its lr is a multiplier and the dose is not comparable to AdamW's.",
        "Prodigy는 걸음 크기를 스스로 정하므로 lr은 배율일 뿐이고, 이 값은 AdamW의 값과 비교할 수 없습니다.",
    ),
}
