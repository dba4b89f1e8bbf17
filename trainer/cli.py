"""Headless CLI: ``python -m trainer {plan,check-dataset,tiny-model,train,diagnose,measure,import-kohya,export-kohya,
caption,tiny-captioner} ...``.

Exit codes (docs/design.md, "The command line"): 0 finished, 2 bad input (one line naming the key or file),
3 stopped by the numerics guard (diagnosis written), 130 stopped by the user; 1 a run that failed after it
started.
"""

from __future__ import annotations

import argparse
import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import words
from trainer.errors import UserError
from trainer.message import msg
from trainer.models.family import FAMILIES

EXIT_OK, EXIT_BAD_INPUT, EXIT_GUARD, EXIT_USER_STOP = 0, 2, 3, 130


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of processes from 1 to 1024")
    return n


def _print_json(obj) -> None:
    """Messages in it come out worded in both languages: ``{"en": …, "ko": …}``."""
    print(json.dumps(words.worded(obj), indent=2, ensure_ascii=False))


def cmd_plan(args) -> int:
    from trainer.config.schema import load_config
    from trainer.models.distilled import distillation_check
    from trainer.plan.steps import plan_from_config

    cfg = load_config(args.config, args.set)
    report, plan = plan_from_config(cfg, args.processes)
    base = distillation_check(cfg.model)  # what Start will say of the base, from its configs
    memory, fit = _memory(cfg, report, plan, args.fit_memory, args.device)
    if args.json:
        _print_json({**plan.to_json(), "base": base.to_json(), "memory": memory.to_json(),
                     **({"memory_fit": fit.to_json()} if fit else {})})
        return EXIT_OK
    lang = args.lang
    print(words.say(plan.formula, lang))
    print(f"steps per epoch: {plan.steps_per_epoch}   total steps: {plan.total_steps}")
    mean = f", lr × {plan.schedule_mean:.2f} on average under the schedule" if plan.scheduled else ""
    print(f"dose (lr × steps × alpha/rank{mean}) = {plan.dose:.4g}  zone: {plan.dose_zone} "
          f"(fit {plan.dose_low:g}–{plan.dose_high:g})")
    print(f"checkpoints at: {plan.checkpoint_steps}")
    for p in report.problems:
        print(f"  [{p['severity']}] {p['file']}: {words.say(p['message'])}")
    print(words.say("base.heading", lang), cfg.model.base)
    print("\n".join(f"  - {words.say(m, lang)}" for m in base.messages) or f"  {words.say('base.fine', lang)}")
    print(words.say("memory.heading", lang))
    print(_memory_text(memory, lang, said=base.messages))
    if fit is not None:
        print(f"fit to {fit.budget:,} bytes: {words.say(fit.message, lang)}")
        for c in fit.changes:
            print(f"  --set {c['key']}={c['new']}   ({c['old']} → {c['new']}: {words.say(c['why'], lang)})")
        if fit.steps_note:
            print(f"  {words.say(fit.steps_note, lang)}")
    return EXIT_OK


def _memory_text(memory, lang: str, said: list | None = None) -> str:
    """The memory estimate as plain lines: each part (by phase when the text encoders leave the device after
    encoding), the total, the device's free memory and the verdict, then what to know about it (less what was
    ``said`` already: the base's check gives FLUX.1-dev's note too)."""
    from trainer.plan.memory import gib

    def rows(parts: dict[str, int], indent: str) -> list[str]:
        return [f"{indent}{words.say(f'memory.part.{k}', lang):<{40 - len(indent)}} {gib(v):>9}"
                for k, v in parts.items() if v]

    if memory.encode:
        lines = []
        for phase, parts in (("encode", memory.encode), ("train", memory.parts)):
            lines += [f"  {words.say(f'memory.phase.{phase}', lang)}", *rows(parts, "    ")]
            lines.append(f"    {words.say('memory.phase.total', lang):<36} {gib(sum(parts.values())):>9}")
        lines.append(f"  {words.say(f'memory.peak.{memory.phase}', lang):<38} {gib(memory.total):>9}")
    else:
        lines = rows(memory.parts, "  ")
        lines.append(f"  {words.say('memory.total', lang):<38} {gib(memory.total):>9}")
    free = gib(memory.free) if memory.free is not None else "?"
    lines.append(f"  {memory.device}: {free} free → {words.say(f'memory.verdict.{memory.verdict}', lang)}")
    lines += [f"  - {words.say(n, lang)}" for n in (*memory.notes, *memory.warnings) if n not in (said or [])]
    return "\n".join(lines)


def _memory(cfg, report, plan, fit_memory: str | None, device_kind: str | None = None):
    """The memory plan of the run's largest bucket, and with ``--fit-memory`` the changes that fit the budget;
    ``device_kind``: plan for that kind of device, here or not (a GPU that is not here has bf16 and unknown free
    memory)."""
    import torch

    from trainer.plan.memory import estimate_memory
    from trainer.plan.memory_fit import fit_to_memory, parse_bytes

    device, bf16 = None, None
    free: int | None = -1
    if device_kind:
        device = torch.device(device_kind)
        if device_kind == "cuda" and not torch.cuda.is_available():
            bf16, free = True, None
    memory = estimate_memory(cfg, plan.per_bucket, device, free=free, device_name=device_kind, bf16=bf16)
    fit = (fit_to_memory(cfg, parse_bytes(fit_memory), plan.per_bucket, report, device=device, bf16=bf16)
           if fit_memory else None)
    return memory, fit


def cmd_check_dataset(args) -> int:
    from pydantic import ValidationError

    from trainer.config.schema import DatasetConfig
    from trainer.data.scan import scan_dataset

    try:
        ds = DatasetConfig(path=args.dir, trigger=args.trigger, resolution=args.resolution,
                           caption_ext=args.caption_ext, repeats=args.repeats, masked_loss=args.masked)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "path"
        option = "DIR" if field == "path" else "--" + field.replace("_", "-")
        raise UserError(msg("error.cli.check_dataset", option=option,
                            reason=err["msg"].removeprefix("Value error, "))) from None
    report = scan_dataset(ds)
    if args.json:
        out = report.to_json()
        for row in out["problems"] + out["tag_warnings"]:  # worded flat, as this output has always had them
            row["message"], row["message_ko"] = (words.say(row["message"], lang) for lang in words.LANGS)
        _print_json(out)
        return EXIT_OK
    print(f"{report.root}: {report.images} usable images, {report.captions} with captions, "
          f"{report.image_repeats} image-repeats, usable={report.usable}")
    for p in report.problems:
        print(f"  [{p['severity']}] {p['file']}: {p['kind']}: {words.say(p['message'])}")
    return EXIT_OK


def cmd_tiny_model(args) -> int:
    from trainer.models.family import family
    from trainer.models.tiny import build_tiny_pipeline, save_pipeline

    if args.single_file and not family(args.family).writes_single_file:
        raise UserError(msg("error.tiny.no_single_file", family=family(args.family).label))
    pipe = build_tiny_pipeline(args.family)
    out = save_pipeline(pipe, args.out_dir, single_file=args.single_file)
    print(out)
    return EXIT_OK


def cmd_train(args) -> int:
    from trainer.config.schema import load_config
    from trainer.run.rundir import RunPaths
    from trainer.train.console import run_from_cli

    config = args.config
    if config is None and args.resume:  # `train --resume RUN_DIR`: the run's own settings, not the defaults
        config = RunPaths(Path(args.resume)).config
        if not config.is_file():
            raise UserError(msg("error.resume.not_a_run", resume=args.resume))
    cfg = load_config(config, args.set)
    check_output_dir(cfg.save.output_dir)
    return run_from_cli(cfg, resume=args.resume, parent=args.parent, quiet=args.quiet, say=words.say)


def check_output_dir(output_dir: str) -> None:
    """``save.output_dir`` must be a folder, or a path whose nearest existing part is one (it is created)."""
    path = Path(output_dir).expanduser()
    for part in (path, *path.parents):
        try:
            mode = part.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):  # not there yet, or under a file: look further up
            continue
        except OSError as e:
            raise UserError(msg("error.cli.output_unusable", path=output_dir, reason=e.strerror or e)) from None
        if not stat.S_ISDIR(mode):
            what = msg("error.kind.file") if stat.S_ISREG(mode) else msg("error.kind.special")
            raise UserError(msg("error.cli.output_not_folder", path=part, what=what))
        return


def cmd_diagnose(args) -> int:
    from trainer.doctor.diagnose import diagnose
    from trainer.doctor.pictures import read_with_judge

    if args.judge is not None:  # kept in the run folder: Review reads the run with it too
        read_with_judge(args.run_dir, args.judge)
    result = diagnose(args.run_dir)
    if args.json:
        _print_json(result)
    else:
        print(_format_diagnosis(result, args.lang))
    return EXIT_OK


def cmd_measure(args) -> int:
    from trainer.doctor.model_measures import measures_by_step
    from trainer.train.remeasure import measure_run, measures_table

    def show(step: int, row: dict) -> None:
        print(f"step {step}: measured in {row['seconds']:.1f} s", file=sys.stderr, flush=True)

    written = measure_run(args.run_dir, timesteps=args.timesteps, pictures=args.pictures, progress=show,
                          device=args.device)
    table = measures_by_step(written.parent)
    if args.json:
        _print_json(table)
    else:
        print(f"{written}\n{measures_table(table)}")
    return EXIT_OK


def _format_diagnosis(result: dict, lang: str = "en") -> str:
    """``diagnosis.json`` as text: the verdict, what was observed, the likely causes and the prescriptions."""
    from trainer.doctor.evidence import STRENGTH_TEXT

    def say(message) -> str:
        return words.say(message, lang)

    lines = [f"run: {result['run_dir']}  status: {result.get('status')}"]
    if result.get("verdict"):
        lines.append(say("diagnosis.verdict") + say(result["verdict"]["summary"]))
    lines.append(say("diagnosis.observed"))
    for f in result["observed"] or []:
        lines.append(f"  [{f['level']}] {say(f['message'])}")
    if not result["observed"]:
        lines.append("  " + say("diagnosis.nothing_unusual"))
    if result["causes"]:
        lines.append(say("diagnosis.causes"))
        for c in result["causes"][:5]:
            lesser = f" — {say(c['why_lesser'])}" if c.get("lesser") else ""
            lines.append(f"  {say(c['title'])} ({say(STRENGTH_TEXT[c.get('strength', 'weak')])}){lesser}")
        lines.append(say("diagnosis.prescriptions"))
        for p in [p for p in result["prescriptions"] if p["applicable"] and not p.get("lesser")][:6]:
            extra = f"  [{say(p['change']['describe'])}]" if p["change"] and p["change"]["describe"][lang] else ""
            lines.append(f"  - {say(p['title'])}{extra}")
    if result.get("parent"):
        par = result["parent"]
        lines.append(f"compared with parent {par['parent']}: changes {par['changes']}, resolved {par['resolved']}, "
                     f"new {par['new']}")
        if (par.get("outcome") or {}).get("said"):
            lines.append(say(par["outcome"]["said"]))
    return "\n".join(lines)


def cmd_import_kohya(args) -> int:
    from trainer.config.schema import save_config
    from trainer.kohya.importer import import_kohya
    from words import say

    cfg, report = import_kohya(args.file, args.dataset_config, compare_steps=not args.no_steps)
    out = Path(args.output).expanduser()
    if out.is_dir():
        raise UserError(msg("error.cli.out_is_folder", out=out))
    save_config(cfg, out)
    if args.json:
        _print_json({**report.to_json(say), "config": str(out)})
    else:
        print(report.text(say, args.lang))
        print("\n" + say("kohya.report.written", args.lang, path=out))
    return EXIT_OK


def cmd_export_kohya(args) -> int:
    from trainer.kohya.exporter import export_kohya
    from words import say

    files, command, report = export_kohya(args.source, args.output)
    if args.json:
        _print_json({**report.to_json(say), "files": {k: str(v) for k, v in files.items()}, "command": command})
    else:
        print(report.text(say, args.lang))
        print("\n" + "\n".join(str(f) for f in files.values()))
        print(command)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trainer", description="LoRA Doctor headless tools")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("config", nargs="?", help="config TOML (defaults when omitted)")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one setting, e.g. --set optim.lr=5e-5 (repeatable)")

    p = sub.add_parser("plan", help="step math and dose for a config")
    with_config(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--lang", choices=["en", "ko"], default="en")
    p.add_argument("--processes", type=_positive_int, default=1, metavar="N",
                   help="plan for N processes sharing each step (torchrun --nproc_per_node N)")
    p.add_argument("--fit-memory", metavar="BYTES",
                   help="the fewest changes that bring the estimated peak memory under BYTES (e.g. 8GiB)")
    p.add_argument("--device", choices=["cpu", "cuda", "mps"],
                   help="plan for this kind of device, here or not (a GPU that is not here is taken to have bf16, as "
                        "RTX 30xx and newer do, and its free memory is unknown)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("check-dataset", help="scan a dataset folder and report problems")
    p.add_argument("dir")
    p.add_argument("--trigger", default="")
    p.add_argument("--resolution", type=int, default=512)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--caption-ext", default=".txt")
    p.add_argument("--masked", action="store_true", help="masked training: name the pictures without a mask")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check_dataset)

    p = sub.add_parser("tiny-model", help="write a tiny pipeline of a model family, random weights (for tests and demos)")
    p.add_argument("family", choices=list(FAMILIES))
    p.add_argument("out_dir")
    p.add_argument("--single-file", action="store_true", help="one .safetensors plus a config/ folder")
    p.set_defaults(func=cmd_tiny_model)

    p = sub.add_parser("train", help="train a LoRA")
    with_config(p)
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue a run from its last checkpoint (with its own config.toml when CONFIG is omitted)")
    p.add_argument("--parent", metavar="RUN_DIR", help="record this run as a follow-up of RUN_DIR")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("diagnose", help="findings and prescriptions for a run folder")
    p.add_argument("run_dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--lang", choices=["en", "ko"], default="en")
    p.add_argument("--judge", metavar="MODEL", help="a CLIP or SigLIP model (folder or hub id) that reads the run's "
                   "pictures from now on, Review included; \"\" goes back to the run's own measure.judge")
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser("measure", help="the doctor's model measures of a run, read again from its checkpoints")
    p.add_argument("run_dir")
    p.add_argument("--timesteps", type=int, metavar="N", help="timesteps per picture (the run's [measure] by default)")
    p.add_argument("--pictures", type=int, metavar="N", help="pictures per set (the run's [measure] by default)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda", "mps"], help="where to measure (the run's own device "
                   "by default); cpu: beside a run that holds the card")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_measure)

    p = sub.add_parser("import-kohya", help="a kohya_ss .json or sd-scripts .toml config as ours, with a mapping report")
    p.add_argument("file", help="kohya_ss GUI config (.json) or sd-scripts --config_file (.toml)")
    p.add_argument("--dataset-config", metavar="F", help="sd-scripts dataset_config TOML ([[datasets]] ...)")
    p.add_argument("-o", "--output", required=True, metavar="CONFIG.toml", help="where to write our config")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--no-steps", action="store_true", help="skip reading the pictures to compare step counts")
    p.add_argument("--lang", choices=["en", "ko"], default="en")
    p.set_defaults(func=cmd_import_kohya)

    p = sub.add_parser("export-kohya", help="sd-scripts config, dataset config and command line for a config or run")
    p.add_argument("source", metavar="CONFIG_OR_RUN", help="a config .toml or a run folder")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write the sd-scripts files into")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--lang", choices=["en", "ko"], default="en")
    p.set_defaults(func=cmd_export_kohya)

    from trainer.caption.command import add_commands

    add_commands(sub)  # caption, tiny-captioner
    from trainer.masking.command import add_commands as add_mask_commands

    add_mask_commands(sub)  # mask, tiny-masker
    return parser


def main(argv: list[str] | None = None, run: Callable[[argparse.Namespace], int] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    import trainer.demo  # noqa: F401  (its picture measures register as a judge, as in the app: one verdict for both)

    try:
        return (run or args.func)(args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:  # a file the user named that the system refused: say which, no traceback
        print(f"error: {e.filename or ''}{': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("stopped by the user", file=sys.stderr)
        return EXIT_USER_STOP


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

