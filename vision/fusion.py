"""Fuse the readings of several frames of one ball into one decision.

Frames of a resting ball share most of their errors (same pose, same glare),
so the fused evidence must not multiply them as if independent. We combine
the per-frame number probabilities with a tempered product (geometric mean
raised to sqrt(n)) and the frames' calibrated confidences by their median
log-odds plus log(k)/2: more frames help, far less than independence would
claim. Frames that named a ball must all agree (and so must the checks: other
views of the ball, such as the single exposures two-lamp frames are made from),
and a call needs at least half of the agreeing frames to have named it
themselves, with evidence clear of the reader's accept levels (COMMIT_CLEARANCE):
a frame the reader would not name (evidence under its accept level) can carry a
high calibrated confidence, and frames of one pose repeat it.

    commit    - strong, consistent evidence: call the ball
    confirm   - one clear candidate but not strong enough: ask a person
    represent - nothing clear: present the ball again (shake the holder)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .balls import ball_name

# A call needs half the agreeing frames named with evidence at least this far over the
# reader's accept levels (reader.Calibration.clearance). Frames of one pose repeat a
# reading, and fresh named wrong readings sat just over the levels (I29 -> I20 at 1.01,
# 7 December). The calibrated map alone made this call on its third decimal: one flat block
# from under the accept level to 1.15x of it, at 0.9979 after one recalibration (five frames
# fuse past 0.999) and 0.99757 after the next (they do not); ~90 of 3000 balls swung.
COMMIT_CLEARANCE = 1.15


@dataclass
class FusedReading:
    decision: str               # "commit" | "confirm" | "represent"
    number: int | None
    ball: str | None
    confidence: float
    frames: int
    reason: str | None = None   # why not a commit


def fuse(readings: list, commit_at: float = 0.999, confirm_at: float = 0.9,
         checks: list | None = None) -> FusedReading:
    """One decision from the readings of frames of the same ball. `checks` are readings of
    other views of it (the single exposures glare-free frames were made from): they add no
    evidence, but a ball one of them names must agree like a frame's."""
    n = len(readings)
    named = {r.number for r in [*readings, *(checks or [])] if getattr(r, "ball", None) is not None}
    useful = [r for r in readings if r.scores]
    if not useful:
        return FusedReading("represent", None, None, 0.0, n, "no frame was read")
    # Log-probability per number, floor for numbers a frame gave no score.
    logp = np.zeros(75)
    for r in useful:
        p = np.full(75, 1e-4)
        for num, v in r.scores.items():
            p[num - 1] = max(v, 1e-4)
        p /= p.sum()
        logp += np.log(p)
    k = len(useful)
    tempered = logp / k * math.sqrt(k)
    tempered -= tempered.max()
    post = np.exp(tempered)
    post /= post.sum()
    best = int(np.argmax(post))
    number = best + 1
    # Per-frame calibrated confidence of frames that agree with the best number:
    # the fused confidence may not claim more than the evidence behind it.
    agree = [r.confidence for r in useful if max(r.scores, key=r.scores.get) == number]
    if not agree:
        return FusedReading("represent", None, None, 0.0, n, "frames disagree on the number")
    # Frames of one pose mostly share their errors: more agreeing frames add
    # only log(k)/2 to the typical frame's log-odds, nowhere near k times.
    logits = sorted(math.log(max(c, 1e-9) / max(1 - c, 1e-9)) for c in agree)
    fused_logit = logits[len(logits) // 2] + 0.5 * math.log(len(agree))
    conf = float(min(post[best], 1 / (1 + math.exp(-fused_logit))))
    conflict = len(named) > 1 or bool(named and number not in named)
    if conflict or len(agree) < 0.6 * k:
        why = "frames name different balls" if conflict else "frames disagree on the number"
        return FusedReading("represent", None, None, conf, n, why)
    named_clear = sum(1 for r in useful if getattr(r, "ball", None) is not None and r.number == number
                      and getattr(r, "clearance", 0.0) >= COMMIT_CLEARANCE)
    if conf < commit_at:
        why = f"fused confidence below {commit_at}"
    elif named_clear < 0.5 * len(agree):
        why = "too few frames named the ball clear of the reader's accept levels"
    else:
        return FusedReading("commit", number, ball_name(number), conf, n)
    if conf >= confirm_at:
        return FusedReading("confirm", number, ball_name(number), conf, n, why)
    return FusedReading("represent", None, None, conf, n, why)
