"""What a config will do before it runs: the step plan and dose, the memory plan, and the settings to confirm."""
