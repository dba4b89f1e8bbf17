"""Z-Image (base and Turbo): why a Turbo base is refused and what to do instead (``zimage.*``)."""

TEXTS = {
    "field.family.choice.zimage": ("Z-Image", "Z-Image"),  # model.family's choice in the app
    "zimage.distilled_turbo": (
        "{why}: this is Z-Image-Turbo, step-distilled to draw in 8 steps without guidance. A LoRA trained on it "
        "comes out generic (the subject and style barely take) and the training undoes the distillation, so Turbo's "
        "8-step pictures blur. Train on Z-Image base (Tongyi-MAI/Z-Image) and use the LoRA on Turbo, or merge a "
        "de-distillation (training) adapter into Turbo before training",
        "{why}: 8스텝·가이던스 없이 그리도록 스텝 증류된 Z-Image-Turbo입니다. 그 위에서 학습한 LoRA는 밋밋하게 "
        "나오고(인물·화풍이 잘 붙지 않음) 학습이 증류를 풀어 Turbo의 8스텝 그림이 흐려집니다. Z-Image 기본 "
        "모델(Tongyi-MAI/Z-Image)에서 학습해 Turbo에 붙여 쓰거나, 학습 전에 증류 해제(학습용) 어댑터를 Turbo에 "
        "합치세요"),
    "zimage.distilled.shift": ("its scheduler's shift is {shift}, Z-Image-Turbo's (Z-Image base ships 6.0)",
                               "스케줄러의 shift가 Z-Image-Turbo의 값인 {shift}임(Z-Image 기본 모델은 6.0)"),
}
