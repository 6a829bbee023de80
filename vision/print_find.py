"""Find the print on a located ball and flatten it, for dark and for light ink."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .glyphs import ink_centre
from .ink import ink_maps, ink_mask, rough_print_centre
from .locate import Circle
from .sphere import Flat, flatten, patch_to_sphere


@dataclass
class Print:
    polarity: str              # "dark" ink on light paper, or "light" on dark
    flat: Flat
    strength: np.ndarray       # 0..1 ink strength, PATCH x PATCH
    mask: np.ndarray           # bool ink


def _maps(flat: Flat, polarity: str):
    dark, light, _paper = ink_maps(flat)
    s = dark if polarity == "dark" else light
    m = ink_mask(s, flat.valid)
    return s, m


def find_prints(frame: np.ndarray, ball: Circle, recentre: int = 2) -> list[Print]:
    """The flattened print for each ink polarity (the reader tries both)."""
    circle = ball.as_tuple()
    c0 = rough_print_centre(frame, circle, ball.lip_y)
    if c0 is None:
        return []
    out = []
    for polarity in ("dark", "light"):
        flat = flatten(frame, circle, c0, ball.lip_y)
        s, m = _maps(flat, polarity)
        for _ in range(recentre):
            c = ink_centre(m)
            if c is None:
                break
            flat = flatten(frame, circle, patch_to_sphere(flat, *c), ball.lip_y)
            s, m = _maps(flat, polarity)
        if not m.any():
            continue
        t = max(float(np.percentile(s[m], 10)), 1.0)
        soft = np.clip((s - 0.5 * t) / (1.5 * t), 0, 1).astype(np.float32)
        out.append(Print(polarity, flat, soft, m))
    return out
