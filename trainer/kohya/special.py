"""The kohya settings that only make sense together: the network type and its arguments, learning rates,
epochs and steps, precision, warmup, sample prompts, and the step count compared with our plan (the dataset is
:mod:`trainer.kohya.subsets`). Each function reads from and writes to one :class:`~trainer.kohya.importer.Importer`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.errors import UserError
from trainer.kohya import flux, sd3
from trainer.kohya.flow import FLUX_MODULE, SD3_MODULE, te_cache_gui_key
from trainer.kohya.mapping import LOCON_TYPES, as_bool, as_int, is_neutral
from trainer.kohya.steps import BucketRules, KohyaCount, Subset, compare, count
from trainer.message import msg

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.kohya.importer import Importer


# ------------------------------------------------------------------------------------------------ network


def network(imp: Importer) -> None:
    """LoRA_type / network_module and network_args decide whether conv_dim counts (never for a family whose
    denoiser has no convolutions, as SD3.5's and Flux.1's transformers)."""
    from trainer.models.family import chosen_family

    locon = False
    family = chosen_family(imp.values.get("model.family", "auto"))  # only SD3 and Flux.1 are known this early
    no_conv = family is not None and not family.conv_lora
    if imp.kind == "gui":
        kind = str(imp.get("LoRA_type", "Standard"))
        locon = kind in LOCON_TYPES
        if kind not in ("Standard", "Flux1", *LOCON_TYPES):
            imp.report.changed("LoRA_type", kind, "lora", "LoRA", msg("kohya.network.lora_type", kind=kind))
        elif "LoRA_type" in imp.src:
            imp.report.mapped("LoRA_type", kind, "lora.conv_rank", "> 0" if locon and not no_conv else "0")
        args = {"conv_dim": imp.get("conv_dim"), "conv_alpha": imp.get("conv_alpha")}
    else:
        module = str(imp.get("network_module", "networks.lora"))
        args = _kv(imp.get("network_args"))
        own_args = {SD3_MODULE: sd3.network_args, FLUX_MODULE: flux.network_args}.get(module)
        own = own_args(imp, args) if own_args else set()  # it reported the module too
        locon = module == "networks.lora" or args.get("algo", "locon").strip('"') == "locon"
        if module not in ("networks.lora", "lycoris.kohya", SD3_MODULE, FLUX_MODULE) or not locon:
            imp.report.changed("network_module", f"{module} {args.get('algo', '')}".strip(), "lora", "LoRA",
                               msg("kohya.network.module"))
        elif "network_module" in imp.src and not own:
            imp.report.mapped("network_module", module, "lora", "LoRA")
        for k, v in args.items():
            if k not in ("conv_dim", "conv_alpha", "algo", *own):
                imp.report.unsupported(f"network_args {k}", v, msg("kohya.not_offered"))
    for key, ours, conv in (("conv_dim", "lora.conv_rank", int), ("conv_alpha", "lora.conv_alpha", float)):
        raw = args.get(key)
        if raw in (None, ""):
            continue
        value = conv(float(str(raw).strip('"')))
        src_key = key if imp.kind == "gui" else f"network_args {key}"
        if locon and not no_conv:
            imp.values[ours] = value
            imp.report.mapped(src_key, raw, ours, value)
        elif value:
            imp.report.unsupported(src_key, raw, msg("kohya.network.family_no_conv", family=family.label)
                                   if no_conv and family else msg("kohya.network.no_conv"))
    imp.done |= {"LoRA_type", "network_module", "network_args", "conv_dim", "conv_alpha"}


def _kv(v: Any) -> dict[str, str]:
    """sd-scripts' ``key=value`` argument lists (a list in TOML, one string in the GUI)."""
    items = v if isinstance(v, list) else str(v or "").split()
    return {k.strip(): val.strip() for k, _, val in (str(i).partition("=") for i in items) if k.strip()}


# ----------------------------------------------------------------------------------------------- training


def training(imp: Importer) -> None:
    _lr(imp)
    _optimizer_args(imp)
    _precision(imp)
    _epochs(imp)
    _prompts(imp)
    if imp.kind == "gui" and str(imp.get("noise_offset_type", "Original")) != "Original":
        imp.report.unsupported("noise_offset", imp.get("noise_offset"),
                               msg("kohya.noise_offset_type", kind=imp.get("noise_offset_type")))
        imp.done |= {"noise_offset"}


def text_cache(imp: Importer) -> None:
    """kohya's cache_text_encoder_outputs (encode every caption once, the text encoders then off the GPU) is our
    model.offload_text_encoders, once the rest is read: it needs frozen text encoders and captions that do not
    change, and a config that trains one or shuffles tags keeps it off, saying why. The kohya_ss GUI saves one box
    for SDXL, one for SD3 and one for Flux.1 and passes the one of the config's family."""
    from trainer.kohya.importer import build_config

    key = "cache_text_encoder_outputs"
    if imp.kind == "gui":
        key, other = te_cache_gui_key(imp.src), "sdxl_" + key
        if other != key and other in imp.src and other not in imp.done:
            imp.report.unsupported(other, imp.src[other], msg("kohya.row.te_cache_other", key=key))
            imp.done.add(other)
    row = imp.row_for(key)
    if key in imp.src and key not in imp.done and row is not None:
        raw = imp.src[key]
        try:
            on = as_bool(raw)
        except ValueError as e:
            raise UserError(msg("error.kohya.bad_value", origin=imp.origin, key=key, value=raw, reason=str(e))) from None
        try:
            blocking = build_config(imp).offload_blockers() if on else []
        except UserError:
            blocking = []  # the config is refused anyway, by the key that makes it so
        if blocking:
            imp.report.changed(key, raw, "model.offload_text_encoders", False,
                               msg("kohya.changed.te_cache", keys=", ".join(blocking)))
            imp.values["model.offload_text_encoders"] = False
            imp.done.add(key)
        else:
            imp.put(key, on, row, raw)


def _lr(imp: Importer) -> None:
    from trainer.kohya.mapping import BY_GUI

    row = BY_GUI["learning_rate"]
    if "learning_rate" in imp.src:
        imp.put("learning_rate", None, row, imp.src["learning_rate"])
    unet = imp.get("unet_lr")
    if not is_neutral(unet):
        imp.put("unet_lr", None, row, unet)
    elif "unet_lr" in imp.src:
        imp.report.mapped("unet_lr", unet, "optim.lr", imp.values.get("optim.lr"))
    imp.done |= {"learning_rate", "unet_lr"}


def _optimizer_args(imp: Importer) -> None:
    args = _kv(imp.get("optimizer_args"))
    if str(imp.get("optimizer", imp.get("optimizer_type", ""))).lower() == "prodigy" and "weight_decay" not in args:
        args["weight_decay"] = "0"  # Prodigy's own default; ours would otherwise add AdamW's 0.01
    always_on = ("use_bias_correction", "safeguard_warmup")
    simple = {"weight_decay": "optim.weight_decay", "eps": "optim.eps"}
    for k, v in args.items():
        try:
            if k in simple:
                imp.values[simple[k]] = float(v)
                imp.report.mapped(f"optimizer_args {k}", v, simple[k], float(v))
            elif k == "betas":
                b1, b2 = (float(x) for x in v.strip("()[]").split(","))
                imp.values["optim.beta1"], imp.values["optim.beta2"] = b1, b2
                imp.report.mapped("optimizer_args betas", v, "optim.beta1, optim.beta2", [b1, b2])
            elif k in always_on:
                imp.report.unsupported(f"optimizer_args {k}", v, msg("kohya.optimizer_args.always_on"))
            else:
                imp.report.unsupported(f"optimizer_args {k}", v, msg("kohya.optimizer_args.default"))
        except ValueError:
            raise UserError(msg("error.kohya.optimizer_arg", origin=imp.origin, key=k, value=v)) from None
    imp.done.add("optimizer_args")


def _precision(imp: Importer) -> None:
    raw = str(imp.get("mixed_precision", "no") or "no").lower()
    if raw not in ("no", "fp16", "bf16"):
        raise UserError(msg("error.kohya.precision", origin=imp.origin, value=raw))
    if "mixed_precision" not in imp.src:
        return
    bf16 = imp.bf16
    if bf16 is None:
        from trainer.models.precision import bf16_supported, resolve_device

        bf16 = bf16_supported(resolve_device("auto"))
    if raw == "no":
        imp.values["train.precision"] = "fp32"
        imp.report.mapped("mixed_precision", raw, "train.precision", "fp32")
    elif raw == "fp16" and bf16:
        imp.values["train.precision"] = "bf16"
        imp.report.changed("mixed_precision", raw, "train.precision", "bf16", msg("kohya.precision.bf16"))
    else:
        imp.values["train.precision"] = raw
        imp.report.mapped("mixed_precision", raw, "train.precision", raw)
    imp.done.add("mixed_precision")


def _epochs(imp: Importer) -> None:
    max_epochs = _int(imp.get("max_train_epochs"))
    max_steps = _int(imp.get("max_train_steps"))
    if imp.kind == "gui" and "epoch" in imp.src:
        imp.values["train.epochs"] = max(1, _int(imp.src["epoch"]))
        imp.report.mapped("epoch", imp.src["epoch"], "train.epochs", imp.values["train.epochs"])
    if max_epochs > 0:
        imp.values["train.epochs"] = max_epochs
        imp.report.mapped("max_train_epochs", imp.src["max_train_epochs"], "train.epochs", max_epochs)
        if max_steps and "max_train_steps" in imp.src:
            imp.report.unsupported("max_train_steps", imp.src["max_train_steps"], msg("kohya.epochs.win"))
    else:
        if "max_train_steps" in imp.src:
            imp.values["train.max_steps"] = max_steps
            imp.report.mapped("max_train_steps", imp.src["max_train_steps"], "train.max_steps", max_steps,
                              None if max_steps else msg("kohya.epochs.steps_zero"))
        if "max_train_epochs" in imp.src:
            imp.report.mapped("max_train_epochs", imp.src["max_train_epochs"], "train.epochs",
                              imp.values.get("train.epochs", 10), msg("kohya.epochs.empty"))
    cycles = imp.get("lr_scheduler_num_cycles")
    if cycles in ("", None) and imp.kind == "gui" and "lr_scheduler_num_cycles" in imp.src:
        value = imp.values.get("train.epochs", 1)
        imp.values["optim.num_cycles"] = min(value, 100)
        imp.report.changed("lr_scheduler_num_cycles", cycles, "optim.num_cycles", min(value, 100),
                           msg("kohya.epochs.cycles"))
    elif cycles not in ("", None):
        imp.values["optim.num_cycles"] = _int(cycles)
        imp.report.mapped("lr_scheduler_num_cycles", cycles, "optim.num_cycles", _int(cycles))
    imp.done |= {"epoch", "max_train_epochs", "max_train_steps", "lr_scheduler_num_cycles"}


def _int(v: Any) -> int:
    return 0 if is_neutral(v) or v is None else as_int(v)


def parse_prompts(text: str) -> list[dict[str, Any]]:
    """sd-scripts' prompt lines: the prompt, then `` --n negative``, ``--w``, ``--h``, ``--d`` seed, ``--s``
    steps, ``--l`` guidance, ... (lines starting with # are comments)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        prompt, *flags = line.split(" --")
        parsed = {"prompt": prompt.strip()}
        for f in flags:
            name, _, value = f.strip().partition(" ")
            parsed[name.lower()] = value.strip()
        out.append(parsed)
    return out


PROMPT_FLAGS = {"n": ("sample.negative_prompt", str), "s": ("sample.steps", int), "l": ("sample.guidance", float),
                "d": ("sample.seed", int)}


def _prompts(imp: Importer) -> None:
    raw = imp.get("sample_prompts")
    if "sample_prompts" not in imp.src or is_neutral(raw):
        return
    text = str(raw)
    if imp.kind == "sd":  # sd-scripts takes a file
        p = Path(text)
        if not imp.follow_paths or p.suffix.lower() != ".txt" or not p.is_file():
            imp.report.unsupported("sample_prompts", raw, msg("kohya.prompts.no_file"))
            imp.done.add("sample_prompts")
            return
        text = p.read_text(encoding="utf-8-sig")
    prompts = parse_prompts(text)
    imp.values["sample.prompts"] = [p["prompt"] for p in prompts]
    imp.report.mapped("sample_prompts", raw, "sample.prompts", imp.values["sample.prompts"])
    for flag in sorted({k for p in prompts for k in p if k != "prompt"}):
        values = {p.get(flag) for p in prompts}
        if flag in PROMPT_FLAGS and len(values) == 1:
            ours, conv = PROMPT_FLAGS[flag]
            try:
                imp.values[ours] = conv(values.pop())
            except ValueError:
                raise UserError(msg("error.kohya.prompt_number", origin=imp.origin, flag=flag)) from None
            imp.report.mapped(f"sample_prompts --{flag}", imp.values[ours], ours, imp.values[ours])
        else:
            why = (msg("kohya.prompts.lines_differ") if flag in PROMPT_FLAGS
                   else msg("kohya.prompts.size") if flag in ("w", "h") else msg("kohya.not_offered"))
            imp.report.unsupported(f"sample_prompts --{flag}", sorted(str(v) for v in values), why)
    imp.done.add("sample_prompts")


# ------------------------------------------------------------------------------------------------- steps


def steps(imp: Importer, subsets: list[Subset], compare: bool = True) -> KohyaCount | None:
    """kohya's count, and the settings that need it: warmup as a share, saving and sampling every N epochs."""
    kohya = None
    if compare and any(s.images() for s in subsets if not s.is_reg):
        res = imp.get("max_resolution") if imp.kind == "gui" else imp.get("resolution")
        w, h = _sides(res, imp.values.get("dataset.resolution", 512))
        rules = BucketRules(w, h, bool(imp.values.get("dataset.buckets", False)),
                            int(imp.values.get("dataset.min_bucket_side", 256)),
                            int(imp.values.get("dataset.max_bucket_side", 1024)),
                            int(imp.values.get("dataset.bucket_step", 64)), as_bool(imp.get("bucket_no_upscale", False)))
        # the GUI's own formula decides unless sd-scripts counts (max_train_epochs, or a dataset config)
        gui = imp.kind == "gui" and not _int(imp.get("max_train_epochs")) and not imp.dataset_config
        gui_dir = str(imp.values.get("dataset.path", "")) if gui else None
        kohya = count(subsets, batch=int(imp.values.get("train.batch_size", 1)),
                      accum=int(imp.values.get("train.grad_accum", 1)), epochs=int(imp.values.get("train.epochs", 1)),
                      rules=rules, max_train_steps=int(imp.values.get("train.max_steps", 0)), gui_train_dir=gui_dir)
    total = kohya.total if kohya else int(imp.values.get("train.max_steps", 0))
    per_epoch = kohya.steps_per_epoch if kohya else 0
    _warmup(imp, total)
    for key, ours in (("save_every_n_epochs", "save.every_steps"), ("sample_every_n_epochs", "sample.every_steps")):
        n = _int(imp.get(key))
        if n and per_epoch:
            imp.values[ours] = n * per_epoch
            imp.report.changed(key, imp.src[key], ours, n * per_epoch,
                               msg("kohya.every.epochs", n=n, per_epoch=per_epoch))
        elif n:
            imp.report.unsupported(key, imp.src[key], msg("kohya.every.no_count"))
        elif key in imp.src:
            imp.report.unsupported(key, imp.src[key], msg("kohya.off"))
        imp.done.add(key)
    return kohya


def _sides(res: Any, fallback: int) -> tuple[int, int]:
    try:
        parts = [as_int(x) for x in (res if isinstance(res, list) else str(res).split(",")) if str(x).strip()]
    except (ValueError, TypeError):
        parts = []
    return (parts[0], parts[-1]) if parts else (fallback, fallback)


def _warmup(imp: Importer, total: int) -> None:
    steps_raw, pct_raw = imp.get("lr_warmup_steps"), imp.get("lr_warmup")
    steps_v = 0.0 if is_neutral(steps_raw) or steps_raw is None else float(steps_raw)
    pct = 0.0 if is_neutral(pct_raw) or pct_raw is None else float(pct_raw)
    imp.done |= {"lr_warmup_steps", "lr_warmup"}
    if steps_v >= 1:
        imp.values["optim.warmup_steps"] = int(steps_v)
        imp.report.mapped("lr_warmup_steps", steps_raw, "optim.warmup_steps", int(steps_v))
        if pct:
            imp.report.unsupported("lr_warmup", pct_raw, msg("kohya.warmup.steps_win"))
        return
    share, key, raw = (steps_v, "lr_warmup_steps", steps_raw) if steps_v > 0 else (pct / 100, "lr_warmup", pct_raw)
    if key == "lr_warmup" and pct and "lr_warmup_steps" in imp.src:
        imp.report.mapped("lr_warmup_steps", steps_raw, "optim.warmup_steps", None, msg("kohya.warmup.percent_decides"))
    if share <= 0:
        for k in ("lr_warmup_steps", "lr_warmup"):
            if k in imp.src:
                imp.values["optim.warmup_steps"] = 0
                imp.report.mapped(k, imp.src[k], "optim.warmup_steps", 0)
        return
    if total:
        n = round(share * total)
        imp.values["optim.warmup_steps"] = n
        imp.report.changed(key, raw, "optim.warmup_steps", n, msg("kohya.warmup.share", share=share, total=total))
    else:
        imp.report.unsupported(key, raw, msg("kohya.warmup.no_count"))


def compare_plan(imp: Importer, cfg: Config, kohya: KohyaCount) -> None:
    """Our plan on the same folders, against kohya's count, with each cause of a difference."""
    from trainer.plan.steps import plan_from_config

    try:
        report, plan = plan_from_config(cfg)
    except UserError as e:
        imp.report.steps = {"note": msg("kohya.steps.unplanned", formula=kohya.formula, error=e.msg)}
        return
    diffs = compare(kohya, report, plan)
    imp.report.steps = {"kohya_total": kohya.total, "ours_total": plan.total_steps, "match": kohya.total == plan.total_steps,
                        "kohya_formula": kohya.formula, "ours_formula": plan.formula, "kohya": kohya.to_json(),
                        "differences": diffs}
    if kohya.total != plan.total_steps and not diffs:
        diffs.append(msg("kohya.steps.unexplained"))
