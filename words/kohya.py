"""The words of a kohya import or export (:mod:`trainer.kohya`): the report's headings, why a value changed or was
not carried over, and where kohya's step count and ours part. The mapping table's notes are in ``kohya_table``."""

from __future__ import annotations

TEXTS: dict[str, tuple[str, str]] = {
    # the report
    "kohya.kind.mapped": ("Carried over", "옮긴 설정"),
    "kohya.kind.changed": ("Changed on purpose", "일부러 바꾼 값"),
    "kohya.kind.unsupported": ("Not carried over (what we do instead)", "옮기지 않은 설정(대신 하는 일)"),
    "kohya.kind.unknown": ("Not recognised", "알 수 없는 키"),
    "kohya.report.idle": ("left at an idle value: {keys}", "꺼진 값 그대로: {keys}"),
    "kohya.report.idle_value": ("idle value", "꺼진 값"),
    "kohya.report.defaulted": ("sd-scripts defaults used for keys the file leaves out: {keys}",
                               "파일에 없어 sd-scripts 기본값을 쓴 키: {keys}"),
    "kohya.report.steps": ("Step count: kohya {kohya}, LoRA Doctor {ours} ({verdict})",
                           "스텝 수: kohya {kohya}, LoRA Doctor {ours} ({verdict})"),
    "kohya.report.same": ("the same", "같음"),
    "kohya.report.different": ("different", "다름"),
    "kohya.report.written": ("written: {path}", "저장함: {path}"),
    "kohya.unknown": ("not recognised", "알 수 없음"),
    "kohya.not_offered": ("not offered", "없는 설정"),
    "kohya.off": ("off", "꺼짐"),
    # values a converter changed
    "kohya.changed.square_area": ("ours trains a square area: {w}×{h} has about the area of {side}×{side}; buckets "
                                  "still keep each picture's shape",
                                  "우리는 정사각형 면적으로 학습함: {w}×{h}의 면적은 약 {side}×{side}. 버킷이 그림의 모양은 "
                                  "그대로 지킴"),
    "kohya.changed.optimizer_kin": ("{name} is not offered; {ours} is its closest relative (same update, or "
                                    "Prodigy, the successor of D-Adaptation: lr stays a multiplier near 1)",
                                    "{name}: 없음. 가장 가까운 {ours}로 바꿈(같은 갱신 규칙이거나, D-Adaptation의 "
                                    "후속인 Prodigy: lr은 1 근처의 배율)"),
    "kohya.changed.optimizer_adamw": ("{name} is not offered; AdamW instead. Its lr was chosen for {name}: check the "
                                      "dose on the Steps page",
                                      "{name}: 없어 AdamW로 바꿈. lr은 {name}에 맞춘 값이므로 스텝 화면의 학습량을 "
                                      "확인하세요"),
    "kohya.changed.scheduler": ("the {name} schedule is not offered; {ours} is the closest",
                                "{name} 스케줄은 없어 가장 가까운 {ours}로 바꿈"),
    "kohya.changed.te_cache": ("the text encoders' outputs cannot be encoded once while {keys} stays on (a trained "
                               "text encoder, or captions that change every step): ours encodes them every step",
                               "{keys} 설정이 켜져 있으면(학습하는 텍스트 인코더, 또는 스텝마다 바뀌는 캡션) 텍스트 "
                               "인코더 출력을 한 번만 인코딩할 수 없음: 우리는 스텝마다 인코딩함"),
    "kohya.changed.seed": ("kohya draws a random seed when none is set; ours fixes 42 so a run can be repeated",
                           "kohya는 시드가 없으면 무작위로 뽑음. 우리는 실행을 되풀이할 수 있게 42로 고정"),
    # the dataset
    "kohya.dataset_config.missing": ("the file is not there; the folders were read instead",
                                     "파일이 없어 폴더를 대신 읽음"),
    "kohya.dataset_config.not_read": ("not read: files a config names are not opened while the app is shared; "
                                      "upload it too",
                                      "읽지 않음: 앱이 공유 중일 때는 설정이 가리키는 파일을 열지 않음. 함께 올리세요"),
    "kohya.dataset.folders_ignored": ("sd-scripts ignores it when a dataset config is given",
                                      "데이터셋 설정이 있으면 sd-scripts는 이것을 무시함"),
    "kohya.dataset.one_dataset": ("ours trains one dataset; only the first was read",
                                  "우리는 데이터셋 하나만 학습. 첫 번째만 읽음"),
    "kohya.dataset.subsets_differ": ("the subsets differ; ours has one value: the first was taken",
                                     "subset마다 값이 다름. 우리는 값이 하나라 첫 번째를 씀"),
    "kohya.dataset.parent": ("ours reads one folder of N_name folders: their parent",
                             "우리는 N_이름 폴더들을 담은 폴더 하나를 읽음: 그 상위 폴더"),
    "kohya.dataset.outside": ("not in {parent}; move it there to train it", "{parent} 안에 없음. 학습하려면 그 안으로 옮기세요"),
    "kohya.dataset.name_repeats": ("ours reads repeats from the folder name; rename it {repeats}_{name}",
                                   "우리는 폴더 이름에서 반복 수를 읽음. 이름을 바꾸세요: {repeats}_{name}"),
    "kohya.dataset.other_repeats": ("ours reads {head} repeats from the folder name; rename it {repeats}_{words} to "
                                    "train it as often as kohya",
                                    "우리는 폴더 이름에서 반복 수를 읽음({head}). kohya만큼 학습하려면 이름을 바꾸세요: "
                                    "{repeats}_{words}"),
    "kohya.dataset.class_tokens": ("ours captions caption-less pictures with the folder's words ({words!r})",
                                   "우리는 캡션 없는 그림에 폴더 이름의 단어({words!r})를 씀"),
    "kohya.dataset.trigger": ("kohya has no trigger setting; the first class word is the likeliest trigger",
                              "kohya에는 트리거 설정이 없음. 첫 클래스 단어가 트리거일 가능성이 가장 큼"),
    # the network
    "kohya.network.lora_type": ("{kind} is not offered; ours trains LoRA (LoCon with lora.conv_rank)",
                                "{kind}: 없음. 우리는 LoRA(lora.conv_rank로 LoCon)를 학습"),
    "kohya.network.module": ("ours trains LoRA (and LoCon)", "우리는 LoRA(와 LoCon)를 학습"),
    "kohya.network.family_no_conv": ("{family} has no convolutions to put LoRA on", "{family}에는 LoRA를 달 합성곱이 없음"),
    "kohya.network.no_conv": ("kohya_ss trains no convolutions for this LoRA_type; neither do we",
                              "이 LoRA_type에서는 kohya_ss도 합성곱을 학습하지 않음. 우리도 마찬가지"),
    # training
    "kohya.noise_offset_type": ("read only with noise_offset_type Original (here {kind})",
                                "noise_offset_type이 Original일 때만 읽음(여기서는 {kind})"),
    "kohya.optimizer_args.always_on": ("ours always turns it on for Prodigy", "우리는 Prodigy에서 항상 켬"),
    "kohya.optimizer_args.default": ("not offered; ours uses the optimizer's default", "없는 설정. 옵티마이저 기본값을 씀"),
    "kohya.precision.bf16": ("this device has bf16: the same speed, the range of fp32, no loss scaler and no overflow",
                             "이 장치는 bf16 지원: 속도는 같고 fp32의 범위라 손실 스케일러도 오버플로도 없음"),
    "kohya.epochs.win": ("max_train_epochs wins, as in sd-scripts", "sd-scripts처럼 max_train_epochs가 우선"),
    "kohya.epochs.steps_zero": ("0: epochs decide", "0: 에폭이 정함"),
    "kohya.epochs.empty": ("empty: epoch decides", "빈칸: epoch가 정함"),
    "kohya.epochs.cycles": ("empty: kohya_ss passes the epochs", "빈칸: kohya_ss는 에폭 수를 넘김"),
    "kohya.prompts.no_file": ("a .txt prompt file is read; this one is not there or not .txt",
                              ".txt 프롬프트 파일만 읽음. 이 파일은 없거나 .txt가 아님"),
    "kohya.prompts.lines_differ": ("ours samples every prompt with one value; the lines differ",
                                   "우리는 모든 프롬프트에 한 값을 씀. 줄마다 다름"),
    "kohya.prompts.size": ("ours samples at the training resolution", "우리는 학습 해상도로 샘플을 그림"),
    # settings counted in epochs or as a share of kohya's steps
    "kohya.every.epochs": ("{n} epochs × {per_epoch} steps per epoch (kohya's count)",
                           "{n} 에폭 × 에폭당 {per_epoch} 스텝(kohya의 계산)"),
    "kohya.every.no_count": ("needs the dataset folders to count steps per epoch; ours saves at the end only",
                             "에폭당 스텝을 세려면 데이터셋 폴더가 필요. 끝에만 저장함"),
    "kohya.warmup.steps_win": ("lr_warmup_steps wins, as in kohya_ss", "kohya_ss처럼 lr_warmup_steps가 우선"),
    "kohya.warmup.percent_decides": ("0: lr_warmup (a percentage) decides", "0: lr_warmup(백분율)이 정함"),
    "kohya.warmup.share": ("{share:.0%} of kohya's {total} steps", "kohya의 {total} 스텝 중 {share:.0%}"),
    "kohya.warmup.no_count": ("a share of the total steps; kohya's total needs the dataset folders, so warmup is 0",
                              "전체 스텝의 비율. kohya의 전체 스텝을 세려면 데이터셋 폴더가 필요해 0으로 둠"),
    # the step count against ours
    "kohya.steps.unplanned": ("kohya's count: {formula}; ours could not be planned: {error}",
                              "kohya의 계산: {formula}. 우리 계획은 만들 수 없음: {error}"),
    "kohya.steps.unexplained": ("the counts differ though the pictures, repeats and buckets agree",
                                "그림, 반복, 버킷이 같은데도 스텝 수가 다름"),
    "kohya.steps.kohya_only": ("{rel}: kohya trains it, ours skips it ({why})", "{rel}: kohya는 학습, 우리는 건너뜀({why})"),
    "kohya.steps.not_scanned": ("not a picture our scan reads", "우리 검사가 읽지 않는 파일"),
    "kohya.steps.ours_only": ("{rel}: ours trains it ×{repeats}, kohya does not read it ({where})",
                              "{rel}: 우리는 ×{repeats} 학습, kohya는 읽지 않음({where})"),
    "kohya.steps.in_root": ("it lies in the dataset folder itself", "데이터셋 폴더 바로 아래에 있음"),
    "kohya.steps.no_prefix": ("its folder has no N_ repeats prefix", "폴더 이름에 N_ 반복 접두어가 없음"),
    "kohya.steps.not_globbed": ("it is in a nested folder or a format sd-scripts does not glob",
                                "하위 폴더 안이거나 sd-scripts가 찾지 않는 형식"),
    "kohya.steps.reg": ("prior images (sd-scripts' regularisation pictures): sd-scripts repeats them to match the {train} training "
                        "picture-repeats ({kohya}); ours uses their folders' repeats ({ours}). Name the reg folders' "
                        "repeats so they add up to the dataset's to match",
                        "사전 보존 그림(sd-scripts의 정규화 그림): sd-scripts는 학습 그림-반복 {train}에 맞춰 늘림({kohya}). 우리는 폴더의 반복 수를 "
                        "씀({ours}). 맞추려면 reg 폴더 반복 수의 합을 데이터셋과 같게 지으세요"),
    "kohya.steps.buckets": ("buckets: sd-scripts makes {kohya} batches an epoch, ours {ours}: the two choose a "
                            "picture's bucket by slightly different rules",
                            "버킷: 에폭당 배치가 sd-scripts {kohya}개, 우리 {ours}개. 그림의 버킷을 고르는 규칙이 조금 다름"),
    "kohya.steps.gui": ("the kohya_ss GUI counts steps without buckets (every bucket's last batch may be partial) and "
                        "stops sd-scripts at {total}; ours trains whole epochs: {per_epoch} steps × {epochs} epochs. "
                        "Set train.max_steps = {total} to stop where kohya does",
                        "kohya_ss GUI는 버킷 없이 스텝을 세고(버킷마다 마지막 배치가 덜 찰 수 있음) {total}에서 멈춤. "
                        "우리는 에폭 전체를 학습: {per_epoch} 스텝 × {epochs} 에폭. kohya와 같은 곳에서 멈추려면 "
                        "train.max_steps = {total}"),
    # the export: our settings sd-scripts has no place for
    "kohya.export.script": ("{script}", "{script}"),
    "kohya.export.max_steps": ("max_steps decides the length", "max_steps가 길이를 정함"),
    "kohya.export.te_cache_script": ("sd-scripts' {script} cannot cache the text encoders' outputs (its SDXL, "
                                     "SD3.5 and Flux.1 scripts can): it runs them every step",
                                     "sd-scripts의 {script} 스크립트는 텍스트 인코더 출력을 캐시할 수 없음(SDXL, SD3.5, "
                                     "Flux.1 스크립트는 가능): 스텝마다 인코더를 돌림"),
    "kohya.export.te_cache_dropout": ("not cached: sd-scripts cannot cache the text encoders' outputs with caption "
                                      "dropout (ours encodes the empty caption as one more)",
                                      "캐시하지 않음: sd-scripts는 캡션 드롭아웃이 있으면 텍스트 인코더 출력을 캐시할 수 "
                                      "없음(우리는 빈 캡션을 하나 더 인코딩함)"),
    "kohya.export.no_setting": ("sd-scripts has no such setting", "sd-scripts에는 없는 설정"),
    "kohya.export.no_folder": ("the folder is not here, so its N_name folders could not be listed",
                               "폴더가 없어 N_이름 폴더를 나열할 수 없음"),
    "kohya.export.nested": ("sd-scripts reads no nested folders; ours does: move their pictures up",
                            "sd-scripts는 하위 폴더를 읽지 않음(우리는 읽음). 그림을 위로 옮기세요"),
    "kohya.export.reg": ("sd-scripts repeats regularisation pictures (our prior images) until they match the dataset's count; ours uses "
                         "their folders' repeats",
                         "sd-scripts는 정규화 그림(우리의 사전 보존 그림)을 데이터셋 수만큼 늘림. 우리는 폴더의 반복 수를 씀"),
    "kohya.ours.version": ("our config's format version", "우리 설정 형식의 버전"),
    "kohya.ours.preset": ("the preset these values started from", "이 값들의 출발점이 된 프리셋"),
    "kohya.ours.family": ("sd-scripts: the script (train_network.py, sdxl_train_network.py, sd3_train_network.py "
                          "or flux_train_network.py)",
                          "sd-scripts: 스크립트 이름으로(train_network.py, sdxl_train_network.py, sd3_train_network.py, "
                          "flux_train_network.py)"),
    "kohya.ours.allow_distilled": ("sd-scripts does not check the base", "sd-scripts는 기반 모델을 검사하지 않음"),
    "kohya.ours.trigger": ("in the sample prompts ({placeholder} filled in) and the folder names",
                           "샘플 프롬프트({placeholder} 채움)와 폴더 이름에"),
    "kohya.ours.repeats": ("num_repeats of folders without an N_ prefix", "N_ 접두어 없는 폴더의 num_repeats로"),
    "kohya.ours.targets": ("sd-scripts' networks.lora trains attention and feed-forward layers (our attn_ff)",
                           "sd-scripts의 networks.lora는 어텐션과 피드포워드 층을 학습(우리 attn_ff)"),
    "kohya.ours.unmasked_weight": ("sd-scripts' masked loss counts nothing outside the mask (our 0)",
                                   "sd-scripts의 마스크 손실은 마스크 밖을 전혀 세지 않음(우리의 0)"),
    "kohya.ours.conv_blocks": ("sd-scripts puts convolution LoRA on every block", "sd-scripts는 모든 블록에 합성곱 LoRA를 닮"),
    "kohya.ours.not_in_train_network": ("not offered by train_network.py", "train_network.py에는 없음"),
    "kohya.ours.optimizer_args": ("in optimizer_args", "optimizer_args에"),
    "kohya.ours.keep_last": ("sd-scripts: save_last_n_steps keeps the saves of the last N steps",
                             "sd-scripts: save_last_n_steps"),
    "kohya.ours.prompt_flag": ("{flag} on each prompt line", "프롬프트 줄마다 {flag}"),
    "kohya.ours.sample_enabled": ("sd-scripts samples only when sample_prompts is given",
                                  "sd-scripts는 sample_prompts가 있을 때만 샘플"),
    "kohya.section.ema": ("EMA of the LoRA weights is not offered by train_network.py",
                          "train_network.py에는 LoRA 가중치 EMA가 없음"),
    "kohya.section.guard": ("our numerics guard; sd-scripts trains on through a NaN",
                            "우리 수치 가드. sd-scripts는 NaN이 나도 계속 학습"),
    "kohya.section.dose": ("our dose zone (a reading, not a setting)", "우리 학습량 범위(설정이 아니라 판단 기준)"),
    "kohya.section.train": ("runtime choice of ours; sd-scripts decides it itself", "우리 실행 선택. sd-scripts는 스스로 정함"),
}
