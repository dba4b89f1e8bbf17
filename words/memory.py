"""Peak memory (``memory.*``): the parts of the estimate, the verdict on the device, and fitting a config under a
budget (``memory_fit.*``)."""

TEXTS = {
    "memory.note.scaled_activations": (
        "activations scaled from the real model's by the UNet's widths (a rough figure)",
        "활성값은 실제 모델의 값을 UNet 너비 비율로 줄여 잡았습니다(대략적인 수치)"),
    "memory.part.unet_weights": ("UNet / transformer weights (frozen)", "UNet / 트랜스포머 가중치(고정)"),
    "memory.part.text_encoder_weights": ("text encoder weights (frozen)", "텍스트 인코더 가중치(고정)"),
    "memory.part.vae_weights": ("VAE weights", "VAE 가중치"),
    "memory.part.lora_weights": ("LoRA weights (fp32)", "LoRA 가중치(fp32)"),
    "memory.part.lora_gradients": ("LoRA gradients (fp32)", "LoRA 그라디언트(fp32)"),
    "memory.part.optimizer_state": ("optimizer state", "옵티마이저 상태"),
    "memory.part.ema": ("EMA shadow (fp32)", "EMA 사본(fp32)"),
    "memory.part.activations": ("UNet / transformer activations", "UNet / 트랜스포머 활성값"),
    "memory.warn.fp16_family": ("{family} was trained in bf16 and overflows more readily in fp16: on this device the "
                                "run uses fp16 with the loss scaler and the guard watching, and T5 stays in fp32; a "
                                "GPU with bf16 (RTX 30xx or newer) avoids it",
                                "{family} 모델은 bf16으로 학습되어 fp16에서 더 쉽게 넘칩니다. 이 장치에서는 손실 "
                                "스케일러와 가드를 켠 fp16으로 돌고 T5는 fp32로 둡니다. bf16이 되는 GPU(RTX 30xx 이상)"
                                "라면 이 문제가 없습니다"),
    "memory.warn.provisional": ("{family}'s activation figures for this precision and gradient-checkpointing setting "
                                "are derived from other measurements, not measured at full width themselves: read the "
                                "total as a rough figure", "이 정밀도와 그라디언트 체크포인팅 설정에서 {family}의 활성값 "
                                "수치는 다른 측정에서 끌어낸 값이고, 실제 크기에서 직접 잰 값이 아닙니다. 합계는 대략의 "
                                "값으로 보세요"),
    "memory.warn.min_snr": ("train.min_snr_gamma = {gamma} has no effect here: min-SNR weighting is for DDPM models, "
                            "and {family} trains with flow matching, which weights its timesteps by how it draws them",
                            "train.min_snr_gamma = {gamma} 설정은 여기서 효과가 없습니다. min-SNR 가중치는 DDPM 모델용이고, "
                            "{family} 모델은 플로 매칭으로 학습하며 타임스텝을 뽑는 방식 자체로 가중치를 둡니다"),
    "memory.part.text_encoder_activations": ("text encoder activations", "텍스트 인코더 활성값"),
    "memory.part.text_encode": ("text encoding (no gradients)", "텍스트 인코딩(그라디언트 없음)"),
    "memory.phase.encode": ("encoding the captions, before training (the text encoders alone on the device):",
                            "학습 전 캡션 인코딩(장치에는 텍스트 인코더만):"),
    "memory.phase.train": ("training (the text encoders moved to the CPU):", "학습(텍스트 인코더는 CPU로 내림):"),
    "memory.phase.total": ("phase total", "이 단계 합계"),
    "memory.peak.encode": ("total (peak: encoding the captions)", "합계(최대: 캡션 인코딩)"),
    "memory.peak.train": ("total (peak: training)", "합계(최대: 학습)"),
    "memory.warn.offload_shared": (
        "model.offload_text_encoders saves nothing here: this device's memory is the system's, where the text "
        "encoders would go; on a GPU they leave its memory after encoding",
        "model.offload_text_encoders는 여기서 아무것도 아끼지 못합니다. 이 장치의 메모리가 곧 텍스트 인코더가 옮겨 갈 "
        "시스템 메모리이기 때문입니다. GPU에서는 인코딩 뒤 인코더가 GPU 메모리를 떠납니다"),
    "memory.part.vae_encode": ("VAE encoding (latents not cached)", "VAE 인코딩(잠재 캐시 없음)"),
    "memory.part.runtime": ("runtime (CUDA context, workspaces)", "런타임(CUDA 컨텍스트, 작업 공간)"),
    "memory.verdict.fits": ("fits", "들어감"),
    "memory.verdict.tight": ("tight: it should fit, with little to spare", "빠듯함: 들어가지만 여유가 거의 없음"),
    "memory.verdict.spill": ("will not fit: it would spill out of device memory", "들어가지 않음: 장치 메모리를 넘쳐 흘러넘침"),
    "memory.verdict.unknown": ("free memory unknown", "남은 메모리를 알 수 없음"),
    "memory.total": ("total", "합계"),
    "memory.device.cpu": ("CPU (system memory)", "CPU (시스템 메모리)"),
    "memory.device.mps": ("Apple GPU (shared memory)", "Apple GPU (공유 메모리)"),
    "memory.table_head": ("| part | estimate |", "| 항목 | 추정 |"),
    "memory.summary": ("**{verdict}** — {device}, {free} free, largest bucket {w}×{h}",
                       "**{verdict}** — {device}, 남은 메모리 {free}, 가장 큰 버킷 {w}×{h}"),
    "memory.heading": ("peak memory (estimate):", "최대 메모리(추정):"),
    "memory_fit.why.dataset.cache_latents": ("encode the pictures once, before training; the VAE leaves the GPU",
                                             "그림을 학습 전에 한 번만 인코딩하고 VAE는 GPU에서 내림"),
    "memory_fit.why.model.offload_text_encoders": (
        "encode every caption and sample prompt once before training, then the text encoders leave the GPU (the "
        "same numbers; kohya's cache_text_encoder_outputs)",
        "학습 전에 캡션과 샘플 프롬프트를 한 번씩 인코딩하고 텍스트 인코더는 GPU에서 내림(수치는 그대로, kohya의 "
        "cache_text_encoder_outputs)"),
    "memory_fit.why.dataset.shuffle_tags": (
        "captions as written, so each is encoded once and the text encoders can leave the GPU (the trigger stays "
        "first either way)",
        "캡션을 적힌 그대로 써서 한 번씩만 인코딩하고 텍스트 인코더를 GPU에서 내릴 수 있게 함(트리거는 어느 쪽이든 "
        "맨 앞)"),
    "memory_fit.why.dataset.tag_dropout": (
        "no tags dropped, so each caption is encoded once and the text encoders can leave the GPU",
        "태그를 빼지 않아 캡션마다 한 번씩만 인코딩하고 텍스트 인코더를 GPU에서 내릴 수 있게 함"),
    "memory_fit.why.train.gradient_checkpointing": ("recompute activations in backward instead of keeping them (steps ~25% slower)",
                                                    "활성값을 저장하지 않고 역전파 때 다시 계산(스텝이 약 25% 느려짐)"),
    "memory_fit.why.optim.optimizer": ("8-bit optimizer moments (bitsandbytes)",
                                       "옵티마이저 모멘트를 8비트로(bitsandbytes)"),
    "memory_fit.why.train.batch_size": ("a smaller batch, more accumulation: the same effective batch",
                                        "배치를 줄이고 누적을 늘림: 실효 배치는 그대로"),
    "memory_fit.why.train.precision": ("bf16 frozen weights and activations (LoRA stays fp32)",
                                       "고정 가중치와 활성값을 bf16으로(LoRA는 fp32 유지)"),
    "memory_fit.steps_note": ("total steps {before} → {after} (each bucket's last partial batch groups into steps "
                              "differently), dose {dose_before:.3g} → {dose_after:.3g}; set train.max_steps = {before} to "
                              "keep both",
                              "총 스텝 {before} → {after}(버킷마다 마지막 배치가 스텝으로 묶이는 방식이 달라짐), 학습량 "
                              "{dose_before:.3g} → {dose_after:.3g}. 둘 다 지키려면 train.max_steps = {before}"),
    "memory_fit.does_not_fit_encode": (
        "even with every change ({after}) it does not fit {budget}: the peak is encoding the captions, with the text "
        "encoders' {weights} of weights alone on the device (training after it needs {train}); nothing about training "
        "lowers it: a device with more memory, or a base loaded without its largest text encoder, does",
        "모든 변경을 해도({after}) {budget}에 들어가지 않음: 최대치는 캡션 인코딩 단계로, 장치에 텍스트 인코더 가중치 "
        "{weights}만 올라가 있을 때입니다(그 뒤 학습은 {train}). 학습 설정으로는 줄일 수 없으니 메모리가 더 큰 장치를 "
        "쓰거나 가장 큰 텍스트 인코더 없이 기반 모델을 불러오세요"),
    "memory_fit.already_fits": ("already fits: {before} of {budget}", "이미 들어감: {budget} 중 {before}"),
    "memory_fit.fits": ("{before} → {after}, within {budget} with {n} change(s)",
                        "{before} → {after}, 변경 {n}개로 {budget} 안에 들어감"),
    "memory_fit.does_not_fit": ("even with every change ({after}) it does not fit {budget}: lower the resolution or the "
                                "rank, or use a device with more memory",
                                "모든 변경을 해도({after}) {budget}에 들어가지 않음: 해상도나 rank를 낮추거나 메모리가 더 큰 "
                                "장치를 쓰세요"),
}  # fmt: skip
