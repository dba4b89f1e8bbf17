"""The mask maker: a subject mask beside every picture (``name-masklabel.png``) for masked training, made by CLIPSeg
from a few words or by an ONNX background remover, with a preview and Undo."""
