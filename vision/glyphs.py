"""Cut the flattened print into glyphs: the letter above, one or two digits below.

The print's rotation in its plane is unknown. Every blob that could be the
letter gives one guess: "up" points from the number's blobs to the letter.
Each guess is turned upright and parsed into a layout; the classifier later
says which guess reads best.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from .sphere import PATCH

GLYPH = 20                     # glyph image side for the classifier
_CELL = 5
_BINS = 9
MIN_AREA = 10


@dataclass
class Layout:
    """One reading guess: the upright print split into letter and digits."""

    angle_deg: float                     # rotation applied to make the print upright
    letter: np.ndarray                   # GLYPH x GLYPH float32 glyph images
    digits: list[np.ndarray]
    letter_height: float                 # pixel sizes, for the size cue
    digit_height: float
    underline: bool
    boxes: list[tuple[int, int, int, int]] = field(default_factory=list)  # upright patch boxes
    aspects: list[float] = field(default_factory=list)   # width / height of letter, digits


@dataclass
class _Blob:
    label: int
    x: int
    y: int
    w: int
    h: int
    area: int
    cx: float
    cy: float


def _blobs(mask: np.ndarray) -> tuple[np.ndarray, list[_Blob]]:
    n, labels, stats, cents = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    out = []
    for i in range(1, n):
        x, y, w, h, a = (int(v) for v in stats[i])
        if a >= MIN_AREA:
            out.append(_Blob(i, x, y, w, h, a, float(cents[i][0]), float(cents[i][1])))
    return labels, out


def compact(blobs: list[_Blob], max_side: int = 42) -> list[_Blob]:
    """Blobs the size and fill of a glyph (not ring arcs, not specks)."""
    return [b for b in blobs if max(b.w, b.h) <= max_side and b.area >= 0.12 * b.w * b.h
            and max(b.w, b.h) >= 5]


def ink_centre(mask: np.ndarray) -> tuple[float, float] | None:
    """Area-weighted centre of the glyph-like blobs (for re-centring the patch)."""
    _labels, blobs = _blobs(mask)
    blobs = compact(blobs)
    if not blobs:
        return None
    a = np.array([b.area for b in blobs], float)
    keep = a >= 0.15 * a.max()
    a = a[keep]
    xs = np.array([b.cx for b in blobs])[keep]
    ys = np.array([b.cy for b in blobs])[keep]
    return float((xs * a).sum() / a.sum()), float((ys * a).sum() / a.sum())


def glyph_image(strength: np.ndarray, labels: np.ndarray, blob: _Blob) -> np.ndarray:
    """The blob's ink, scaled so its longer side fills 16 of GLYPH pixels, centred."""
    x, y, w, h = blob.x, blob.y, blob.w, blob.h
    crop = strength[y:y + h, x:x + w] * (labels[y:y + h, x:x + w] == blob.label)
    s = 16.0 / max(w, h)
    nw, nh = max(1, int(round(w * s))), max(1, int(round(h * s)))
    small = cv2.resize(crop, (nw, nh), interpolation=cv2.INTER_AREA)
    out = np.zeros((GLYPH, GLYPH), np.float32)
    ox, oy = (GLYPH - nw) // 2, (GLYPH - nh) // 2
    out[oy:oy + nh, ox:ox + nw] = small
    return out


def hog(glyphs: np.ndarray) -> np.ndarray:
    """Histograms of gradient orientation (unsigned, 9 bins) in 5x5 cells of (N, 20, 20) glyphs."""
    g = glyphs.astype(np.float32)
    gx = np.zeros_like(g)
    gy = np.zeros_like(g)
    gx[:, :, 1:-1] = g[:, :, 2:] - g[:, :, :-2]
    gy[:, 1:-1, :] = g[:, 2:, :] - g[:, :-2, :]
    mag = np.hypot(gx, gy)
    ang = (np.arctan2(gy, gx) % np.pi) * (_BINS / np.pi)
    lo = np.floor(ang).astype(np.int64) % _BINS
    hi = (lo + 1) % _BINS
    w_hi = ang - np.floor(ang)
    n = g.shape[0]
    cells = GLYPH // _CELL
    cell_idx = (np.arange(GLYPH) // _CELL)
    cid = (cell_idx[:, None] * cells + cell_idx[None, :])[None].repeat(n, 0)
    base = (np.arange(n)[:, None, None] * cells * cells + cid) * _BINS
    hist = np.zeros(n * cells * cells * _BINS, np.float32)
    np.add.at(hist, (base + lo).ravel(), (mag * (1 - w_hi)).ravel())
    np.add.at(hist, (base + hi).ravel(), (mag * w_hi).ravel())
    hist = hist.reshape(n, -1)
    return hist / (np.linalg.norm(hist, axis=1, keepdims=True) + 1e-3)


def features(glyphs: list[np.ndarray], aspects: list[float]) -> np.ndarray:
    """HOG of each glyph + a coarse 10x10 copy + its aspect ratio."""
    arr = np.asarray(glyphs, np.float32).reshape(-1, GLYPH, GLYPH)
    coarse = arr.reshape(-1, 10, 2, 10, 2).mean(axis=(2, 4)).reshape(len(arr), -1)
    asp = np.log(np.maximum(np.asarray(aspects, np.float32), 1e-3))[:, None]
    return np.concatenate([hog(arr), coarse, asp], 1).astype(np.float32)


def _rotate(img: np.ndarray, angle_deg: float, interp) -> np.ndarray:
    m = cv2.getRotationMatrix2D((PATCH / 2 - 0.5, PATCH / 2 - 0.5), angle_deg, 1.0)
    return cv2.warpAffine(img, m, (PATCH, PATCH), flags=interp)


def up_guesses(mask: np.ndarray, max_guesses: int = 4) -> list[float]:
    """Rotation angles (degrees, for cv2.getRotationMatrix2D) that might make the print upright."""
    _labels, blobs = _blobs(mask)
    blobs = compact(blobs)
    if len(blobs) < 2:
        return []
    blobs.sort(key=lambda b: -b.area)
    blobs = blobs[:6]
    big = blobs[0].area
    angles = []
    for cand in blobs[:max_guesses + 1]:
        if cand.area > 0.95 * big and cand is blobs[0] and len(blobs) > 2:
            continue            # the largest blob is a digit unless there are only two
        rest = [b for b in blobs if b is not cand and b.area >= 0.3 * big]
        if not rest:
            continue
        a = np.array([b.area for b in rest], float)
        nx = float((np.array([b.cx for b in rest]) * a).sum() / a.sum())
        ny = float((np.array([b.cy for b in rest]) * a).sum() / a.sum())
        dx, dy = cand.cx - nx, cand.cy - ny
        if math.hypot(dx, dy) < 3:
            continue
        # Angle that turns the (dx, dy) direction to straight up (0, -1).
        ang = math.degrees(math.atan2(dx, -dy))
        angles.append(ang)
        if len(angles) >= max_guesses:
            break
    return angles


def parse(strength: np.ndarray, mask: np.ndarray, angle_deg: float) -> Layout | None:
    """Turn the print by angle_deg and split it into letter, digits and underline."""
    s = _rotate(strength, angle_deg, cv2.INTER_LINEAR)
    m = _rotate(mask.astype(np.uint8), angle_deg, cv2.INTER_NEAREST) > 0
    labels, blobs = _blobs(m)
    blobs = compact(blobs)
    if len(blobs) < 2:
        return None
    tall = max(b.h for b in blobs)
    # The number's digits: the tallest blobs, side by side in one row.
    row = [b for b in blobs if b.h >= 0.62 * tall]
    base_y = float(np.median([b.cy for b in row]))
    row = [b for b in row if abs(b.cy - base_y) < 0.45 * tall]
    if not row:
        return None
    row.sort(key=lambda b: b.cx)
    top = min(b.y for b in row)
    bottom = max(b.y + b.h for b in row)
    left, right = min(b.x for b in row), max(b.x + b.w for b in row)
    # The letter: the biggest blob above the digits, roughly over their middle.
    mid = (left + right) / 2
    above = [b for b in blobs if b not in row and b.y + b.h <= top + 0.25 * tall
             and abs(b.cx - mid) < 0.6 * (right - left) + 0.3 * tall]
    if not above:
        return None
    letter = max(above, key=lambda b: b.area)
    if letter.h < 0.3 * tall or letter.h > 0.95 * tall:
        return None
    underline = any(b.y >= bottom - 0.1 * tall and b.w > 2.0 * b.h and b.h < 0.3 * tall
                    and b.w > 0.3 * (right - left) for b in blobs if b not in row and b is not letter)
    digits = _split_touching(row, tall)
    if not 1 <= len(digits) <= 2:
        return None
    dig_imgs = []
    for d in digits:
        if isinstance(d, _Blob):
            dig_imgs.append((glyph_image(s, labels, d), d.w / d.h))
        else:
            dig_imgs.append(_cut(s, labels, *d))
    let_img = glyph_image(s, labels, letter)
    boxes = [(letter.x, letter.y, letter.w, letter.h)] + [
        (d.x, d.y, d.w, d.h) if isinstance(d, _Blob) else (d[1], d[2], d[3], d[4]) for d in digits]
    return Layout(angle_deg, let_img, [g for g, _a in dig_imgs], float(letter.h), float(tall), underline,
                  boxes, [letter.w / letter.h] + [a for _g, a in dig_imgs])


def _split_touching(row: list[_Blob], tall: float):
    """Digits of the row; one blob much wider than tall is two touching digits."""
    if len(row) == 1 and row[0].w > 1.05 * row[0].h:
        b = row[0]
        return [(b, b.x, b.y, b.w // 2, b.h, 0), (b, b.x + b.w // 2, b.y, b.w - b.w // 2, b.h, 1)]
    return row


def _cut(s: np.ndarray, labels: np.ndarray, blob: _Blob, x: int, y: int, w: int, h: int, _i: int):
    part = _Blob(blob.label, x, y, w, h, blob.area, 0, 0)
    # Trim the half to its own ink so the glyph is scaled like a free-standing digit.
    sub = (labels[y:y + h, x:x + w] == blob.label)
    cols = np.nonzero(sub.any(0))[0]
    rows = np.nonzero(sub.any(1))[0]
    if len(cols) and len(rows):
        part = _Blob(blob.label, x + int(cols[0]), y + int(rows[0]), int(cols[-1] - cols[0] + 1),
                     int(rows[-1] - rows[0] + 1), blob.area, 0, 0)
    return glyph_image(s, labels, part), part.w / max(part.h, 1)
