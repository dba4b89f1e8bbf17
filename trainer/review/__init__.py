"""Judging a finished run: the checkpoint grid, verdicts, the strength sweep."""
