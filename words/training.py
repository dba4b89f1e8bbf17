"""What the training itself says as it runs: a precision it could not honour (``precision.*``), why the numerics
guard dropped or stopped a step (``guard.*``), and the runner's answer to a start (``run.*``)."""

TEXTS = {
    "precision.fallback": ("bf16 was asked for but {device} does not support it; using {precision}",
                           "bf16을 요청했지만 {device}에서 지원하지 않아 대신 {precision} 정밀도로 학습합니다"),
    "precision.fallback_scaled": (
        "bf16 was asked for but {device} does not support it; using {precision} with loss scaling",
        "bf16을 요청했지만 {device}에서 지원하지 않아 대신 {precision} 정밀도와 손실 스케일링으로 학습합니다"),
    "guard.fp16_overflow": ("fp16 overflow (scaler)", "fp16 오버플로(스케일러)"),
    "guard.policy_stop": ("non-finite {first}; guard policy is stop",
                          "{first}에 유한하지 않은 값; 가드 정책이 '중단'입니다"),
    "guard.skipping_failed": ("{n} consecutive non-finite steps; skipping did not help",
                              "유한하지 않은 스텝이 {n}번 연속; 건너뛰어도 나아지지 않았습니다"),
    "guard.skipped": ("non-finite {first}; step skipped", "{first}에 유한하지 않은 값; 스텝을 건너뜁니다"),
    "guard.rolling_back": ("non-finite {first}; rolling back", "{first}에 유한하지 않은 값; 되돌립니다"),
    "guard.weights_broken": ("non-finite {first}; the weights are already non-finite",
                             "{first}에 유한하지 않은 값; 가중치가 이미 유한하지 않습니다"),
    "guard.rollbacks_used": ("non-finite {first}; {n} rollbacks used",
                             "{first}에 유한하지 않은 값; 되돌리기를 {n}번 다 썼습니다"),
    "run.already_active": ("a training run is already active; stop it first",
                           "이미 학습이 진행 중입니다. 먼저 멈추세요"),
    "run.started": ("started", "시작했습니다"),
    "rollback.nothing_fits_mid_run": ("nothing that fits a non-finite {first} can change mid-run",
                                      "{first}의 유한하지 않은 값에 맞는 설정은 학습 중에 바꿀 수 없습니다"),
    "run.text_not_foreseen": ("{count} text(s) not encoded before training (the first: '{example}') were encoded now "
                              "on the CPU, where the offloaded text encoders are: slower, and the same words",
                              "학습 전에 인코딩하지 않은 텍스트 {count}개(첫째: '{example}')를 텍스트 인코더가 내려가 "
                              "있는 CPU에서 지금 인코딩했습니다. 느리지만 같은 내용입니다"),
    "run.guard_stopped": ("stopped by the numerics guard at step {step}", "{step}번째 스텝에서 수치 감시가 학습을 멈췄습니다"),
    "run.edge_pictures_failed": ("the saves near the picture judge's line could not be drawn again ({reason}); the "
                                 "run is trained and saved: Review's \"More pictures of this save\" draws them",
                                 "그림 판정 기준선 가까이 있는 체크포인트를 더 그리지 못했습니다({reason}). 학습과 저장은 "
                                 "끝났습니다. 검토 단계의 \"이 체크포인트 그림 더 보기\"로 그릴 수 있습니다"),
    "run.measures_out_of_memory": ("the model measures ran out of the device's memory at step {step}, even one "
                                   "picture at a time ({reason}); they are off for the rest of this run, which trains "
                                   "on. Its later saves are judged by the dose and their pictures (Review's grid, or a "
                                   "picture judge); python -m trainer measure RUN_DIR measures every save afterwards, "
                                   "with nothing else on the card",
                                   "모델 측정이 {step}스텝에서 그림을 한 장씩 넣어도 장치 메모리가 모자랐습니다({reason}). "
                                   "이 실행이 끝날 때까지 측정은 꺼지고 학습은 계속됩니다. 이후 체크포인트는 학습량과 "
                                   "그림(검토 단계의 그림 표나 그림 판정 모델)으로 판정합니다. 카드에 다른 작업이 없을 때 "
                                   "python -m trainer measure RUN_DIR 로 모든 체크포인트를 다시 잴 수 있습니다"),
    "run.final_samples_failed": ("the last step's samples could not be drawn ({reason}); the run is trained and "
                                 "saved: Review's \"More pictures of this save\" draws its pictures",
                                 "마지막 스텝의 샘플 그림을 그리지 못했습니다({reason}). 학습과 저장은 끝났습니다. 검토 단계의 "
                                 "\"이 체크포인트 그림 더 보기\"로 그릴 수 있습니다"),
    "run.disk_full": ("the disk that holds {root} is full ({free} free), so the run stopped at step {step}. Free some "
                      "space (older runs' checkpoints/ folders hold the most), then go on from its last complete "
                      "checkpoint, step {resume}: Continue on the app's Train step, or python -m trainer train "
                      "--resume \"{root}\"",
                      "{root}가 있는 디스크가 가득 차서({free} 남음) 실행이 {step}스텝에서 멈췄습니다. 공간을 비운 뒤(예전 "
                      "실행의 checkpoints/ 폴더가 가장 큼) 마지막으로 온전한 체크포인트인 {resume}스텝부터 이어서 "
                      "학습하세요: 앱 학습 단계의 '계속' 버튼, 또는 python -m trainer train --resume \"{root}\""),
    "run.disk_full_no_checkpoint": ("the disk that holds {root} is full ({free} free), so the run stopped at step "
                                    "{step}, before its first complete checkpoint. Free some space (older runs' "
                                    "checkpoints/ folders hold the most), then start it again",
                                    "{root}가 있는 디스크가 가득 차서({free} 남음) 실행이 첫 온전한 체크포인트 전인 "
                                    "{step}스텝에서 멈췄습니다. 공간을 비운 뒤(예전 실행의 checkpoints/ 폴더가 가장 큼) "
                                    "다시 시작하세요"),
    "run.out_of_memory": ("the device ran out of memory at step {step} ({error}). Lower what the run needs and start "
                          "it again with that one change: gradient checkpointing on, half the batch (twice the "
                          "accumulation), or a smaller resolution; the Preset step's 'Fit to memory' picks the changes "
                          "for your card, and Troubleshoot lists them for this run.{resume}",
                          "{step}스텝에서 장치의 메모리가 모자랐습니다({error}). 실행에 드는 메모리를 줄이는 한 가지를 바꿔 "
                          "다시 시작하세요: 그라디언트 체크포인팅 켜기, 배치 절반(누적 두 배), 또는 더 작은 해상도. 프리셋 "
                          "단계의 '메모리에 맞추기'가 카드에 맞게 골라 주고, 문제 해결 단계가 이 실행에 맞는 것을 "
                          "보여 줍니다.{resume}"),
    "run.out_of_memory_resume": (" If another program had taken the card's memory, close it and Continue: the run goes "
                                 "on from its last complete checkpoint, step {step}.",
                                 " 다른 프로그램이 카드 메모리를 차지했던 것이라면 그 프로그램을 닫고 '계속'을 누르세요. "
                                 "마지막으로 온전한 체크포인트인 {step}스텝부터 이어 갑니다."),
    "run.findings_failed": ("the run is trained and saved, but reading it for findings at its end failed ({reason}); "
                            "Troubleshoot diagnoses it again when opened",
                            "학습과 저장은 끝났지만 끝에서 실행을 읽어 진단하다가 실패했습니다({reason}). 문제 해결 단계를 "
                            "열면 다시 진단합니다"),
}
