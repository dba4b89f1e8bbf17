"""The one table that says how kohya_ss / sd-scripts settings become ours and back.

Each :class:`Row` names the key in the kohya_ss GUI's saved JSON (``gui``), the sd-scripts key (``sd``: a
``train_network.py`` argument as its ``--config_file`` TOML spells it, or a ``dataset_config`` key), our dotted
config key, and the two converters. A row without ``ours`` is a setting we do not carry over; its note says
what we do instead or why it does not matter. The importer, the exporter and the README's table all read
this table (:func:`render_table`), so the three cannot drift apart.

Key names were checked against kohya_ss ``kohya_gui/lora_gui.py`` (``save_configuration``'s parameters are
the JSON's keys; ``train_model`` builds the sd-scripts config) and sd-scripts ``library/train_util.py``,
``train_network.py`` and ``library/config_util.py`` (the argument definitions and the dataset schema).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Changed:
    """A converter's answer when the value had to change on purpose; ``en``/``ko`` say why."""

    value: Any
    en: str
    ko: str


def same(v: Any) -> Any:
    return v


def as_int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("expected a number, got true/false")
    f = float(v)  # the GUI writes numbers as "0.0001", 64.0 or 8
    if not f.is_integer():
        raise ValueError(f"expected a whole number, got {v!r}")
    return int(f)


def as_float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("expected a number, got true/false")
    return float(v)


def as_bool(v: Any) -> bool:
    if isinstance(v, str):
        if v.strip().lower() in ("true", "1", "yes"):
            return True
        if v.strip().lower() in ("false", "0", "no", ""):
            return False
        raise ValueError(f"expected true or false, got {v!r}")
    return bool(v)


def resolution_to_ours(v: Any) -> Any:
    """kohya "512,512" / "512" / [w, h] / 512 → one side; a non-square area becomes the square of equal area."""
    if isinstance(v, list | tuple):
        sides = [as_int(x) for x in v]
    else:
        sides = [as_int(x) for x in str(v).replace("x", ",").split(",") if x.strip()]
    if len(sides) == 1:
        sides *= 2
    if len(sides) != 2:
        raise ValueError(f"expected 'width,height', got {v!r}")
    w, h = sides
    if w == h:
        return w
    side = max(64, round(math.sqrt(w * h) / 8) * 8)
    return Changed(side, f"ours trains a square area: {w}×{h} has about the area of {side}×{side}; buckets still "
                         "keep each picture's shape",
                   f"우리는 정사각형 면적으로 학습함: {w}×{h}의 면적은 약 {side}×{side}. 버킷이 그림의 모양은 그대로 지킴")


def family_to_ours(v: Any) -> str:
    return "sdxl" if as_bool(v) else "auto"


def vpred_to_ours(v: Any) -> str:
    return "v_prediction" if as_bool(v) else "auto"


def not_(v: Any) -> bool:
    return not as_bool(v)


def path_to_ours(v: Any) -> str:
    return "" if v is None else str(v)


LOCON_TYPES = ("Kohya LoCon", "LyCORIS/LoCon", "LoCon")
"""LoRA_type values for which kohya_ss passes conv_dim / conv_alpha on."""
OPTIMIZERS = {"adamw": "adamw", "adamw8bit": "adamw8bit", "prodigy": "prodigy"}
OPTIMIZER_TO_KOHYA = {"adamw": "AdamW", "adamw8bit": "AdamW8bit", "prodigy": "Prodigy"}
# Close relatives: the same update rule with a different memory trick, or the method Prodigy grew out of.
OPTIMIZER_KIN = {"pagedadamw8bit": "adamw8bit", "pagedadamw": "adamw", "pagedadamw32bit": "adamw",
                 "dadaptation": "prodigy", "dadaptadam": "prodigy", "dadaptadampreprint": "prodigy",
                 "dadaptadagrad": "prodigy", "dadaptadan": "prodigy", "dadaptadanip": "prodigy",
                 "dadaptlion": "prodigy", "dadaptsgd": "prodigy"}  # fmt: skip


def optimizer_to_ours(v: Any) -> Any:
    name = str(v or "AdamW").strip()
    key = name.lower()
    if key in OPTIMIZERS:
        return OPTIMIZERS[key]
    if key in OPTIMIZER_KIN:
        ours = OPTIMIZER_KIN[key]
        return Changed(ours, f"{name} is not offered; {ours} is its closest relative (same update, or Prodigy, "
                             "the successor of D-Adaptation: lr stays a multiplier near 1)",
                       f"{name}은(는) 없음. 가장 가까운 {ours}로 바꿈(같은 갱신 규칙이거나, D-Adaptation의 후속인 "
                       "Prodigy: lr은 1 근처의 배율)")
    return Changed("adamw", f"{name} is not offered; AdamW instead. Its lr was chosen for {name}: check the dose "
                            "on the Steps page",
                   f"{name}은(는) 없어 AdamW로 바꿈. lr은 {name}에 맞춘 값이므로 스텝 화면의 학습량을 확인하세요")


SCHEDULERS = ("constant", "constant_with_warmup", "cosine", "linear", "cosine_with_restarts")
SCHEDULER_KIN = {"polynomial": "linear", "cosine_with_min_lr": "cosine", "warmup_stable_decay": "linear"}


def scheduler_to_ours(v: Any) -> Any:
    name = str(v or "constant").strip().lower()
    if name in SCHEDULERS:
        return name
    ours = SCHEDULER_KIN.get(name, "constant")
    return Changed(ours, f"the {name} schedule is not offered; {ours} is the closest",
                   f"{name} 스케줄은 없어 가장 가까운 {ours}로 바꿈")


def seed_to_ours(v: Any) -> Any:
    if v in ("", None) or as_int(v) == 0:
        return Changed(42, "kohya draws a random seed when none is set; ours fixes 42 so a run can be repeated",
                       "kohya는 시드가 없으면 무작위로 뽑음. 우리는 실행을 되풀이할 수 있게 42로 고정")
    return as_int(v)


def optional_float(v: Any) -> float:
    """"" and None (the GUI's empty box, sd-scripts' unset) are 0 = off / the same as lr."""
    return 0.0 if v in ("", None) else as_float(v)


def optional_int(v: Any) -> int:
    return 0 if v in ("", None) else as_int(v)


def te_lr_to_ours(v: Any) -> float:
    if isinstance(v, list | tuple):  # sd-scripts takes one lr per text encoder (SDXL has two)
        v = v[0] if v else 0.0
    return optional_float(v)


def caption_ext_to_ours(v: Any) -> str:
    text = str(v or "").strip()
    return text if text.startswith(".") or not text else "." + text


def zero_is_none(v: Any) -> Any:
    return v if v else None


# Notes shared by many rows
N_SPEED = ("speed/memory switch; ours picks PyTorch's fused attention itself",
           "속도·메모리 스위치. 우리는 PyTorch의 결합 어텐션을 스스로 고름")
N_LOG = ("logging, uploading or bookkeeping: does not change what is trained",
         "기록·업로드·관리용: 학습 내용은 바뀌지 않음")
N_LAUNCH = ("how accelerate is launched; ours: `torchrun --nproc_per_node N python -m trainer train`",
            "accelerate 실행 방식. 우리는 `torchrun --nproc_per_node N python -m trainer train`")
N_FIXED_FP32 = ("ours keeps LoRA weights and optimizer state in fp32 (our numerics rule); only the frozen model is "
                "fp16/bf16", "우리는 LoRA 가중치와 옵티마이저 상태를 fp32로 둠(수치 규칙). 고정된 모델만 fp16/bf16")
N_NOISE = ("ours has plain noise offset (train.noise_offset) only", "우리는 기본 noise offset(train.noise_offset)만 있음")
N_LOSS = ("ours trains the plain MSE loss, with min-SNR weighting (train.min_snr_gamma)",
          "우리는 기본 MSE 손실과 min-SNR 가중치(train.min_snr_gamma)로 학습")
N_BLOCKS = ("per-block ranks/lrs are not offered; ours: lora.conv_blocks picks the blocks that get convolution LoRA",
            "블록별 rank/lr은 없음. 우리는 lora.conv_blocks로 합성곱 LoRA를 달 블록을 고름")
N_RESUME = ("ours keeps resume state in every checkpoint; `train --resume RUN_DIR` continues",
            "우리는 모든 체크포인트에 재개 상태를 둠. `train --resume RUN_DIR`로 이어 감")
N_KEEP = ("ours: save.keep_last keeps the last N checkpoints", "우리는 save.keep_last로 마지막 N개 체크포인트를 남김")
N_TE_CACHE = ("ours runs the text encoder each step (needed for caption shuffling and text-encoder LoRA)",
              "우리는 스텝마다 텍스트 인코더를 돌림(태그 섞기와 텍스트 인코더 LoRA에 필요)")
N_VAE = ("ours runs the VAE in fp32 where the base's VAE needs it (SDXL), automatically",
         "우리는 VAE가 필요로 하면(SDXL) 자동으로 fp32로 돌림")


@dataclass(frozen=True)
class Row:
    """One setting: kohya_ss GUI key, sd-scripts key, our key, converters and a note (English, Korean)."""

    gui: str
    sd: str
    ours: str = ""
    to_ours: Callable[[Any], Any] = same
    to_kohya: Callable[[Any], Any] = same
    note: tuple[str, str] = ("", "")
    where: str = "args"
    """Where sd-scripts reads ``sd``: "args" (train config / command line), "dataset" ([[datasets]]) or "subset"
    ([[datasets.subsets]], and [general])."""
    sd_default: Any = None
    """sd-scripts' default, used when its TOML leaves the key out (None: no default worth carrying)."""
    special: bool = False
    """The importer handles it with its neighbours (the note says how), not by ``to_ours`` alone."""

    @property
    def supported(self) -> bool:
        return bool(self.ours)


R = Row
ROWS: tuple[Row, ...] = (
    # model
    R("pretrained_model_name_or_path", "pretrained_model_name_or_path", "model.base", path_to_ours),
    R("sdxl", "", "model.family", family_to_ours, lambda v: v == "sdxl",
      ("sd-scripts: sdxl_train_network.py instead of train_network.py", "sd-scripts: train_network.py 대신 sdxl_train_network.py")),
    R("v_parameterization", "v_parameterization", "model.prediction_type", vpred_to_ours, lambda v: v == "v_prediction",
      sd_default=False),
    R("v2", "v2", note=("SD 2.x is refused: ours trains SD 1.5 and SDXL", "SD 2.x는 거절: 우리는 SD 1.5와 SDXL만 학습"),
      special=True),
    # dataset
    R("train_data_dir", "train_data_dir", "dataset.path", path_to_ours,
      note=("or the common parent of the dataset config's subsets", "또는 데이터셋 설정 subset들의 공통 상위 폴더")),
    R("reg_data_dir", "reg_data_dir", "dataset.reg_path", path_to_ours,
      note=("or the parent of the is_reg subsets; sd-scripts balances them to the dataset's count, ours uses their "
            "folders' repeats", "또는 is_reg subset들의 상위 폴더. sd-scripts는 데이터셋 수에 맞춰 늘리고 우리는 폴더의 반복 수를 씀")),
    R("max_resolution", "resolution", "dataset.resolution", resolution_to_ours, where="dataset",
      note=("\"512,512\" in the GUI; one number (or [w, h]) in a dataset config", "GUI에서는 \"512,512\", 데이터셋 설정에서는 숫자 하나(또는 [w, h])")),
    R("enable_bucket", "enable_bucket", "dataset.buckets", as_bool, where="dataset", sd_default=False),
    R("min_bucket_reso", "min_bucket_reso", "dataset.min_bucket_side", as_int, where="dataset", sd_default=256),
    R("max_bucket_reso", "max_bucket_reso", "dataset.max_bucket_side", as_int, where="dataset", sd_default=1024),
    R("bucket_reso_steps", "bucket_reso_steps", "dataset.bucket_step", as_int, where="dataset", sd_default=64),
    R("caption_extension", "caption_extension", "dataset.caption_ext", caption_ext_to_ours, where="subset",
      sd_default=".caption"),
    R("shuffle_caption", "shuffle_caption", "dataset.shuffle_tags", as_bool, where="subset", sd_default=False),
    R("keep_tokens", "keep_tokens", "dataset.keep_tokens", as_int, where="subset", sd_default=0),
    R("caption_dropout_rate", "caption_dropout_rate", "dataset.caption_dropout", as_float, where="subset",
      sd_default=0.0),
    R("", "caption_tag_dropout_rate", "dataset.tag_dropout", as_float, where="subset", sd_default=0.0),
    R("flip_aug", "flip_aug", "dataset.flip", as_bool, where="subset", sd_default=False),
    R("cache_latents", "cache_latents", "dataset.cache_latents", as_bool, sd_default=False),
    R("cache_latents_to_disk", "cache_latents_to_disk", "dataset.cache_to_disk", as_bool, sd_default=False),
    R("prior_loss_weight", "prior_loss_weight", "dataset.prior_loss_weight", as_float, sd_default=1.0),
    # network
    R("network_dim", "network_dim", "lora.rank", as_int, sd_default=4),
    R("network_alpha", "network_alpha", "lora.alpha", as_float, sd_default=1.0),
    R("conv_dim", "network_args conv_dim", "lora.conv_rank", optional_int, special=True,
      note=("read only for LoRA_type \"Kohya LoCon\" / \"LyCORIS/LoCon\", as kohya_ss does",
            "kohya_ss처럼 LoRA_type이 \"Kohya LoCon\" / \"LyCORIS/LoCon\"일 때만 읽음")),
    R("conv_alpha", "network_args conv_alpha", "lora.conv_alpha", optional_float, special=True),
    R("network_dropout", "network_dropout", "lora.dropout", optional_float, zero_is_none, sd_default=0.0),
    R("network_train_unet_only", "network_train_unet_only", "lora.train_text_encoder", not_, not_, sd_default=False),
    R("LoRA_type", "network_module", special=True,
      note=("plain LoRA (Standard, networks.lora) and LoCon; LoHa, LoKr, iA3, DyLoRA, GLoRA... become LoRA",
            "기본 LoRA(Standard, networks.lora)와 LoCon. LoHa, LoKr, iA3, DyLoRA, GLoRA 등은 LoRA로 바꿈")),
    # optimizer and schedule
    R("optimizer", "optimizer_type", "optim.optimizer", optimizer_to_ours, OPTIMIZER_TO_KOHYA.get,
      ("AdamW, AdamW8bit, Prodigy; Paged… and DAdapt… go to their closest", "AdamW, AdamW8bit, Prodigy. Paged…와 DAdapt…는 가장 가까운 것으로"),
      sd_default="AdamW"),
    R("optimizer_args", "optimizer_args", "optim.weight_decay", special=True,
      note=("weight_decay, betas and eps are read; other arguments are listed", "weight_decay, betas, eps를 읽고 나머지는 목록으로 알림")),
    R("learning_rate", "learning_rate", "optim.lr", as_float, sd_default=2e-6),
    R("unet_lr", "unet_lr", "optim.lr", optional_float, special=True,
      note=("wins over learning_rate when set, as in sd-scripts", "설정되면 sd-scripts처럼 learning_rate보다 우선")),
    R("text_encoder_lr", "text_encoder_lr", "optim.te_lr", te_lr_to_ours, zero_is_none,
      ("0 / empty = the same as the UNet's", "0 / 빈칸 = UNet과 같음"), sd_default=0.0),
    R("lr_scheduler", "lr_scheduler", "optim.scheduler", scheduler_to_ours, sd_default="constant"),
    R("lr_scheduler_num_cycles", "lr_scheduler_num_cycles", "optim.num_cycles", optional_int, special=True,
      note=("empty in the GUI means one cycle per epoch, as kohya_ss passes it", "GUI에서 빈칸이면 kohya_ss처럼 에폭마다 한 주기"),
      sd_default=1),
    R("lr_warmup", "", "optim.warmup_steps", special=True,
      note=("a percentage of kohya's total steps, turned into steps", "kohya 전체 스텝의 백분율을 스텝 수로 바꿈")),
    R("lr_warmup_steps", "lr_warmup_steps", "optim.warmup_steps", special=True,
      note=("a value below 1 is a share of the total steps, as in sd-scripts", "1보다 작으면 sd-scripts처럼 전체 스텝의 비율"),
      sd_default=0),
    R("max_grad_norm", "max_grad_norm", "optim.max_grad_norm", as_float, sd_default=1.0),
    # training
    R("train_batch_size", "train_batch_size", "train.batch_size", as_int, where="dataset", sd_default=1),
    R("gradient_accumulation_steps", "gradient_accumulation_steps", "train.grad_accum", as_int, sd_default=1),
    R("epoch", "", "train.epochs", as_int,
      note=("the GUI turns it into max_train_steps with its own formula (see the step count)",
            "GUI는 자체 공식으로 max_train_steps로 바꿈(스텝 수 비교 참고)")),
    R("max_train_epochs", "max_train_epochs", "train.epochs", optional_int, special=True,
      note=("wins over epoch and max_train_steps when set, as in sd-scripts", "설정되면 sd-scripts처럼 epoch와 max_train_steps보다 우선")),
    R("max_train_steps", "max_train_steps", "train.max_steps", optional_int, special=True,
      note=("0 in the GUI = computed from epochs; sd-scripts' default is 1600", "GUI의 0 = 에폭으로 계산. sd-scripts 기본값은 1600"),
      sd_default=1600),
    R("mixed_precision", "mixed_precision", "train.precision", special=True,
      note=("fp16 → bf16 where the device has bf16 (no loss scaler, no overflow); no → fp32",
            "장치가 bf16을 지원하면 fp16 → bf16(손실 스케일러·오버플로 없음). no → fp32"), sd_default="no"),
    R("seed", "seed", "train.seed", seed_to_ours, sd_default=""),
    R("gradient_checkpointing", "gradient_checkpointing", "train.gradient_checkpointing", as_bool, sd_default=False),
    R("noise_offset", "noise_offset", "train.noise_offset", optional_float, zero_is_none,
      ("the GUI's only when noise_offset_type is Original", "GUI 값은 noise_offset_type이 Original일 때만"), sd_default=0.0),
    R("min_snr_gamma", "min_snr_gamma", "train.min_snr_gamma", optional_float, zero_is_none, sd_default=0.0),
    R("max_data_loader_n_workers", "max_data_loader_n_workers", "train.num_workers", optional_int, sd_default=8),
    # saving and samples
    R("output_dir", "output_dir", "save.output_dir", path_to_ours),
    R("output_name", "output_name", "save.name", path_to_ours),
    R("save_every_n_steps", "save_every_n_steps", "save.every_steps", optional_int, zero_is_none, sd_default=0),
    R("save_every_n_epochs", "save_every_n_epochs", "save.every_steps", special=True,
      note=("ours saves by steps: epochs × kohya's steps per epoch", "우리는 스텝 단위로 저장: 에폭 × kohya의 에폭당 스텝")),
    R("sample_prompts", "sample_prompts", "sample.prompts", special=True,
      note=("one prompt a line; --n → sample.negative_prompt, --s → sample.steps, --l → sample.guidance, --d → "
            "sample.seed when all lines agree; --w/--h are listed", "한 줄에 프롬프트 하나. 모든 줄이 같으면 --n → "
            "sample.negative_prompt, --s → sample.steps, --l → sample.guidance, --d → sample.seed. --w/--h는 목록으로 알림")),
    R("sample_every_n_steps", "sample_every_n_steps", "sample.every_steps", optional_int, zero_is_none, sd_default=0),
    R("sample_every_n_epochs", "sample_every_n_epochs", "sample.every_steps", special=True,
      note=("epochs × kohya's steps per epoch", "에폭 × kohya의 에폭당 스텝")),
    # not carried over: what we do instead, or why it does not matter
    R("clip_skip", "clip_skip", note=("ours reads the text encoder's last layer (clip skip 1)",
                                      "우리는 텍스트 인코더의 마지막 층을 씀(clip skip 1)")),
    R("save_precision", "save_precision", note=("ours writes LoRA files in fp16, which every UI loads",
                                                "우리는 모든 UI가 읽는 fp16으로 LoRA 파일을 씀")),
    R("save_model_as", "save_model_as", note=("ours writes .safetensors (kohya layout) plus a diffusers twin",
                                              "우리는 .safetensors(kohya 형식)와 diffusers 형식 파일을 씀")),
    R("bucket_no_upscale", "bucket_no_upscale", where="dataset",
      note=("ours upscales small pictures into their bucket and warns above 2×", "우리는 작은 그림을 버킷에 맞게 키우고 2배를 넘으면 경고")),
    R("color_aug", "color_aug", where="subset", note=("colour jitter is not offered; it also stops latent caching",
                                                      "색 흔들기는 없음. 잠재 캐시도 막음")),
    R("random_crop", "random_crop", where="subset", note=("ours centre-crops into the bucket", "우리는 버킷에 맞춰 가운데를 자름")),
    R("max_token_length", "max_token_length", note=("ours reads 75 tokens (CLIP's window)", "우리는 75토큰(CLIP 창)을 읽음")),
    R("caption_dropout_every_n_epochs", "caption_dropout_every_n_epochs", where="subset",
      note=("ours: dataset.caption_dropout drops a share of captions every epoch", "우리는 dataset.caption_dropout으로 매 에폭 일부 캡션을 뺌")),
    R("stop_text_encoder_training", "stop_text_encoder_training",
      note=("ours trains the text-encoder LoRA for the whole run or not at all", "우리는 텍스트 인코더 LoRA를 끝까지 학습하거나 전혀 안 함")),
    R("xformers", "xformers", note=N_SPEED), R("", "sdpa", note=N_SPEED), R("mem_eff_attn", "mem_eff_attn", note=N_SPEED),
    R("full_fp16", "full_fp16", note=N_FIXED_FP32), R("full_bf16", "full_bf16", note=N_FIXED_FP32),
    R("fp8_base", "fp8_base", note=N_FIXED_FP32),
    R("noise_offset_type", "", note=N_NOISE), R("adaptive_noise_scale", "adaptive_noise_scale", note=N_NOISE),
    R("multires_noise_iterations", "multires_noise_iterations", note=N_NOISE),
    R("multires_noise_discount", "multires_noise_discount", note=N_NOISE),
    R("noise_offset_random_strength", "noise_offset_random_strength", note=N_NOISE),
    R("ip_noise_gamma", "ip_noise_gamma", note=N_NOISE),
    R("loss_type", "loss_type", note=N_LOSS), R("huber_c", "huber_c", note=N_LOSS),
    R("huber_schedule", "huber_schedule", note=N_LOSS), R("debiased_estimation_loss", "debiased_estimation_loss", note=N_LOSS),
    R("scale_v_pred_loss_like_noise_pred", "scale_v_pred_loss_like_noise_pred", note=N_LOSS),
    R("v_pred_like_loss", "v_pred_like_loss", note=N_LOSS), R("masked_loss", "masked_loss", note=N_LOSS),
    R("min_timestep", "min_timestep", note=N_LOSS), R("max_timestep", "max_timestep", note=N_LOSS),
    R("weighted_captions", "weighted_captions", note=("ours reads a caption as plain text", "우리는 캡션을 일반 글로 읽음")),
    R("scale_weight_norms", "scale_weight_norms",
      note=("ours clips the gradient norm (optim.max_grad_norm) and watches weight growth",
            "우리는 기울기 노름을 자르고(optim.max_grad_norm) 가중치 증가를 감시")),
    R("network_weights", "network_weights", note=N_RESUME), R("dim_from_weights", "dim_from_weights", note=N_RESUME),
    R("save_state", "save_state", note=N_RESUME), R("resume", "resume", note=N_RESUME),
    R("save_last_n_steps", "save_last_n_steps", note=N_KEEP), R("save_last_n_epochs", "save_last_n_epochs", note=N_KEEP),
    R("down_lr_weight", "", note=N_BLOCKS), R("mid_lr_weight", "", note=N_BLOCKS), R("up_lr_weight", "", note=N_BLOCKS),
    R("block_dims", "", note=N_BLOCKS), R("block_alphas", "", note=N_BLOCKS), R("conv_block_dims", "", note=N_BLOCKS),
    R("conv_block_alphas", "", note=N_BLOCKS), R("block_lr_zero_threshold", "", note=N_BLOCKS),
    R("rank_dropout", "", note=("ours has lora.dropout (on the LoRA's input)", "우리는 lora.dropout(LoRA 입력에)만 있음")),
    R("module_dropout", "", note=("ours has lora.dropout (on the LoRA's input)", "우리는 lora.dropout(LoRA 입력에)만 있음")),
    R("sample_sampler", "sample_sampler", note=("ours samples with the base model's own scheduler",
                                                "우리는 기반 모델 자체의 스케줄러로 표본을 그림")),
    R("sdxl_cache_text_encoder_outputs", "cache_text_encoder_outputs", note=N_TE_CACHE),
    R("sdxl_no_half_vae", "no_half_vae", note=N_VAE), R("vae", "vae", note=N_VAE),
    R("vae_batch_size", "vae_batch_size", note=("ours encodes the latent cache one picture at a time",
                                                "우리는 잠재 캐시를 한 장씩 인코딩")),
    R("persistent_data_loader_workers", "persistent_data_loader_workers", note=N_SPEED),
    R("lr_scheduler_power", "lr_scheduler_power", note=("polynomial schedules become linear (power 1)",
                                                        "polynomial 스케줄은 linear(power 1)로 바꿈")),
    R("lr_scheduler_args", "lr_scheduler_args", note=("scheduler arguments are not offered", "스케줄러 인수는 없음")),
    R("lr_scheduler_type", "lr_scheduler_type", note=("custom scheduler classes are not offered", "사용자 스케줄러 클래스는 없음")),
    R("additional_parameters", "", note=("free-form sd-scripts arguments are not read; they are listed",
                                         "자유 형식 sd-scripts 인수는 읽지 않고 목록으로 알림")),
    R("dataset_config", "dataset_config", note=("read as the dataset when the file exists (also --dataset-config)",
                                                "파일이 있으면 데이터셋으로 읽음(--dataset-config도 같음)")),
    R("training_comment", "training_comment", note=N_LOG), R("logging_dir", "logging_dir", note=N_LOG),
    R("log_with", "log_with", note=N_LOG), R("log_tracker_name", "log_tracker_name", note=N_LOG),
    R("log_tracker_config", "log_tracker_config", note=N_LOG), R("log_config", "log_config", note=N_LOG),
    R("wandb_api_key", "wandb_api_key", note=N_LOG), R("wandb_run_name", "wandb_run_name", note=N_LOG),
    R("metadata_author", "metadata_author", note=N_LOG), R("metadata_description", "metadata_description", note=N_LOG),
    R("metadata_license", "metadata_license", note=N_LOG), R("metadata_tags", "metadata_tags", note=N_LOG),
    R("metadata_title", "metadata_title", note=N_LOG), R("huggingface_repo_id", "huggingface_repo_id", note=N_LOG),
    R("skip_cache_check", "skip_cache_check", note=N_LOG), R("model_list", "", note=N_LOG),
    R("num_cpu_threads_per_process", "", note=N_LAUNCH), R("num_processes", "", note=N_LAUNCH),
    R("num_machines", "", note=N_LAUNCH), R("multi_gpu", "", note=N_LAUNCH), R("gpu_ids", "", note=N_LAUNCH),
    R("main_process_port", "", note=N_LAUNCH), R("dynamo_backend", "dynamo_backend", note=N_LAUNCH),
    R("extra_accelerate_launch_args", "", note=N_LAUNCH), R("highvram", "highvram", note=N_SPEED),
    R("lowvram", "", note=N_SPEED),
)

BY_GUI: dict[str, Row] = {r.gui: r for r in ROWS if r.gui}
BY_SD: dict[str, Row] = {r.sd: r for r in ROWS if r.sd and " " not in r.sd}
NEUTRAL: tuple[Any, ...] = ("", None, 0, 0.0, False, [], "0", "0.0", "none", "None")
"""Values that leave a setting off: an unsupported or unknown key holding one of them changes nothing."""


def is_neutral(v: Any) -> bool:
    return any(v == n and type(v) is type(n) for n in NEUTRAL) or (isinstance(v, str) and v.strip() in ("", "0"))


def render_table(lang: str = "en") -> str:
    """The README's mapping table (Markdown), made from :data:`ROWS`."""
    i = 0 if lang == "en" else 1
    head = (("kohya_ss GUI (JSON)", "sd-scripts", "LoRA Doctor", "note") if lang == "en"
            else ("kohya_ss GUI (JSON)", "sd-scripts", "LoRA Doctor", "설명"))
    off = "— (not carried over)" if lang == "en" else "— (옮기지 않음)"
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
    for r in ROWS:
        cells = [f"`{r.gui}`" if r.gui else "", f"`{r.sd}`" if r.sd else "", f"`{r.ours}`" if r.ours else off,
                 r.note[i].replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
