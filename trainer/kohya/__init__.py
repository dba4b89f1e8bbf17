"""Coming from and going to kohya_ss / sd-scripts: the mapping table, import, export, step counts, the report."""
