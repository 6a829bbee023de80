"""The column colour cue: which column's colour the ball shows.

B blue, I red, N white (no strong colour), G green, O orange or yellow.
Only pixels of the ball above the holder lip count; glare and print are
colourless or small, so the ball's own colour (disc, ring or body) dominates.
"""
from __future__ import annotations

import cv2
import numpy as np

from .balls import LETTERS
from .locate import Circle, Thumbnail, above_lip

# OpenCV hue (0..180) ranges of each column colour.
_HUE_COLUMN = (
    ((0, 8), "I"), ((165, 181), "I"),
    ((8, 36), "O"),
    ((36, 88), "G"),
    ((88, 135), "B"),
)


def column_probabilities(thumb: Thumbnail | None, ball: Circle) -> dict[str, float]:
    """Probability of each column letter from the ball's colour, seen in its thumbnail."""
    if thumb is None:
        return {c: 0.2 for c in LETTERS}
    x, y, r = ball.as_tuple()
    roi, s, x0, y0 = thumb.image, thumb.scale, thumb.x0, thumb.y0
    hsv = cv2.cvtColor(roi, cv2.COLOR_BGR2HSV)
    yy, xx = np.mgrid[0:roi.shape[0], 0:roi.shape[1]].astype(np.float32)
    fx, fy = (xx + 0.5) / s + x0, (yy + 0.5) / s + y0
    inside = (fx - x) ** 2 + (fy - y) ** 2 < (0.9 * r) ** 2
    inside &= above_lip(ball.lip, fx, fy, 0.05 * r)
    px = hsv[inside]
    if len(px) < 20:
        return {c: 0.2 for c in LETTERS}
    sat = (px[:, 1] > 90) & (px[:, 2] > 50)
    counts = {c: 0.0 for c in LETTERS}
    hue = px[sat, 0].astype(int)
    for (lo, hi), col in _HUE_COLUMN:
        counts[col] += float(((hue >= lo) & (hue < hi)).sum())
    coloured = sum(counts.values())
    share = coloured / len(px)
    # No colour: N (white) is likely, but a ring turned away shows none either.
    white = {c: (0.6 if c == "N" else 0.1) for c in LETTERS}
    chrom = {c: (v + 0.01 * coloured + 1e-6) for c, v in counts.items()}
    z = sum(chrom.values())
    chrom = {c: v / z for c, v in chrom.items()}
    w_white = min(1.0, max(0.0, (0.04 - share) / 0.03))
    return {c: w_white * white[c] + (1 - w_white) * chrom[c] for c in LETTERS}
