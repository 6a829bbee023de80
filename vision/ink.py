"""Ink: the thin strokes of the print, dark on light or light on dark.

A closing (or opening) with a disc a little wider than a stroke gives the
paper under the print; the difference is the ink. Each colour channel is
treated alone and the strongest wins, so black ink on a blue disc (strong in
blue) and blue ink on a white ball (strong in red) both stand out.
"""
from __future__ import annotations

import cv2
import numpy as np

from .locate import Thumbnail, above_lip
from .sphere import Flat, pixel_normals
from .stats import percentile

_K7 = cv2.getStructuringElement(cv2.MORPH_RECT, (7, 7))     # square kernels: separable, fast
_K13 = cv2.getStructuringElement(cv2.MORPH_RECT, (13, 13))   # wider than a stroke at 0.82 deg/px


def _max_channel(img: np.ndarray) -> np.ndarray:
    b, g, r = cv2.split(img)
    return cv2.max(cv2.max(b, g), r)


def rough_print_centre(thumb: Thumbnail | None, ball: tuple[float, float, float],
                       lip: tuple[float, float, float] | None = None) -> np.ndarray | None:
    """Direction (unit vector) of the print's centre: the mean sphere normal of the ink."""
    if thumb is None:
        return None
    x, y, r = ball
    roi, s, x0, y0 = thumb.image, thumb.scale, thumb.x0, thumb.y0
    bh = _max_channel(cv2.morphologyEx(roi, cv2.MORPH_BLACKHAT, _K7))
    th = _max_channel(cv2.morphologyEx(roi, cv2.MORPH_TOPHAT, _K7))
    d = cv2.max(bh, th).astype(np.float32)
    ys, xs = np.mgrid[0:d.shape[0], 0:d.shape[1]].astype(np.float32)
    xs = (xs + 0.5) / s + x0 - 0.5
    ys = (ys + 0.5) / s + y0 - 0.5
    inside = (xs - x) ** 2 + (ys - y) ** 2 < (0.94 * r) ** 2
    inside &= above_lip(lip, xs, ys, 0.04 * r)
    wgt = d[inside]
    if wgt.size < 20:
        return None
    wgt = np.where(wgt > percentile(wgt, 70), wgt, 0)
    if wgt.sum() <= 0:
        return None
    n = pixel_normals(xs[inside], ys[inside], ball)
    c = (n * wgt[:, None]).sum(0)
    norm = np.linalg.norm(c)
    return c / norm if norm > 0 else None


def _median_u8(channel: np.ndarray, mask: np.ndarray, n: int) -> float:
    """np.median of the n uint8 values of channel where mask is set, from their histogram."""
    counts = np.cumsum(cv2.calcHist([channel], [0], mask, [256], [0, 256]).ravel())
    return (int(np.searchsorted(counts, (n - 1) // 2 + 1)) + int(np.searchsorted(counts, n // 2 + 1))) / 2


def paper_filled(flat: Flat) -> np.ndarray:
    """The flattened print with what the frame does not show filled with the
    paper's median colour, so the lip and the far side make no ink."""
    img = flat.image
    if flat.valid.all():
        return img
    seen = flat.valid.view(np.uint8)
    n = int(np.count_nonzero(seen))
    fill = [_median_u8(ch, seen, n) for ch in cv2.split(img)] if n else [0.0] * 3
    out = np.empty_like(img)
    out[:] = np.array(fill).astype(np.uint8)
    cv2.copyTo(img, seen, out)
    return out


def ink_map(img: np.ndarray, polarity: str) -> np.ndarray:
    """Float32 strength of "dark" ink on light paper or "light" ink on dark, from
    a paper_filled image. Only the one asked for is made: each costs a morphology."""
    if polarity == "dark":
        return _max_channel(cv2.subtract(cv2.morphologyEx(img, cv2.MORPH_CLOSE, _K13), img)).astype(np.float32)
    return _max_channel(cv2.subtract(img, cv2.morphologyEx(img, cv2.MORPH_OPEN, _K13))).astype(np.float32)


def ink_mask(strength: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Binary ink from a strength map: Otsu, but never below a clear contrast."""
    s = np.clip(strength, 0, 255).astype(np.uint8)
    vals = s[valid]
    if vals.size < 50:
        return np.zeros_like(s, dtype=bool)
    t, _ = cv2.threshold(vals.reshape(-1, 1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    t = max(float(t), 28.0)
    return (s > t) & valid
