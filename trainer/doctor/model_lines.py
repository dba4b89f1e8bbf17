"""What one save's own model measures say (:mod:`trainer.doctor.model_measures`): the lines the trigger hold, the
prior drift, the trigger share and memorisation are read against, and the observations the verdict
(:mod:`trainer.doctor.verdict`) weighs with the rest of a save's evidence."""

from __future__ import annotations

from typing import Any

from trainer.doctor.evidence import Observation
from trainer.message import msg

# Calibrated on the demo world's pictures in a plain folder (scripts/doctor_calibration.py, docs/doctor.md "Is
# the doctor right?"): the model-only verdict against the demo's picture measures at every save of 0.1x / 1x / 10x
# the lr.
# Read on 16 pictures a prompt: the saves the pictures call fit held at least 0.7568 from step 800 on, and the 1x
# runs' step-400 saves, where the character starts to show, 0.70-0.754, five of six called under by the pictures
# (the sixth, 1x seed 1, likeness 0.556 on 64 pictures a prompt, holds 0.738); 0.1x: 0.49-0.57; no convolution
# LoRA: 0.35-0.46. Seeds 7, 3, 4, 5 and 6, trained after: their step-400 saves held 0.72-0.75, three of five showing
# the character. A save in that band is under by the model and worth a look at its pictures.
HOLD_SHOWS = 0.755  # trigger hold from which the trigger alone brings the subject
HOLD_EDGE = 0.70  # from here to HOLD_SHOWS: the transition, where the pictures decide (the 1x step-400 saves)
# Just past the line the pictures did not always show the subject either: step-400 saves of the 1x run at training
# seeds 12 and 15 held 0.757 and 0.758 at likeness 0.40 and 0.48, seed 42 in bf16 0.7553 at 0.30 (a second machine),
# while fit saves from step 800 on held 0.756 and up. From HOLD_SHOWS to here the save reads fit and says to look
# at its pictures; a picture judge's reading decides there, as in the band below the line.
HOLD_SURE = 0.765
# Healthy demo saves drifted 0.25-0.94 (one 1.07), without prior images 1.2-1.7, at 10x the lr 1.9-5.3.
DRIFT_LIMIT = 1.1  # prior drift past which what the model draws without the trigger has moved
# A masked run's drift passes DRIFT_LIMIT whether or not its subject leaks (the demo world's masked saves: 1.19-1.71).
# Where the trigger adds at least this share of what a no-trigger prompt with it put in moves (trigger_share), the
# captions' other words did not learn the subject and the drift is the backgrounds masked training leaves free:
# with the captions as written 0.07-0.18 (18 of 24 saves leaking), captions naming the subject alone 0.33-0.62
# (1 of 16), scripts/doctor_masked.py.
SHARE_LINE = 0.25
HOLD_GROWS = 0.05  # an under-trained save whose hold is not this far above an earlier save's has stopped learning
MEMO_LIMIT = 0.5  # memorisation past which the training pictures pull away from the held-out ones


def backgrounds_moved(m: dict[str, Any]) -> bool:
    """A masked run's save (a row of :func:`trainer.doctor.model_measures.measures_by_step`) whose prior drift is the
    backgrounds masked training leaves free, not the subject: the trigger still adds its share."""
    share = m.get("trigger_share")
    return bool(m.get("masked")) and share is not None and share >= SHARE_LINE


def model_observations(m: dict[str, Any], dose_reached_zone: bool = True, style: bool = False) -> list[Observation]:
    """What the run's own model says of one save (a row of :func:`trainer.doctor.model_measures.measures_by_step`,
    with a judge's ``likeness`` where one read the save's pictures: in the hold's transition band and just past
    its line that reading decides). ``dose_reached_zone``: the save's dose is at least the bottom of the preset's zone; a hold that stopped
    growing below it is explained by the dose (0.1x the lr), from there on by the LoRA's room (no convolution LoRA).
    ``style``: the run trains a style; the denoiser knows the pictures it trained on whether or not the trigger alone
    draws their style (docs/doctor.md, "a style"): a hold past its line is weak there unless a judge read the save."""
    obs = []
    hold, drift, mem, before = m.get("trigger_hold"), m.get("prior_drift"), m.get("memorisation"), m.get("hold_before")
    if hold is not None:
        if hold < HOLD_SHOWS and dose_reached_zone and before is not None and hold <= before + HOLD_GROWS:
            # more dose no longer helps: what is missing is room in the LoRA, not steps
            obs.append(Observation("model", "under", "strong",
                                   msg("verdict.hold_plateau_edge" if hold >= HOLD_EDGE else "verdict.hold_plateau",
                                       hold=hold, before=before, shows=HOLD_SHOWS),
                                   "trigger_hold_plateau"))
        elif HOLD_EDGE <= hold < HOLD_SHOWS and m.get("likeness") is not None:
            # the transition, where the pictures decide: a judge read them, so its reading does
            obs.append(Observation("model", "under", "weak", msg("verdict.hold_edge_judged", hold=hold, shows=HOLD_SHOWS),
                                   "low_trigger_hold"))
        elif hold < HOLD_SHOWS:
            said = (msg("verdict.hold_edge", hold=hold, shows=HOLD_SHOWS) if hold >= HOLD_EDGE
                    else msg("verdict.low_trigger_hold", hold=hold, shows=HOLD_SHOWS))
            obs.append(Observation("model", "under", "strong", said, "low_trigger_hold"))
        elif style and m.get("likeness") is None:
            obs.append(Observation("model", "fit", "weak", msg("verdict.trigger_hold_style", hold=hold)))
        elif hold < HOLD_SURE:  # just past the line: a judge's reading decides, else the pictures are worth a look
            judged = m.get("likeness") is not None
            obs.append(Observation("model", "fit", "weak" if judged else "strong", msg(
                "verdict.hold_past_judged" if judged else "verdict.hold_past", hold=hold, shows=HOLD_SHOWS)))
        else:
            obs.append(Observation("model", "fit", "strong", msg("verdict.trigger_hold", hold=hold)))
    if drift is not None:
        if drift > DRIFT_LIMIT and backgrounds_moved(m):  # the trigger still carries the subject
            obs.append(Observation("model", "fit", "moderate", msg(
                "verdict.masked_drift_free", drift=drift, share=m["trigger_share"], line=SHARE_LINE)))
        elif drift > DRIFT_LIMIT:  # on a masked run it passes the line leaking or not: a judge's leakage then decides
            moved = "masked_drift" if m.get("masked") else "prior_drift"
            strength = "weak" if moved == "masked_drift" and m.get("likeness") is not None else "strong"
            share = m.get("trigger_share") if moved == "masked_drift" else None  # said where it was measured
            said = (msg(f"verdict.{moved}", drift=drift, limit=DRIFT_LIMIT) if share is None else
                    msg("verdict.masked_drift_words", drift=drift, limit=DRIFT_LIMIT, share=share, line=SHARE_LINE))
            obs.append(Observation("model", "over", strength, said, moved))
        else:
            obs.append(Observation("model", "fit", "moderate", msg("verdict.prior_kept", drift=drift)))
    if mem is not None and mem > MEMO_LIMIT:
        obs.append(Observation("model", "over", "strong", msg("verdict.memorising", mem=mem, limit=MEMO_LIMIT),
                               "memorising"))
    return obs
