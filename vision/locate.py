"""Find the ball: a bright (or brightly coloured) circle in front of the dark holder.

Coarse: a circle Hough transform of our own on a 1/4-scale brightness image,
where each edge pixel votes along its gradient (dark -> bright points inward).
Fine: at full resolution, the ball's rim is searched along rays from the centre
and a circle is fitted to the rim points that are found (the holder lip hides
the lower rim, so missing rays are expected).
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from .stats import median, percentile

SCALE = 4
_RAYS = 72
_ANG = np.linspace(0, 2 * np.pi, _RAYS, endpoint=False)
_COS, _SIN = np.cos(_ANG).astype(np.float32), np.sin(_ANG).astype(np.float32)
_KS = np.linspace(0.8, 1.2, 41, dtype=np.float32)        # samples along each ray, in radii


@dataclass
class Circle:
    x: float
    y: float
    r: float
    support: float      # share of the rim seen as a clear bright -> dark edge
    lip_y: float | None = None   # row of the holder lip's edge below the ball's centre, if it hides any
    lip_slope: float = 0.0       # the lip's edge as a line: rows per column

    def as_tuple(self) -> tuple[float, float, float]:
        return (float(self.x), float(self.y), float(self.r))

    @property
    def lip(self) -> tuple[float, float, float] | None:
        """(x, row at x, slope) of the lip's edge, or None: what sphere/ink/colour take."""
        return None if self.lip_y is None else (float(self.x), float(self.lip_y), float(self.lip_slope))


@dataclass
class Thumbnail:
    """The ball's square of the frame shrunk to about 80 px across (INTER_AREA), made
    once per frame: enough for the rough print centre and the colour cue."""
    image: np.ndarray
    scale: float                 # thumbnail pixels per frame pixel
    x0: int                      # frame column and row of the square's corner
    y0: int


def ball_thumbnail(frame: np.ndarray, ball: tuple[float, float, float]) -> Thumbnail | None:
    """None when the frame shows too little of the ball's square."""
    x, y, r = ball
    h, w = frame.shape[:2]
    s = 40.0 / r
    x0, y0 = int(max(0, x - r)), int(max(0, y - r))
    x1, y1 = int(min(w, x + r + 1)), int(min(h, y + r + 1))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    return Thumbnail(cv2.resize(frame[y0:y1, x0:x1], None, fx=s, fy=s, interpolation=cv2.INTER_AREA), s, x0, y0)


def above_lip(lip: tuple[float, float, float] | None, xs, ys, margin: float = 0.0):
    """True where frame points (xs, ys) lie above the lip's edge by more than margin."""
    if lip is None:
        return np.ones(np.shape(xs), bool)
    x, row, slope = lip
    return ys < row + slope * (xs - x) - margin


def brightness(frame: np.ndarray) -> np.ndarray:
    """Max over colour channels: saturated ball colours stay bright, discs on the ball stay faint."""
    b, g, r = cv2.split(frame)
    return cv2.max(cv2.max(b, g), r)


def _coarse(v_small: np.ndarray, r_min: float, r_max: float, centre_box=None):
    v = cv2.GaussianBlur(v_small.astype(np.float32), (0, 0), 1.0)
    gx = cv2.Sobel(v, cv2.CV_32F, 1, 0)
    gy = cv2.Sobel(v, cv2.CV_32F, 0, 1)
    mag = cv2.magnitude(gx, gy)
    flat = mag.ravel()
    k = int(0.9 * flat.size)
    thr = max(float(np.partition(flat, k)[k]), 20.0)
    ys, xs = np.nonzero(mag > thr)
    if len(xs) < 10:
        return None
    m = mag[ys, xs]
    ux, uy = gx[ys, xs] / m, gy[ys, xs] / m
    wgt = np.minimum(m, 200.0)
    # Votes go to a half-resolution (x, y, r) accumulator, all radii in one bincount.
    h, w = (v.shape[0] + 1) // 2, (v.shape[1] + 1) // 2
    radii = np.arange(max(4.0, r_min), r_max + 1, 1.25, dtype=np.float32)
    nr = len(radii)
    cx = np.rint((xs[None, :] + ux[None, :] * radii[:, None]) / 2).astype(np.int32)
    cy = np.rint((ys[None, :] + uy[None, :] * radii[:, None]) / 2).astype(np.int32)
    idx = (np.arange(nr, dtype=np.int32)[:, None] * h + cy) * w + cx
    # Votes outside the frame go to one spare cell past the end (cheaper than picking the rest out).
    idx[(cx < 0) | (cx >= w) | (cy < 0) | (cy >= h)] = nr * h * w
    acc = np.bincount(idx.ravel(), weights=np.broadcast_to(wgt, cx.shape).ravel(), minlength=nr * h * w + 1)
    acc = acc[:-1].astype(np.float32).reshape(nr, h, w)
    acc = cv2.GaussianBlur(acc.reshape(nr * h, w), (3, 3), 0).reshape(nr, h, w)
    acc /= radii[:, None, None]
    radii = radii / 2
    if centre_box is not None:
        x0, y0, x1, y1 = centre_box
        mask = np.zeros((h, w), bool)
        mask[max(0, y0):max(0, y1), max(0, x0):max(0, x1)] = True
        acc[:, ~mask] = 0
    i, y, x = np.unravel_index(int(np.argmax(acc)), acc.shape)
    best = acc[i, y, x]
    if best <= 0:
        return None
    # A disc printed on the ball is a smaller circle inside it: prefer a larger
    # circle around the same place when it is nearly as strong.
    reach = int(0.5 * radii[i]) + 1
    for j in range(len(radii) - 1, i, -1):
        if radii[j] < radii[i] * 1.15:
            break
        ly, lx = max(0, y - reach), max(0, x - reach)
        win = acc[j, ly:y + reach + 1, lx:x + reach + 1]
        if win.max() >= 0.5 * best:
            yy, xx = np.unravel_index(int(np.argmax(win)), win.shape)
            i, y, x = j, yy + ly, xx + lx
            break
    return float(x), float(y), float(radii[i])


def _refine(v: np.ndarray, x: float, y: float, r: float, iterations: int = 3,
            colour: np.ndarray | None = None) -> Circle | None:
    """Fit the rim at full resolution: strongest bright -> dark step along each ray.
    colour: the same image in BGR, where a lip that brightness does not show is
    looked for again (_lip_edge)."""
    h, w = v.shape
    # Work in the window the rays can reach.
    m = 1.4 * r + 4
    x0, y0 = max(0, int(x - m)), max(0, int(y - m))
    x1, y1 = min(w, int(x + m) + 1), min(h, int(y + m) + 1)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    vf = v[y0:y1, x0:x1]
    x, y = x - x0, y - y0
    h, w = vf.shape
    support = 0.0
    for _ in range(iterations):
        px = x + r * _COS[:, None] * _KS[None, :]
        py = y + r * _SIN[:, None] * _KS[None, :]
        prof = cv2.remap(vf, px, py, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        outside = (px < 0) | (px > w - 1) | (py < 0) | (py > h - 1)
        d = prof[:, :-4] - prof[:, 4:]            # drop over 4 samples, positive = bright inside
        d[outside[:, 4:] | outside[:, :-4]] = 0
        j = np.argmax(d, axis=1)
        step = d[np.arange(_RAYS), j]
        # A rim is a clear drop; rays over the lip or a dark rim give weak steps.
        strong = step > max(20.0, 0.45 * float(percentile(step, 75)))
        if strong.sum() < 12:
            return None
        k = _KS[j + 2]
        ex = x + r * _COS * k
        ey = y + r * _SIN * k
        ex, ey = ex[strong], ey[strong]
        # Algebraic (Kasa) circle fit, refitted without the points well inside
        # the circle: the lip's edge across the ball is a chord, not the rim.
        for _fit in range(4):
            a = np.stack([ex, ey, np.ones_like(ex)], 1)
            b = ex * ex + ey * ey
            sol, *_ = np.linalg.lstsq(a, b, rcond=None)
            nx, ny = sol[0] / 2, sol[1] / 2
            nr = float(np.sqrt(max(sol[2] + nx * nx + ny * ny, 1.0)))
            res = np.hypot(ex - nx, ey - ny) - nr
            tol = max(1.5, 2.0 * float(median(np.abs(res))))
            keep = (res > -tol) & (res < 2 * tol)
            if keep.all() or keep.sum() < 10:
                break
            ex, ey = ex[keep], ey[keep]
        x, y, r = float(nx), float(ny), nr
        support = len(ex) / _RAYS
    # The lowest rim point seen: below it the lip may hide the ball. A rim lost
    # in the shadow under a dark ball looks the same, so the lip must show itself
    # as a straight edge across the ball.
    low = float(ey.max())
    lip = None
    if low < y + 0.93 * r:
        lip = _lip_edge(vf, x, y, r, low)
        # A brown lip under a blue disc in dim light is as bright as the disc:
        # its edge is a change of colour only (B3 read B2, the 3's lower half
        # under a lip not found: calibration frame 507925:32).
        if lip is None and colour is not None:
            lip = _lip_edge(colour[y0:y1, x0:x1].astype(np.float32), x, y, r, low)
    if lip is None:
        return Circle(x + x0, y + y0, r, support)
    return Circle(x + x0, y + y0, r, support, lip[0] + y0, lip[1])


_LIP_U = np.linspace(-0.6, 0.6, 13, dtype=np.float32)     # columns, in radii from the centre
_PAIRS = np.triu_indices(len(_LIP_U), 1)


def _lip_edge(vf: np.ndarray, x: float, y: float, r: float, low: float) -> tuple[float, float] | None:
    """The holder lip's upper edge as (row below the centre, slope), or None when there is no lip.

    Down each of 13 columns across the ball, the lowest clear brightness step
    above the rim (either way: the lip may be lighter or darker than the ball;
    in a colour image, the largest step of the three channels).
    A lip is a straight edge, often slanted (the ball is not at the middle of
    the holder's curve): most columns' steps lie on one line. Print, a disc's
    edge or smooth shading do not line up like that.
    """
    ts = np.linspace(0.0, 1.0, 40, dtype=np.float32)
    px = np.repeat((x + r * _LIP_U)[:, None], len(ts), 1)
    bottom = y + r * np.sqrt(1 - _LIP_U ** 2)                 # the rim below each column
    top = np.minimum(low - 0.45 * r, bottom - 0.05 * r)       # search near the lowest rim point only
    py = top[:, None] + (bottom - top)[:, None] * ts[None, :]
    prof = cv2.remap(vf, px, py, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    d = np.abs(prof[:, 3:] - prof[:, :-3])
    if d.ndim == 3:
        d = d.max(axis=2)
    mid_rows = py[:, 1:-2]
    step = (d > 14.0) & (mid_rows < (bottom - 0.04 * r)[:, None])
    # Below the lip there is only the holder: the lip is the lowest clear step
    # (print above it may step more strongly). Climb to that step's peak.
    cols = np.arange(len(_LIP_U))
    j = step.shape[1] - 1 - np.argmax(step[:, ::-1], axis=1)
    for _ in range(3):
        up = (j > 0) & (d[cols, np.maximum(j - 1, 0)] > d[cols, j])
        j = np.where(up, j - 1, j)
    strong = step.any(axis=1)
    rows = mid_rows[cols, j]
    if strong.sum() < 8:
        return None
    # Theil-Sen line through the steps: robust to the few that are print.
    u = _LIP_U * r
    i, k = _PAIRS
    ok = strong[i] & strong[k]
    slope = float(median((rows[k] - rows[i])[ok] / (u[k] - u[i])[ok]))
    row0 = float(median((rows - slope * u)[strong]))
    line = row0 + slope * u
    agree = strong & (np.abs(rows - line) < 0.04 * r)
    if agree.sum() < 8 or abs(slope) > 0.7:
        return None
    return row0 - 0.01 * r, slope


def find_ball(frame: np.ndarray, region: tuple[float, float, float] | None = None,
              r_range: tuple[float, float] = (70, 200), holder_check: bool = True,
              colour_lip: bool = True) -> Circle | None:
    """The ball's circle in frame pixels, or None. region: calibrated holder circle (x, y, r).
    holder_check: drop a lip whose edge has ball under it (_lip_is_holder).
    colour_lip: where brightness shows no lip, look for one in colour."""
    h, w = frame.shape[:2]
    # The rim is fitted at half resolution (ample for balls of 70+ px radius).
    half_bgr = cv2.resize(frame, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    half = brightness(half_bgr)
    colour = half_bgr if colour_lip else None
    small = cv2.resize(half, (w // SCALE, h // SCALE), interpolation=cv2.INTER_AREA)
    half = half.astype(np.float32)
    box = None
    r_min, r_max = r_range
    if region is not None:
        rx, ry, rr = region
        s = 2 * SCALE
        box = (int((rx - 0.5 * rr) / s), int((ry - 0.5 * rr) / s),
               int((rx + 0.5 * rr) / s) + 1, int((ry + 0.5 * rr) / s) + 1)
        r_min, r_max = 0.6 * rr, 1.25 * rr
    coarse = _coarse(small, r_min / SCALE, r_max / SCALE, box)
    if coarse is None:
        return None
    cx, cy, cr = coarse
    s = SCALE        # an accumulator cell is SCALE half-resolution pixels
    found = _refine(half, cx * s + s / 2 - 0.5, cy * s + s / 2 - 0.5, cr * s, colour=colour)
    if found is None:
        return None
    # A white disc on a dark ball can outshine the ball's own rim: look once
    # for a clear rim further out around the same centre.
    if region is None or found.r < 0.85 * region[2] / 2:
        outer = _refine(half, found.x, found.y, found.r * 1.45, iterations=2, colour=colour)
        if (outer is not None and outer.r > 1.15 * found.r and outer.support >= 0.35
                and np.hypot(outer.x - found.x, outer.y - found.y) < 0.3 * found.r
                and (region is None or outer.r < 1.25 * region[2] / 2)):
            found = outer
    full = _to_full(found)
    if holder_check and full.lip_y is not None and not _lip_is_holder(frame, full):
        full = Circle(full.x, full.y, full.r, full.support)
    return full


# A lip hides the ball with the holder, and the holder goes on beside the ball:
# under the lip's edge, the circle shows the colours the frame shows beside the
# ball at the same rows. A number's baseline or a disc's edge lined up like a
# lip has ball under it (dev set: a disc's edge taken for a lip hid the lower
# half of I20's 0). Renderer lips found: 99% within 8 of the holder beside.
LIP_HOLDER_DIFF = 20.0           # largest channel difference of the two medians
_LIP_IN_U = np.linspace(-0.55, 0.55, 16, dtype=np.float32)          # columns under the lip, in radii
_LIP_OUT_U = np.linspace(1.15, 1.6, 8, dtype=np.float32)            # columns beside the ball, each side
_LIP_T = np.linspace(0.05, 0.2, 6, dtype=np.float32)                # rows below the lip's edge, in radii


def _lip_is_holder(frame: np.ndarray, c: Circle) -> bool:
    """Does the part of the ball under the found lip look like the holder beside
    the ball? True when it cannot be told (too little of either in the frame)."""
    h, w = frame.shape[:2]

    def colours(u: np.ndarray, in_ball: bool) -> np.ndarray:
        xs = np.repeat(c.x + c.r * u, len(_LIP_T))
        ys = np.tile(_LIP_T * c.r, len(u)) + c.lip_y + c.lip_slope * (xs - c.x)
        ok = (xs >= 0) & (xs <= w - 1) & (ys >= 0) & (ys <= h - 1)
        if in_ball:
            ok &= (xs - c.x) ** 2 + (ys - c.y) ** 2 < (0.95 * c.r) ** 2
        return frame[np.rint(ys[ok]).astype(int), np.rint(xs[ok]).astype(int)].astype(np.float32)

    under = colours(_LIP_IN_U, True)
    if len(under) < 12:
        return True
    ref = np.median(under, axis=0)
    diffs = [float(np.abs(np.median(side, axis=0) - ref).max())
             for side in (colours(_LIP_OUT_U, False), colours(-_LIP_OUT_U, False)) if len(side) >= 12]
    return not diffs or min(diffs) <= LIP_HOLDER_DIFF


def _to_full(c: Circle) -> Circle:
    """Half-resolution circle -> frame pixels."""
    lip = None if c.lip_y is None else 2 * c.lip_y + 0.5
    return Circle(2 * c.x + 0.5, 2 * c.y + 0.5, 2 * c.r, c.support, lip, c.lip_slope)
