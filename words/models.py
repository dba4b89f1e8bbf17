"""The base model: what loading it may warn about (``base.*``)."""

TEXTS = {
    "base.distilled": (
        "This base looks distilled ({reason}). Few-step and guidance-distilled models were trained away from "
        "the ordinary 'add noise, predict it' objective that LoRA training uses; training on them undoes the "
        "distillation, so few-step drawing breaks and pictures blur. Train on the original (non-distilled) "
        "model, then use the LoRA on the distilled one.",
        "증류된 기반 모델로 보입니다({reason}). 몇 스텝 모델이나 가이던스 증류 모델은 LoRA 학습이 쓰는 보통의 "
        "'노이즈를 섞고 맞히는' 목표에서 벗어나게 학습되어 있어, 그 위에서 학습하면 증류가 풀리고 적은 스텝으로 "
        "그리는 능력이 망가져 그림이 흐려집니다. 증류하지 않은 원본에서 학습하고, 쓸 때 증류 모델에 붙이세요.",
    ),
}
