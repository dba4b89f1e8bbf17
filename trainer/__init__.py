"""LoRA Doctor's training library: config, dataset, plan, models, the training loop and its diagnosis.

This package never imports a UI toolkit; the app in ``ui/`` reads its events and sends it commands.
"""

__version__ = "0.1.0"

from trainer.noise import quiet

quiet()  # before peft, diffusers and transformers are imported: warnings that tell a user nothing

# The optimizers register themselves into trainer.config.choices, where the config reads the names it accepts;
# importing them here fills that registry whatever part of the library is imported first.
import trainer.train.optim  # noqa: E402, F401
