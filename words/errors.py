"""Errors a user can act on (:class:`trainer.errors.UserError`, ``error.<area>.<what>``): a config, a preset, a
``--set``, a dataset folder, a run folder and training's start. The English is what the CLI prints; keys, file
names and values stay as typed. Models, kohya files and the plan are in ``errors_models``."""

TEXTS: dict[str, tuple[str, str]] = {
    # pieces
    "error.and": ("{first}; {rest}", "{first}; {rest}"),
    "error.either": ("{first} or {rest}", "{first} 또는 {rest}"),
    "error.kind.file": ("a file", "파일"),
    "error.kind.special": ("a device or other special file", "장치 또는 특수 파일"),
    # a config and its validation (trainer/config)
    "error.config.invalid": ("config error: {problems}", "설정 오류: {problems}"),
    "error.config.invalid_in": ("config error in {origin}: {problems}", "{origin}의 설정 오류: {problems}"),
    "error.config.unknown_key": ("unknown key '{key}'; allowed here: {allowed}",
                                 "알 수 없는 키 '{key}'입니다. 여기서 쓸 수 있는 키: {allowed}"),
    "error.config.rule": ("{key}: {reason}", "{key}: {reason}"),
    "error.config.bad_value": ("'{key}' = {value}: {reason}", "'{key}' = {value}: {reason}"),
    "error.config.long_value": ("{head}…{tail} ({n:,} characters)", "{head}…{tail} ({n:,}자)"),
    "error.config.not_found": ("config file not found: {path} (give the path of a .toml file)",
                               "설정 파일을 찾을 수 없습니다: {path} (.toml 파일의 경로를 주세요)"),
    "error.config.bad_toml": ("{path} is not valid TOML: {error}", "{path}: 올바른 TOML이 아닙니다: {error}"),
    "error.config.too_deep": ("{path}: arrays or tables nested too deeply to read; a config is a few flat tables",
                              "{path}: 배열이나 표가 너무 깊이 겹쳐 있어 읽을 수 없습니다. 설정은 평평한 표 몇 개면 됩니다"),
    "error.config.preset_table": ("preset: give a preset's name or the path of its .toml file, not a table",
                                  "preset: 표가 아니라 프리셋 이름이나 그 .toml 파일의 경로를 주세요"),
    "error.set.no_equals": ("--set {item!r}: write it as section.key=value, e.g. --set optim.lr=5e-5",
                            "--set {item!r}: section.key=value 꼴로 쓰세요. 예: --set optim.lr=5e-5"),
    "error.set.empty_key": ("--set {item!r}: the key is empty; write section.key=value",
                            "--set {item!r}: 키가 비어 있습니다. section.key=value 꼴로 쓰세요"),
    "error.set.too_deep": ("--set {key}: the value is nested too deeply to read",
                           "--set {key}: 값이 너무 깊이 겹쳐 있어 읽을 수 없습니다"),
    "error.set.not_a_section": ("--set {item!r}: '{part}' is a value, not a section",
                                "--set {item!r}: '{part}' 자리는 섹션이 아니라 값입니다"),
    # why pydantic refused a value: each English is pydantic's own sentence (lower-cased), checked when used
    "error.input.greater_than": ("input should be greater than {gt}", "{gt}보다 커야 합니다"),
    "error.input.greater_than_equal": ("input should be greater than or equal to {ge}", "{ge} 이상이어야 합니다"),
    "error.input.less_than": ("input should be less than {lt}", "{lt}보다 작아야 합니다"),
    "error.input.less_than_equal": ("input should be less than or equal to {le}", "{le} 이하여야 합니다"),
    "error.input.finite_number": ("input should be a finite number", "유한한 숫자여야 합니다"),
    "error.input.int_type": ("input should be a valid integer", "정수여야 합니다"),
    "error.input.int_parsing": ("input should be a valid integer, unable to parse string as an integer",
                                "정수여야 합니다. 이 글자는 정수로 읽을 수 없습니다"),
    "error.input.int_from_float": ("input should be a valid integer, got a number with a fractional part",
                                   "정수여야 합니다. 소수점 아래가 있는 숫자입니다"),
    "error.input.float_type": ("input should be a valid number", "숫자여야 합니다"),
    "error.input.float_parsing": ("input should be a valid number, unable to parse string as a number",
                                  "숫자여야 합니다. 이 글자는 숫자로 읽을 수 없습니다"),
    "error.input.bool_type": ("input should be a valid boolean", "참/거짓(true/false)이어야 합니다"),
    "error.input.bool_parsing": ("input should be a valid boolean, unable to interpret input",
                                 "참/거짓(true/false)이어야 합니다. 이 값은 해석할 수 없습니다"),
    "error.input.string_type": ("input should be a valid string", "문자열이어야 합니다"),
    "error.input.missing": ("field required", "값이 필요합니다"),
    "error.input.literal_error": ("input should be {expected}", "{expected} 중 하나여야 합니다"),
    "error.input.choices": ("{head} or {last}", "{head}, {last}"),
    "error.input.too_many_steps": ("at most {limit} steps; a larger count is a typo",
                                   "최대 {limit}스텝입니다. 더 큰 수는 잘못 친 것입니다"),
    "error.input.not_text": ("holds a character that cannot be saved as text (a lone surrogate at position {pos}); "
                             "retype it", "텍스트로 저장할 수 없는 문자가 있습니다({pos}번째 자리의 외톨이 서로게이트). "
                             "다시 입력하세요"),
    "error.input.nul_text": ("holds a nul character; retype it", "NUL 문자가 들어 있습니다. 다시 입력하세요"),
    "error.input.too_long": ("is {n} characters long; at most {limit}", "{n}자입니다. 최대 {limit}자까지입니다"),
    "error.input.name_too_long": ("a folder or file name in it is longer than {limit} bytes",
                                  "안의 폴더나 파일 이름이 {limit}바이트보다 깁니다"),
    "error.input.value_error": ("value error, {reason}", "{reason}"),
    # what the config's own validators refuse
    "error.value.caption_ext": ('must start with a dot, like ".txt"', '.txt처럼 점(.)으로 시작해야 합니다'),
    "error.value.file_name": ('must be a plain file name without / \\ : * ? " < > |',
                              '/ \\ : * ? " < > | 가 없는 평범한 파일 이름이어야 합니다'),
    "error.value.fit_order": ("fit_low ({low}) must be below fit_high ({high})",
                              "fit_low({low})는 fit_high({high})보다 작아야 합니다"),
    "error.value.version": ("this app reads config version {version}", "이 앱은 설정 버전 {version}만 읽습니다"),
    "error.value.offload_trained": (
        "model.offload_text_encoders encodes every caption once and moves the text encoders off the device, but "
        "{key} = true trains them, so their embeddings change every step: set {key} = false, or "
        "model.offload_text_encoders = false",
        "model.offload_text_encoders는 캡션마다 한 번만 인코딩하고 텍스트 인코더를 장치에서 내리는데, {key} = true "
        "설정은 인코더를 학습하므로 임베딩이 스텝마다 바뀝니다. {key} = false로 두거나 model.offload_text_encoders = false로 "
        "두세요"),
    "error.value.offload_augmented": (
        "model.offload_text_encoders encodes every caption once, before training, but {key} = {value} makes a new "
        "caption at every step (too many to encode up front): turn {key} off, or set "
        "model.offload_text_encoders = false (caption dropout is fine: it adds only the empty caption)",
        "model.offload_text_encoders는 학습 전에 캡션마다 한 번만 인코딩하는데, {key} = {value} 설정은 스텝마다 새 "
        "캡션을 만듭니다(미리 인코딩하기엔 너무 많음). {key} 설정을 끄거나 model.offload_text_encoders = false로 두세요(캡션 "
        "드롭아웃은 빈 캡션 하나만 더하므로 괜찮습니다)"),
    # presets
    "error.preset.bad_toml": ("preset {path} is not valid TOML: {error}", "프리셋 {path}: 올바른 TOML이 아닙니다: {error}"),
    "error.preset.no_table": ("preset {path} has no [preset] table (version, name_en, name_ko, ...)",
                              "프리셋 {path}에 [preset] 표(version, name_en, name_ko, ...)가 없습니다"),
    "error.preset.missing": ("preset {path}: [preset] is missing {keys}", "프리셋 {path}: [preset]에 없는 키: {keys}"),
    "error.preset.subject": ("preset {path}: [preset] subject is {subject!r}; write one of {known}, or leave it out "
                             "for a character",
                             "프리셋 {path}: [preset]의 subject에 쓸 수 있는 값: {known} (지금 값: {subject!r}). "
                             "캐릭터라면 이 줄을 지워도 됩니다"),
    "error.preset.version": ("preset {path}: version {version!r}; this app reads version {expected}",
                             "프리셋 {path}: 버전이 {version!r}입니다. 이 앱은 버전 {expected}을(를) 읽습니다"),
    "error.preset.unknown": ("unknown preset '{name}'; known presets: {known}",
                             "알 수 없는 프리셋 '{name}'입니다. 있는 프리셋: {known}"),
    "error.preset.unreadable": ("the preset {preset!r} cannot be read for its {key}: {error}",
                                "프리셋 {preset!r}에서 {key} 값을 읽을 수 없습니다: {error}"),
    # dataset folders
    "error.folder.dataset": ("dataset folder", "데이터셋 폴더"),
    "error.folder.prior": ("prior-image folder", "사전 보존 그림 폴더"),
    "error.folder.validation": ("validation folder", "검증 그림 폴더"),
    # {what} is always a "… 폴더" (error.folder.dataset / prior / validation): 가 and 를 fit it
    "error.folder.unset": ("no {what} set; set {key} to the folder with your pictures",
                           "{what}가 정해지지 않았습니다. {key}에 그림이 든 폴더를 지정하세요"),
    "error.folder.not_found": ("{what} not found: {root} ({key}; check the path, or create it and add pictures)",
                               "{what}를 찾을 수 없습니다: {root} ({key}. 경로를 확인하거나, 폴더를 만들고 그림을 넣으세요)"),
    "error.folder.is_file": ("{key} is a file, not a folder: {root} (give the folder that holds the pictures)",
                             "{key}: 폴더가 아니라 파일입니다: {root} (그림이 든 폴더를 주세요)"),
    "error.folder.unreadable": ("cannot read {what} {root}: {reason}", "{what}를 읽을 수 없습니다: {root}: {reason}"),
    "error.scan.no_images": ("no images (png, jpg, webp, bmp, gif) in {root}{unreadable}{skipped}; put the training "
                             "pictures there, in N_name subfolders or directly in the folder",
                             "{root}에 그림(png, jpg, webp, bmp, gif)이 없습니다{unreadable}{skipped}. 학습할 그림을 그 "
                             "폴더에 N_이름 하위 폴더로 나누어 넣거나 바로 넣으세요"),
    "error.scan.unreadable_formats": (" ({n} files in formats it cannot read; convert them)",
                                      " (읽을 수 없는 형식의 파일 {n}개. 변환하세요)"),
    "error.scan.zero_folders": (" (folders named 0_... are skipped; rename them to 1_...)",
                                " (0_...로 시작하는 폴더는 건너뜁니다. 1_...로 이름을 바꾸세요)"),
    "error.scan.no_folder": ("no dataset folder given; set dataset.path to the folder with your pictures",
                             "데이터셋 폴더가 없습니다. dataset.path에 그림이 든 폴더를 지정하세요"),
    "error.holdout.too_many": ("validation.holdout = {count}, but the dataset has {n} pictures of its own; hold back "
                               "fewer (one in ten is usual), or give validation.path a folder of other pictures",
                               "validation.holdout = {count}인데 데이터셋 자체 그림은 {n}장뿐입니다. 더 적게 떼어 두거나"
                               "(보통 열 장에 한 장), validation.path에 다른 그림 폴더를 주세요"),
    "error.latents.not_finite": ("{rel}: the VAE turns this picture into NaN/Inf latents even in fp32; check the file "
                                 "(re-save it as an 8-bit RGB PNG) or leave it out",
                                 "{rel}: VAE가 fp32에서도 이 그림을 NaN/Inf 잠재값으로 바꿉니다. 파일을 확인하거나"
                                 "(8비트 RGB PNG로 다시 저장) 빼세요"),
    # the command line
    "error.cli.check_dataset": ("check-dataset {option}: {reason}", "check-dataset {option}: {reason}"),
    "error.cli.output_unusable": ("save.output_dir: {path} cannot be used ({reason})",
                                  "save.output_dir: 쓸 수 없습니다: {path} ({reason})"),
    "error.cli.output_not_folder": ("save.output_dir: {path} is {what}, not a folder; give the folder that holds the runs",
                                    "save.output_dir: {path}: 폴더가 아니라 {what}입니다. 실행들을 담을 폴더를 주세요"),
    "error.cli.out_is_folder": ("-o {out} is a folder; give the path of the config .toml to write",
                                "-o {out}: 폴더입니다. 저장할 설정 .toml 파일의 경로를 주세요"),
    # run folders and training's start
    "error.run.not_a_run": ("{run_dir} is not a run folder (no config.toml)",
                            "{run_dir}: 실행 폴더가 아닙니다(config.toml 없음)"),
    "error.run.not_its_lora": ("{checkpoint}: not a LoRA file of this run; pick one of its checkpoints",
                               "{checkpoint}: 이 실행의 LoRA 파일이 아닙니다. 이 실행의 체크포인트 중에서 고르세요"),
    "error.run.not_continuable": ("{root}: only a paused, stopped, interrupted or failed run can be continued (this "
                                  "one is {status}); a finished run, or one the numerics guard stopped, goes on as a "
                                  "new run",
                                  "{root}: 일시 정지했거나 멈췄거나 중단됐거나 실패한 실행만 이어서 할 수 있습니다(이 "
                                  "실행의 상태: {status}). 끝난 실행이나 수치 가드가 멈춘 실행은 새 실행으로 다시 "
                                  "시작하세요"),
    "error.run.no_checkpoint": ("{root}: it stopped before its first complete checkpoint, so there is nothing to "
                                "continue from; start it again",
                                "{root}: 첫 온전한 체크포인트가 저장되기 전에 멈춰서 이어 갈 곳이 없습니다. 다시 "
                                "시작하세요"),
    "error.measure.no_checkpoint": ("{root}: no complete checkpoint to measure; the measures read the saves' weights",
                                    "{root}: 측정할 완전한 체크포인트가 없습니다. 측정은 저장된 가중치를 읽습니다"),
    "error.measure.out_of_memory": ("measuring step {step} ran out of {device}'s memory even one picture at a time "
                                    "({error}); nothing was written. Close what else uses it (a run training on it, "
                                    "another program) and measure again, or measure on the CPU: --device cpu "
                                    "(slower, and nothing else needs to stop)",
                                    "{step}스텝을 재다가 그림을 한 장씩 넣어도 {device} 메모리가 모자랐습니다({error}). "
                                    "아무것도 쓰지 않았습니다. 그 장치를 쓰는 다른 작업(학습 중인 실행, 다른 "
                                    "프로그램)을 닫고 다시 재거나, CPU에서 재세요: --device cpu(느리지만 다른 작업을 "
                                    "멈추지 않아도 됨)"),
    "error.resume.not_a_run": ("--resume {resume}: not a run folder (no config.toml)",
                               "--resume {resume}: 실행 폴더가 아닙니다(config.toml 없음)"),
    "error.resume.running": ("--resume {resume}: this run is still training (process {pid}); stop it first, or wait "
                             "for it to finish", "--resume {resume}: 이 실행은 아직 학습 중입니다(프로세스 {pid}). 먼저 "
                             "멈추거나 끝날 때까지 기다리세요"),
    "error.resume.no_checkpoint": ("--resume {root}: it has no checkpoint to resume from",
                                   "--resume {root}: 이어서 학습할 체크포인트가 없습니다"),
    "error.resume.world_size": ("--resume {root}: {checkpoint} was trained by {saved} process(es); resume it with "
                                "{saved} (torchrun --nproc_per_node {saved}), not {now}",
                                "--resume {root}: 체크포인트 {checkpoint}: 프로세스 {saved}개로 학습했습니다. {now}개가 아니라 "
                                "{saved}개로 이어서 학습하세요(torchrun --nproc_per_node {saved})"),
    "error.train.no_dataset": ("dataset.path is empty: give the folder of training images",
                               "dataset.path가 비어 있습니다. 학습할 그림 폴더를 주세요"),
    "error.train.no_usable": ("dataset.path {path}: no usable images (run check-dataset for details)",
                              "dataset.path {path}: 쓸 수 있는 그림이 없습니다(자세한 내용은 check-dataset으로 확인하세요)"),
    "error.train.distilled": ("model.base {base!r} looks distilled ({reason}); LoRA training undoes distillation and "
                              "blurs the pictures. Train on the original model, or set model.allow_distilled = true to "
                              "try anyway", "model.base {base!r}: 증류된 모델로 보입니다({reason}). LoRA 학습은 "
                              "증류를 되돌려 그림이 흐려집니다. 원래 모델로 학습하거나, 그래도 해 보려면 "
                              "model.allow_distilled = true로 하세요"),
    "error.validation.scan": ("validation.path {path}: {reason}", "validation.path {path}: {reason}"),
    "error.judge.load": ("measure.judge {name}: the picture judge could not be loaded ({reason}). Give a local folder "
                         "or hub id of a CLIP or SigLIP model, or leave measure.judge empty",
                         "measure.judge {name}: 그림 판정 모델을 불러오지 못했습니다 ({reason}). CLIP이나 SigLIP 모델의 "
                         "로컬 폴더나 허브 id를 주거나 measure.judge를 비워 두세요"),
    "error.judge.read": ("measure.judge {name}: the picture judge failed while reading the pictures ({reason}). Choose "
                         "another CLIP or SigLIP model, or none",
                         "measure.judge {name}: 그림 판정 모델이 그림을 읽다가 실패했습니다 ({reason}). 다른 CLIP이나 "
                         "SigLIP 모델을 고르거나 비워 두세요"),
    "error.judge.not_kept": ("{problem}. It was not kept: the run is read as before",
                             "{problem}. 이 판정 모델은 남기지 않았고, 실행은 전처럼 읽습니다"),
    "error.judge.kind": ("measure.judge {name} is a {kind}, not a CLIP or SigLIP model (it has no image and text "
                         "features)",
                         "measure.judge {name}: {kind} 모델이라 CLIP이나 SigLIP 모델이 아닙니다 (그림·글 특징이 없음)"),
    "error.judge.missing": ("measure.judge {name}: no such folder, and not a hub id (org/name). Give the folder of a "
                            "CLIP or SigLIP model (the one holding config.json), its hub id, or leave it empty",
                            "measure.judge {name}: 그런 폴더가 없고 허브 id(org/name)도 아닙니다. CLIP이나 SigLIP "
                            "모델의 폴더(config.json이 있는 곳)나 허브 id를 주거나 비워 두세요"),
    "error.judge.no_config": ("measure.judge {name}: no readable config.json there, so it is not a model folder. Give "
                              "the folder that holds the CLIP or SigLIP model's config.json, or leave it empty",
                              "measure.judge {name}: 읽을 수 있는 config.json이 없어 모델 폴더가 아닙니다. CLIP이나 "
                              "SigLIP 모델의 config.json이 있는 폴더를 주거나 비워 두세요"),
    "error.judge.no_processor": ("measure.judge {name}: the model has no processor config (preprocessor_config.json "
                                 "or processor_config.json) beside it; save the whole model folder, processor "
                                 "included, or give its hub id",
                                 "measure.judge {name}: 모델 옆에 프로세서 설정(preprocessor_config.json이나 "
                                 "processor_config.json)이 없습니다. 프로세서까지 모델 폴더 전체를 저장하거나 허브 "
                                 "id를 주세요"),
    "error.judge.no_weights": ("measure.judge {name}: the folder has the model's config but no weights "
                               "(model.safetensors or pytorch_model.bin); copy the whole model folder",
                               "measure.judge {name}: 모델 설정은 있지만 가중치(model.safetensors나 "
                               "pytorch_model.bin)가 없습니다. 모델 폴더 전체를 복사하세요"),
    "error.judge.not_cached": ("measure.judge {name}: this hub id is not on this computer and the hub is off "
                               "(HF_HUB_OFFLINE). Download it once while online, give a local folder, or leave "
                               "measure.judge empty",
                               "measure.judge {name}: 이 허브 id가 이 컴퓨터에 없고 허브 연결이 꺼져 있습니다"
                               "(HF_HUB_OFFLINE). 온라인일 때 한 번 내려받거나 로컬 폴더를 주거나 measure.judge를 "
                               "비워 두세요"),
    "error.validation.no_usable": ("validation.path {path}: no usable pictures (run check-dataset on it for details), "
                                   "or leave it empty", "validation.path {path}: 쓸 수 있는 그림이 없습니다(자세한 "
                                   "내용은 그 폴더에 check-dataset을 실행해 보세요). 아니면 비워 두세요"),
    "error.optim.import": ("optim.optimizer = {name!r} needs {needs}, which failed to import: {error}",
                           "optim.optimizer = {name!r}: 필요한 패키지를 불러오지 못했습니다({needs}): {error}"),
}  # fmt: skip
