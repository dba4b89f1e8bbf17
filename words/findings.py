"""What the doctor's detectors found in a run (``finding.<signal>``), with the values each one names."""

TEXTS = {
    "finding.nonfinite": ("the {what} became non-finite first, at step {step} (module {where}, precision {precision}, "
                          "lr {lr})",
                          "{step}스텝에서 가장 먼저 nan/inf가 된 것: {what} (모듈 {where}, 정밀도 {precision}, 학습률 {lr})"),
    "finding.what.loss": ("loss", "손실"),
    "finding.what.grad": ("gradient", "그라디언트"),
    "finding.what.param": ("LoRA weight", "LoRA 가중치"),
    "finding.what.ema": ("EMA weight", "EMA 가중치"),
    "finding.loss_scale_collapse": ("the fp16 loss scale {how} (now {final}): overflow keeps recurring",
                                    "fp16 손실 스케일이 {how} (현재 {final}): 오버플로가 반복됨"),
    "finding.scale_below": ("fell below {limit:g} ({value:g} at step {step})", "{limit:g} 아래로 떨어짐 ({step}스텝에 {value:g})"),
    "finding.scale_fell_in_a_row": ("fell on {n} steps in a row after its warm-up", "워밍업 뒤 {n}스텝 연속으로 내려감"),
    "finding.scale_fell_from_peak": ("fell to 1/{fall:g} of the {peak} it had trained at after its warm-up",
                                     "워밍업 뒤 학습하던 값 {peak}의 1/{fall:g}로 내려감"),
    "finding.loss_scale_growing": ("the fp16 loss scale kept growing, to {peak} (2^{power:.0f}) at step {step}: the "
                                   "gradients have been tiny for a long time, and any fp16 gradient above {limit:.2g} now "
                                   "overflows",
                                   "fp16 손실 스케일이 계속 커져 {step}스텝에 {peak}(2^{power:.0f})까지 올라감: 그라디언트가 오래 "
                                   "아주 작았다는 뜻이고, 이제는 {limit:.2g}보다 큰 fp16 그라디언트는 모두 넘침(overflow)"),
    "finding.grad_spike": ("{n} gradient-norm spike(s) over {factor:g}× the largest of the steps before it (their 95th "
                           "percentile), first at step {step}",
                           "그라디언트 norm이 직전 스텝들의 큰 값(95번째 백분위수)의 {factor:g}배를 넘은 스텝 {n}개, "
                           "처음은 {step}스텝"),
    "finding.clip_saturated": ("{share:.0%} of steps were clipped at {max_norm:g}: clipping, not the lr, sets the step size",
                               "스텝의 {share:.0%}가 {max_norm:g}에서 잘림: 학습률이 아니라 클리핑이 보폭을 정하고 있음"),
    "finding.loss_trending_up": ("the loss is trending up: late mean {late:.4g} vs early {early:.4g}",
                                 "손실이 오르는 추세: 후반 평균 {late:.4g}, 초반 {early:.4g}"),
    "finding.weight_norm_growth": ("the LoRA weights' norm grew {growth:.0%} (step {s0}: {first:.4g} → step {s1}: {last:.4g}); "
                                   "the weights are being pushed far from where they started",
                                   "LoRA 가중치 norm이 {growth:.0%} 커짐 ({s0}스텝 {first:.4g} → {s1}스텝 {last:.4g}); "
                                   "가중치가 시작점에서 멀리 밀려나는 중"),
    "finding.dose_over": ("dose lr × steps × alpha/rank = {dose:.3g}, above the preset's zone ({low:g}–{high:g}): "
                          "expect over-training (memorised poses, burnt colours)",
                          "학습량(학습률 × 스텝 × alpha/rank) = {dose:.3g}, 프리셋 권장 구간({low:g}–{high:g})보다 큼: "
                          "과적합(자세 고정, 색 탐)이 예상됨"),
    "finding.dose_under": ("dose {dose:.3g} is below the preset's zone ({low:g}–{high:g}): it may not look alike yet",
                           "학습량 {dose:.3g}이(가) 프리셋 권장 구간({low:g}–{high:g})보다 작음: 아직 안 닮을 수 있음"),
    "finding.dose_over_pending": ("dose {dose:.3g} is above this preset's zone ({low:g}–{high:g}); the run reads its own "
                                  "saves as it trains, and they will say whether it over-trains",
                                  "학습량 {dose:.3g}이(가) 이 프리셋의 구간({low:g}–{high:g})보다 큼. 학습하면서 체크포인트를 "
                                  "스스로 재므로, 과적합인지는 그 측정이 말해 줌"),
    "finding.dose_over_measured": ("dose {dose:.3g} is above this preset's zone ({low:g}–{high:g}), but the run's own "
                                   "measures read no save over-trained: the zone was set for the preset's settings, and "
                                   "the saves decide",
                                   "학습량 {dose:.3g}이(가) 이 프리셋의 구간({low:g}–{high:g})보다 크지만, 실행이 스스로 잰 "
                                   "측정으로는 과적합인 체크포인트가 없음: 구간은 프리셋 설정에 맞춘 것이고 판단은 "
                                   "체크포인트가 함"),
    "finding.dose_under_pending": ("dose {dose:.3g} is below this preset's zone ({low:g}–{high:g}); the run reads its "
                                   "own saves as it trains, and they will say whether the subject shows",
                                   "학습량 {dose:.3g}이(가) 이 프리셋의 구간({low:g}–{high:g})보다 작음. 학습하면서 "
                                   "체크포인트를 스스로 재므로, 대상이 나오는지는 그 측정이 말해 줌"),
    "finding.dose_under_measured": ("dose {dose:.3g} is below this preset's zone ({low:g}–{high:g}), but the run's own "
                                    "measures read the subject at a save: the zone was set for the preset's settings, "
                                    "and the saves decide",
                                    "학습량 {dose:.3g}이(가) 이 프리셋의 구간({low:g}–{high:g})보다 작지만, 실행이 스스로 "
                                    "잰 측정으로는 대상이 나오는 체크포인트가 있음: 구간은 프리셋 설정에 맞춘 것이고 "
                                    "판단은 체크포인트가 함"),
    "joined": ("{first}; {rest}", "{first}; {rest}"),  # two messages as one line
    "finding.learning_stalled": ("the weights barely move: ‖Δw‖/‖w‖ over 10 steps ≤ {ratio:.2g}",
                                 "가중치가 거의 움직이지 않음: 10스텝 동안 ‖Δw‖/‖w‖ ≤ {ratio:.2g}"),
    "finding.ema_drift": ("the EMA weights drifted {drift:.0%} away from the live weights (step {step})",
                          "EMA 가중치가 실제 가중치에서 {drift:.0%} 벗어남 ({step}스텝)"),
    "finding.step_slowdown": ("steps became {factor:.1f}× slower from step {step} ({before:.3g} s → {after:.3g} s) "
                              "and stayed slow{memory}: the signature of memory spilling out of the GPU",
                              "{step}스텝부터 스텝이 {factor:.1f}배 느려져({before:.3g}초 → {after:.3g}초) 그대로 "
                              "머묾{memory}: GPU 메모리가 넘쳐 시스템 메모리로 흘러갈 때의 모습"),
    "finding.cpu_contention": ("steps became {factor:.1f}× slower from step {step} ({before:.3g} s → {after:.3g} s) "
                               "while other programs took {others:.0%} of the machine's CPU (before: {others_before:.0%});"
                               " the training's own share fell from {own_before:.0%} to {own:.0%}: other programs "
                               "crowded it out, nothing in its settings",
                               "{step}스텝부터 스텝이 {factor:.1f}배 느려짐({before:.3g}초 → {after:.3g}초). 그동안 다른 "
                               "프로그램이 이 컴퓨터 CPU의 {others:.0%}를 썼고(전에는 {others_before:.0%}), 학습 자신의 몫은 "
                               "{own_before:.0%}에서 {own:.0%}로 줄었음: 설정이 아니라 다른 프로그램에 밀린 것"),
    "finding.passed": ("no longer so at the run's end (step {step}); earlier: {earlier}",
                       "실행이 끝날 때({step}스텝)는 더 이상 그렇지 않음. 앞서: {earlier}"),
    "finding.passed_live": ("no longer so at step {step}; earlier: {earlier}",
                            "{step}스텝에서는 더 이상 그렇지 않음. 앞서: {earlier}"),
    "finding.cpu_shared": ("steps became {factor:.1f}× slower from step {step} ({before:.3g} s → {after:.3g} s) "
                           "on a run without a GPU while other programs kept {others:.0%} of the machine's CPU (before: "
                           "{others_before:.0%}): programs busy on the same cores can slow each other far more than "
                           "their shares show; train with them closed, nothing in the run's settings",
                           "GPU 없이 돌던 실행에서 {step}스텝부터 스텝이 {factor:.1f}배 느려짐({before:.3g}초 → "
                           "{after:.3g}초). 그동안 다른 프로그램이 이 컴퓨터 CPU의 {others:.0%}를 계속 썼음(전에는 "
                           "{others_before:.0%}): 같은 코어에서 바쁜 프로그램끼리는 CPU 몫이 보여 주는 것보다 훨씬 더 서로를 "
                           "느리게 함. 설정이 아니라, 그 프로그램을 닫고 학습하세요"),
    "finding.step_slowdown_cpu": ("steps became {factor:.1f}× slower from step {step} ({before:.3g} s → {after:.3g} s) "
                                  "and stayed slow on a run without a GPU, while no other program took its CPU: the "
                                  "machine itself slowed down (memory swapping to disk, or power and heat limits)",
                                  "GPU 없이 돌던 실행에서 {step}스텝부터 스텝이 {factor:.1f}배 느려져({before:.3g}초 → "
                                  "{after:.3g}초) 그대로 머묾. 다른 프로그램이 CPU를 가져가지도 않았음: 컴퓨터 자체가 "
                                  "느려진 것(메모리가 디스크로 스왑되거나, 전원·발열 제한)"),
    "finding.slowdown_memory": ("; training held {reserved:.2f} GiB of device memory{free}",
                                ". 학습이 장치 메모리 {reserved:.2f} GiB를 쓰는 중{free}"),
    "finding.slowdown_free": (", {free:.2f} GiB left free on the device", ", 장치에 남은 메모리 {free:.2f} GiB"),
    "finding.sample_burn": ("samples are more saturated or harsher than the training pictures (burn {burn:.2f} at step {step}, {kind})",
                            "샘플의 채도·대비가 학습 그림보다 과해짐 ({step}스텝 {kind}, 탐 지수 {burn:.2f})"),
    "finding.masked_drift": ("what the model draws without the trigger moved: prior drift {drift:.2f} at step {step} "
                             "(limit {limit:g}) on a masked run; with the backgrounds masked out, the words that named "
                             "them in the captions can learn the subject: look at the no-trigger samples",
                             "트리거 없이 그리는 것이 움직임: {step}스텝 기반 이탈 {drift:.2f} (한도 {limit:g}), 마스크 "
                             "학습. 배경을 가리면 캡션에서 배경을 적은 단어가 대상을 배울 수 있으니 트리거 없는 "
                             "샘플을 보세요"),
    "finding.prior_drift": ("what the model draws without the trigger moved: prior drift {drift:.2f} at step {step} "
                            "(limit {limit:g}); prompts without the trigger are changing",
                            "트리거 없이 그리는 것이 움직임: {step}스텝 기반 이탈 {drift:.2f} (한도 {limit:g}). 트리거 "
                            "없는 프롬프트가 바뀌고 있음"),
    "finding.memorising": ("the training pictures' loss fell away from the held-out pictures' ({mem:+.0%} at step "
                           "{step}, limit {limit:+.0%}): the LoRA is memorising its pictures",
                           "학습 그림의 손실만 검증 그림보다 크게 내려감 ({step}스텝 {mem:+.0%}, 한도 {limit:+.0%}): "
                           "LoRA가 그림을 외우는 중"),
    "finding.picture_outlier": ("the trigger learned {count} training picture(s) unlike the rest: {pictures}. Open "
                                "them beside their captions: a picture that does not show the subject, or a caption "
                                "that leaves out what the picture shows, is the usual cause; fix the caption or "
                                "remove the picture",
                                "트리거가 학습 그림 {count}장을 나머지와 다르게 배움: {pictures}. 캡션과 나란히 열어 "
                                "보세요. 대상이 없는 그림이나 그림에 보이는 것을 빠뜨린 캡션이 흔한 원인입니다. 캡션을 "
                                "고치거나 그림을 빼세요"),
    "finding.caption_everywhere": ("the captions write the same words in nearly every picture: {phrases}. Words in every "
                                   "caption learn what they say, so the trigger learns none of it: if that is the "
                                   "subject's fixed look, take it out of the captions; if it should stay changeable, "
                                   "vary it",
                                   "캡션이 거의 모든 그림에 같은 말을 적음: {phrases}. 모든 캡션에 있는 말은 그 말이 "
                                   "배우므로 트리거는 그것을 배우지 못함. 대상의 고정된 모습이라면 캡션에서 빼고, 바뀔 수 "
                                   "있어야 하는 것이라면 다양하게 쓰세요"),
    "finding.caption_everywhere.one": ('"{phrase}" ({pct}%)', '"{phrase}"({pct}%)'),
    "finding.captions_identical": ('{n} pictures share one caption, "{caption}": what differs between them (the place, '
                                   "the background, the size, the pose) has no word, so the trigger learns it with the "
                                   "subject, and the model's trigger hold reads what these captions trained, not "
                                   "whether the trigger draws the subject elsewhere; write what differs in each caption",
                                   '그림 {n}장이 같은 캡션을 씀: "{caption}". 그림마다 다른 것(장소, 배경, 크기, 자세)에 '
                                   "붙을 말이 없어서 트리거가 대상과 함께 그것까지 배우고, 모델의 트리거 장악은 트리거가 "
                                   "다른 곳에서도 대상을 그리는지가 아니라 이 캡션으로 배운 것을 잽니다. 캡션마다 다른 점을 "
                                   "적으세요"),
    "finding.trigger_not_first": ('{n} caption(s) write the trigger "{trigger}" after their first {keep} tag(s), which '
                                  "stay in place while the others are shuffled and dropped: the trigger moves and is "
                                  "sometimes left out, and what always stays first learns the subject instead; put the "
                                  "trigger first (the Dataset step's Put the trigger first does it)",
                                  '캡션 {n}개가 트리거 "{trigger}"를 앞의 {keep}개 태그 뒤에 적음. 앞의 태그만 제자리에 '
                                  "있고 나머지는 섞이거나 빠지므로 트리거가 자리를 옮기고 가끔 빠지며, 늘 맨 앞에 있는 "
                                  "말이 대신 대상을 배움. 트리거를 맨 앞에 두세요(데이터셋 단계의 \"트리거를 맨 앞에 넣기\"가 "
                                  "해 줌)"),
    "finding.trigger_common_word": ('the trigger "{trigger}" is an everyday word the base model already draws: its own '
                                    "meaning pulls against the subject, and every prompt that uses the word in that "
                                    'sense draws the subject too; a rare made-up word (like "zxc" or "ohwx") gives '
                                    "the LoRA a word of its own",
                                    '트리거가 기반 모델이 이미 그리는 일상 단어임("{trigger}"): 그 단어의 원래 뜻이 대상을 '
                                    "배우는 쪽과 부딪치고, 그 단어를 원래 뜻으로 쓰는 프롬프트마다 대상이 함께 나옴. "
                                    '드문 지어낸 단어("zxc" 같은)를 쓰면 LoRA가 자기만의 단어를 가짐'),
    "finding.near_copy": ("{count} training picture(s) are another picture again, resized, re-encoded or recoloured: "
                          "{pictures}. Each such picture is trained on twice as often as the rest, which pulls the LoRA "
                          "toward its pose and background; keep one of each pair unless the weight was meant",
                          "학습 그림 {count}장이 다른 그림의 크기·압축·색만 바꾼 사본임: {pictures}. 그런 그림은 다른 "
                          "그림보다 두 배 자주 학습되어 LoRA가 그 자세와 배경 쪽으로 끌림. 일부러 비중을 준 것이 아니면 "
                          "한 쌍에서 하나만 두세요"),
    "finding.near_copy.one": ("{file} (as {original})", "{file} ({original}의 사본)"),
    "finding.picture_outlier.high": ("{picture} (the trigger carries it far more than the others)",
                                     "{picture} (트리거가 다른 그림보다 훨씬 많이 떠맡음)"),
    "finding.picture_outlier.low": ("{picture} (the trigger carries it far less: does its caption describe the subject's look?)",
                                    "{picture} (트리거가 훨씬 덜 떠맡음: 캡션이 대상의 생김새를 적고 있지 않은가?)"),
    "finding.leakage": ("the no-trigger sample drifts from the base model's (leakage {leak:.2f} at step {step}): "
                        "the LoRA is leaking into everything",
                        "트리거 없는 샘플이 기반 모델의 그림에서 멀어짐 ({step}스텝 누출 {leak:.2f}): 다른 것까지 물들고 있음"),
    "finding.judge_unreadable": ("no picture judge read the pictures, so the verdict was made without its readings. "
                                 "{problem}",
                                 "그림 판정 모델이 그림을 읽지 못해, 판정은 그 읽음 없이 내렸습니다. {problem}"),
    "finding.run_unfinished": ("the run stopped at step {step} of the {planned} it planned ({status}): it is judged on "
                               "what it learned so far, and Continue trains the rest from its checkpoint at step {resume}",
                               "계획한 {planned}스텝 중 {step}스텝에서 멈춘 실행({status}): 지금까지 배운 것으로 판정했고, "
                               "계속하면 {resume}스텝 체크포인트부터 나머지를 학습함"),
    "finding.run_unfinished_no_checkpoint": ("the run stopped at step {step} of the {planned} it planned ({status}) "
                                             "before its first checkpoint: it is judged on what it learned so far, "
                                             "and it has nothing to continue from",
                                             "계획한 {planned}스텝 중 {step}스텝에서 첫 체크포인트 전에 멈춘 "
                                             "실행({status}): 지금까지 배운 것으로 판정했고, 이어 갈 체크포인트가 없음"),
    "finding.run_out_of_memory": ("the device ran out of memory at step {step}: {error}",
                                  "{step}스텝에서 장치의 메모리가 모자람: {error}"),
    "finding.run_failed": ("the run failed at step {step}: {error}", "{step}스텝에서 실행이 실패함: {error}"),
    "finding.run_refused": ("the run was refused before its first step: {error}",
                            "첫 스텝 전에 실행이 거부됨: {error}"),
    "finding.run_status.paused": ("paused", "일시정지됨"),
    "finding.run_status.stopped": ("stopped by its user", "사용자가 멈춤"),
    "finding.run_status.interrupted": ("interrupted: the app, the terminal or the computer closed while it trained",
                                       "중단됨: 학습 중에 앱, 터미널 또는 컴퓨터가 닫힘"),
    "finding.run_status.failed": ("failed", "실패함"),
}  # fmt: skip
