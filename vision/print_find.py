"""Find the print on a located ball and flatten it, for dark and for light ink."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .glyphs import ink_centre
from .ink import ink_maps, ink_mask, rough_print_centre
from .locate import Circle
from .sphere import PATCH, Flat, flatten, patch_to_sphere


@dataclass
class Print:
    polarity: str              # "dark" ink on light paper, or "light" on dark
    flat: Flat
    strength: np.ndarray       # 0..1 ink strength, PATCH x PATCH
    mask: np.ndarray           # bool ink


def find_prints(frame: np.ndarray, ball: Circle, recentre: int = 2) -> list[Print]:
    """The flattened print for each ink polarity (the reader tries both)."""
    circle = ball.as_tuple()
    c0 = rough_print_centre(frame, circle, ball.lip_y)
    if c0 is None:
        return []
    first = flatten(frame, circle, c0, ball.lip_y)
    first_maps = ink_maps(first)
    out = []
    for k, polarity in enumerate(("dark", "light")):
        flat, maps = first, first_maps
        s = maps[k]
        m = ink_mask(s, flat.valid)
        for _ in range(recentre):
            c = ink_centre(m)
            # Re-centre on the ink, unless it is already (nearly) centred.
            if c is None or math.hypot(c[0] - (PATCH / 2 - 0.5), c[1] - (PATCH / 2 - 0.5)) < 1.5:
                break
            flat = flatten(frame, circle, patch_to_sphere(flat, *c), ball.lip_y)
            maps = ink_maps(flat)
            s = maps[k]
            m = ink_mask(s, flat.valid)
        if not m.any():
            continue
        t = max(float(np.percentile(s[m], 10)), 1.0)
        soft = np.clip((s - 0.5 * t) / (1.5 * t), 0, 1).astype(np.float32)
        out.append(Print(polarity, flat, soft, m))
    return out
