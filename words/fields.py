"""The settings' labels and help lines (ui/fields.py names the codes: field.<name>, field.<name>.info)."""

TEXTS = {
    "field.dataset_path": ('Dataset folder', '데이터셋 폴더'),
    "field.dataset_path.info": (
        'kohya layout: N_name subfolders (N = repeats) with .txt captions beside the pictures',
        'kohya 구조: N_이름 하위 폴더(N = 반복 횟수), 그림 옆에 .txt 캡션',
    ),
    "field.trigger": ('Trigger word', '트리거 단어'),
    "field.trigger.info": (
        'a rare word the LoRA binds to, e.g. zxc',
        'LoRA가 묶일 드문 단어, 예: zxc',
    ),
    "field.reg_path": ('Prior images folder (optional)', '사전 보존 그림 폴더 (선택)'),
    "field.reg_path.info": (
        "pictures of what the base should keep drawing, captioned without the trigger (kohya's reg folder); they keep no-trigger prompts where they were",
        '기반 모델이 계속 그려야 할 그림, 트리거 없이 캡션 (kohya의 reg 폴더): 트리거 없는 프롬프트가 물들지 않게 잡아 준다',
    ),
    "field.repeats": ('Repeats (folders without N_)', '반복 (N_ 없는 폴더)'),
    "field.epochs": ('Epochs', '에폭'),
    "field.batch_size": ('Batch size', '배치 크기'),
    "field.grad_accum": ('Gradient accumulation', '그라디언트 누적'),
    "field.max_steps": ('Max steps (0 = from epochs)', '최대 스텝 (0 = 에폭으로 계산)'),
    "field.save_every": ('Save every N steps (0 = end only)', 'N스텝마다 저장 (0 = 끝에만)'),
    "field.preset": ('Preset', '프리셋'),
    "field.base": ('Base model', '기반 모델'),
    "field.base.info": (
        'built-in demo / tiny-sd15, a local diffusers folder, a .safetensors file, or a hub id owner/name',
        '내장 demo / tiny-sd15, 로컬 diffusers 폴더, .safetensors 파일, 또는 허브 id owner/name',
    ),
    "field.family": ('Model family', '모델 계열'),
    "field.run_name": ('Run name', '실행 이름'),
    "field.rank": ('Rank', 'Rank'),
    "field.alpha": ('Alpha', 'Alpha'),
    "field.lr": ('Learning rate', '학습률'),
    "field.resolution": ('Resolution', '해상도'),
    "field.precision": ('Precision', '정밀도'),
    "field.optimizer": ('Optimizer', '옵티마이저'),
    "field.scheduler": ('LR scheduler', '학습률 스케줄러'),
    "field.warmup_steps": ('Warmup steps', '워밍업 스텝'),
    "field.max_grad_norm": ('Max grad norm (0 = off)', '최대 그라디언트 노름 (0 = 끔)'),
    "field.ema": ('EMA of the LoRA weights', 'LoRA 가중치 EMA'),
    "field.ema_decay": ('EMA decay', 'EMA 감쇠'),
    "field.conv_rank": ('Convolution rank (0 = off)', '합성곱 rank (0 = 끔)'),
    "field.conv_rank.info": (
        "LoRA on the UNet's resnet convolutions too (kohya's conv_dim): fine detail such as stripes, eyes and texture that attention alone draws blurred",
        'UNet의 resnet 합성곱에도 LoRA (kohya의 conv_dim): 줄무늬·눈·질감처럼 어텐션만으로는 흐릿해지는 세부',
    ),
    "field.conv_alpha": ('Convolution alpha (0 = alpha/rank ratio)', '합성곱 alpha (0 = alpha/rank 비율)'),
    "field.conv_blocks": ('Convolution blocks (empty = all)', '합성곱 블록 (비우면 전부)'),
    "field.conv_blocks.info": (
        'comma-separated UNet blocks, e.g. up_blocks.2, up_blocks.3 (the finest detail, the least cost)',
        '쉼표로 구분한 UNet 블록, 예: up_blocks.2, up_blocks.3 (가장 세밀한 부분, 가장 적은 비용)',
    ),
    "field.train_te": ('Train the text encoder', '텍스트 인코더 학습'),
    "field.te_lr": ('Text-encoder lr (0 = same)', '텍스트 인코더 학습률 (0 = 같게)'),
    "field.trigger_embedding": ("Train the trigger word's embedding", '트리거 단어의 임베딩 학습'),
    "field.trigger_embedding.info": (
        'pivotal tuning: gives the LoRA a strong signal to bind to; saved as embedding.safetensors',
        '피벗 튜닝: LoRA가 묶일 뚜렷한 신호를 준다. embedding.safetensors로 저장',
    ),
    "field.embedding_lr": ('Trigger-embedding lr (0 = same)', '트리거 임베딩 학습률 (0 = 같게)'),
    "field.masked_loss": ("Masked training (each picture's mask or transparency)", "마스크 학습 (그림마다 마스크나 투명도)"),
    "field.masked_loss.info": (
        "only the masked part of a picture teaches: its mask beside it (name-masklabel.png, white learns) or its "
        "transparency (opaque learns); one with neither trains whole",
        "그림의 마스크 부분만 배운다. 옆에 둔 마스크(이름-masklabel.png, 흰 부분을 배움)나 투명도(불투명한 부분을 배움)를 "
        "쓰고, 둘 다 없는 그림은 전체로 학습",
    ),
    "field.unmasked_weight": ("Weight outside the mask (0 = none)", '마스크 밖의 가중치 (0 = 없음)'),
    "field.prior_loss_weight": ("Prior images' loss weight", '사전 보존 그림의 손실 가중치'),
    "field.tag_dropout": ('Tag dropout (the trigger stays)', '태그 드롭아웃 (트리거는 남김)'),
    "field.shuffle_tags": ('Shuffle tags (the trigger stays first)', '태그 섞기 (트리거는 맨 앞에 둠)'),
    "field.noise_offset": ('Noise offset', '노이즈 오프셋'),
    "field.min_snr_gamma": ('Min-SNR gamma (0 = off)', 'Min-SNR 감마 (0 = 끔)'),
    "field.grad_ckpt": ('Gradient checkpointing', '그라디언트 체크포인팅'),
    "field.cache_latents": ('Cache latents', '잠재 캐시'),
    "field.offload_te": ('Encode captions first, text encoders off the GPU', '캡션 먼저 인코딩, 텍스트 인코더는 GPU에서 내림'),
    "field.offload_te.info": (
        "every caption and sample prompt is encoded once before training, then the text encoders move to the CPU "
        "(SD3.5: 10.4 GB less while training; the same numbers). Not with a trained text encoder or shuffled tags",
        "학습 전에 캡션과 샘플 프롬프트를 한 번씩 인코딩하고 텍스트 인코더는 CPU로 옮긴다(SD3.5: 학습 중 10.4GB 절약, "
        "수치는 그대로). 텍스트 인코더를 학습하거나 태그를 섞으면 쓸 수 없다",
    ),
    "field.on_nonfinite": ('When a value turns NaN/Inf', '값이 NaN/Inf가 되면'),
    "field.allow_distilled": ('Train on a distilled base anyway', '증류 모델이어도 학습'),
    "field.seed": ('Seed', '시드'),
    "field.sample_enabled": ('Make sample pictures', '샘플 그림 만들기'),
    "field.sample_every": ('Sample every N steps (0 = at saves)', 'N스텝마다 샘플 (0 = 저장할 때)'),
    "field.sample_steps": ('Sampling steps', '샘플링 스텝'),
    "field.images_per_prompt": ('Sample pictures per prompt (one seed each)', '프롬프트당 샘플 그림 수 (각각 다른 시드)'),
    "field.sample_prompts": ('Sample prompts (one per line)', '샘플 프롬프트 (한 줄에 하나)'),
    "field.val_path": ('Validation pictures folder (optional)', '검증 그림 폴더 (선택)'),
    "field.val_path.info": (
        'captioned pictures the LoRA never trains on; their loss at fixed noise shows when it starts to memorise (training loss keeps falling, this one turns up)',
        'LoRA가 학습하지 않는 캡션 달린 그림. 고정 노이즈에서 잰 손실로 외우기 시작하는 때가 보인다 (학습 손실은 계속 내려가는데 이 값은 올라감)',
    ),
    "field.val_holdout": ('Hold back N pictures for validation (0 = none)', '검증용으로 그림 N장 빼 두기 (0 = 안 함)'),
    "field.val_holdout.info": (
        'taken from the dataset, the same ones every run; they do not train, and the step count is without them',
        '데이터셋에서 매번 같은 그림을 뺀다. 학습에 쓰이지 않고, 스텝 수도 이들을 빼고 센다',
    ),
    "field.judge": ('Picture judge (optional): a CLIP or SigLIP model', '그림 판정 모델 (선택): CLIP이나 SigLIP 모델'),
    "field.judge.info": (
        'reads the sample pictures for any subject: does the trigger bring it, does a new prompt hold, does a plain '
        'prompt stay the base model\'s. Pick one already on this computer, or type a model folder or hub id. Without '
        'one the doctor reads the run\'s own model, and a save where the subject is just starting to show is yours to '
        'look at',
        '어떤 대상이든 샘플 그림을 읽는다: 트리거가 대상을 불러오는지, 새 프롬프트를 따르는지, 트리거 없는 '
        '프롬프트가 원래 모델 그대로인지. 이 컴퓨터에 있는 것을 고르거나 모델 폴더나 허브 id를 적는다. 없으면 '
        '학습 중인 모델 자체로 진단하고, 대상이 막 보이기 시작하는 체크포인트는 직접 보아야 한다',
    ),
    "field.val_every": ('Validation every N steps (0 = at saves and samples)', 'N스텝마다 검증 (0 = 저장과 샘플 때)'),
    # a choice's words, where its value is a word rather than a name (field.<name>.choice.<value>)
    "field.on_nonfinite.choice.stop": ("stop", "멈추기"),
    "field.on_nonfinite.choice.skip": ("skip the step", "그 스텝 건너뛰기"),
    "field.on_nonfinite.choice.rollback": ("roll back and change one thing", "되돌리고 한 가지 바꾸기"),
    "field.captioner.choice.auto": ("auto", "자동"),
    "field.captioner.choice.tagger": ("tagger (WD14)", "태거 (WD14)"),
    "field.captioner.choice.florence2": ("Florence-2", "Florence-2"),
    "field.captioner.choice.blip": ("BLIP", "BLIP"),
    "field.family.choice.auto": ("auto", "자동"),
    "field.family.choice.sd15": ("SD 1.5", "SD 1.5"),
    "field.family.choice.sdxl": ("SDXL", "SDXL"),
    "field.family.choice.sd3": ("SD 3.5", "SD 3.5"),
    "field.scheduler.choice.constant": ("constant", "일정"),
    "field.scheduler.choice.constant_with_warmup": ("constant after a warmup", "워밍업 뒤 일정"),
    "field.scheduler.choice.cosine": ("cosine", "코사인"),
    "field.scheduler.choice.linear": ("linear", "선형"),
    "field.scheduler.choice.cosine_with_restarts": ("cosine with restarts", "재시작하는 코사인"),
}
