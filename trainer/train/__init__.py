"""The training run: preparation, the loop, its state and checkpoints, optimizers, EMA, sampling, outputs, events and the runner thread."""
