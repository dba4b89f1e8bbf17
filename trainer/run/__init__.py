"""The run folder contract (docs/design.md, "The run folder") and what a run writes into it: events, metric
rows, sample names."""
