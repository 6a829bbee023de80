"""Find the print on a located ball and flatten it, for dark and for light ink."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cv2
import numpy as np

from .glyphs import ink_centre
from .ink import ink_map, ink_mask, paper_filled, rough_print_centre
from .locate import Circle, ball_thumbnail
from .sphere import PATCH, Flat, flatten, patch_to_sphere
from .stats import median, percentile

FAINT = 0.4      # faint ink, as a share of the mask's weakest ink (Print.faint)
# A highlight (Print.highlights): connected paper pixels (not ink: white print is
# saturated itself) whose darkest channel stands this far
# above the paper's 90th percentile (held to 240-250), on paper whose median is under
# PAPER_NEAR_WHITE (on whiter paper a highlight cannot be told from the paper), not
# touching the patch's edge (the white ball around a coloured disc), at most
# HIGHLIGHT_AREA of the patch (a broad glare on a glossy ball took a tenth of it
# and the top of a 3, fresh frame 5300009:12).
HIGHLIGHT_ABOVE_PAPER = 10
PAPER_NEAR_WHITE = 230
HIGHLIGHT_AREA = 0.15
# The glow around a highlight washes ink out a little beyond the saturated pixels
# (Print.glare_halo): this many patch pixels, about 3 deg.
HALO_PX = 4
_HALO = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * HALO_PX + 1, 2 * HALO_PX + 1))
# White paper (Print._white_glare_core): its median darkest channel at least
# WHITE_PAPER_LEVEL and its channels within WHITE_PAPER_SPREAD of each other (the
# median); a saturated pixel's darkest channel is at least SATURATED.
WHITE_PAPER_LEVEL = 150
WHITE_PAPER_SPREAD = 30
SATURATED = 250
WHITE_GLARE_CORE_PX = 3
_CORE = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * WHITE_GLARE_CORE_PX + 1, 2 * WHITE_GLARE_CORE_PX + 1))


@dataclass
class Print:
    polarity: str              # "dark" ink on light paper, or "light" on dark
    flat: Flat
    strength: np.ndarray       # 0..1 ink strength, PATCH x PATCH
    mask: np.ndarray           # bool ink
    relative: np.ndarray       # ink strength / the weakest tenth of the mask's, 0 where the frame shows nothing

    def faint(self, level: float = FAINT) -> np.ndarray:
        """Ink at least `level` times as strong as the mask's weakest tenth:
        a highlight lightens ink below the mask's threshold."""
        return self.relative > level

    def highlights(self) -> np.ndarray:
        """Bool patch map of saturated highlight spots: whatever ink lies under one
        is lost, not only lightened, so the faint-ink checks cannot grow it back.
        Found once per print, when first asked for."""
        return self._highlights

    @functools.cached_property
    def _highlights(self) -> np.ndarray:
        flat = self.flat
        lo = flat.image.min(axis=2)
        paper = flat.valid & ~self.mask
        if not paper.any() or float(median(lo[paper])) > PAPER_NEAR_WHITE:
            return np.zeros(lo.shape, bool)
        level = min(max(float(percentile(lo[paper], 90)) + HIGHLIGHT_ABOVE_PAPER, 240.0), 250.0)
        n, labels, stats, _c = cv2.connectedComponentsWithStats((paper & (lo >= level)).view(np.uint8),
                                                                connectivity=8)
        x, y, w, h, area = (stats[:, k] for k in range(5))
        keep = ((area >= 4) & (area <= HIGHLIGHT_AREA * lo.size) & (x > 0) & (y > 0)
                & (x + w < lo.shape[1]) & (y + h < lo.shape[0]))
        keep[0] = False
        return keep[labels]

    @functools.cached_property
    def glare_halo(self) -> np.ndarray:
        """Where glare may have washed ink out: the highlights grown by their glow
        (HALO_PX; the left half of an 8 on a blue disc washed out around a spot that
        covered only part of it, B8 read B3 at 0.9999, fresh frame 5200000:2354), and
        on white paper the core of any saturated region (Print._white_glare_core)."""
        grown = cv2.dilate(self.highlights().view(np.uint8), _HALO) > 0
        return grown | self._white_glare_core

    @functools.cached_property
    def _white_glare_core(self) -> np.ndarray:
        """On white paper a broad glare is one saturated region with the paper around
        it, reaching the patch's edge, so it is no highlight. Paper saturates under a
        glare far fainter than the one that washes out ink, so only the region's core
        (WHITE_GLARE_CORE_PX in from its edge) may hide a stroke (an 8 whose upper left
        a glare took, read B3 at 0.9999, fresh frame 5700041:97, unseen fonts)."""
        img, lo = self.flat.image, self.flat.image.min(axis=2)
        paper = self.flat.valid & ~self.mask
        if not paper.any():
            return np.zeros(lo.shape, bool)
        spread = img.max(axis=2)[paper].astype(np.int16) - lo[paper]
        white = (WHITE_PAPER_LEVEL <= float(median(lo[paper])) <= PAPER_NEAR_WHITE
                 and float(median(spread)) <= WHITE_PAPER_SPREAD)
        if not white:
            return np.zeros(lo.shape, bool)
        return cv2.erode((paper & (lo >= SATURATED)).view(np.uint8), _CORE) > 0


class PrintFinder:
    """Flattened prints of one located ball, one ink polarity at a time; the first
    flattening (around the rough print centre) is shared by both."""

    def __init__(self, frame: np.ndarray, ball: Circle, recentre: int = 2):
        self.frame, self.ball, self.recentre = frame, ball, recentre
        self.circle = ball.as_tuple()
        self._first = None
        self.thumb = ball_thumbnail(frame, self.circle)      # the colour cue takes it too
        self._c0 = rough_print_centre(self.thumb, self.circle, ball.lip)

    def find(self, polarity: str) -> Print | None:
        if self._c0 is None:
            return None
        frame, circle, lip = self.frame, self.circle, self.ball.lip
        if self._first is None:
            flat = flatten(frame, circle, self._c0, lip)
            self._first = (flat, paper_filled(flat))
        flat, filled = self._first
        s = ink_map(filled, polarity)
        m = ink_mask(s, flat.valid)
        for _ in range(self.recentre):
            c = ink_centre(m)
            # Re-centre on the ink, unless it is already (nearly) centred.
            if c is None or math.hypot(c[0] - (PATCH / 2 - 0.5), c[1] - (PATCH / 2 - 0.5)) < 1.5:
                break
            flat = flatten(frame, circle, patch_to_sphere(flat, *c), lip)
            s = ink_map(paper_filled(flat), polarity)
            m = ink_mask(s, flat.valid)
        if not m.any():
            return None
        t = max(float(percentile(s[m], 10)), 1.0)
        soft = np.clip((s - 0.5 * t) / (1.5 * t), 0, 1).astype(np.float32)
        return Print(polarity, flat, soft, m, np.where(flat.valid, s / t, 0).astype(np.float32))


def find_prints(frame: np.ndarray, ball: Circle, recentre: int = 2) -> list[Print]:
    """The flattened print for each ink polarity."""
    finder = PrintFinder(frame, ball, recentre)
    return [p for p in (finder.find("dark"), finder.find("light")) if p is not None]
