"""The run folder contract (DESIGN.md) and what a run writes into it: events, metric rows, sample names."""
