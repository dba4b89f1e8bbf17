"""Watching the numbers: the per-step guard, detectors, the knowledge base, recovery and the diagnosis."""
