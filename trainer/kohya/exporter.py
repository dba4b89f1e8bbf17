"""Write the sd-scripts files that train what one of our configs (or runs) trains, as closely as sd-scripts
can: a ``--config_file`` TOML, a ``dataset_config`` TOML, the sample prompts and the command line, with the
same kind of report as the import, the other way round."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from trainer.config.schema import Config, flatten, load_config
from trainer.data.folders import IMAGE_SUFFIXES, KOHYA_FOLDER
from trainer.errors import UserError
from trainer.io import atomic_write_text
from trainer.kohya.mapping import ROWS, Row
from trainer.kohya.report import Report
from trainer.message import Msg, msg
from trainer.models.family import chosen_family
from trainer.toml_writer import dumps_toml

# Our settings sd-scripts has no place for, and why that is fine (or what to do there).
_IN_OPTIMIZER_ARGS = msg("kohya.ours.optimizer_args")
_NOT_IN_TRAIN_NETWORK = msg("kohya.ours.not_in_train_network")
OURS_ONLY: dict[str, Msg] = {
    "version": msg("kohya.ours.version"),
    "preset": msg("kohya.ours.preset"),
    "model.family": msg("kohya.ours.family"),
    "model.allow_distilled": msg("kohya.ours.allow_distilled"),
    "dataset.trigger": msg("kohya.ours.trigger", placeholder="{trigger}"),
    "dataset.repeats": msg("kohya.ours.repeats"),
    "lora.targets": msg("kohya.ours.targets"),
    "dataset.unmasked_weight": msg("kohya.ours.unmasked_weight"),
    "lora.conv_blocks": msg("kohya.ours.conv_blocks"),
    "lora.trigger_embedding": _NOT_IN_TRAIN_NETWORK, "optim.embedding_lr": _NOT_IN_TRAIN_NETWORK,
    "optim.weight_decay": _IN_OPTIMIZER_ARGS, "optim.beta1": _IN_OPTIMIZER_ARGS,
    "optim.beta2": _IN_OPTIMIZER_ARGS, "optim.eps": _IN_OPTIMIZER_ARGS,
    "save.keep_last": msg("kohya.ours.keep_last"),
    "sample.negative_prompt": msg("kohya.ours.prompt_flag", flag="--n"),
    "sample.seed": msg("kohya.ours.prompt_flag", flag="--d"),
    "sample.steps": msg("kohya.ours.prompt_flag", flag="--s"),
    "sample.guidance": msg("kohya.ours.prompt_flag", flag="--l"),
    "sample.enabled": msg("kohya.ours.sample_enabled"),
}
SUBSET_KEYS = ("model.family", "dataset.path", "dataset.reg_path")  # written as the script and the subsets
SECTION_NOTES = {
    "ema": msg("kohya.section.ema"),
    "guard": msg("kohya.section.guard"),
    "dose": msg("kohya.section.dose"),
    "train": msg("kohya.section.train"),
}


def load_source(path: str | Path) -> Config:
    """A config file, or a run folder (its resolved config.toml)."""
    p = Path(path)
    if p.is_dir():
        if not (p / "config.toml").is_file():
            raise UserError(msg("error.kohya.export_no_config", path=p))
        p = p / "config.toml"
    return load_config(p)


def to_kohya(cfg: Config, out_dir: Path) -> tuple[dict[str, Any], dict[str, Any], list[str], Report]:
    """(sd-scripts arguments, dataset config, prompt lines, report). A family sd-scripts does not train is one
    UserError."""
    sd_script(cfg)
    rep = Report(source="LoRA Doctor config", kind="export")
    done: set[str] = set()
    args: dict[str, Any] = {}
    general: dict[str, Any] = {}
    ds: dict[str, Any] = {}

    def put(ours: str, target: dict[str, Any], key: str, value: Any, note: Msg | None = None) -> None:
        if value is not None:
            target[key] = value
        (rep.changed(ours, cfg.get(ours), key, value, note) if note else rep.mapped(ours, cfg.get(ours), key, value))
        done.add(ours)

    _low_memory(cfg, args, rep)  # fp8_base's row maps one way only
    done |= {"model.base_quant", "model.block_swap"}
    for row in ROWS:
        if not row.supported or row.special or not row.sd or row.ours in done or row.ours in SUBSET_KEYS:
            continue
        key = "batch_size" if row.sd == "train_batch_size" else row.sd
        put(row.ours, _level(row, args, ds, general), key, row.to_kohya(cfg.get(row.ours)))
    args["train_batch_size"] = cfg.train.batch_size
    chosen = chosen_family(cfg.model.family)
    args["network_module"] = chosen.kohya_network_module if chosen else "networks.lora"
    if cfg.lora.conv_rank:
        args["network_args"] = [f"conv_dim={cfg.lora.conv_rank}", f"conv_alpha={cfg.lora.effective_conv_alpha:g}"]
    for ours, value in (("lora.conv_rank", cfg.lora.conv_rank), ("lora.conv_alpha", cfg.lora.effective_conv_alpha)):
        put(ours, {}, f"network_args {ours.split('_')[-1].replace('rank', 'dim')}", value if cfg.lora.conv_rank else None)
    if chosen and chosen.name == "sd3":
        from trainer.kohya.sd3_export import sd3_args

        sd3_args(cfg, args, rep)
    elif chosen and chosen.name == "flux":
        from trainer.kohya.flux_export import flux_args

        flux_args(cfg, args, rep)
    _text_cache(cfg, args, rep)
    args["unet_lr"] = cfg.optim.lr
    opt_args = [f"weight_decay={cfg.optim.weight_decay:g}", f"betas={cfg.optim.beta1:g},{cfg.optim.beta2:g}"]
    opt_args += ([f"eps={cfg.optim.eps:g}"] if cfg.optim.optimizer != "prodigy" else
                 ["use_bias_correction=True", "safeguard_warmup=True"])
    args["optimizer_args"] = opt_args
    put("optim.warmup_steps", args, "lr_warmup_steps", cfg.optim.warmup_steps)
    put("optim.num_cycles", args, "lr_scheduler_num_cycles", cfg.optim.num_cycles)
    if cfg.train.max_steps:
        put("train.max_steps", args, "max_train_steps", cfg.train.max_steps)
        rep.unsupported("train.epochs", cfg.train.epochs, msg("kohya.export.max_steps"))
    else:
        put("train.epochs", args, "max_train_epochs", cfg.train.epochs)
        rep.mapped("train.max_steps", 0, "max_train_epochs", cfg.train.epochs)
    done |= {"train.epochs", "train.max_steps"}
    put("train.precision", args, "mixed_precision", {"fp32": "no"}.get(cfg.train.precision, cfg.train.precision))
    args["save_precision"] = "fp16"
    args["save_model_as"] = "safetensors"
    put("save.every_steps", args, "save_every_n_steps", cfg.save.every_steps or None)
    prompts = _prompt_lines(cfg)
    if cfg.sample.enabled and prompts:
        args["sample_prompts"] = str(out_dir / "sample_prompts.txt")
        args["sample_every_n_steps"] = cfg.sample.every_steps or cfg.save.every_steps or None
    put("sample.prompts", args, "sample_prompts", args.get("sample_prompts"))
    put("sample.every_steps", args, "sample_every_n_steps", args.get("sample_every_n_steps"))
    ds["subsets"] = _subsets(cfg, rep)
    args["dataset_config"] = str(out_dir / "dataset_config.toml")
    done |= {"dataset.path", "dataset.reg_path"}
    script = kohya_script(cfg)
    put("model.family", args, "(script)", None, msg("kohya.export.script", script=script))
    for key, value in flatten(cfg.to_dict()).items():
        if key in done or key in rep.source_keys():
            continue
        note = OURS_ONLY.get(key) or SECTION_NOTES.get(key.split(".")[0]) or msg("kohya.export.no_setting")
        rep.unsupported(key, value, note)
    return args, {"general": general, "datasets": [ds]}, prompts, rep


SD_SCRIPTS = ("train_network.py", "sdxl_train_network.py", "sd3_train_network.py", "flux_train_network.py")
"""sd-scripts' LoRA training scripts of our families (it has none for Z-Image: musubi-tuner, another tool, trains
it with its own zimage_train_network.py and config files)."""
TEXT_CACHE_SCRIPTS = ("sdxl_train_network.py", "sd3_train_network.py", "flux_train_network.py")
"""sd-scripts' scripts that take cache_text_encoder_outputs."""


def _text_cache(cfg: Config, args: dict[str, Any], rep: Report) -> None:
    """model.offload_text_encoders as sd-scripts' cache_text_encoder_outputs: an SD3 or Flux.1 export sets that
    whenever sd-scripts can cache (trainer.kohya.flow); SDXL's script has it too, SD1.5's ``train_network.py`` not.
    sd-scripts refuses it with caption dropout, which ours encodes as one more caption."""
    key, on = "model.offload_text_encoders", cfg.model.offload_text_encoders
    if "cache_text_encoder_outputs" in args:  # the SD3 or Flux.1 export's own rule set it
        rep.mapped(key, on, "cache_text_encoder_outputs", True)
    elif not on:
        rep.mapped(key, on, "cache_text_encoder_outputs", False)
    elif kohya_script(cfg) not in TEXT_CACHE_SCRIPTS:
        rep.unsupported(key, on, msg("kohya.export.te_cache_script", script=kohya_script(cfg)))
    elif cfg.dataset.caption_dropout > 0:
        rep.changed(key, on, "cache_text_encoder_outputs", False, msg("kohya.export.te_cache_dropout"))
    else:
        args["cache_text_encoder_outputs"] = True
        rep.mapped(key, on, "cache_text_encoder_outputs", True)


BLOCK_SWAP_SCRIPTS = ("sd3_train_network.py", "flux_train_network.py")
"""sd-scripts' scripts whose network trainer swaps blocks (blocks_to_swap)."""


def _low_memory(cfg: Config, args: dict[str, Any], rep: Report) -> None:
    """model.base_quant as fp8_base (int8 and nf4 have no sd-scripts switch: fp8, the nearest, with a note) and
    model.block_swap as blocks_to_swap where the script swaps blocks."""
    quant, n = cfg.model.base_quant, cfg.model.block_swap
    if quant in ("none", "fp8"):
        rep.mapped("model.base_quant", quant, "fp8_base", quant == "fp8")
    else:
        rep.changed("model.base_quant", quant, "fp8_base", True, msg("kohya.changed.base_quant", mode=quant))
    args["fp8_base"] = quant != "none"
    if not n:
        rep.mapped("model.block_swap", n, "blocks_to_swap", None)
    elif kohya_script(cfg) in BLOCK_SWAP_SCRIPTS:
        args["blocks_to_swap"] = n
        rep.mapped("model.block_swap", n, "blocks_to_swap", n)
    else:
        rep.unsupported("model.block_swap", n, msg("kohya.export.block_swap_script", script=kohya_script(cfg)))


def _level(row: Row, args: dict, ds: dict, general: dict) -> dict:
    return {"args": args, "dataset": ds, "subset": general}[row.where]


def _prompt_lines(cfg: Config) -> list[str]:
    from trainer.kohya.flow import FLUX_MODULE
    from trainer.kohya.flux_export import SAMPLE_FLAGS
    from trainer.run.samples import expand_prompts

    # sd-scripts' Flux.1 network: its prompt flags as ours draws FLUX.1-dev (trainer.kohya.flux_export)
    chosen = chosen_family(cfg.model.family)
    flux = chosen is not None and chosen.kohya_network_module == FLUX_MODULE
    guidance = SAMPLE_FLAGS if flux else f"--l {cfg.sample.guidance:g}"
    flags = f" --s {cfg.sample.steps} {guidance} --d {cfg.sample.seed}"
    if cfg.sample.negative_prompt:
        flags += f" --n {cfg.sample.negative_prompt}"
    return [p["prompt"] + flags for p in expand_prompts(cfg.sample.prompts, cfg.dataset.trigger)]


def _subsets(cfg: Config, rep: Report) -> list[dict[str, Any]]:
    """Our dataset folder(s) as sd-scripts subsets: one per N_name folder, plus the folder's own pictures."""
    out: list[dict[str, Any]] = []
    for root, is_reg, key in ((cfg.dataset.path, False, "dataset.path"), (cfg.dataset.reg_path, True, "dataset.reg_path")):
        if not root:
            continue
        base = Path(root).expanduser()
        found: list[dict[str, Any]] = []
        if not base.is_dir():
            rep.changed(key, root, "image_dir", root, msg("kohya.export.no_folder"))
            out.append({"image_dir": root, "num_repeats": cfg.dataset.repeats, **({"is_reg": True} if is_reg else {})})
            continue
        if any(p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES for p in base.iterdir()):
            found.append({"image_dir": str(base), "num_repeats": cfg.dataset.repeats})
        for d in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
            m = KOHYA_FOLDER.match(d.name)
            repeats, words = (int(m.group(1)), m.group(2).strip()) if m else (cfg.dataset.repeats, "")
            if repeats == 0:
                continue
            sub: dict[str, Any] = {"image_dir": str(d), "num_repeats": repeats}
            if words:
                sub["class_tokens"] = words
            found.append(sub)
            if any(p.is_dir() for p in d.iterdir()):
                rep.unsupported(f"{key} {d.name}/…", str(d), msg("kohya.export.nested"))
        for sub in found:
            if is_reg:
                sub["is_reg"] = True
        rep.mapped(key, root, "[[datasets.subsets]] image_dir", [s["image_dir"] for s in found])
        if is_reg:
            rep.changed(key, root, "is_reg", True, msg("kohya.export.reg"))
        out += found
    return out


def export_kohya(source: str | Path, out_dir: str | Path) -> tuple[dict[str, Path], str, Report]:
    """Write ``sd_config.toml``, ``dataset_config.toml``, ``sample_prompts.txt`` and ``command.txt`` into
    ``out_dir``; return the files, the command line and the report."""
    cfg = load_source(source)
    sd_script(cfg)
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise UserError(msg("error.kohya.export_out_file", out=out))
    out.mkdir(parents=True, exist_ok=True)
    args, dataset, prompts, rep = to_kohya(cfg, out)
    rep.source = str(source)
    files = {"config": out / "sd_config.toml", "dataset": out / "dataset_config.toml", "command": out / "command.txt"}
    atomic_write_text(files["config"], dumps_toml(args))
    atomic_write_text(files["dataset"], dumps_toml({k: v for k, v in dataset.items() if v}))
    if "sample_prompts" in args:
        files["prompts"] = out / "sample_prompts.txt"
        atomic_write_text(files["prompts"], "\n".join(prompts) + "\n")
    script = kohya_script(cfg)
    command = f"accelerate launch {script} --config_file {shlex.quote(str(files['config']))}"
    atomic_write_text(files["command"], command + "\n")
    return files, command, rep


def kohya_script(cfg: Config) -> str:
    """sd-scripts' training script for the config's family ("auto" trains with train_network.py, as sd-scripts'
    default)."""
    chosen = chosen_family(cfg.model.family)
    return chosen.kohya_script if chosen else "train_network.py"


def sd_script(cfg: Config) -> str:
    """:func:`kohya_script`, where sd-scripts has it; one UserError saying so where it does not (Z-Image)."""
    script = kohya_script(cfg)
    if script not in SD_SCRIPTS:
        chosen = chosen_family(cfg.model.family)
        raise UserError(msg("error.kohya.export_no_script", family=chosen.label if chosen else cfg.model.family,
                            script=script))
    return script
