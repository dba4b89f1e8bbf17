"""The state :class:`trainer.train.loop.Trainer` shares with its mixins (preparation, recovery, outputs), declared once.

Each mixin reads and writes the trainer's attributes; declaring them here gives every mixin the same typed
view, so a type checker sees a misspelt or mistyped attribute. Nothing is assigned here: ``Trainer.__init__``
and the preparation steps set each one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from trainer.config.schema import Config
    from trainer.data.batches import LatentCache, Sample
    from trainer.data.scan import DatasetReport
    from trainer.doctor.guard import Guard
    from trainer.models.base import BaseInfo
    from trainer.models.conditioning import TextConditioner
    from trainer.models.families.noise import NoiseSchedule
    from trainer.models.family import ModelFamily
    from trainer.models.lora import LoraModules
    from trainer.models.precision import PrecisionPlan
    from trainer.plan.steps import Plan
    from trainer.run.events import Sink
    from trainer.run.rundir import RunPaths
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.ema import LoraEMA
    from trainer.train.state import TrainState


class TrainerParts:
    # given to the Trainer
    config: Config
    commands: Commands
    dist: Dist
    external_sink: Sink | None
    sink: Sink
    started_at: float
    # the run folder and the plan (prepare_run_folder); paths is None only before that
    paths: RunPaths | None
    report: DatasetReport
    plan: Plan
    # models (load_models); the pipeline and its parts are diffusers objects
    device: torch.device
    precision: PrecisionPlan
    base_info: BaseInfo
    family: str
    pipe: Any
    adapter: ModelFamily  # the family's adapter: everything family-specific goes through it
    denoiser: Any  # the model the LoRA trains (the UNet, or a transformer)
    schedule: NoiseSchedule  # how the denoiser is trained: timesteps, noise, target, weights
    lora: LoraModules
    trainable: list[torch.nn.Parameter]
    named_trainable: list[tuple[str, torch.nn.Parameter]]
    train_modules: dict[str, torch.nn.Module]
    # data (prepare_data)
    samples: list[Sample]
    text: TextConditioner
    latents: LatentCache | None
    sample_prompts: list[dict[str, Any]]
    # optimization (prepare_optimization); state is None before it
    state: TrainState | None
    guard: Guard
    total_steps: int
    batches_per_epoch: int
    steps_per_epoch: int
    last_good: dict[str, Any] | None
    # what the steps leave for the next one
    last_batch_files: list[str]
    failure: dict[str, Any] | None
    _update_ref: tuple[int, list[torch.Tensor]] | None
    _rows: list[dict[str, Any]]
    _findings_emitted: set[str]
    # the validation loss's held-out pictures (preparation) and their encoded set; None without validation
    held_out: list[Any]
    validation: Any
    probes: dict[str, Any]  # the model measures' picture sets (probes.ProbesMixin.build_probes)
    probe_timesteps: list[int]
    # the step's pictures when latents are not cached (feeding)
    hooks: Any
    _loader: ThreadPoolExecutor | None
    _pixels: dict[tuple[int, int], Any]
    _pixel_encoder: LatentCache | None  # the VAE encoder of steps whose latents are not cached (made on first use)
    _sampler: Any  # the sampling pipeline (made at the first sample point)
    # the run state's parts, settable through the Trainer's properties
    global_step: int
    lr_factor: float
    scaler: Any

    if TYPE_CHECKING:  # defined by the Trainer and its mixins

        @property
        def epoch(self) -> int: ...

        @property
        def optimizer(self) -> Any: ...

        @property
        def lr_scheduler(self) -> Any: ...

        @property
        def ema(self) -> LoraEMA | None: ...

        def emit(self, event_type: str, /, **fields: Any) -> None: ...

        def new_scaler(self) -> Any: ...

        def _flips(self, epoch: int, pos: int, n: int) -> list[bool]: ...

        def _batch_pixels(self, batch: Any, epoch: int, pos: int, flips: list[bool]) -> torch.Tensor: ...

        def _encoder(self) -> LatentCache: ...

        def validation_set(self) -> Any: ...

        def build_probes(self) -> None: ...

        def held_out_folder(self) -> list[Any]: ...
