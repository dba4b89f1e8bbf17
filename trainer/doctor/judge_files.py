"""Picture judges from their files alone (nothing is loaded or downloaded here): which CLIP and SigLIP models this
computer already holds in its Hugging Face cache, and whether a ``measure.judge`` can be one, checked before a run
starts rather than when its pictures are read hours later.

A judge is a transformers model with an image and a text tower (``get_image_features``, ``get_text_features``) and
its processor: the folder holds ``config.json`` of one of :data:`JUDGE_MODEL_TYPES`, a processor's config and
weights.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainer.errors import UserError
from trainer.message import msg

JUDGE_MODEL_TYPES = frozenset({"clip", "siglip", "siglip2"})
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json")  # older hub repos, transformers 5
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def model_kind(folder: Path) -> str | None:
    """What the folder's ``config.json`` says it holds (transformers' ``model_type``, else diffusers'
    ``_class_name``); None without a readable one."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    kind = config.get("model_type") or config.get("_class_name")
    return str(kind) if kind else None


def is_judge_folder(folder: Path) -> bool:
    return (model_kind(folder) in JUDGE_MODEL_TYPES and any((folder / f).is_file() for f in PROCESSOR_FILES)
            and any((folder / f).is_file() for f in WEIGHT_FILES))


def _hub_cache(cache_dir: Path | None) -> Path:
    if cache_dir is not None:
        return cache_dir
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _snapshot(repo: Path) -> Path | None:
    """The snapshot a hub id loads from the cache: the one ``refs/main`` names, else the newest."""
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        main = ""
    if main and (repo / "snapshots" / main).is_dir():
        return repo / "snapshots" / main
    try:
        snapshots = [p for p in (repo / "snapshots").iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(snapshots, key=lambda p: p.stat().st_mtime, default=None)


def local_judges(cache_dir: Path | None = None) -> list[str]:
    """The hub ids of the CLIP and SigLIP models whose files this computer's Hugging Face cache already holds
    (sorted; empty without a cache)."""
    root = _hub_cache(cache_dir)
    try:
        repos = sorted(p for p in root.iterdir() if p.name.startswith("models--") and p.is_dir())
    except OSError:
        return []
    found = []
    for repo in repos:
        snapshot = _snapshot(repo)
        if snapshot is not None and is_judge_folder(snapshot):
            found.append(repo.name[len("models--"):].replace("--", "/"))
    return found


def _is(test: str, name: str) -> bool:
    """``Path(name).expanduser().<test>()``, False where the name cannot be a path here (a NUL byte, a name too
    long for the filesystem, ``~nobody``)."""
    try:
        return bool(getattr(Path(name).expanduser(), test)())
    except (OSError, RuntimeError, ValueError):
        return False


def looks_local(name: str) -> bool:
    """A path rather than a hub id (``org/name``): it exists, or starts like a path, or has more than one ``/``."""
    return (_is("exists", name) or name.startswith((".", "/", "~", "\\")) or ":" in name or name.count("/") > 1
            or "\\" in name)


def check_judge(name: str, cache_dir: Path | None = None) -> None:
    """A ``UserError`` naming ``measure.judge`` and what to do, where ``name`` cannot be a picture judge: a folder
    that is missing or holds another kind of model, a hub id that is neither in the local cache nor reachable
    (offline). "" (no judge) passes; a hub id not yet in the cache passes while online (it is fetched when first
    read)."""
    text = (name or "").strip()
    if not text:
        return
    if looks_local(text):
        if not _is("is_dir", text):
            raise UserError(msg("error.judge.missing", name=text))
        _check_files(Path(text).expanduser(), text)
        return
    from huggingface_hub import constants, try_to_load_from_cache

    try:
        found = try_to_load_from_cache(text, "config.json", cache_dir=str(_hub_cache(cache_dir)))
    except ValueError:  # huggingface_hub's HFValidationError: not a hub id either
        raise UserError(msg("error.judge.missing", name=text)) from None
    offline = constants.is_offline_mode()  # HF_HUB_OFFLINE, as the loader itself reads it
    if isinstance(found, str):
        _check_files(Path(found).parent, text, complete=offline)  # online, what the cache lacks is fetched
    elif offline:
        raise UserError(msg("error.judge.not_cached", name=text))


def _check_files(folder: Path, name: str, complete: bool = True) -> None:
    kind = model_kind(folder)
    if kind is None:
        raise UserError(msg("error.judge.no_config", name=name))
    if kind not in JUDGE_MODEL_TYPES:
        raise UserError(msg("error.judge.kind", name=name, kind=kind))
    if not complete:
        return
    if not any((folder / f).is_file() for f in PROCESSOR_FILES):
        raise UserError(msg("error.judge.no_processor", name=name))
    if not any((folder / f).is_file() for f in WEIGHT_FILES):
        raise UserError(msg("error.judge.no_weights", name=name))


# ---- a judge chosen for a run after it trained ----------------------------------------------------------------

RUN_JUDGE = Path("review") / "judge.json"  # in the run folder, beside Review's other drawings


def chosen_judge(run_dir: str | Path) -> str:
    """The judge chosen to read this run after it trained (Review, ``diagnose --judge``); "" when none was."""
    try:
        found = json.loads((Path(run_dir) / RUN_JUDGE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(found.get("judge") or "") if isinstance(found, dict) else ""


def choose_judge(run_dir: str | Path, name: str, check: bool = True) -> None:
    """Have ``name`` read this run's pictures from now on, in place of the judge it trained with (checked first:
    a wrong one changes nothing); "" goes back to the run's own ``measure.judge``. ``check=False``: put back the
    one chosen before, as it was."""
    from trainer.io import atomic_write_text

    if not (Path(run_dir) / "config.toml").is_file():
        raise UserError(msg("error.run.not_a_run", run_dir=run_dir))
    path = Path(run_dir) / RUN_JUDGE
    text = (name or "").strip()
    if not text:
        path.unlink(missing_ok=True)
        return
    if check:
        check_judge(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"judge": text}) + "\n")
