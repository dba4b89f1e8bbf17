"""The base model: what loading it may warn about (``base.*``)."""

TEXTS = {
    # why a base looks distilled: the {reason} of base.distilled
    "base.distilled_name": ("the name contains '{word}'", "이름에 '{word}' 포함"),
    "base.distilled_scheduler": ("its scheduler is {scheduler}", "스케줄러가 {scheduler}임"),
    "base.distilled_guidance": (
        "its UNet takes a guidance embedding (time_cond_proj_dim), as guidance-distilled models do",
        "가이던스 증류 모델처럼 UNet이 가이던스 임베딩(time_cond_proj_dim)을 받음"),
    "base.distilled_config": ("its UNet config names '{word}'", "UNet 설정에 '{word}' 표기"),
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
