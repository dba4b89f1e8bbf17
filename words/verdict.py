"""The verdict on a run or a checkpoint (``verdict.*``): its label, the evidence with its strength, the summary of
what to do, and how to read a symptom the evidence disagrees with."""

TEXTS = {
    "verdict.label.fit": ("fit", "알맞음"),
    "verdict.label.under": ("under-trained", "미적합(덜 학습됨)"),
    "verdict.label.over": ("over-trained", "과적합(과하게 학습됨)"),
    "verdict.label.broken": ("broken (nan/inf)", "망가짐(nan/inf)"),
    "verdict.label.none": ("nothing to judge", "판정할 것 없음"),
    "verdict.strength.strong": ("strong evidence", "강한 근거"),
    "verdict.strength.moderate": ("moderate evidence", "보통 근거"),
    "verdict.strength.weak": ("weak evidence", "약한 근거"),
    "verdict.line": ("{text} ({strength})", "{text} ({strength})"),
    "verdict.line_outweighed": ("outweighed: {text} ({strength})", "더 강한 근거에 밀림: {text} ({strength})"),
    # the dose against the preset's zone
    "verdict.dose": ("{where} dose {dose:.3g} is {side} this preset's zone {low:g}–{high:g}",
                     "{where} 학습량 {dose:.3g}은(는) 이 프리셋의 범위 {low:g}–{high:g} {side}입니다"),
    "verdict.side.under": ("under", "아래"),
    "verdict.side.fit": ("inside", "안"),
    "verdict.side.over": ("over", "위"),
    "verdict.where_plan": ("the plan's", "계획의"),
    "verdict.where_step": ("step {step}'s", "{step}스텝의"),
    "verdict.where_reached": ("the dose reached at step {step}:", "{step}스텝까지의"),
    "verdict.forecast": ("From the dose alone: {advice}.", "학습량만으로 본 예상입니다. {advice}."),
    "verdict.forecast.own_step": ("this optimizer sets its own step size, so the dose says little; the pictures of "
                                  "the run will tell, and Review judges each checkpoint by them",
                                  "이 옵티마이저는 걸음 크기를 스스로 정하므로 학습량으로는 알 수 없습니다. 실행의 그림이 "
                                  "말해 주며, 검토 단계가 체크포인트마다 그림으로 판정합니다"),
    "verdict.forecast.fit": ("the pictures of the run will tell; Review judges each checkpoint by them",
                             "실제 판단은 학습 뒤 그림으로 합니다. 검토 단계가 체크포인트마다 그림으로 판단합니다"),
    "verdict.forecast.under": ("expect a weak likeness: raise the steps or the learning rate (one of the two)",
                               "덜 닮을 수 있습니다. 스텝이나 학습률 중 하나를 올리세요"),
    "verdict.forecast.over": ("expect memorised pictures that ignore the prompt: lower the learning rate, steps or alpha",
                              "그림을 외워 프롬프트를 무시할 수 있습니다. 학습률, 스텝이나 alpha를 낮추세요"),
    # what the pictures show
    "verdict.no_likeness": ("the character does not show yet: likeness {like:.2f} (it shows from {shows:g})",
                            "캐릭터가 아직 나오지 않음: 닮음 {like:.2f} ({shows:g}부터 닮음)"),
    "verdict.likeness": ("the character shows: likeness {like:.2f}", "캐릭터가 나옴: 닮음 {like:.2f}"),
    "verdict.low_adherence": ("the prompt starts to be ignored: adherence {adh:.2f} against the run's best {best:.2f}",
                              "프롬프트를 무시하기 시작함: 프롬프트 준수 {adh:.2f} (이 실행의 최고 {best:.2f})"),
    "verdict.val_rising": ("validation loss {val:.4f} rose past the {best:.4f} of step {best_step} while training went on",
                           "검증 손실이 {best_step}스텝의 {best:.4f}보다 높은 {val:.4f}로 올라감 (학습은 계속되는데)"),
    "verdict.val_lowest": ("validation loss {val:.4f}, the lowest of the run's saves",
                           "검증 손실 {val:.4f}, 이 실행의 저장 중 가장 낮음"),
    "verdict.val_near_lowest": ("validation loss {val:.4f}, within {share:.0%} of the lowest ({best:.4f} at step {best_step})",
                                "검증 손실 {val:.4f}, 가장 낮은 값({best_step}스텝의 {best:.4f})과 {share:.0%} 안의 차이"),
    "verdict.leakage": ("no-trigger pictures drift from the base model's: leakage {leak:.2f} (limit {limit:g})",
                        "트리거 없는 그림이 기반 모델의 그림에서 멀어짐: 누출 {leak:.2f} (한도 {limit:g})"),
    "verdict.no_leakage": ("no-trigger pictures stay the base model's: leakage {leak:.2f}",
                           "트리거 없는 그림은 기반 모델의 그림 그대로: 누출 {leak:.2f}"),
    "verdict.burn": ("trigger pictures are more saturated or harsher than the training pictures: burn {burn:.2f} (limit {limit:g})",
                     "트리거 그림이 학습 그림보다 색이 진하거나 거칢: 색 탐 {burn:.2f} (한도 {limit:g})"),
    # what the run's own model says (trainer/doctor/model_measures.py)
    "verdict.low_trigger_hold": ("the trigger alone does not bring the subject yet: trigger hold {hold:.3f} (it does from {shows:g})",
                                 "트리거만으로는 아직 대상이 나오지 않음: 트리거 장악 {hold:.3f} ({shows:g}부터 나옴)"),
    "verdict.hold_edge": ("the trigger is starting to bring the subject: trigger hold {hold:.3f}, just under {shows:g}, where saves whose pictures show it and saves whose pictures do not yet both fall; look at this save's pictures (Review: More pictures of this save), or have a picture judge read them (choose one under Preset → Advanced settings, then Review: Read with the picture judge)",
                          "트리거가 대상을 불러오기 시작함: 트리거 장악 {hold:.3f}, {shows:g} 바로 아래로 그림에 대상이 보이는 체크포인트와 아직 안 보이는 체크포인트가 함께 있는 구간. 이 체크포인트의 그림을 직접 보거나 (검토 단계: '이 체크포인트 그림 더 보기') 그림 판정 모델에 읽게 하세요 (프리셋 → 고급 설정에서 고른 뒤 검토 단계: '그림 판정 모델로 읽기')"),
    "verdict.hold_edge_judged": ("the trigger is starting to bring the subject: trigger hold {hold:.3f}, just under {shows:g}, where saves whose pictures show it and saves whose pictures do not yet both fall; here the picture judge's reading decides",
                                 "트리거가 대상을 불러오기 시작함: 트리거 장악 {hold:.3f}, {shows:g} 바로 아래로 그림에 대상이 보이는 체크포인트와 아직 안 보이는 체크포인트가 함께 있는 구간. 여기서는 그림 판정의 읽음이 결정합니다"),
    "verdict.hold_plateau": ("the trigger's hold on the subject stopped growing: trigger hold {hold:.3f}, against {before:.3f} at an earlier save (it brings the subject from {shows:g})",
                             "트리거가 대상을 붙드는 정도가 더 늘지 않음: 트리거 장악 {hold:.3f}, 앞선 체크포인트에서는 {before:.3f} ({shows:g}부터 대상을 불러옴)"),
    "verdict.hold_plateau_edge": ("the trigger's hold on the subject stopped growing just under the line: trigger hold {hold:.3f}, against {before:.3f} at an earlier save (it brings the subject from {shows:g}); some subjects settle here with pictures that show them (an everyday trigger, a subject drawn small in most pictures, pictures of mixed sizes): look at this save's pictures (Review: More pictures of this save), or have a picture judge read them (choose one under Preset → Advanced settings, then Review: Read with the picture judge)",
                                  "트리거가 대상을 붙드는 정도가 경계 바로 아래에서 더 늘지 않음: 트리거 장악 {hold:.3f}, 앞선 체크포인트에서는 {before:.3f} ({shows:g}부터 대상을 불러옴). 그림에 대상이 보이면서 여기에 머무는 대상도 있습니다(일상 단어 트리거, 대부분의 그림에서 작게 그려진 대상, 크기가 제각각인 그림). 이 체크포인트의 그림을 직접 보거나 (검토 단계: '이 체크포인트 그림 더 보기') 그림 판정 모델에 읽게 하세요 (프리셋 → 고급 설정에서 고른 뒤 검토 단계: '그림 판정 모델로 읽기')"),
    "verdict.trigger_hold": ("the trigger alone brings the subject: trigger hold {hold:.3f}",
                             "트리거만으로 대상이 나옴: 트리거 장악 {hold:.3f}"),
    "verdict.hold_past": ("the trigger alone brings the subject, just: trigger hold {hold:.3f}, just past {shows:g}, where a few saves whose pictures did not show it yet also fell; look at this save's pictures (Review: More pictures of this save), or have a picture judge read them (choose one under Preset → Advanced settings, then Review: Read with the picture judge)",
                          "트리거만으로 대상이 나옴(경계 바로 위): 트리거 장악 {hold:.3f}, {shows:g} 바로 위로 그림에 아직 대상이 안 보이던 체크포인트도 몇 번 있었던 구간. 이 체크포인트의 그림을 직접 보거나 (검토 단계: '이 체크포인트 그림 더 보기') 그림 판정 모델에 읽게 하세요 (프리셋 → 고급 설정에서 고른 뒤 검토 단계: '그림 판정 모델로 읽기')"),
    "verdict.hold_past_judged": ("the trigger alone brings the subject, just: trigger hold {hold:.3f}, just past {shows:g}, where a few saves whose pictures did not show it yet also fell; here the picture judge's reading decides",
                                 "트리거만으로 대상이 나옴(경계 바로 위): 트리거 장악 {hold:.3f}, {shows:g} 바로 위로 그림에 아직 대상이 안 보이던 체크포인트도 몇 번 있었던 구간. 여기서는 그림 판정의 읽음이 결정합니다"),
    "verdict.trigger_hold_style": ("trigger hold {hold:.3f}: the LoRA knows the style's pictures, which for a style "
                                   "does not say the trigger alone draws it (the model denoises pictures it trained "
                                   "on well either way); look at the grid, or have a picture judge read the saves (choose one under "
                                   "Preset → Advanced settings, then Review: Read with the picture judge)",
                                   "트리거 장악 {hold:.3f}: LoRA가 화풍의 그림을 익혔지만, 화풍에서는 이것만으로 트리거 "
                                   "하나가 그 화풍을 그린다고 말할 수 없음(학습한 그림의 노이즈는 어느 쪽이든 잘 걷어 냄). "
                                   "그리드를 직접 보거나 그림 판정 모델에 체크포인트를 읽게 하세요 (프리셋 → 고급 설정에서 "
                                   "고른 뒤 검토 단계: '그림 판정 모델로 읽기')"),
    "verdict.prior_drift": ("what the model draws without the trigger moved: prior drift {drift:.2f} (limit {limit:g})",
                            "트리거 없이 그리는 것이 움직임: 기반 이탈 {drift:.2f} (한도 {limit:g})"),
    "verdict.masked_drift": ("what the model draws without the trigger moved: prior drift {drift:.2f} (limit {limit:g}) "
                             "on a masked run, where the caption words that named the backgrounds may have learnt the "
                             "subject",
                             "트리거 없이 그리는 것이 움직임: 기반 이탈 {drift:.2f} (한도 {limit:g}). 마스크 학습이라 "
                             "배경을 적은 캡션 단어가 대상을 배웠을 수 있음"),
    "verdict.masked_drift_words": ("what the model draws without the trigger moved: prior drift {drift:.2f} (limit "
                                   "{limit:g}) on a masked run, and the trigger adds only {share:.0%} of what a prompt "
                                   "with it draws (a run whose trigger carries the subject: from {line:.0%}): the "
                                   "captions' other words draw the subject too",
                                   "트리거 없이 그리는 것이 움직임: 기반 이탈 {drift:.2f} (한도 {limit:g}), 마스크 학습. "
                                   "트리거를 넣은 프롬프트가 그리는 것 중 트리거가 더하는 몫은 {share:.0%}뿐 (트리거가 대상을 "
                                   "맡은 학습은 {line:.0%}부터): 캡션의 다른 단어도 대상을 그림"),
    "verdict.masked_drift_free": ("the no-trigger prompts moved (prior drift {drift:.2f}), but the trigger still adds "
                                  "{share:.0%} of what a prompt with it draws (from {line:.0%}): on this masked run the "
                                  "backgrounds the masks leave free moved, not the subject",
                                  "트리거 없는 프롬프트가 움직임 (기반 이탈 {drift:.2f}). 그래도 트리거를 넣은 프롬프트가 "
                                  "그리는 것의 {share:.0%}를 트리거가 더함 ({line:.0%}부터): 마스크 학습에서 마스크 밖의 "
                                  "배경이 움직인 것이지 대상이 샌 것이 아님"),
    "verdict.prior_kept": ("what the model draws without the trigger stays the base model's: prior drift {drift:.2f}",
                           "트리거 없이 그리는 것은 기반 모델 그대로: 기반 이탈 {drift:.2f}"),
    "verdict.memorising": ("the training pictures' loss fell away from the held-out pictures': memorisation {mem:+.0%} (limit {limit:+.0%})",
                           "학습 그림의 손실만 검증 그림보다 크게 내려감: 암기 {mem:+.0%} (한도 {limit:+.0%})"),
    # the run's evidence lines
    "verdict.at_step": ("step {step}: {text}", "{step}스텝: {text}"),
    "verdict.other_checkpoint": ("step {step}: {label} — {evidence}", "{step}스텝: {label} — {evidence}"),
    # summaries: what to do
    "verdict.summary.broken": ("Broken: {first}. Fix the numbers first; the pictures of a broken run say nothing about "
                               "the dose.{salvage}",
                               "망가짐: {first}. 수치 문제부터 고치세요. 망가진 실행의 그림으로는 학습량을 판단할 수 "
                               "없습니다.{salvage}"),
    "verdict.salvage": (" Checkpoint {step} was saved before it broke.", " 깨지기 전에 {step}스텝이 저장됐습니다."),
    "verdict.summary.fit": ("Fit: {use}nothing needs to change.{tail} Confirm it with the strength sweep.",
                            "알맞음: {use}바꿀 것이 없습니다.{tail} 강도 비교로 확인하세요."),
    "verdict.summary.fit_captions_alike": ("Fit by the model's measures at step {step}, but {why}. Look at step "
                                           "{step}'s pictures before using it (Review: More pictures of this save): "
                                           "where the trigger draws the data's places and shapes rather than the "
                                           "subject, the captions are what to mend (Troubleshoot's first "
                                           "prescription).",
                                           "모델 측정으로는 {step}스텝에서 알맞음. 다만 {why}. 쓰기 전에 {step}스텝의 "
                                           "그림부터 보세요(검토 단계: '이 체크포인트 그림 더 보기'). 트리거가 대상보다 "
                                           "데이터의 장소와 모양을 그리면 고칠 것은 캡션입니다(문제 해결의 첫 처방)."),
    "verdict.use_step": ("use step {step}; ", "{step}스텝을 쓰세요. "),
    "verdict.later_overfit": (" Later checkpoints ({steps}) start to overfit.", " 이후 체크포인트({steps})는 과적합이 시작됩니다."),
    "verdict.summary.under": ("Under-trained: {last} has not learned enough. Train longer or raise the learning rate "
                              "(one of the two).",
                              "미적합: {last} 아직 덜 배웠습니다. 더 오래 학습하거나 학습률을 올리세요(둘 중 하나만)."),
    "verdict.summary.under_captions": ("Under-trained: {last} has not learned enough, and the captions are the first "
                                       "suspect: {why}. Mend the captions before training longer (Troubleshoot's "
                                       "first prescription).",
                                       "미적합: {last} 아직 덜 배웠습니다. 먼저 의심할 것은 캡션입니다: {why}. 더 오래 "
                                       "학습하기 전에 캡션부터 고치세요(문제 해결의 첫 처방)."),
    "verdict.summary.under_plateau": ("Under-trained: {last} has not learned enough, and the trigger's hold stopped "
                                      "growing while the dose kept rising: more steps or a higher learning rate will "
                                      "not mend it. Give the LoRA more room first (Troubleshoot's first prescription).",
                                      "미적합: {last} 아직 덜 배웠습니다. 학습량은 계속 늘었는데 트리거 장악이 더 "
                                      "오르지 않았습니다: 스텝이나 학습률을 올려도 고쳐지지 않습니다. LoRA에 자리부터 "
                                      "더 주세요(문제 해결의 첫 처방)."),
    "verdict.summary.look_first": ("Under-trained by the model's measures, but the last save's trigger hold ({hold:.3f}) "
                                   "sits just under the line, where many saves whose pictures already showed the "
                                   "subject fell too (an everyday trigger, a subject drawn small in most pictures, "
                                   "pictures of mixed sizes): look at step {step}'s pictures before changing anything "
                                   "(Review: More pictures of this save); if they show the subject, use it. If they do "
                                   "not: {text}",
                                   "모델 측정으로는 미적합이지만, 마지막 체크포인트의 트리거 장악({hold:.3f})이 경계 "
                                   "바로 아래로, 그림에 이미 대상이 보이는 체크포인트도 많이 있었던 구간입니다(일상 단어 "
                                   "트리거, 대부분의 그림에서 작게 그려진 대상, 크기가 제각각인 그림). 무엇이든 바꾸기 "
                                   "전에 {step}스텝의 그림부터 보세요(검토 단계: '이 체크포인트 그림 더 보기'). 대상이 "
                                   "보이면 그 체크포인트를 쓰세요. 보이지 않으면: {text}"),
    "verdict.summary.under_unfinished": ("Under-trained so far: the run stopped at step {step} of the {planned} it "
                                         "planned. Continue it before changing a setting: the rest of its plan may "
                                         "be all it lacks.",
                                         "아직 미적합: 계획한 {planned}스텝 중 {step}스텝에서 멈춘 실행입니다. 설정을 "
                                         "바꾸기 전에 이어 하세요. 모자란 것이 남은 계획뿐일 수 있습니다."),
    "verdict.summary.under_out_of_memory": ("Under-trained so far: the run stopped at step {step} of the {planned} it "
                                            "planned, when the device ran out of memory. Start it again with a change "
                                            "that needs less memory (Troubleshoot's first prescription), or Continue "
                                            "it once another program no longer takes the card's memory.",
                                            "아직 미적합: 계획한 {planned}스텝 중 {step}스텝에서 장치 메모리가 모자라 "
                                            "멈춘 실행입니다. 메모리를 덜 쓰는 변경 하나로 다시 시작하거나(문제 해결의 "
                                            "첫 처방), 다른 프로그램이 카드 메모리를 차지하지 않게 된 뒤에 이어 하세요."),
    "verdict.summary.under_restart": ("Under-trained so far: the run stopped at step {step} of the {planned} it "
                                      "planned, before its first checkpoint. Start it again with the same settings "
                                      "before changing one: the rest of its plan may be all it lacks.",
                                      "아직 미적합: 계획한 {planned}스텝 중 {step}스텝에서 첫 체크포인트 전에 멈춘 "
                                      "실행입니다. 설정을 바꾸기 전에 같은 설정으로 다시 시작하세요. 모자란 것이 "
                                      "남은 계획뿐일 수 있습니다."),
    "verdict.summary.under_failed": ("Under-trained so far: {why} (of the {planned} steps it planned). Mend what "
                                     "the error names, then continue it (or start it again if it saved no "
                                     "checkpoint) before changing a setting.",
                                     "아직 미적합: {why} (계획은 {planned}스텝). 설정을 바꾸기 전에 오류가 가리키는 "
                                     "것을 고치고 이어 하세요(저장된 체크포인트가 없으면 다시 시작하세요)."),
    "verdict.summary.none": ("Nothing to judge: {why}. Mend that and start it again.",
                             "판정할 것이 없습니다: {why}. 그것을 고친 뒤 다시 시작하세요."),
    "verdict.no_step": ("the run ended before it trained a step", "실행이 한 스텝도 학습하기 전에 끝남"),
    "verdict.summary.none_training": ("Nothing to judge yet: the run has not finished its first step.",
                                      "아직 판정할 것이 없습니다: 실행이 첫 스텝을 마치지 않았습니다."),
    "verdict.summary.under_training": ("Under-trained so far: the run is still training (its last save is step {step} "
                                       "of the {planned} it plans). Judge it when it ends.",
                                       "아직 미적합: 실행이 아직 학습 중입니다(마지막 저장은 계획한 {planned}스텝 중 "
                                       "{step}스텝). 끝난 뒤에 판정하세요."),
    "verdict.last_checkpoint": ("even the last checkpoint (step {step})", "마지막 체크포인트({step}스텝)도"),
    "verdict.the_run": ("the run", "이 실행은"),
    "verdict.summary.over": ("Over-trained: the run pushed too far.{where} Lower the dose (learning rate or steps) and "
                             "train again.",
                             "과적합: 너무 멀리 끌고 갔습니다.{where} 학습량(학습률이나 스텝)을 낮춰 다시 학습하세요."),
    "verdict.summary.over_masked": (
        "Over-trained, or the captions' background words learnt the subject: what prompts without the trigger draw "
        "moved.{where} On a masked run look at the no-trigger samples first: if the subject shows in them, caption "
        "the subject alone (the words that named the backgrounds have no background left to learn) and train again "
        "before lowering the dose.",
        "과적합이거나, 캡션의 배경 단어가 대상을 배웠습니다. 트리거 없는 프롬프트가 그리는 것이 움직였습니다.{where} "
        "마스크 학습에서는 트리거 없는 샘플부터 보세요. 거기에 대상이 나오면 캡션에 대상만 적고(배경을 적은 "
        "단어에게는 배울 배경이 남아 있지 않습니다) 학습량을 낮추기 전에 다시 학습하세요."),
    "verdict.least_pushed": (" Step {step} is the least pushed save.", " {step}스텝이 가장 덜 밀린 체크포인트입니다."),
    # a symptom the run's evidence reads otherwise
    "verdict.reading": ("Your run's measures say {label} ({why}), so “{title}” more likely means {meaning}. "
                        "Causes that point the other way are listed last.{use}",
                        "이 실행의 측정값은 {label}입니다({why}). 그래서 “{title}”은(는) {meaning}. "
                        "반대 방향의 원인은 맨 뒤에 두었습니다.{use}"),
    "verdict.meaning.over": ("the LoRA was pushed too far (memorised pictures, a lost prompt), not that it learned too little",
                             "LoRA가 너무 멀리 끌려갔다는 뜻(그림을 외우고 프롬프트를 잃음)이지, 덜 배웠다는 뜻이 아닙니다"),
    "verdict.meaning.under": ("it has not learned enough yet, not that it was pushed too far",
                              "아직 덜 배웠다는 뜻이지, 너무 멀리 끌려갔다는 뜻이 아닙니다"),
    "verdict.meaning.fit": ("something other than the amount of training: the checkpoint or strength in use, the "
                            "prompt's words, or the data",
                            "학습량이 아닌 다른 것: 쓰고 있는 체크포인트나 강도, 프롬프트의 단어, 또는 데이터라는 뜻입니다"),
    "verdict.meaning.broken": ("the numbers broke (nan/inf); fix that first, the pictures of a broken run say nothing "
                               "about the dose",
                               "수치가 깨졌다(nan/inf)는 뜻입니다. 그것부터 고치세요. 망가진 실행의 그림으로는 학습량을 "
                               "판단할 수 없습니다"),
    "verdict.check_step": (" Check step {step} first.", " 먼저 {step}스텝을 확인하세요."),
}  # fmt: skip
