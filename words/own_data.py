"""The words of a user's own dataset taking the demo's place: the trigger its captions propose, the sample prompts
and run name made for it, a run name another dataset's files hold, a preset that upscales the pictures."""

TEXTS: dict[str, tuple[str, str]] = {
    "ui.trigger_proposed": (
        ' The captions open with "{trigger}" ({n} of {total}): it is the trigger now. Type another word in '
        "'Trigger word' if you mean another; a word you type stays for this folder.",
        ' 캡션 {total}개 중 {n}개의 첫머리: "{trigger}". 이것을 트리거로 정했습니다. 다른 단어를 쓰려면 '
        "'트리거 단어'에 입력하세요. 직접 입력한 단어는 이 폴더에서 그대로 둡니다."),
    "ui.prompts_rebuilt": (
        ' The sample prompts were made for "{trigger}" from these captions (Preset step, Advanced settings).',
        ' 샘플 프롬프트를 이 캡션들로 "{trigger}"에 맞춰 새로 만들었습니다(프리셋 단계, 고급 설정).'),
    "ui.run_named": (" Run name: {name}.", " 실행 이름: {name}."),
    "ui.run_named_free": (
        " Run name: {name} ({taken} holds another dataset's settings and is left as it is).",
        " 실행 이름: {name}. ({taken}에는 다른 데이터셋의 설정이 있어 그대로 둡니다.)"),
    "ui.run_name_taken": (
        "⚠️ {file} holds the settings of runs on another dataset ({dataset}); Start would write over them. "
        "To keep them, change 'Run name' (for example to {free}).",
        "⚠️ {file}에는 다른 데이터셋({dataset})으로 학습한 실행의 설정이 있어, 시작하면 그 위에 덮어씁니다. "
        "남겨 두려면 '실행 이름'을 바꾸세요(예: {free})."),
    "ui.preset_upscales": (
        "⚠️ Preset {name} trains at {res} px, and {n} of your {total} pictures are smaller (the smallest side is "
        "{side} px): they are enlarged up to ×{scale:.1f} to fit, which blurs them. To train at their own size, "
        "set 'Resolution' to {suggest}.",
        "⚠️ {name} 프리셋은 {res}px로 학습하는데, 그림 {total}장 중 {n}장이 그보다 작습니다(가장 짧은 변 {side}px). "
        "맞추려고 최대 ×{scale:.1f}까지 확대하므로 흐려집니다. 그림 크기 그대로 학습하려면 '해상도'를 {suggest}px로 "
        "두세요."),
}
