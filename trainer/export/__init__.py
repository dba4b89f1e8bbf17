"""LoRA files other tools load, and whole-pipeline single files."""
