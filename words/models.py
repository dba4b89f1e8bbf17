"""The base model: what loading it may warn about (``base.*``)."""

TEXTS = {
    # why a base looks distilled: the {reason} of base.distilled
    "base.distilled_name": ("the name contains '{word}'", "이름에 '{word}' 포함"),
    "base.distilled_scheduler": ("its scheduler is {scheduler}", "스케줄러가 {scheduler}임"),
    "base.distilled_guidance": (
        "its UNet takes a guidance embedding (time_cond_proj_dim), as guidance-distilled models do",
        "가이던스 증류 모델처럼 UNet이 가이던스 임베딩(time_cond_proj_dim)을 받음"),
    "base.distilled_config": ("its {part} config records that it was saved from '{name}', which names '{word}'",
                              "{part} 설정에 기록된 출처 '{name}'에 '{word}' 포함"),
    "base.distilled_metadata": ("the file's own metadata ({key}) names '{word}'",
                                "파일 자체 메타데이터({key})에 '{word}' 포함"),
    "base.distilled_trailing": (
        "its scheduler, {scheduler}, spaces the sampling steps 'trailing' for a model without zero terminal SNR, as "
        "SDXL-Turbo's own scheduler config does; the ordinary SD1.5 and SDXL bases ship 'leading'",
        "스케줄러 설정이 zero terminal SNR이 아닌 모델인데 샘플링 스텝을 'trailing'으로 나눔({scheduler}). "
        "SDXL-Turbo 자체 스케줄러 설정과 같고, 보통의 SD1.5·SDXL 기반 모델은 'leading'임"),
    "base.distilled": (
        "This base looks distilled ({reason}). Few-step and guidance-distilled models were trained away from "
        "the ordinary 'add noise, predict it' objective that LoRA training uses; training on them undoes the "
        "distillation, so few-step drawing breaks and pictures blur. Train on the original (non-distilled) "
        "model, then use the LoRA on the distilled one.",
        "증류된 기반 모델로 보입니다({reason}). 몇 스텝 모델이나 가이던스 증류 모델은 LoRA 학습이 쓰는 보통의 "
        "'노이즈를 섞고 맞히는' 목표에서 벗어나게 학습되어 있어, 그 위에서 학습하면 증류가 풀리고 적은 스텝으로 "
        "그리는 능력이 망가져 그림이 흐려집니다. 증류하지 않은 원본에서 학습하고, 쓸 때 증류 모델에 붙이세요.",
    ),
    # the plan's base check (trainer/models/distilled.py) of a hub id it cannot read yet
    "base.configs_unread": (
        "{base} is not in this computer's Hugging Face cache yet, so only its name was checked for distillation. "
        "Start downloads it, reads its configs and refuses it then if they show a distilled model.",
        "이 컴퓨터의 Hugging Face 캐시에 아직 {base} 모델이 없어 증류 여부를 이름으로만 확인했습니다. 시작하면 "
        "내려받은 뒤 설정을 읽고, 증류 모델로 보이면 그때 거부합니다."),
    "base.heading": ("base model:", "기반 모델:"),
    "base.fine": ("nothing in its name or configs says it is distilled",
                 "이름과 설정 어디에도 증류 모델이라는 표시 없음"),
}
