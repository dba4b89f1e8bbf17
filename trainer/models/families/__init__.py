"""One adapter module per model family (SD 1.5, SDXL). Every module in this folder is imported when the family
registry is first read, so adding a family is adding a file here."""
