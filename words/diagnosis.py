"""The diagnosis of a run (``diagnosis.*``): its lines where it names a step or a lesser cause, and the headings
the CLI prints it under."""

TEXTS = {
    "diagnosis.at_step": ("Step {step}: {text}", "{step}스텝: {text}"),
    "diagnosis.outcome_judged_better": ("What the change did: the picture judge's likeness at the save each verdict "
                                        "recommends went from {old:.2f} (the parent: {old_label}, step {old_step}) to "
                                        "{new:.2f} (this run: {new_label}, step {new_step}): the pictures got better.",
                                        "변경의 결과: 판정마다 권하는 체크포인트에서 부모 실행은 {old_step}스텝, {old_label}, 그림 판정의 닮음 "
                                        "{old:.2f}. 이 실행은 {new_step}스텝, {new_label}, 닮음 {new:.2f}. 그림이 나아졌습니다."),
    "diagnosis.outcome_judged_worse": ("What the change did: the picture judge's likeness at the save each verdict "
                                       "recommends went from {old:.2f} (the parent: {old_label}, step {old_step}) to "
                                       "{new:.2f} (this run: {new_label}, step {new_step}): the pictures got worse; "
                                       "go back to the parent's setting before trying another change.",
                                       "변경의 결과: 판정마다 권하는 체크포인트에서 부모 실행은 {old_step}스텝, {old_label}, 그림 판정의 닮음 "
                                       "{old:.2f}. 이 실행은 {new_step}스텝, {new_label}, 닮음 {new:.2f}. 그림이 나빠졌으니 다른 변경을 "
                                       "하기 전에 부모 실행의 설정으로 돌아가세요."),
    "diagnosis.outcome_judged_same": ("What the change did: the picture judge's likeness at the save each verdict "
                                      "recommends went from {old:.2f} (the parent: {old_label}, step {old_step}) to "
                                      "{new:.2f} (this run: {new_label}, step {new_step}): the pictures hardly moved, "
                                      "so this setting was not what held them back.",
                                      "변경의 결과: 판정마다 권하는 체크포인트에서 부모 실행은 {old_step}스텝, {old_label}, 그림 판정의 닮음 "
                                      "{old:.2f}. 이 실행은 {new_step}스텝, {new_label}, 닮음 {new:.2f}. 그림이 거의 그대로이니 이 설정이 "
                                      "걸림돌은 아니었습니다."),
    "diagnosis.outcome_unjudged": ("What the change did: the parent read {old_label} (step {old_step}, trigger hold "
                                   "{old_hold}), this run reads {new_label} (step {new_step}, trigger hold {new_hold}). "
                                   "The model measures alone cannot say whether the pictures got better (a doubled "
                                   "rank can hold less while its pictures improve): put the two runs side by side in "
                                   "Compare two runs, or have a picture judge read both.",
                                   "변경의 결과: 부모 실행은 {old_step}스텝, {old_label}, 트리거 장악 {old_hold}. 이 "
                                   "실행은 {new_step}스텝, {new_label}, 트리거 장악 {new_hold}. 모델 측정만으로는 "
                                   "그림이 나아졌는지 말할 수 없습니다(랭크를 두 배로 하면 그림이 나아져도 장악이 "
                                   "낮아질 수 있음). 두 실행 비교에서 나란히 보거나 그림 판정 모델에 둘 다 읽게 "
                                   "하세요."),
    "diagnosis.made_from_parent": ("This run already made this change from the run it was started from ({key}: {old} "
                                   "→ {new}); whether it helped is in the pictures: put the two side by side in "
                                   "Compare two runs. {text}",
                                   "이 실행은 시작한 실행에서 이미 이 변경을 했습니다({key}: {old} → {new}). 도움이 "
                                   "됐는지는 그림에 있습니다: 두 실행 비교에서 나란히 보세요. {text}"),
    "diagnosis.why_lesser": ("this run's verdict is {label}", "이 실행의 판정은 {label}입니다"),
    "diagnosis.why_lesser_none": ("the run trained no step that could show it",
                                  "실행이 그것을 드러낼 스텝을 하나도 학습하지 않았습니다"),
    "diagnosis.verdict": ("verdict: ", "판정: "),
    "diagnosis.observed": ("observed:", "관찰:"),
    "diagnosis.nothing_unusual": ("nothing unusual", "특이사항 없음"),
    "diagnosis.causes": ("likely causes:", "가능한 원인:"),
    "diagnosis.prescriptions": ("prescriptions (change one at a time):", "처방 (한 번에 하나만):"),
}
