"""The one table from UI fields to config paths.

Every widget that holds a setting is declared here once: its name (the keyword its handlers receive), the
config path it reads and writes, its kind, which wizard step shows it, and its label in English and Korean.
:func:`values_from_config` and :func:`config_from_values` are the only two ways between widgets and a
:class:`~trainer.config.schema.Config`, so a field added out of order cannot shift anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.config.schema import Config, allowed_values, from_dict
from trainer.errors import UserError


@dataclass(frozen=True)
class Field:
    name: str
    path: str
    kind: str  # text | int | float | check | choice | lines | csv | base
    step: str  # dataset | steps | preset | advanced | sample
    en: str
    ko: str
    info: dict[str, str] = field(default_factory=dict)

    @property
    def choices(self) -> tuple[str, ...]:
        """A choice field's values, read from the config's declaration each time (a registered optimizer shows
        up without an edit here); the preset's list is the presets found, filled in by the preset step."""
        return allowed_values(self.path) if self.kind == "choice" else ()

    def label(self, lang: str) -> str:
        return self.ko if lang == "ko" else self.en

    def help(self, lang: str) -> str | None:
        return self.info.get(lang) or self.info.get("en")


def _f(name, path, kind, step, en, ko, info_en="", info_ko=""):
    info = {"en": info_en, "ko": info_ko} if info_en else {}
    return Field(name, path, kind, step, en, ko, info)


FIELDS: tuple[Field, ...] = (
    # 1 Dataset
    _f("dataset_path", "dataset.path", "text", "dataset", "Dataset folder", "데이터셋 폴더",
       info_en="kohya layout: N_name subfolders (N = repeats) with .txt captions beside the pictures",
       info_ko="kohya 구조: N_이름 하위 폴더(N = 반복 횟수), 그림 옆에 .txt 캡션"),
    _f("trigger", "dataset.trigger", "text", "dataset", "Trigger word", "트리거 단어",
       info_en="a rare word the LoRA binds to, e.g. zxc", info_ko="LoRA가 묶일 드문 단어, 예: zxc"),
    _f("reg_path", "dataset.reg_path", "text", "dataset", "Prior images folder (optional)", "사전 보존 그림 폴더 (선택)",
       info_en="pictures of what the base should keep drawing, captioned without the trigger (kohya's reg folder); "
               "they keep no-trigger prompts where they were",
       info_ko="기반 모델이 계속 그려야 할 그림, 트리거 없이 캡션 (kohya의 reg 폴더): 트리거 없는 프롬프트가 물들지 않게 잡아 준다"),
    # 2 Steps
    _f("repeats", "dataset.repeats", "int", "steps", "Repeats (folders without N_)", "반복 (N_ 없는 폴더)"),
    _f("epochs", "train.epochs", "int", "steps", "Epochs", "에폭"),
    _f("batch_size", "train.batch_size", "int", "steps", "Batch size", "배치 크기"),
    _f("grad_accum", "train.grad_accum", "int", "steps", "Gradient accumulation", "그라디언트 누적"),
    _f("max_steps", "train.max_steps", "int", "steps", "Max steps (0 = from epochs)", "최대 스텝 (0 = 에폭으로 계산)"),
    _f("save_every", "save.every_steps", "int", "steps", "Save every N steps (0 = end only)", "N스텝마다 저장 (0 = 끝에만)"),
    # 3 Preset
    _f("preset", "preset", "choice", "preset", "Preset", "프리셋"),
    _f("base", "model.base", "base", "preset", "Base model", "기반 모델",
       info_en="built-in demo / tiny-sd15, a local diffusers folder, a .safetensors file, or a hub id owner/name",
       info_ko="내장 demo / tiny-sd15, 로컬 diffusers 폴더, .safetensors 파일, 또는 허브 id owner/name"),
    _f("family", "model.family", "choice", "preset", "Model family", "모델 계열"),
    _f("run_name", "save.name", "text", "preset", "Run name", "실행 이름"),
    _f("rank", "lora.rank", "int", "preset", "Rank", "Rank"),
    _f("alpha", "lora.alpha", "float", "preset", "Alpha", "Alpha"),
    _f("lr", "optim.lr", "float", "preset", "Learning rate", "학습률"),
    _f("resolution", "dataset.resolution", "int", "preset", "Resolution", "해상도"),
    # 3 Preset, advanced accordion
    _f("precision", "train.precision", "choice", "advanced", "Precision", "정밀도"),
    _f("optimizer", "optim.optimizer", "choice", "advanced", "Optimizer", "옵티마이저"),
    _f("scheduler", "optim.scheduler", "choice", "advanced", "LR scheduler", "학습률 스케줄러"),
    _f("warmup_steps", "optim.warmup_steps", "int", "advanced", "Warmup steps", "워밍업 스텝"),
    _f("max_grad_norm", "optim.max_grad_norm", "float", "advanced", "Max grad norm (0 = off)", "최대 그라디언트 노름 (0 = 끔)"),
    _f("ema", "ema.enabled", "check", "advanced", "EMA of the LoRA weights", "LoRA 가중치 EMA"),
    _f("ema_decay", "ema.decay", "float", "advanced", "EMA decay", "EMA 감쇠"),
    _f("conv_rank", "lora.conv_rank", "int", "advanced", "Convolution rank (0 = off)", "합성곱 rank (0 = 끔)",
       info_en="LoRA on the UNet's resnet convolutions too (kohya's conv_dim): fine detail such as stripes, eyes and "
               "texture that attention alone draws blurred",
       info_ko="UNet의 resnet 합성곱에도 LoRA (kohya의 conv_dim): 줄무늬·눈·질감처럼 어텐션만으로는 흐릿해지는 세부"),
    _f("conv_alpha", "lora.conv_alpha", "float", "advanced", "Convolution alpha (0 = alpha/rank ratio)",
       "합성곱 alpha (0 = alpha/rank 비율)"),
    _f("conv_blocks", "lora.conv_blocks", "csv", "advanced", "Convolution blocks (empty = all)",
       "합성곱 블록 (비우면 전부)",
       info_en="comma-separated UNet blocks, e.g. up_blocks.2, up_blocks.3 (the finest detail, the least cost)",
       info_ko="쉼표로 구분한 UNet 블록, 예: up_blocks.2, up_blocks.3 (가장 세밀한 부분, 가장 적은 비용)"),
    _f("train_te", "lora.train_text_encoder", "check", "advanced", "Train the text encoder", "텍스트 인코더 학습"),
    _f("te_lr", "optim.te_lr", "float", "advanced", "Text-encoder lr (0 = same)", "텍스트 인코더 학습률 (0 = 같게)"),
    _f("trigger_embedding", "lora.trigger_embedding", "check", "advanced", "Train the trigger word's embedding",
       "트리거 단어의 임베딩 학습",
       info_en="pivotal tuning: gives the LoRA a strong signal to bind to; saved as embedding.safetensors",
       info_ko="피벗 튜닝: LoRA가 묶일 뚜렷한 신호를 준다. embedding.safetensors로 저장"),
    _f("embedding_lr", "optim.embedding_lr", "float", "advanced", "Trigger-embedding lr (0 = same)",
       "트리거 임베딩 학습률 (0 = 같게)"),
    _f("prior_loss_weight", "dataset.prior_loss_weight", "float", "advanced", "Prior images' loss weight",
       "사전 보존 그림의 손실 가중치"),
    _f("tag_dropout", "dataset.tag_dropout", "float", "advanced", "Tag dropout (the trigger stays)",
       "태그 드롭아웃 (트리거는 남김)"),
    _f("noise_offset", "train.noise_offset", "float", "advanced", "Noise offset", "노이즈 오프셋"),
    _f("min_snr_gamma", "train.min_snr_gamma", "float", "advanced", "Min-SNR gamma (0 = off)", "Min-SNR 감마 (0 = 끔)"),
    _f("grad_ckpt", "train.gradient_checkpointing", "check", "advanced", "Gradient checkpointing", "그라디언트 체크포인팅"),
    _f("cache_latents", "dataset.cache_latents", "check", "advanced", "Cache latents", "잠재 캐시"),
    _f("on_nonfinite", "guard.on_nonfinite", "choice", "advanced", "When a value turns NaN/Inf", "값이 NaN/Inf가 되면"),
    _f("allow_distilled", "model.allow_distilled", "check", "advanced", "Train on a distilled base anyway",
       "증류 모델이어도 학습"),
    _f("seed", "train.seed", "int", "advanced", "Seed", "시드"),
    # samples
    _f("sample_enabled", "sample.enabled", "check", "sample", "Make sample pictures", "샘플 그림 만들기"),
    _f("sample_every", "sample.every_steps", "int", "sample", "Sample every N steps (0 = at saves)",
       "N스텝마다 샘플 (0 = 저장할 때)"),
    _f("sample_steps", "sample.steps", "int", "sample", "Sampling steps", "샘플링 스텝"),
    _f("images_per_prompt", "sample.images_per_prompt", "int", "sample", "Sample pictures per prompt (one seed each)",
       "프롬프트당 샘플 그림 수 (각각 다른 시드)"),
    _f("sample_prompts", "sample.prompts", "lines", "sample", "Sample prompts (one per line)",
       "샘플 프롬프트 (한 줄에 하나)"),
)
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)


def fields_of(step: str) -> list[Field]:
    return [f for f in FIELDS if f.step == step]


def to_widget(f: Field, value: Any) -> Any:
    """A config value as its widget holds it."""
    if f.kind == "lines":
        return "\n".join(value)
    if f.kind == "csv":
        return ", ".join(value)
    return value


def from_widget(f: Field, value: Any) -> Any:
    """A widget's value as the config wants it (None from an emptied number box is left to validation)."""
    if f.kind == "lines":
        return [line.strip() for line in str(value or "").splitlines() if line.strip()]
    if f.kind == "csv":
        return [part.strip() for part in str(value or "").split(",") if part.strip()]
    if f.kind == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    if f.kind == "text" or f.kind == "base":
        return str(value or "").strip()
    return value


def values_from_config(cfg: Config) -> dict[str, Any]:
    return {f.name: to_widget(f, cfg.get(f.path)) for f in FIELDS}


def config_from_values(values: dict[str, Any], output_dir: Path, extra_preset_dirs: list[Path] | None = None) -> Config:
    """The full config: the preset's values, each field's value on top, the runs folder of the workspace.

    Raises :class:`UserError` naming the field (by its config key) when a value is out of range.
    """
    from trainer.config.presets import preset_config

    preset_id = values.get("preset") or ""
    if any(c in preset_id for c in "/\\:") or preset_id.endswith(".toml"):  # an id, never a file path
        raise UserError(f"preset: {preset_id!r} is not a preset name")
    base = preset_config(preset_id, extra_preset_dirs) if preset_id else Config()
    data = base.to_dict()
    data.pop("preset", None)  # folded in already (and a user preset is not on from_dict's search path)
    for f in FIELDS:
        if f.name == "preset" or f.name not in values:
            continue
        value = from_widget(f, values[f.name])
        if value is None:
            raise UserError(f"'{f.path}' is empty; give a value")
        section, key = f.path.split(".")
        data[section][key] = value
    data["save"]["output_dir"] = str(output_dir)
    cfg = from_dict(data, origin="the settings")
    cfg.preset = preset_id
    return cfg
