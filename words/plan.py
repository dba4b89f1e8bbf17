"""The plan: the step count and the dose in words (``plan.*``), and the sample prompts that copy a caption."""

TEXTS = {
    "plan.formula": ("{image_repeats} image-repeats × {epochs} epochs ÷ (batch {bs} × accumulation {accum}{procs}) "
                     "= {naive} steps{bucketed}{max_steps}",
                     "{image_repeats} 이미지×반복 × {epochs} 에폭 ÷ (배치 {bs} × 누적 {accum}{procs}) = {naive} 스텝"
                     "{bucketed}{max_steps}"),
    "plan.formula_processes": (" × {n} processes", " × 프로세스 {n}개"),
    "plan.formula_bucketed": (". A batch never mixes bucket sizes, so each bucket's last batch may be partial{shares}: "
                              "{steps_per_epoch} steps per epoch × {epochs} = {bucketed} steps",
                              ". 한 배치에는 같은 버킷의 그림만 들어가 버킷마다 마지막 배치가 덜 찰 수 있습니다{shares}: "
                              "에폭당 {steps_per_epoch} 스텝 × {epochs} = {bucketed} 스텝"),
    "plan.formula_shares": (", and the processes take equal shares", ". 프로세스들은 같은 몫을 나눠 받습니다"),
    "plan.formula_max_steps": (". max_steps = {max_steps} overrides this (≈ {epochs:.1f} epochs)",
                               ". max_steps = {max_steps}가 이 값을 대신합니다(약 {epochs:.1f} 에폭)"),
    "plan.dose_explanation": (
        (
            "How far training pulls the model toward your pictures ≈ learning rate × steps × (alpha / rank). It "
            "is a rule of thumb, not an exact law: the three push in the same direction, so raising one lets you "
            "lower another and keep the balance. The lr that counts is the one the steps really get: a cosine "
            "schedule averages about half its peak, so it pulls half as far as the same lr held constant. Too "
            "little and the LoRA does not look like your subject (underfit); too much and it memorises the "
            "training pictures, ignores the prompt and the colours burn (overfit)."
        ),
        (
            "학습이 모델을 내 그림 쪽으로 끌고 가는 정도 ≈ 학습률 × 스텝 수 × (alpha / rank). 정확한 법칙이 아니라 어림셈입니다. 셋은 같은 방향으로 작용하므로 하나를 "
            "올리면 다른 하나를 내려 균형을 맞출 수 있습니다. 여기서 학습률은 스텝들이 실제로 받는 값입니다. 코사인 스케줄은 평균이 최고값의 절반쯤이라, 같은 학습률을 그대로 유지할 "
            "때의 절반만 끌고 갑니다. 너무 적으면 캐릭터가 닮지 않고(미적합), 너무 많으면 학습 그림을 외워 프롬프트를 무시하고 색이 타 버립니다(과적합)."
        ),
    ),
    "plan.advice.under": ("below the zone this preset aims for: expect a weak likeness. Raise steps or learning rate",
                          "이 프리셋이 노리는 범위보다 낮습니다. 덜 닮을 수 있으니 스텝이나 학습률을 올리세요"),
    "plan.advice.fit": ("inside the zone this preset aims for", "이 프리셋이 노리는 범위 안입니다"),
    "plan.advice.over": (
        (
            "above the zone this preset aims for: expect memorised, burnt pictures. Lower the learning rate, "
            "steps or alpha"
        ),
        "이 프리셋이 노리는 범위보다 높습니다. 그림을 외우고 색이 탈 수 있으니 학습률, 스텝이나 alpha를 낮추세요",
    ),
    "plan.advice.provisional": ("{advice} (this zone is provisional: carried over from SD1.5/SDXL, not yet measured "
                                "for this model family)", "{advice}(이 범위는 임시값: SD1.5/SDXL에서 옮겨 온 것으로, "
                                "이 모델 계열에서는 아직 재지 않음)"),
    "plan.zone.under": ("under", "부족"),
    "plan.zone.fit": ("fit", "적정"),
    "plan.zone.over": ("over", "과다"),
    "plan.lr": ("{lr:g}", "{lr:g}"),
    "plan.lr_mean": ("mean {mean_lr:.3g} (lr {lr:g} × {mean:.2f}, the {scheduler} schedule's average)",
                     "평균 {mean_lr:.3g}(학습률 {lr:g} × {mean:.2f}, {scheduler} 스케줄의 평균)"),
    "plan.dose_formula": ("dose = lr {lr} × {total} steps × (alpha {alpha:g} / rank {rank}) = {dose:.3g} "
                          "(zone {low:g}–{high:g}: {zone}); {advice}.",
                          "학습량 = 학습률 {lr} × {total} 스텝 × (alpha {alpha:g} / rank {rank}) = {dose:.3g} "
                          "(범위 {low:g}–{high:g}: {zone}). {advice}."),
    "plan.sample_prompt_seen": ('sample prompt {number} "{prompt}" is the caption of {file}{more}: its pictures show '
                                "what was memorised, not whether the LoRA follows a new prompt; ask for a pose, place or "
                                "outfit the data does not have",
                                '샘플 프롬프트 {number} "{prompt}": {file}{more}의 캡션과 같음: 그 샘플은 새 '
                                "프롬프트를 따르는지가 아니라 외운 것을 보여 줌. 데이터에 없는 자세, 장소, 의상을 요청하세요"),
    "plan.more_files": (" and {n} more", " 외 {n}개"),
}  # fmt: skip
