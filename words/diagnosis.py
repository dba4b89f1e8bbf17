"""The diagnosis of a run (``diagnosis.*``): its lines where it names a step or a lesser cause, and the headings
the CLI prints it under."""

TEXTS = {
    "diagnosis.at_step": ("Step {step}: {text}", "{step}스텝: {text}"),
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
