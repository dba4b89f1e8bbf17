"""The command line's own words (``cli.*``)."""

TEXTS = {
    "cli.written": ("written", "저장함"),
}
