"""What a run is asked to do: the typed config and the shipped presets."""
