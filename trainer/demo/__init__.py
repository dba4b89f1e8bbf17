"""The built-in demo: a synthetic world of captioned scenes, the demo character "zxc" that the world never
shows (the LoRA dataset), and measures computed from its pictures (likeness, adherence, leakage).

``world`` draws and captions; ``datasets`` writes its datasets to disk; ``measures`` reads pictures back. See each module's docstring.
"""

from trainer.demo import judge  # registers the demo's picture measures as a judge  # noqa: F401
from trainer.demo.datasets import write_character_dataset, write_prior_dataset, write_world_dataset
from trainer.demo.measures import (
    adherence,
    adherence_scores,
    detect_background,
    detect_colour,
    detect_shape,
    leakage,
    leakage_scores,
    likeness,
    world_leakage_scores,
)
from trainer.demo.world import (
    TRIGGER,
    DemoPrompt,
    Scene,
    caption,
    character_scene,
    demo_prompt_specs,
    demo_sample_prompts,
    render_scene,
    sample_scene,
    world_dataset,
)

__all__ = [
    "TRIGGER",
    "DemoPrompt",
    "Scene",
    "adherence",
    "adherence_scores",
    "caption",
    "character_scene",
    "demo_prompt_specs",
    "demo_sample_prompts",
    "detect_background",
    "detect_colour",
    "detect_shape",
    "leakage",
    "leakage_scores",
    "likeness",
    "render_scene",
    "sample_scene",
    "world_dataset",
    "world_leakage_scores",
    "write_character_dataset",
    "write_prior_dataset",
    "write_world_dataset",
]
