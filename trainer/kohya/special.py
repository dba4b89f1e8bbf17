"""The kohya settings that only make sense together: the dataset (folders or a dataset config), the network
type and its arguments, learning rates, epochs and steps, precision, warmup, sample prompts, and the step
count compared with our plan. Each function reads from and writes to one :class:`~trainer.kohya.importer.Importer`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.errors import UserError
from trainer.kohya.mapping import BY_SD, LOCON_TYPES, as_bool, as_int, is_neutral
from trainer.kohya.steps import BucketRules, KohyaCount, Subset, compare, count, subsets_from_folders

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.kohya.importer import Importer

DATASET_ALIASES = {"batch_size": "train_batch_size"}  # dataset-config name → argument name
SUBSET_FIELDS = {"image_dir", "num_repeats", "is_reg", "class_tokens"}


# ------------------------------------------------------------------------------------------------ dataset


def dataset(imp: Importer, cfg: dict[str, Any] | None, origin: str) -> list[Subset]:
    """Our dataset.path / reg_path / repeats and the dataset-level settings; the subsets sd-scripts reads."""
    if cfg is None:
        if not imp.follow_paths:
            return []
        subsets = subsets_from_folders(str(imp.get("train_data_dir") or ""), str(imp.get("reg_data_dir") or ""))
        _trigger(imp, [s for s in subsets if not s.is_reg])
        return subsets
    for key in ("train_data_dir", "reg_data_dir"):
        if key in imp.src:
            imp.report.unsupported(key, imp.src[key], "sd-scripts ignores it when a dataset config is given",
                                   "데이터셋 설정이 있으면 sd-scripts는 이것을 무시함")
            imp.done.add(key)
    imp.dataset_config = origin
    general = cfg.get("general", {})
    datasets = cfg["datasets"]
    for n, extra in enumerate(datasets[1:], start=1):
        imp.report.unsupported(f"{origin} [[datasets]] #{n + 1}", [s["image_dir"] for s in extra["subsets"]],
                               "ours trains one dataset; only the first was read",
                               "우리는 데이터셋 하나만 학습. 첫 번째만 읽음")
    ds = datasets[0]
    subs = [Subset(str(s["image_dir"]), as_int(_chain("num_repeats", s, ds, general, {}, 1)),
                   as_bool(s.get("is_reg", False)), str(_chain("class_tokens", s, ds, general, {}, "") or ""))
            for s in ds["subsets"]]
    for key, row in BY_SD.items():  # dataset- and subset-level settings: subset > dataset > general > arguments
        if row.where == "args" or (not row.supported and not _anywhere(key, ds, general)):
            continue
        name = next((a for a, b in DATASET_ALIASES.items() if b == key), key)
        values = [_chain(name, s, ds, general, imp.src, None) for s in ds["subsets"] if not s.get("is_reg")]
        values = [v for v in values if v is not None] or [_chain(name, {}, ds, general, imp.src, None)]
        if values[0] is None:
            continue
        if not row.supported:
            imp.report.unsupported(name, values[0], *row.note)
        else:
            imp.put(key, None, row, values[0], src_key=f"{name} (dataset config)")
            if len({repr(v) for v in values}) > 1:
                imp.report.unsupported(name, values, "the subsets differ; ours has one value: the first was taken",
                                       "subset마다 값이 다름. 우리는 값이 하나라 첫 번째를 씀")
        imp.done.add(key)
        imp.done.add(name)
    for kind_reg, ours in ((False, "dataset.path"), (True, "dataset.reg_path")):
        group = [s for s in subs if s.is_reg == kind_reg]
        if group:
            _folders(imp, group, ours, origin)
    _trigger(imp, [s for s in subs if not s.is_reg])
    return subs


def _chain(key: str, subset: dict, ds: dict, general: dict, args: dict, default: Any) -> Any:
    for level in (subset, ds, general, args):
        if key in level:
            return level[key]
    return default


def _anywhere(key: str, ds: dict, general: dict) -> bool:
    return key in general or key in ds or any(key in s for s in ds["subsets"])


def _folders(imp: Importer, group: list[Subset], ours: str, origin: str) -> None:
    """Subsets → one folder of ``N_name`` folders (ours reads repeats and class words from the names)."""
    dirs = [Path(s.image_dir) for s in group]
    direct = len(group) == 1 and (not imp.follow_paths or not dirs[0].is_dir()
                                  or any(p.is_file() for p in dirs[0].iterdir()))
    if direct and not re.match(r"^\d+_", dirs[0].name):
        imp.values[ours] = str(dirs[0])
        imp.report.mapped(f"image_dir ({origin})", str(dirs[0]), ours, str(dirs[0]))
        if ours == "dataset.path":
            imp.values["dataset.repeats"] = group[0].num_repeats
            imp.report.mapped("num_repeats (dataset config)", group[0].num_repeats, "dataset.repeats", group[0].num_repeats)
        return
    parent = dirs[0].parent
    imp.values[ours] = str(parent)
    imp.report.changed(f"image_dir ({origin})", [str(d) for d in dirs], ours, str(parent),
                       "ours reads one folder of N_name folders: their parent", "우리는 N_이름 폴더들을 담은 폴더 하나를 읽음: 그 상위 폴더")
    for s, d in zip(group, dirs, strict=True):
        if d.parent != parent:
            imp.report.unsupported(f"image_dir {d}", str(d), f"not in {parent}; move it there to train it",
                                   f"{parent} 안에 없음. 학습하려면 그 안으로 옮기세요")
            continue
        head, _, words = d.name.partition("_")
        if not head.isdigit():
            imp.report.changed(f"num_repeats of {d.name}", s.num_repeats, "dataset.repeats", imp.values.get("dataset.repeats", 1),
                               f"ours reads repeats from the folder name; rename it {s.num_repeats}_{d.name}",
                               f"우리는 폴더 이름에서 반복 수를 읽음. 이름을 {s.num_repeats}_{d.name}(으)로 바꾸세요")
        elif int(head) != s.num_repeats:
            imp.report.changed(f"num_repeats of {d.name}", s.num_repeats, ours, int(head),
                               f"ours reads {int(head)} repeats from the folder name; rename it {s.num_repeats}_{words} "
                               "to train it as often as kohya", f"우리는 폴더 이름에서 반복 {int(head)}을 읽음. kohya만큼 "
                               f"학습하려면 이름을 {s.num_repeats}_{words}(으)로 바꾸세요")
        if s.class_tokens and s.class_tokens != words:
            imp.report.unsupported(f"class_tokens of {d.name}", s.class_tokens,
                                   f"ours captions caption-less pictures with the folder's words ({words!r})",
                                   f"우리는 캡션 없는 그림에 폴더 이름의 단어({words!r})를 씀")


def _trigger(imp: Importer, train: list[Subset]) -> None:
    words = next((s.class_tokens.split()[0] for s in train if s.class_tokens.split()), "")
    if words:
        imp.values["dataset.trigger"] = words
        imp.report.changed("class tokens", train[0].class_tokens, "dataset.trigger", words,
                           "kohya has no trigger setting; the first class word is the likeliest trigger",
                           "kohya에는 트리거 설정이 없음. 첫 클래스 단어가 트리거일 가능성이 가장 큼")


# ------------------------------------------------------------------------------------------------ network


def network(imp: Importer) -> None:
    """LoRA_type / network_module and network_args decide whether conv_dim counts."""
    locon = False
    if imp.kind == "gui":
        kind = str(imp.get("LoRA_type", "Standard"))
        locon = kind in LOCON_TYPES
        if kind not in ("Standard", *LOCON_TYPES):
            imp.report.changed("LoRA_type", kind, "lora", "LoRA", f"{kind} is not offered; ours trains LoRA "
                               "(LoCon with lora.conv_rank)", f"{kind}은(는) 없음. 우리는 LoRA(lora.conv_rank로 LoCon)를 학습")
        elif "LoRA_type" in imp.src:
            imp.report.mapped("LoRA_type", kind, "lora.conv_rank", "> 0" if locon else "0")
        args = {"conv_dim": imp.get("conv_dim"), "conv_alpha": imp.get("conv_alpha")}
    else:
        module = str(imp.get("network_module", "networks.lora"))
        args = _kv(imp.get("network_args"))
        locon = module == "networks.lora" or args.get("algo", "locon").strip('"') == "locon"
        if module not in ("networks.lora", "lycoris.kohya") or not locon:
            imp.report.changed("network_module", f"{module} {args.get('algo', '')}".strip(), "lora", "LoRA",
                               "ours trains LoRA (and LoCon)", "우리는 LoRA(와 LoCon)를 학습")
        elif "network_module" in imp.src:
            imp.report.mapped("network_module", module, "lora", "LoRA")
        for k, v in args.items():
            if k not in ("conv_dim", "conv_alpha", "algo"):
                imp.report.unsupported(f"network_args {k}", v, "not offered", "없는 설정")
    for key, ours, conv in (("conv_dim", "lora.conv_rank", int), ("conv_alpha", "lora.conv_alpha", float)):
        raw = args.get(key)
        if raw in (None, ""):
            continue
        value = conv(float(str(raw).strip('"')))
        src_key = key if imp.kind == "gui" else f"network_args {key}"
        if locon:
            imp.values[ours] = value
            imp.report.mapped(src_key, raw, ours, value)
        elif value:
            imp.report.unsupported(src_key, raw, "kohya_ss trains no convolutions for this LoRA_type; neither do we",
                                   "이 LoRA_type에서는 kohya_ss도 합성곱을 학습하지 않음. 우리도 마찬가지")
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
        imp.report.unsupported("noise_offset", imp.get("noise_offset"), f"read only with noise_offset_type Original "
                               f"(here {imp.get('noise_offset_type')})", "noise_offset_type이 Original일 때만 읽음")
        imp.done |= {"noise_offset"}


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
                imp.report.unsupported(f"optimizer_args {k}", v, "ours always turns it on for Prodigy",
                                       "우리는 Prodigy에서 항상 켬")
            else:
                imp.report.unsupported(f"optimizer_args {k}", v, "not offered; ours uses the optimizer's default",
                                       "없는 설정. 옵티마이저 기본값을 씀")
        except ValueError:
            raise UserError(f"{imp.origin}: optimizer_args {k}={v!r}: not a number (betas: two, like 0.9,0.999)") from None
    imp.done.add("optimizer_args")


def _precision(imp: Importer) -> None:
    raw = str(imp.get("mixed_precision", "no") or "no").lower()
    if raw not in ("no", "fp16", "bf16"):
        raise UserError(f"{imp.origin}: mixed_precision = {raw!r}: kohya takes no, fp16 or bf16")
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
        imp.report.changed("mixed_precision", raw, "train.precision", "bf16", "this device has bf16: the same speed, "
                           "the range of fp32, no loss scaler and no overflow", "이 장치는 bf16 지원: 속도는 같고 fp32의 "
                           "범위라 손실 스케일러도 오버플로도 없음")
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
            imp.report.unsupported("max_train_steps", imp.src["max_train_steps"], "max_train_epochs wins, as in sd-scripts",
                                   "sd-scripts처럼 max_train_epochs가 우선")
    else:
        if "max_train_steps" in imp.src:
            imp.values["train.max_steps"] = max_steps
            imp.report.mapped("max_train_steps", imp.src["max_train_steps"], "train.max_steps", max_steps,
                              *(("", "") if max_steps else ("0: epochs decide", "0: 에폭이 정함")))
        if "max_train_epochs" in imp.src:
            imp.report.mapped("max_train_epochs", imp.src["max_train_epochs"], "train.epochs",
                              imp.values.get("train.epochs", 10), "empty: epoch decides", "빈칸: epoch가 정함")
    cycles = imp.get("lr_scheduler_num_cycles")
    if cycles in ("", None) and imp.kind == "gui" and "lr_scheduler_num_cycles" in imp.src:
        value = imp.values.get("train.epochs", 1)
        imp.values["optim.num_cycles"] = min(value, 100)
        imp.report.changed("lr_scheduler_num_cycles", cycles, "optim.num_cycles", min(value, 100),
                           "empty: kohya_ss passes the epochs", "빈칸: kohya_ss는 에폭 수를 넘김")
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
            imp.report.unsupported("sample_prompts", raw, "a .txt prompt file is read; this one is not there or not .txt",
                                   ".txt 프롬프트 파일만 읽음. 이 파일은 없거나 .txt가 아님")
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
                raise UserError(f"{imp.origin}: sample_prompts --{flag}: not a number") from None
            imp.report.mapped(f"sample_prompts --{flag}", imp.values[ours], ours, imp.values[ours])
        else:
            why = ("ours samples every prompt with one value; the lines differ" if flag in PROMPT_FLAGS
                   else "ours samples at the training resolution" if flag in ("w", "h") else "not offered")
            why_ko = ("우리는 모든 프롬프트에 한 값을 씀. 줄마다 다름" if flag in PROMPT_FLAGS
                      else "우리는 학습 해상도로 표본을 그림" if flag in ("w", "h") else "없는 설정")
            imp.report.unsupported(f"sample_prompts --{flag}", sorted(str(v) for v in values), why, why_ko)
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
            imp.report.changed(key, imp.src[key], ours, n * per_epoch, f"{n} epochs × {per_epoch} steps per epoch "
                               "(kohya's count)", f"{n} 에폭 × 에폭당 {per_epoch} 스텝(kohya의 계산)")
        elif n:
            imp.report.unsupported(key, imp.src[key], "needs the dataset folders to count steps per epoch; ours saves "
                                   "at the end only", "에폭당 스텝을 세려면 데이터셋 폴더가 필요. 끝에만 저장함")
        elif key in imp.src:
            imp.report.unsupported(key, imp.src[key], "off", "꺼짐")
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
            imp.report.unsupported("lr_warmup", pct_raw, "lr_warmup_steps wins, as in kohya_ss", "kohya_ss처럼 lr_warmup_steps가 우선")
        return
    share, key, raw = (steps_v, "lr_warmup_steps", steps_raw) if steps_v > 0 else (pct / 100, "lr_warmup", pct_raw)
    if key == "lr_warmup" and pct and "lr_warmup_steps" in imp.src:
        imp.report.mapped("lr_warmup_steps", steps_raw, "optim.warmup_steps", None, "0: lr_warmup (a percentage) decides",
                          "0: lr_warmup(백분율)이 정함")
    if share <= 0:
        for k in ("lr_warmup_steps", "lr_warmup"):
            if k in imp.src:
                imp.values["optim.warmup_steps"] = 0
                imp.report.mapped(k, imp.src[k], "optim.warmup_steps", 0)
        return
    if total:
        n = round(share * total)
        imp.values["optim.warmup_steps"] = n
        imp.report.changed(key, raw, "optim.warmup_steps", n, f"{share:.0%} of kohya's {total} steps",
                           f"kohya의 {total} 스텝 중 {share:.0%}")
    else:
        imp.report.unsupported(key, raw, "a share of the total steps; kohya's total needs the dataset folders, so "
                               "warmup is 0", "전체 스텝의 비율. kohya의 전체 스텝을 세려면 데이터셋 폴더가 필요해 0으로 둠")


def compare_plan(imp: Importer, cfg: Config, kohya: KohyaCount) -> None:
    """Our plan on the same folders, against kohya's count, with each cause of a difference."""
    from trainer.plan.steps import plan_from_config

    try:
        report, plan = plan_from_config(cfg)
    except UserError as e:
        imp.report.steps = {"note": {"en": f"kohya's count: {kohya.formula}; ours could not be planned: {e}",
                                     "ko": f"kohya의 계산: {kohya.formula}. 우리 계획은 만들 수 없음: {e}"}}
        return
    diffs = compare(kohya, report, plan)
    imp.report.steps = {"kohya_total": kohya.total, "ours_total": plan.total_steps, "match": kohya.total == plan.total_steps,
                        "kohya_formula": kohya.formula, "ours_formula": plan.formula, "kohya": kohya.to_json(),
                        "differences": diffs}
    if kohya.total != plan.total_steps and not diffs:
        diffs.append({"en": "the counts differ though the pictures, repeats and buckets agree",
                      "ko": "그림, 반복, 버킷이 같은데도 스텝 수가 다름"})
