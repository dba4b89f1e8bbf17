"""The picture judge's words in the app: choosing one (Preset → Advanced settings), the checks a folder or hub id
goes through, and Review's reading of a finished run with one."""

TEXTS: dict[str, tuple[str, str]] = {
    "ui.err_judge_hub_while_shared": (
           "measure.judge: {judge} is a hub id. While the app is shared (or open to the network) the picture judge "
           "is a model folder inside the workspace {workspace}; put the model there first, or leave it empty.",
           "measure.judge: {judge}: 허브 id입니다. 앱이 공유 중(또는 네트워크에 열림)일 때 그림 판정 모델은 작업 "
           "폴더 {workspace} 안의 모델 폴더여야 합니다. 먼저 그곳에 모델을 두거나 비워 두세요."),
    "ui.judge_none": ("none: the doctor reads the run's own model", "없음: 학습 중인 모델 자체로 진단"),
    "ui.read_with_judge": ("Read with the picture judge", "그림 판정 모델로 읽기"),
    "ui.err_no_judge_chosen": ("Choose a picture judge first: Preset → Advanced settings → Picture judge (a CLIP or "
                               "SigLIP model); then it reads this run's pictures",
                               "먼저 그림 판정 모델을 고르세요: 프리셋 → 고급 설정 → 그림 판정 모델 (CLIP이나 SigLIP "
                               "모델). 그러면 이 실행의 그림을 읽습니다"),
    "ui.judge_reading": ("The picture judge is reading the run's pictures…", "그림 판정 모델이 실행의 그림을 읽는 중…"),
    "ui.judge_reads_run": ("{judge} reads this run's pictures now: the verdict, the table and More pictures use its "
                           "readings (kept in the run's review/judge.json).",
                           "이제 {judge}가 이 실행의 그림을 읽습니다: 판정, 표, '그림 더 보기'가 그 읽은 값을 씁니다 "
                           "(실행 폴더의 review/judge.json에 보관)."),
    "ui.judge_no_pictures": ("{judge} is chosen for this run, but the run drew no pictures at step 0 (sample "
                             "pictures were off), so there is nothing to read against the base model's",
                             "이 실행에 {judge}를 골랐지만 0스텝 그림이 없어(샘플 그림 꺼짐) 원래 모델 그림과 견줘 읽을 "
                             "것이 없습니다"),
    "ui.judge_outranked": ("{judge} is chosen for this run, but a stronger judge reads it ({other}: measures made "
                           "for this subject); its readings stand",
                           "이 실행에 {judge}를 골랐지만 더 강한 판정({other}: 이 대상에 맞춘 측정)이 읽으므로 그 "
                           "값을 씁니다"),
    "ui.judge_back_to_own": ("The run is read again as it trained: without the judge chosen in Review.",
                             "실행을 학습한 그대로 다시 읽습니다: 검토에서 고른 판정 모델 없이."),
}
