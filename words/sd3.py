"""SD3.5 bases: why a Turbo base is refused and what to do instead (``sd3.*``)."""

TEXTS = {
    # the {reason} of base.distilled and error.train.distilled
    "sd3.distilled_turbo": (
        "{why}: SD3.5 Large Turbo is step-distilled to draw in 4 steps without guidance, and its configs are SD3.5 "
        "Large's, so only its name tells it apart. Training on it undoes the distillation and Turbo's few-step "
        "pictures blur: train on SD3.5 Large (stabilityai/stable-diffusion-3.5-large) and use the LoRA on Turbo",
        "{why}: SD3.5 Large Turbo는 가이던스 없이 4스텝으로 그리도록 스텝 증류된 모델이고 설정은 SD3.5 Large와 "
        "같아서 이름으로만 구별됩니다. 그 위에서 학습하면 증류가 풀려 Turbo의 적은 스텝 그림이 흐려집니다. SD3.5 "
        "Large(stabilityai/stable-diffusion-3.5-large)에서 학습하고 LoRA는 Turbo에 붙여 쓰세요"),
}
