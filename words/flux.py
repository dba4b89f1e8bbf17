"""Flux.1 bases: what their configs say about distillation, and the single files not loaded here."""

TEXTS = {
    "field.family.choice.flux": ("Flux.1", "Flux.1"),
    # the {reason} of base.distilled and error.train.distilled
    "flux.distilled.timestep": (
        "its transformer takes no guidance embedding and its scheduler has no resolution-dependent shift "
        "(use_dynamic_shifting false, shift {shift}), as FLUX.1-schnell's: a few-step (timestep-distilled) model",
        "트랜스포머가 가이던스 임베딩을 받지 않고 스케줄러에 해상도별 shift가 없음(use_dynamic_shifting false, "
        "shift {shift}). FLUX.1-schnell과 같은 몇 스텝(타임스텝 증류) 모델",
    ),
    "flux.note.guidance_distilled": (
        "This base is guidance-distilled (FLUX.1-dev: its transformer takes the guidance scale as an input instead of "
        "drawing twice). It trains at the fixed guidance {guidance:g} (model.guidance) and draws its samples at "
        "{sample:g}. LoRAs trained this way work on it, but a long run or a high learning rate wears the distilled "
        "guidance down (flat, washed-out pictures that follow the prompt less). For long runs or several concepts, "
        "train on a de-distilled base made from FLUX.1-dev, then use the LoRA on FLUX.1-dev.",
        "가이던스 증류된 기반 모델입니다(FLUX.1-dev: 두 번 그리는 대신 트랜스포머가 가이던스 값을 입력으로 받음). "
        "고정 가이던스 {guidance:g}(model.guidance)로 학습하고 샘플은 {sample:g}로 그립니다. 이렇게 학습한 LoRA는 "
        "잘 작동하지만, 오래 학습하거나 학습률이 높으면 증류된 가이던스가 닳아 그림이 밋밋하고 흐려지며 프롬프트를 덜 "
        "따릅니다. 오래 학습하거나 여러 개념을 학습하려면 FLUX.1-dev에서 만든 탈증류(de-distilled) 기반 모델로 "
        "학습하고, LoRA는 FLUX.1-dev에 붙여 쓰세요.",
    ),
    "error.flux.single_file": (
        "{path} is a single Flux.1 file; Flux.1 is loaded here from a diffusers folder only (model_index.json with "
        "transformer, vae, text_encoder, text_encoder_2 and both tokenizers, as FLUX.1-dev's own repository has "
        "them). Give model.base that folder.",
        "{path}는 Flux.1 단일 파일입니다. 여기서 Flux.1은 diffusers 폴더로만 불러옵니다(FLUX.1-dev 저장소처럼 "
        "model_index.json과 transformer, vae, text_encoder, text_encoder_2, 두 토크나이저가 있는 폴더). "
        "model.base에 그 폴더를 지정하세요.",
    ),
    "error.flux.odd_latents": (
        "Flux.1 packs its latents in 2x2 patches, and a batch's latents are {width}x{height}: every picture side must "
        "be a multiple of 16 pixels. Set dataset.resolution and dataset.bucket_step to multiples of 16.",
        "Flux.1은 latent를 2x2 패치로 묶는데 이 배치의 latent가 {width}x{height}입니다. 그림의 각 변이 16픽셀의 배수여야 "
        "합니다. dataset.resolution과 dataset.bucket_step을 16의 배수로 하세요.",
    ),
}
