"""Captions for a folder of bare pictures: the captioners (a WD14 tagger, Florence-2, BLIP), the run that writes
their captions beside the pictures with a journal and Undo, and the tools that edit captions across a dataset.

What is wrong with captions already written is the scan's business (:mod:`trainer.data.caption_doctor`).
"""
