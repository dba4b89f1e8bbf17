"""Errors a user can act on, continued (see ``errors``): the base model and its parts, a kohya file, the plan,
and a strength sweep."""

TEXTS: dict[str, tuple[str, str]] = {
    # the base model
    "error.base.unusable": ("model.base: {base!r} cannot be used ({reason})", "model.base: {base!r}: 쓸 수 없습니다({reason})"),
    "error.base.not_checkpoint": ("model.base: {path} is a file but not a .safetensors/.ckpt checkpoint",
                                  "model.base: {path}: 파일이지만 .safetensors/.ckpt 체크포인트가 아닙니다"),
    "error.base.special": ("model.base: {path} is {what}, not a model folder or checkpoint file; give a diffusers "
                           "folder or a .safetensors file", "model.base: {path}: 모델 폴더나 체크포인트 파일이 아니라 "
                           "{what}입니다. diffusers 폴더나 .safetensors 파일을 주세요"),
    "error.base.char_device": ("a character device", "문자 장치"),
    "error.base.block_device": ("a block device", "블록 장치"),
    "error.base.fifo": ("a named pipe", "이름 있는 파이프"),
    "error.base.socket": ("a socket", "소켓"),
    "error.base.other": ("neither a folder nor a file", "폴더도 파일도 아닌 것"),
    "error.base.missing": ("model.base: {path} does not exist; give a local folder, a .safetensors file or a hub id",
                           "model.base: 없는 경로입니다: {path}. 로컬 폴더, .safetensors 파일 또는 허브 id를 주세요"),
    "error.base.unknown": ("model.base: {base!r} is not a built-in model ({builtins}), an existing folder or file, or a "
                           "hub id like 'owner/name'", "model.base: {base!r}: 내장 모델({builtins})도, 있는 폴더나 "
                           "파일도, 'owner/name' 같은 허브 id도 아닙니다"),
    "error.base.hub_offline": ("model.base: could not load hub model {base!r} ({error}). This machine may be offline or "
                               "the id may be wrong; download the model once and give its local folder or .safetensors "
                               "file instead", "model.base: 허브 모델 {base!r}: 불러오지 못했습니다({error}). 이 "
                               "컴퓨터가 오프라인이거나 id가 틀렸을 수 있습니다. 모델을 한 번 내려받은 뒤 그 로컬 폴더나 "
                               ".safetensors 파일을 주세요"),
    "error.base.demo_missing": ("model.base: the demo base model is missing from {folder}; restore it from git",
                                "model.base: 데모 기본 모델이 {folder}에 없습니다. git에서 되살리세요"),
    "error.base.no_index": ("model.base: {folder} has no model_index.json; give a diffusers model folder",
                            "model.base: {folder}에 model_index.json이 없습니다. diffusers 모델 폴더를 주세요"),
    "error.base.no_index_for_memory": ("model.base: {folder} has no readable model_index.json to estimate memory from",
                                       "model.base: {folder}에 메모리를 추정할 때 읽을 model_index.json이 없습니다"),
    "error.base.folder_failed": ("model.base: could not load the diffusers folder {folder}: {error}",
                                 "model.base: diffusers 폴더를 불러오지 못했습니다: {folder}: {error}"),
    "error.base.checkpoint_failed": ("model.base: could not load the checkpoint {path} as {family} with the configs in "
                                     "{config_dir}: {error}", "model.base: 체크포인트 {path}: {config_dir}의 "
                                     "설정으로 {family} 모델로 불러오지 못했습니다: {error}"),
    "error.family.unknown": ("model.family: unknown family {name!r}; use {choices}",
                             "model.family: 알 수 없는 계열 {name!r}입니다. 다음 중에서 쓰세요: {choices}"),
    "error.device.no_cuda": ("train.device = 'cuda' but no CUDA GPU is visible to torch; use 'auto' or 'cpu'",
                             "train.device = 'cuda'인데 torch에 보이는 CUDA GPU가 없습니다. 'auto'나 'cpu'를 쓰세요"),
    "error.tokenizer.package": ("the offline CLIP tokenizer needs the 'open-clip-torch' package (data only); run the "
                                "set-up script again, or: pip install --no-deps open-clip-torch",
                                "오프라인 CLIP 토크나이저에는 'open-clip-torch' 패키지(데이터만)가 필요합니다. 설치 "
                                "스크립트를 다시 실행하거나 pip install --no-deps open-clip-torch를 실행하세요"),
    "error.tokenizer.vocab": ("{path} is missing; reinstall open-clip-torch (pip install --no-deps open-clip-torch)",
                              "없는 파일입니다: {path}. open-clip-torch를 다시 설치하세요(pip install --no-deps "
                              "open-clip-torch)"),
    "error.lora.no_resnet": ("lora.conv_blocks: this UNet has no resnet under {block!r}; its blocks with resnets are "
                             "{names}", "lora.conv_blocks: 이 UNet에는 {block!r} 아래에 resnet이 없습니다. resnet이 있는 "
                             "블록: {names}"),
    "error.tiny.no_single_file": ("--single-file: writing a {family} pipeline as one original-layout file is not "
                                  "supported; leave --single-file out to write a diffusers folder",
                                  "--single-file: {family} 파이프라인을 원래 형식의 파일 하나로 쓰는 기능은 없습니다. "
                                  "--single-file 없이 diffusers 폴더로 쓰세요"),
    "error.lora.no_conv": ("lora.conv_rank: {family}'s denoiser has no convolutions to put LoRA on; set "
                           "lora.conv_rank = 0", "lora.conv_rank: {family}의 디노이저에는 LoRA를 달 합성곱이 없습니다. "
                           "lora.conv_rank = 0으로 두세요"),
    "error.lora.no_block": ("lora.conv_blocks: this UNet has no block {entry!r}; its blocks are {blocks}",
                            "lora.conv_blocks: 이 UNet에는 {entry!r} 블록이 없습니다. 있는 블록: {blocks}"),
    "error.trigger.no_tokens": ("dataset.trigger {trigger!r}: the tokenizer makes no tokens of it; use a word",
                                "dataset.trigger {trigger!r}: 토크나이저가 이것으로 토큰을 하나도 만들지 못합니다. 단어를 쓰세요"),
    "error.trigger.needed": ("lora.trigger_embedding needs dataset.trigger: the word whose embedding is trained",
                             "lora.trigger_embedding에는 dataset.trigger(임베딩을 학습할 단어)가 필요합니다"),
    "error.trigger.not_embedding": ("{path}: not a trigger embedding (expected {expected})",
                                    "{path}: 트리거 임베딩이 아닙니다(있어야 할 키: {expected})"),
    # the plan
    "error.plan.no_usable": ("no usable pictures in {root}; fix the problems the dataset check lists first",
                             "{root}에 쓸 수 있는 그림이 없습니다. 먼저 데이터셋 검사가 알려 준 문제를 고치세요"),
    "error.plan.too_many_steps": ("this plan makes {total:,} steps, more than the {limit:,} a run may have: lower "
                                  "train.epochs or the repeats, or set train.max_steps",
                                  "이 계획은 {total:,}스텝이라 한 실행의 한도 {limit:,}스텝보다 많습니다. train.epochs나 "
                                  "반복 횟수를 줄이거나 train.max_steps를 정하세요"),
    "error.memory.budget": ("the memory budget must be a positive number of bytes; got {budget}",
                            "메모리 예산은 0보다 큰 바이트 수여야 합니다. 받은 값: {budget}"),
    "error.memory.fit_size": ("--fit-memory {text!r}: give bytes, or a size like 8GiB or 12G",
                              "--fit-memory {text!r}: 바이트 수나 8GiB, 12G 같은 크기를 주세요"),
    "error.review.load": ("{name}: could not load it onto the base model ({reason})",
                          "{name}: 기본 모델에 불러올 수 없습니다({reason})"),
    # a kohya file (import and export)
    "error.kohya.not_found": ("kohya config not found: {path}", "kohya 설정 파일을 찾을 수 없습니다: {path}"),
    "error.kohya.not_text": ("{path} is not a text file (not UTF-8); give the .json kohya_ss saves or an sd-scripts "
                             ".toml", "{path}: 텍스트 파일이 아닙니다(UTF-8 아님). kohya_ss가 저장한 .json이나 "
                             "sd-scripts .toml을 주세요"),
    "error.kohya.bad_json": ("{path} is not valid JSON (line {line}: {reason}); the file may be cut short",
                             "{path}: 올바른 JSON이 아닙니다({line}번째 줄: {reason}). 파일이 잘렸을 수 있습니다"),
    "error.kohya.bad_toml": ("{path} is not valid TOML ({reason}); the file may be cut short",
                             "{path}: 올바른 TOML이 아닙니다({reason}). 파일이 잘렸을 수 있습니다"),
    "error.kohya.not_a_table": ("{path}: a kohya config is one table of settings; this file holds a {kind}",
                                "{path}: kohya 설정은 설정들을 담은 표 하나인데, 이 파일에 든 것은 {kind}입니다"),
    "error.kohya.comfyui": ("{path} is a ComfyUI workflow, not a kohya_ss or sd-scripts training config",
                            "{path}: kohya_ss나 sd-scripts 학습 설정이 아니라 ComfyUI 워크플로입니다"),
    "error.kohya.dataset_as_file": ("{path} is an sd-scripts dataset config; give it with --dataset-config and the "
                                    "training config (or kohya_ss .json) as FILE",
                                    "{path}: sd-scripts 데이터셋 설정입니다. 이 파일은 --dataset-config로 주고, "
                                    "FILE에는 학습 설정(또는 kohya_ss .json)을 주세요"),
    "error.kohya.foreign": ("{path} is a {family} config ({key} = {value!r}); LoRA Doctor imports kohya LoRA configs "
                            "of SD 1.5, SDXL, SD 3.5 and Flux.1 only",
                            "{path}: {family} 설정입니다({key} = {value!r}). LoRA Doctor는 SD 1.5, SDXL, SD 3.5, "
                            "Flux.1의 kohya LoRA 설정만 가져옵니다"),
    "error.kohya.not_lora": ("{path} is not a kohya_ss or sd-scripts LoRA config (none of {keys}, ... in it)",
                             "{path}: kohya_ss나 sd-scripts LoRA 설정이 아닙니다({keys}, ... 중 어느 것도 없음)"),
    "error.kohya.dataset_not_found": ("dataset config not found: {path}", "데이터셋 설정 파일을 찾을 수 없습니다: {path}"),
    "error.kohya.no_datasets": ("{path}: an sd-scripts dataset config needs at least one [[datasets]] table",
                                "{path}: sd-scripts 데이터셋 설정에는 [[datasets]] 표가 하나 이상 있어야 합니다"),
    "error.kohya.no_subsets": ("{path}: every [[datasets]] needs [[datasets.subsets]] with an image_dir",
                               "{path}: 모든 [[datasets]]에 image_dir가 있는 [[datasets.subsets]]가 있어야 합니다"),
    "error.kohya.bad_value": ("{origin}: {key} = {value!r}: {reason}", "{origin}: {key} = {value!r}: {reason}"),
    "error.kohya.bad_value_ours": ("{origin}: {key} = {value!r} → {ours}: {reason}",
                                   "{origin}: {key} = {value!r} → {ours}: {reason}"),
    "error.kohya.optimizer_arg": ("{origin}: optimizer_args {key}={value!r}: not a number (betas: two, like 0.9,0.999)",
                                  "{origin}: optimizer_args {key}={value!r}: 숫자가 아닙니다(betas는 0.9,0.999처럼 두 개)"),
    "error.kohya.precision": ("{origin}: mixed_precision = {value!r}: kohya takes no, fp16 or bf16",
                              "{origin}: mixed_precision = {value!r}: kohya는 no, fp16, bf16만 받습니다"),
    "error.kohya.prompt_number": ("{origin}: sample_prompts --{flag}: not a number",
                                  "{origin}: sample_prompts --{flag}: 숫자가 아닙니다"),
    "error.kohya.export_no_script": ("sd-scripts does not train {family}: it has no {family} training script (its LoRA "
                                     "scripts are for SD 1.5, SDXL, SD 3.5 and Flux.1 among ours), so this config "
                                     "cannot be exported for it. musubi-tuner, another tool with config files of its "
                                     "own, trains {family} with {script}",
                                     "sd-scripts는 {family} 모델을 학습하지 않습니다: {family} 학습 스크립트가 없어(우리 "
                                     "모델 중 SD 1.5, SDXL, SD 3.5, Flux.1용 LoRA 스크립트만 있음) 이 설정을 내보낼 수 "
                                     "없습니다. 다른 도구인 musubi-tuner가 자체 설정 파일로 {script} 스크립트를 써서 "
                                     "{family} 모델을 학습합니다"),
    "error.kohya.export_no_config": ("{path} is a folder without config.toml; give a run folder or a config file",
                                     "{path}: config.toml이 없는 폴더입니다. 실행 폴더나 설정 파일을 주세요"),
    "error.kohya.export_out_file": ("-o {out}: a file is there; give a folder to write the sd-scripts files into",
                                    "-o {out}: 그 자리에 파일이 있습니다. sd-scripts 파일을 쓸 폴더를 주세요"),
}  # fmt: skip
