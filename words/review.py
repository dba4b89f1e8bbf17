"""Review: why a checkpoint is the one to use (``review.*``), and the measures table and chart's words (``ui.*``
as the rest of the app's controls)."""

TEXTS = {
    "review.reason": ("{summary} Why: {why}.", "{summary} 근거: {why}."),
    "ui.measures": ("Per sampled step: leakage (no-trigger picture vs the base model's), burn, likeness",
                    "샘플 스텝별: 누출(트리거 없는 그림과 기반 모델의 차이), 색 탐, 닮음"),
    "ui.col_dose": ("dose", "학습량"),
    "ui.col_leakage": ("leakage", "누출"),
    "ui.col_trigger_hold": ("trigger hold", "트리거 장악"),
    "ui.col_trigger_gain": ("trigger gain", "트리거 효과"),
    "ui.col_prior_drift": ("prior drift", "기반 이탈"),
    "ui.model_measures_meaning": (
        "**Trigger hold**: how much better the model, given the trigger alone, denoises your pictures than the base "
        "model did, beyond what the LoRA did to pictures that are not your subject — does the trigger alone bring "
        "your subject (0 at step 0; from {shows:g} it does). **Trigger "
        "gain**: the same for your captions with and without the trigger (how much the trigger adds to them). "
        "**Prior drift**: how far the LoRA moved what the model draws without the trigger, against the base model's "
        "own error (above {limit:g}: prompts without the trigger change). All come from the run's own model at "
        "fixed pictures, timesteps and noise, for any subject.",
        "**트리거 장악**: 트리거만 주었을 때 모델이 내 그림의 노이즈를 기반 모델보다 얼마나 더 잘 맞히는지를, "
        "LoRA가 대상이 아닌 그림에 한 변화를 빼고 잽니다. 곧 트리거만으로 대상이 나오는지입니다 (0스텝에서 0, "
        "{shows:g}부터 나옴). **트리거 효과**: 같은 것을 캡션에 "
        "트리거가 있을 때와 없을 때로 잽니다 (트리거가 캡션에 더하는 몫). **기반 이탈**: LoRA가 트리거 없이 그리는 "
        "것을 기반 모델 자신의 오차에 비해 얼마나 움직였는지입니다 ({limit:g}를 넘으면 트리거 없는 프롬프트가 "
        "바뀜). 모두 고정된 그림·타임스텝·노이즈로 이 실행의 모델에서 재므로 어떤 대상에도 맞습니다."),
    "ui.col_burn": ("burn", "색 탐"),
    "ui.col_likeness": ("likeness", "닮음"),
    "ui.col_adherence": ("adherence", "프롬프트 준수"),
    "ui.col_val_loss": ("validation loss (★ lowest)", "검증 손실 (★ 최저)"),
    "ui.col_trigger_share": ("trigger share", "트리거 몫"),
    "ui.model_measures_masked": (
        "**Trigger share** (masked training): the base model's no-trigger pictures denoised with the prompt and the "
        "trigger put in; the share of that change the trigger adds itself. Under {line:.0%}, the captions' other words "
        "draw the subject too; from there, a prior drift past its line is the backgrounds the masks leave free.",
        "**트리거 몫** (마스크 학습): 기반 모델이 트리거 없이 그린 그림을 프롬프트에 트리거를 넣어 읽었을 때 그 변화 중 "
        "트리거가 스스로 더하는 몫. {line:.0%} 밑이면 캡션의 다른 단어도 대상을 그리고, 그 위에서 한도를 넘은 "
        "기반 이탈은 마스크 밖 배경이 움직인 것입니다."),
}
