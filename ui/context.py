"""What one app instance knows: its workspace, path policy, language, the runner, the starting values.

No module-level state: tests build as many contexts (and apps) as they like, each with its own workspace.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.errors import UserError
from trainer.review.strength import SweepPipelines
from trainer.train.runner import Runner, get_runner

from .i18n import TEXTS, t
from .paths import PathPolicy

DEMO_DATASET = "demo-zxc"
DEMO_PRIOR = "demo-world"  # the demo's prior images (dataset.reg_path): world scenes that hold no-trigger prompts
DEMO_HELD_OUT = "demo-zxc-held-out"  # the demo's validation pictures (validation.path): the character, never trained on
DEFAULT_PRESET = "demo-character"


@dataclass
class AppContext:
    workspace: Path
    policy: PathPolicy
    runner: Runner
    lang: str = "en"
    defaults: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    bf16: bool = False
    api_outputs: dict[str, list[str]] = field(default_factory=dict)  # endpoint → output names (for clients)
    sweeps: SweepPipelines = field(default_factory=SweepPipelines)  # the base model kept between strength sweeps
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _recommend_cache: dict[tuple[str, float, str], Any] = field(default_factory=dict, repr=False)

    @property
    def runs_dir(self) -> Path:
        return self.workspace / "runs"

    @property
    def datasets_dir(self) -> Path:
        return self.workspace / "datasets"

    @property
    def presets_dir(self) -> Path:
        return self.workspace / "presets"

    @property
    def configs_dir(self) -> Path:
        return self.workspace / "configs"

    def run_choices(self, lang: str = "en") -> list[tuple[str, str]]:
        """(label, value) for every run in the workspace, newest first; the value is the folder inside runs/."""
        from trainer.run.rundir import list_runs, run_status

        out = []
        for run in reversed(list_runs(self.runs_dir)):
            rel = run.relative_to(self.runs_dir).as_posix()
            out.append((f"{rel} ({status_label(run_status(run), lang)})", rel))
        return out

    def run_path(self, rel: str, lang: str = "en") -> Path:
        """A run folder named by its place inside ``runs/``; never anywhere else."""
        if not rel:
            raise UserError(t("err_no_run_chosen", lang))
        path = self.policy.inside(self.runs_dir, rel, "run", lang)
        if not (path / "config.toml").is_file():
            raise UserError(t("err_not_a_run", lang, rel=rel))
        return path

    def run_rel(self, run_dir: str | Path | None) -> str | None:
        if not run_dir:
            return None
        try:
            return Path(run_dir).resolve().relative_to(self.runs_dir.resolve()).as_posix()
        except ValueError:
            return None

    def recommend(self, run_dir: Path) -> dict[str, Any] | None:
        """recommend_checkpoint, cached until the run's folder changes (the journal table asks for every run)."""
        from trainer.doctor.judge_files import chosen_judge
        from trainer.doctor.pictures import larger_draws
        from trainer.review.grid import recommend_checkpoint

        stamp = max((p.stat().st_mtime for p in (run_dir / "status.json", run_dir / "samples", *larger_draws(run_dir))
                     if p.exists()), default=0.0)
        key = (str(run_dir), stamp, chosen_judge(run_dir))
        with self._lock:
            if key in self._recommend_cache:
                return self._recommend_cache[key]
        try:
            rec = recommend_checkpoint(run_dir)
        except (UserError, OSError, ValueError):
            rec = None
        with self._lock:
            self._recommend_cache[key] = rec
        return rec


def status_label(status: dict[str, Any], lang: str = "en") -> str:
    """A run's status as run lists show it; a killed run says it was interrupted and where it can resume, a failed run
    where it can resume when it has a checkpoint."""
    name = status.get("status", "?")
    label = t(f"status_{name}", lang) if f"status_{name}" in TEXTS else name
    step = status.get("resume_step")
    if name == "interrupted":
        label += ", " + (t("status_resume_from", lang, step=step) if step is not None else t("status_no_resume", lang))
    elif name == "failed" and step is not None:
        label += ", " + t("status_resume_from", lang, step=step)
    return label


def make_context(workspace: str | Path, restricted: bool = False, lang: str = "en",
                 runner: Runner | None = None) -> AppContext:
    """Create the workspace folders, the demo dataset on first run, and the starting values (demo + preset)."""
    from trainer.config.presets import preset_config
    from trainer.demo import TRIGGER, demo_sample_prompts, write_character_dataset, write_prior_dataset
    from trainer.models.base import DEMO_BASE_DIR
    from trainer.models.precision import bf16_supported, resolve_device

    from .fields import values_from_config

    ws = Path(workspace).expanduser().resolve()
    for sub in ("runs", "datasets", "presets", "configs"):
        (ws / sub).mkdir(parents=True, exist_ok=True)
    demo = ws / "datasets" / DEMO_DATASET
    if not (demo / "demo_manifest.json").is_file():
        write_character_dataset(demo)
    prior = ws / "datasets" / DEMO_PRIOR
    if not any(prior.glob("*_world/*.png")):
        write_prior_dataset(prior)
    held_out = ws / "datasets" / DEMO_HELD_OUT
    if not (held_out / "demo_manifest.json").is_file():  # drawn like the dataset, from another seed
        write_character_dataset(held_out, n_images=4, seed=1, repeats_folder="1_zxc")
    cfg = preset_config(DEFAULT_PRESET)
    cfg.dataset.path = str(demo)
    cfg.dataset.reg_path = str(prior)
    cfg.validation.path = str(held_out)
    cfg.dataset.trigger = TRIGGER
    cfg.model.base = "demo" if (DEMO_BASE_DIR / "model_index.json").is_file() else "tiny-sd15"
    cfg.sample.prompts = demo_sample_prompts()
    cfg.save.name = "demo-zxc"
    device = resolve_device("auto")
    return AppContext(
        workspace=ws,
        policy=PathPolicy(ws, restricted),
        runner=runner or get_runner(),
        lang=lang,
        defaults=values_from_config(cfg),
        device=str(device),
        bf16=bf16_supported(device),
    )
