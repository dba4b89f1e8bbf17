"""Base models and what rides on them: loading, tiny offline builds, precision, LoRA, conditioning, the trigger embedding."""
