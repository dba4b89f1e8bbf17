"""LoRA Doctor's training library: config, dataset, plan, models, the training loop and its diagnosis.

This package never imports a UI toolkit; the app in ``ui/`` reads its events and sends it commands.
"""

__version__ = "0.1.0"
