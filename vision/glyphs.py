"""Cut the flattened print into glyphs: the letter above, one or two digits below.

The print's rotation in its plane is unknown. Every blob that could be the
letter gives one guess: "up" points from the number's blobs to the letter.
Each guess is turned upright and parsed into a layout; the classifier later
says which guess reads best.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import cv2
import numpy as np

from .sphere import PATCH, deg_per_px

_PX = 1.0 / deg_per_px()      # patch pixels per degree of the sphere

GLYPH = 20                     # glyph image side for the classifier
SHORT = 0.7                    # digits of one number share a height (Layout.short_digit)
SHORT_AT_EDGE = 0.85           # ... and a digit touching the unseen part needs less to count as cut
LONE_REACH = 1.0               # a lone digit's neighbour place: a digit's width and a gap (x tall)
NARROW_AT_EDGE = 0.7           # digits but the 1 share a width: a narrower one at the edge lost a side
_CELL = 5
_BINS = 9
MIN_AREA = 10
_K3 = np.ones((3, 3), np.uint8)


@dataclass
class Layout:
    """One reading guess: the upright print split into letter and digits."""

    angle_deg: float                     # rotation applied to make the print upright
    letter: np.ndarray | None            # GLYPH x GLYPH float32 glyph images; None: letter unseen
    digits: list[np.ndarray]
    letter_height: float                 # pixel sizes, for the size cue
    digit_height: float
    underline: bool
    boxes: list[tuple[int, int, int, int]] = field(default_factory=list)  # upright patch boxes
    aspects: list[float] = field(default_factory=list)   # width / height of letter, digits
    holes: list[int] = field(default_factory=list)       # closed loops in each glyph's ink (8: 2, 6: 1)
    truncated: bool = False    # stray ink near the print
    clipped: bool = False      # a glyph touches what the frame does not show (lip, rim, patch edge)
    unseen_beside: str = ""    # lone digit: which neighbour places the frame hides ("l", "r", "lr")
    short_digit: bool = False  # one digit under SHORT of the other's height (SHORT_AT_EDGE where
                               # it touches the unseen part): it lost a part
    short_at_edge: bool = False  # ... and it touches the unseen part or a saturated highlight:
                                 # what it lost may be hidden there (also: the letter unseen and
                                 # both digits' tops touching the unseen part, _top_unseen)
    narrow_at_edge: int = -1   # digit (0 tens, 1 ones) under NARROW_AT_EDGE of the other's width,
                               # touching the unseen part: unless it is a 1, it lost a side
    foot_unseen: tuple[bool, ...] = ()  # per digit: its foot may be hidden (_foot_unseen, _under_unseen)
    joined: tuple[bool, ...] = ()       # per digit: joined from pieces stacked in its column (_merge_columns)

    @property
    def open_loops(self) -> list[bool]:
        """Per glyph (letter first): loops it may lack. The letter's: it is small and
        its thin strokes (a serif O's top and bottom, a B's bowls) fall under the ink
        threshold or break it into pieces, so a lost loop says little about it."""
        return ([True] if self.letter is not None else []) + [False] * len(self.digits)


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
    # Specks are most components: leave them out before making blobs of the rest.
    big = np.flatnonzero(stats[1:, cv2.CC_STAT_AREA] >= MIN_AREA) + 1
    return labels, [_Blob(int(i), x, y, w, h, a, cx, cy)
                    for i, (x, y, w, h, a), (cx, cy) in zip(big, stats[big].tolist(), cents[big].tolist())]


def compact(blobs: list[_Blob]) -> list[_Blob]:
    """Blobs the size and fill of a glyph, near the print centre (not ring arcs, not specks)."""
    c = PATCH / 2
    return [b for b in blobs if max(b.w, b.h) <= 44 * _PX and b.area >= 0.15 * b.w * b.h
            and max(b.w, b.h) >= 5 * _PX and math.hypot(b.cx - c, b.cy - c) < 31 * _PX]


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


def _own_ink(labels: np.ndarray, blob: _Blob) -> np.ndarray:
    """Bool mask of the blob's own ink inside its box (a merged blob: all its parts)."""
    lab = labels[blob.y:blob.y + blob.h, blob.x:blob.x + blob.w]
    if blob.label >= 0:
        return lab == blob.label
    return np.isin(lab, [p.label for p in blob.parts])


def hole_count(labels: np.ndarray, blob: _Blob) -> int:
    """Closed loops in the blob's ink: paper regions it encloses (specks left out).
    Ink can lose a loop (glare breaks a stroke) but hardly gains one."""
    own = _own_ink(labels, blob)
    paper = np.ones((blob.h + 2, blob.w + 2), np.uint8)
    paper[1:-1, 1:-1] = ~own
    n, _lab, stats, _c = cv2.connectedComponentsWithStats(paper, connectivity=4)
    least = max(4, 0.015 * blob.w * blob.h)
    # Component 1 is the paper around the glyph (it holds the padded border).
    return int(sum(1 for i in range(2, n) if stats[i, cv2.CC_STAT_AREA] >= least))


def glyph_image(strength: np.ndarray, labels: np.ndarray, blob: _Blob) -> np.ndarray:
    """The blob's ink, scaled so its longer side fills 16 of GLYPH pixels, centred."""
    x, y, w, h = blob.x, blob.y, blob.w, blob.h
    own = _own_ink(labels, blob)
    crop = strength[y:y + h, x:x + w] * own
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


def _upright_angle(dx: float, dy: float) -> float:
    """Rotation (deg, cv2 convention) that turns image direction (dx, dy) to straight up."""
    return math.degrees(math.atan2(dx, -dy))


def up_guesses(mask: np.ndarray, max_guesses: int = 4) -> list[tuple[float, tuple[float, float] | None]]:
    """Guesses (angle, letter centre or None) of the print's rotation.

    With a letter: "up" points from the number's blobs to the letter blob.
    Without one (glare or the lip can hide it): two digits side by side give
    up as either normal of their row.
    """
    _labels, blobs = _blobs(mask)
    blobs = compact(blobs)
    if not blobs:
        return []
    blobs.sort(key=lambda b: -b.area)
    blobs = blobs[:6]
    big = blobs[0].area
    out: list[tuple[float, tuple[float, float] | None]] = []
    for cand in blobs[:max_guesses + 1]:
        if cand is blobs[0] and len(blobs) > 2:
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
        out.append((_upright_angle(dx, dy), (cand.cx, cand.cy)))
        if len(out) >= max_guesses:
            break
    if len(blobs) >= 2 and blobs[1].area >= 0.4 * big:
        a, b = blobs[0], blobs[1]
        dx, dy = b.cx - a.cx, b.cy - a.cy
        if math.hypot(dx, dy) > 0.25 * max(a.h, a.w):
            out.append((_upright_angle(-dy, dx), None))
            out.append((_upright_angle(dy, -dx), None))
    return out


def _rotation(angle_deg: float) -> np.ndarray:
    return cv2.getRotationMatrix2D((PATCH / 2 - 0.5, PATCH / 2 - 0.5), angle_deg, 1.0)


def upright_mask(mask: np.ndarray, angle_deg: float) -> np.ndarray:
    """A bool patch map turned like a layout of that angle (Layout.angle_deg)."""
    return _turned_mask(mask, _rotation(angle_deg))


def _turned_mask(mask: np.ndarray, m_rot: np.ndarray) -> np.ndarray:
    """A bool patch map turned like the print (outside the patch: False)."""
    return cv2.warpAffine(mask.astype(np.uint8), m_rot, (PATCH, PATCH), flags=cv2.INTER_NEAREST) > 0


def parse(strength: np.ndarray, mask: np.ndarray, angle_deg: float,
          letter_at: tuple[float, float] | str | None = None, valid: np.ndarray | None = None,
          faint: np.ndarray | None = None, join_letter: bool = True,
          glare: Callable[[], np.ndarray] | None = None) -> Layout | None:
    """Turn the print by angle_deg and split it into letter (if letter_at), digits and underline.

    letter_at: the letter blob's centre before turning, "top" for the topmost
    blob (used in training, where the true rotation is known), or None.
    valid, faint: what the frame shows and the faint ink (Print), to tell where
    a lone digit's neighbour may stand unseen. glare: gives the saturated
    highlights (Print.highlights), which hide a digit's part as the lip does;
    asked only when a digit is short enough for it to matter.
    join_letter: join the pieces a letter broke into (reading; training cuts one blob).
    """
    m_rot = _rotation(angle_deg)
    s = cv2.warpAffine(strength, m_rot, (PATCH, PATCH), flags=cv2.INTER_LINEAR)
    m = _turned_mask(mask, m_rot)
    labels, all_blobs = _blobs(m)
    blobs = compact(all_blobs)
    if not blobs:
        return None
    big = max(b.area for b in blobs)
    blobs = [b for b in blobs if b.area >= 0.08 * big]
    letter = None
    if letter_at == "top":
        letter = min(blobs, key=lambda b: b.cy)
    elif letter_at is not None:
        lx, ly = m_rot @ np.array([letter_at[0], letter_at[1], 1.0])
        letter = min(blobs, key=lambda b: math.hypot(b.cx - lx, b.cy - ly))
        if math.hypot(letter.cx - lx, letter.cy - ly) > 0.5 * max(letter.w, letter.h) + 2:
            return None
    rest = [b for b in blobs if b is not letter]
    if letter is not None:
        # The number sits under the letter.
        rest = [b for b in rest if b.cy > letter.cy + 0.3 * letter.h]
    if not rest:
        return None
    tall = max(b.h for b in rest)
    row = [b for b in rest if b.h >= 0.55 * tall]
    base = max(row, key=lambda b: b.h).cy
    row = [b for b in row if abs(b.cy - base) < 0.4 * tall]
    if letter is not None:
        row = [b for b in row if abs(b.cx - letter.cx) < 1.6 * tall]
    if not row:
        return None
    # Pieces of a glyph a highlight broke off (a 7's bar, a 6's bowl) are too
    # short for the row on their own: they join the glyph whose column they share.
    # Flat blobs below the middle are underlines and stay apart.
    pieces = [b for b in rest if b not in row and abs(b.cy - base) < 0.6 * tall
              and not (b.cy > base and b.w > 2.0 * b.h)]
    row = [b for b in _merge_columns(row + pieces) if b.h >= 0.55 * tall and b.h <= 1.2 * tall]
    if not row:
        return None
    row.sort(key=lambda b: b.cx)
    bottom = max(b.y + b.h for b in row)
    left, right = min(b.x for b in row), max(b.x + b.w for b in row)
    if letter is not None and join_letter:
        letter = _letter_with_pieces(letter, [b for b in blobs if b is not letter and b not in row
                                              and b not in pieces], min(b.y for b in row), tall)
    if letter is not None and not (0.3 * tall <= letter.h <= 0.95 * tall):
        return None
    bars = [b for b in blobs if b not in row and b is not letter and b.y >= bottom - 0.15 * tall
            and b.w > 2.0 * b.h and b.h < 0.3 * tall and b.w > 0.3 * (right - left)]
    underline = bool(bars)
    digits = _split_touching(row, tall)
    if not 1 <= len(digits) <= 2:
        return None
    if letter is None and len(digits) != 2:
        return None             # a lone digit without its letter has no known "up"
    dig = []
    for d in digits:
        if isinstance(d, _Blob):
            dig.append((glyph_image(s, labels, d), d.w / d.h, (d.x, d.y, d.w, d.h), hole_count(labels, d)))
        else:
            dig.append(_cut(s, labels, *d))
    boxes = [b[2] for b in dig]
    short_digit = len(boxes) == 2 and min(b[3] for b in boxes) < SHORT * max(b[3] for b in boxes)
    aspects = [b[1] for b in dig]
    holes = [b[3] for b in dig]
    if letter is not None:
        boxes = [(letter.x, letter.y, letter.w, letter.h)] + boxes
        aspects = [letter.w / letter.h] + aspects
        holes = [hole_count(labels, letter)] + holes
        let_img = glyph_image(s, labels, letter)
        let_h = float(letter.h)
    else:
        let_img, let_h = None, 0.0
    used = {b.label for b in bars}
    for b in row + ([letter] if letter is not None else []):
        used.update(p.label for p in getattr(b, "parts", [b]))
    # Ink (specks included) that is not part of the layout.
    other = np.ones(int(labels.max()) + 1, bool)
    other[0] = False
    other[list(used)] = False
    other_ink = other[labels]
    truncated = _stray_ink(all_blobs, used, boxes, tall, labels, lone=len(dig) == 1) or (
        _touching_ink(other_ink, boxes, tall)) or (
        len(dig) == 1 and _ink_beside(other_ink, boxes[-1], tall)) or (
        letter is not None and _ink_in_gap(all_blobs, used, boxes))
    clipped, unseen_beside, narrow_at_edge, short_at_edge, foot_unseen = False, "", -1, False, ()
    if valid is not None and not truncated:
        v = _turned_mask(valid, m_rot)
        clipped = _touches_unseen(v, boxes, tall)
        foot_unseen = tuple(clipped and (_foot_unseen(v, b, tall) if len(dig) == 1 else _under_unseen(v, b, tall))
                            for b in boxes[len(boxes) - len(dig):])
        if clipped and len(dig) == 2:
            short_at_edge, narrow_at_edge = _cut_at_edge(v, [b[2] for b in dig], tall)
            # With the letter unseen, the lip can take the tops of both digits alike, so
            # neither is short beside the other (I23 upside down read I25 at 0.9999, fresh
            # frame 6800008:62, a font family never trained on).
            short_at_edge = short_at_edge or (letter is None and all(_top_unseen(v, b[2], tall) for b in dig))
            short_digit = short_digit or short_at_edge
        if len(dig) == 1:
            unseen_beside = _unseen_beside(v, boxes[-1], tall)
        elif glare is not None and not short_at_edge and _uneven(dig) and (spots := glare()).any():
            # The lower loop of an 8 under a highlight leaves a 3 (I28 read I23 at
            # 0.9999, fresh frame 4900003:98): short beside its neighbour, touching the spot.
            short_at_edge = _cut_at_edge(v & ~_turned_mask(spots, m_rot), [b[2] for b in dig], tall)[0]
            short_digit = short_digit or short_at_edge
    if faint is not None and not truncated and len(dig) == 1:
        beside = _faint_beside(_turned_mask(faint, m_rot), np.isin(labels, list(used)), boxes[-1], tall)
        unseen_beside = "".join(side for side in "lr" if side in unseen_beside + beside)
    return Layout(angle_deg, let_img, [b[0] for b in dig], let_h, float(tall), underline, boxes, aspects,
                  holes, truncated, clipped, unseen_beside, short_digit, short_at_edge, narrow_at_edge,
                  foot_unseen, tuple(isinstance(d, _Blob) and d.label < 0 for d in digits))


def grown_glyphs(strength: np.ndarray, mask: np.ndarray, faints: list[np.ndarray],
                 lay: Layout) -> list[tuple[list, list, list, list]]:
    """The layout's glyphs (letter first) with the faint ink that touches them
    added back, once per faint map: a highlight lightens ink below the mask's
    threshold, and what is left of an 8 missing its left half is a clean 3.
    (images, aspects, holes, added ink) per faint map; the added ink of a glyph
    is (y0, x0, upright mask) for added_share."""
    m_rot = _rotation(lay.angle_deg)
    s = cv2.warpAffine(strength, m_rot, (PATCH, PATCH), flags=cv2.INTER_LINEAR)
    m = _turned_mask(mask, m_rot)
    faints = [_turned_mask(f, m_rot) for f in faints]
    out: list[tuple[list, list, list, list]] = [([], [], [], []) for _ in faints]
    for j, (x, y, w, h) in enumerate(lay.boxes):
        others = np.zeros_like(m)
        for k, (ox, oy, ow, oh) in enumerate(lay.boxes):
            if k != j:
                others[oy:oy + oh, ox:ox + ow] = m[oy:oy + oh, ox:ox + ow]
        others = cv2.dilate(others.astype(np.uint8), _K3) > 0
        reach = int(round(0.6 * h))
        # A digit shorter than the row lost its top or bottom (the top of a 3
        # under a highlight leaves a 5's hook): it may grow back to the row's height.
        # (A pixel or two short is only the font or the blur.)
        is_digit = j > 0 or lay.letter is None
        lost = int(round(lay.digit_height)) - h if is_digit and h < 0.85 * lay.digit_height else 0
        x0, x1 = max(0, x - reach), min(PATCH, x + w + reach)
        y0, y1 = max(0, y - 2 - lost), min(PATCH, y + h + 2 + lost)
        own = np.zeros((y1 - y0, x1 - x0), bool)
        own[y - y0:y - y0 + h, x - x0:x - x0 + w] = m[y:y + h, x:x + w]
        s_win = np.maximum(s[y0:y1, x0:x1], 0.8)
        others_win = others[y0:y1, x0:x1]
        for faint, (images, aspects, holes, added) in zip(faints, out):
            win = (faint[y0:y1, x0:x1] & ~others_win).astype(np.uint8)
            n, lab = cv2.connectedComponents(win, connectivity=8)
            touching = np.zeros(n, bool)
            touching[lab[own]] = True
            touching[0] = False
            grown = touching[lab] | own
            if not grown.any():             # no ink in the box at all: the glyph as it was
                grown[y - y0:y - y0 + h, x - x0:x - x0 + w] = True
            ys, xs = np.nonzero(grown)
            gy0, gy1, gx0, gx1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
            # In window coordinates: the blob, its labels and its ink.
            blob = _Blob(1, int(gx0), int(gy0), int(gx1 - gx0), int(gy1 - gy0), int(grown.sum()), 0, 0)
            labels = grown.astype(np.int32)
            # Faint ink counts as ink: the classifier knows strokes, not how light they are.
            full = np.where(grown, s_win, 0).astype(np.float32)
            images.append(glyph_image(full, labels, blob))
            aspects.append(blob.w / max(blob.h, 1))
            holes.append(hole_count(labels, blob))
            added.append((y0, x0, grown & ~own))
    return out


def added_share(where: np.ndarray, lay: Layout, added: tuple[int, int, np.ndarray]) -> float:
    """Share of the ink grown_glyphs added to a glyph that lies in `where` (a patch map)."""
    y0, x0, ink = added
    h, w = ink.shape
    turned = _turned_mask(where, _rotation(lay.angle_deg))[y0:y0 + h, x0:x0 + w]
    return float((ink & turned).sum()) / max(int(ink.sum()), 1)


def _stray_ink(blobs: list[_Blob], used: set[int], boxes, tall: float, labels: np.ndarray | None = None,
               lone: bool = False) -> bool:
    """True when glyph-sized ink near the print is not part of the layout: a
    broken-up digit left out of the row would let B12 read as B2. Long arcs
    (the ring, the disc's edge) reach out of the window and do not count. Beside
    a lone digit the window takes in its neighbour places (LONE_REACH): the
    pieces of a 2 broken up at the rim let B12 read as B1."""
    reach = (LONE_REACH if lone else 0.5) * tall
    x0 = min(b[0] for b in boxes) - reach
    x1 = max(b[0] + b[2] for b in boxes) + reach
    y0 = min(b[1] for b in boxes) - 0.2 * tall
    y1 = max(b[1] + b[3] for b in boxes) + 0.3 * tall
    near = [b for b in blobs if b.label not in used and max(b.w, b.h) <= 1.1 * tall
            and b.x >= x0 and b.y >= y0 and b.x + b.w <= x1 and b.y + b.h <= y1]
    if near and labels is not None:
        near = [b for b in near if not _on_long_arc(labels, b, used, boxes, tall)]
    x, y, w, h = boxes[-1]
    return sum(b.area for b in near) > 0.08 * w * h


# Each patch pixel's distance from the patch centre (the print's centre).
_yy, _xx = np.mgrid[0:PATCH, 0:PATCH]
_RADIUS = np.hypot(_xx - (PATCH / 2 - 0.5), _yy - (PATCH / 2 - 0.5)).astype(np.float32)
del _yy, _xx


def _on_long_arc(labels: np.ndarray, blob: _Blob, used: set[int], boxes, tall: float) -> bool:
    """A piece of the ring or the disc's edge (glare and blur break them up):
    wholly outside the glyphs' reach about the print's centre, thin along the
    radius, with more ink at that radius well away from it. (A broken-up
    digit's pieces lie within the print, close together.)"""
    r = _RADIUS
    own = r[labels == blob.label]
    lo, hi = float(own.min()) - 1.5, float(own.max()) + 1.5
    c = PATCH / 2 - 0.5
    reach = max(math.hypot(cx - c, cy - c) for x, y, w, h in boxes
                for cx in (x, x + w - 1) for cy in (y, y + h - 1))
    if lo < reach or hi - lo > 0.5 * tall:
        return False
    yy, xx = np.nonzero((r >= lo) & (r <= hi) & (labels > 0))
    keep = ~np.isin(labels[yy, xx], list(used) + [blob.label])
    far = np.hypot(xx[keep] - blob.cx, yy[keep] - blob.cy) > 1.5 * tall
    return int(far.sum()) >= 2 * tall


def _ink_in_gap(blobs: list[_Blob], used: set[int], boxes) -> bool:
    """Ink between the letter and the number that is part of neither: the gap is
    clean paper on every ball, so it is a piece a highlight broke off a glyph
    (the hook of a 6, and the bowl left reads as a 9)."""
    _x, ly, _w, lh = boxes[0]
    left = min(b[0] for b in boxes[1:])
    right = max(b[0] + b[2] for b in boxes[1:])
    top = min(b[1] for b in boxes[1:])
    return any(b.label not in used and b.y >= ly + lh - 1 and b.y + b.h <= top + 1
               and b.x + b.w > left and b.x < right for b in blobs)


def _touching_ink(other_ink: np.ndarray, boxes, tall: float) -> bool:
    """Other ink right inside the glyphs' boxes: a digit fused with the ring
    loses its shape (a 9 eaten by the ring read as a 2)."""
    pad = int(round(0.1 * tall))
    for x, y, w, h in boxes:
        win = other_ink[max(0, y - pad):max(0, y + h + pad), max(0, x - pad):max(0, x + w + pad)]
        if int(win.sum()) > 0.05 * w * h:
            return True
    return False


def _ink_beside(other_ink: np.ndarray, box, tall: float) -> bool:
    """A lone digit must have clean paper on both sides: any other ink there may
    be the broken-up rest of a two-digit number."""
    x, y, w, h = box
    side = int(round(0.6 * tall))
    for x0, x1 in ((x - side, x), (x + w, x + w + side)):
        win = other_ink[max(0, y):max(0, y + h), max(0, x0):max(0, x1)]
        if int(win.sum()) > 0.05 * w * h:
            return True
    return False


def _faint_beside(faint: np.ndarray, layout_ink: np.ndarray, box, tall: float) -> str:
    """Which neighbour places of a lone digit ("l", "r", "lr" or "") hold
    glyph-sized faint ink apart from the layout's glyphs: a highlight can
    lighten a whole digit below the mask's threshold (B13 shows as a B3 and a
    pale 1). Long arcs (ring, disc edge) do not count."""
    _n, lab, stats, _ = cv2.connectedComponentsWithStats(faint.astype(np.uint8), connectivity=8)
    small = np.maximum(stats[:, cv2.CC_STAT_WIDTH], stats[:, cv2.CC_STAT_HEIGHT]) <= 1.1 * tall
    small[np.unique(lab[layout_ink])] = False      # the layout's own glyphs, grown faint
    small[0] = False
    x, y, w, h = box
    side = int(round(0.6 * tall))
    out = ""
    for name, x0, x1 in (("l", x - side, x), ("r", x + w, x + w + side)):
        win = lab[max(0, y):max(0, y + h), max(0, x0):max(0, x1)]
        if int(small[win].sum()) > 0.05 * w * h:
            out += name
    return out


def _seen(visible: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> bool:
    if x0 < 0 or y0 < 0 or x1 > PATCH or y1 > PATCH:
        return False
    return bool(visible[y0:y1, x0:x1].all())


def _uneven(dig) -> bool:
    """Is one of two digits short enough beside the other to count as cut (SHORT_AT_EDGE)?"""
    a, b = (d[2][3] for d in dig)
    return min(a, b) < SHORT_AT_EDGE * max(a, b)


def _touches_unseen(visible: np.ndarray, boxes, tall: float) -> bool:
    """A glyph touches what the frame does not show: its edge may be cut off."""
    pad = int(round(0.08 * tall))
    return not all(_seen(visible, x - pad, y - pad, x + w + pad, y + h + pad) for x, y, w, h in boxes)


def _cut_at_edge(visible: np.ndarray, digits, tall: float) -> tuple[bool, int]:
    """Of two digit boxes, one touching what the frame does not show and smaller than
    the other lost its missing part there. Whether one is under SHORT_AT_EDGE of the
    other's height (a 4 squeezed into the rim left a "<" read as a 1), and which one
    (0, 1; -1: none) is under NARROW_AT_EDGE of its width (a 2 read as a 7)."""
    def cut(i: int, size: int, level: float) -> bool:
        return digits[i][size] < level * digits[1 - i][size] and _touches_unseen(visible, [digits[i]], tall)
    short = cut(0, 3, SHORT_AT_EDGE) or cut(1, 3, SHORT_AT_EDGE)
    narrow = next((i for i in (0, 1) if cut(i, 2, NARROW_AT_EDGE)), -1)
    return short, narrow


def _top_unseen(visible: np.ndarray, box, tall: float) -> bool:
    """Does the upper third of a digit's box touch what the frame does not show?"""
    x, y, w, h = box
    pad = int(round(0.08 * tall))
    return not _seen(visible, x - pad, y - pad, x + w + pad, y + h // 3)


def _foot_unseen(visible: np.ndarray, box, tall: float) -> bool:
    """Does the lower third of a lone digit's box touch what the frame does not show?"""
    x, y, w, h = box
    pad = int(round(0.08 * tall))
    return not _seen(visible, x - pad, y + (2 * h) // 3, x + w + pad, y + h + pad)


def _under_unseen(visible: np.ndarray, box, tall: float) -> bool:
    """Does the band just under a digit's box touch what the frame does not show? (For
    two digits: their lower thirds often meet the rim beside a whole foot.)"""
    x, y, w, h = box
    return not _seen(visible, x, y + h, x + w, y + h + int(round(0.08 * tall)))


def _unseen_beside(visible: np.ndarray, box, tall: float) -> str:
    """Which neighbour places of a lone digit the frame hides ("l", "r", "lr" or ""):
    a digit may stand there unseen (B15 with its 1 under the lip shows as B5)."""
    x, y, w, h = box
    side = int(round(0.5 * tall))
    return ("" if _seen(visible, x - side, y, x, y + h) else "l") + \
           ("" if _seen(visible, x + w, y, x + w + side, y + h) else "r")


def _letter_with_pieces(letter: _Blob, others: list[_Blob], row_top: int, tall: float) -> _Blob:
    """The letter with the pieces it broke into (a thin serif B falls apart into
    its stem and bowls; the pieces left out made the layout "truncated"):
    blobs above the number whose boxes meet the letter's, widened a little."""
    pad_x, pad_y = 0.25 * tall, 0.15 * tall
    parts = [b for b in others if b.y + b.h <= row_top + 0.05 * tall
             and b.x < letter.x + letter.w + pad_x and b.x + b.w > letter.x - pad_x
             and b.y < letter.y + letter.h + pad_y and b.y + b.h > letter.y - pad_y]
    if not parts:
        return letter
    return _joined([letter] + parts)


def _joined(blobs: list[_Blob]) -> _Blob:
    """One glyph of several blobs (label -1, its blobs in `parts`)."""
    x0, y0 = min(b.x for b in blobs), min(b.y for b in blobs)
    x1, y1 = max(b.x + b.w for b in blobs), max(b.y + b.h for b in blobs)
    area = sum(b.area for b in blobs)
    out = _Blob(-1, x0, y0, x1 - x0, y1 - y0, area, sum(b.cx * b.area for b in blobs) / area,
                sum(b.cy * b.area for b in blobs) / area)
    out.parts = [p for b in blobs for p in getattr(b, "parts", [b])]
    return out


def _merge_columns(row: list[_Blob]) -> list[_Blob]:
    """Blobs stacked in one column are pieces of one glyph (a broken stroke)."""
    out: list[_Blob] = []
    for b in sorted(row, key=lambda b: b.x):
        if out:
            a = out[-1]
            overlap = min(a.x + a.w, b.x + b.w) - max(a.x, b.x)
            if overlap > 0.6 * min(a.w, b.w):
                out[-1] = _joined([a, b])
                continue
        out.append(b)
    return out


def _split_touching(row: list[_Blob], tall: float):
    """Digits of the row; one blob much wider than tall is two touching digits."""
    if len(row) == 1 and row[0].w > 1.05 * row[0].h and row[0].label >= 0:
        b = row[0]
        return [(b, b.x, b.y, b.w // 2, b.h, 0), (b, b.x + b.w // 2, b.y, b.w - b.w // 2, b.h, 1)]
    return row


def _cut(s: np.ndarray, labels: np.ndarray, blob: _Blob, x: int, y: int, w: int, h: int, _i: int):
    """Glyph of one half of a blob, trimmed to its own ink: (image, aspect, box, holes)."""
    sub = (labels[y:y + h, x:x + w] == blob.label)
    cols = np.nonzero(sub.any(0))[0]
    rows = np.nonzero(sub.any(1))[0]
    part = _Blob(blob.label, x, y, w, h, blob.area, 0, 0)
    if len(cols) and len(rows):
        part = _Blob(blob.label, x + int(cols[0]), y + int(rows[0]), int(cols[-1] - cols[0] + 1),
                     int(rows[-1] - rows[0] + 1), blob.area, 0, 0)
    return (glyph_image(s, labels, part), part.w / max(part.h, 1), (part.x, part.y, part.w, part.h),
            hole_count(labels, part))
