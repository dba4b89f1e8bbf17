"""LoRA Doctor's training library: config, dataset, plan, models, the training loop and its diagnosis.

This package never imports a UI toolkit; the app in ``ui/`` reads its events and sends it commands.
"""

import logging

__version__ = "0.1.0"

# peft imports bitsandbytes where it is installed, and bitsandbytes' CPU backend then warns at every start that it
# could not load its NF4 kernels from the hub ("pip install kernels"): nothing here runs NF4 on a CPU
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)

# The optimizers register themselves into trainer.config.choices, where the config reads the names it accepts;
# importing them here fills that registry whatever part of the library is imported first.
import trainer.train.optim  # noqa: E402, F401
