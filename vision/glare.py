"""Glare removal for cameras that take two exposures under different lights.

A specular highlight sits where the light's mirror image is, so with two
lights at different places the glare falls on different pixels. The print
and the ball's colour are the same in both frames. Per-pixel minimum keeps
the darker (non-glare) value of each pixel.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import cv2
import numpy as np


# A lamp whose exposures are under this share of the other lamp's brightness is out: the
# minimum would only be its dark frame. Renderer pairs under two working lamps: >= 0.71 over
# 300 scenes; a lamp out (hall light only): <= 0.33 over 60.
DIM_LAMP_SHARE = 0.5


def brightness(frame: np.ndarray) -> float:
    """How brightly a lamp lights the view: the 90th percentile of grey (the ball is the
    brightest thing in it), on every fourth pixel."""
    grey = cv2.cvtColor(frame[::4, ::4], cv2.COLOR_BGR2GRAY)
    return float(np.percentile(grey, 90))


# Shifts smaller than this are left alone: resampling would blur more than it aligns
# (phase correlation at half size is within 0.6 px on renderer pairs).
MIN_SHIFT_PX = 0.75


def aligned(frame: np.ndarray, to: np.ndarray) -> np.ndarray:
    """`frame` moved onto `to` when the ball moved between the two exposures (the blower shakes
    the holder): the shift is found by phase correlation of the two at half size, where the
    print and the ball's outline outweigh the shading that differs between the lamps."""
    h, w = to.shape[:2]
    small = (w // 2, h // 2)
    grey = [cv2.cvtColor(cv2.resize(f, small, interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2GRAY).astype(np.float32)
            for f in (to, frame)]
    (dx, dy), _ = cv2.phaseCorrelate(grey[0], grey[1], _hanning(small))
    dx, dy = 2 * dx, 2 * dy
    if dx * dx + dy * dy < MIN_SHIFT_PX ** 2:
        return frame
    move = np.float32([[1, 0, -dx], [0, 1, -dy]])
    return cv2.warpAffine(frame, move, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


@functools.lru_cache(maxsize=4)
def _hanning(size: tuple[int, int]) -> np.ndarray:
    return cv2.createHanningWindow(size, cv2.CV_32F)


def remove_glare(frame_a: np.ndarray, frame_b: np.ndarray) -> np.ndarray:
    """Per-pixel minimum of two aligned exposures of the same scene (same shape and type)."""
    _same_kind(frame_a, frame_b)
    return cv2.min(frame_a, frame_b)


def glare_free(lamp_a: np.ndarray, lamp_b: np.ndarray) -> np.ndarray:
    """One frame from exposures under lamp A and lamp B: lamp B's moved onto lamp A's
    (`aligned`), then the per-pixel minimum."""
    _same_kind(lamp_a, lamp_b)
    return cv2.min(lamp_a, aligned(lamp_b, lamp_a))


def _same_kind(frame_a: np.ndarray, frame_b: np.ndarray) -> None:
    if frame_a.shape != frame_b.shape or frame_a.dtype != frame_b.dtype:
        raise ValueError(f"frames differ: {frame_a.shape} {frame_a.dtype} vs {frame_b.shape} {frame_b.dtype}")


class LampFrames(NamedTuple):
    frames: list[np.ndarray]      # to read and fuse
    exposures: list[np.ndarray]   # the single exposures they were made from (none when a lamp is out)
    lamp_out: str | None          # "a" or "b" when that lamp gave too little light


def two_lamp_frames(expose: Callable[[], np.ndarray], light: Callable[[str], None], count: int,
                    settle_frames: int = 2) -> LampFrames:
    """`count` frames, each the minimum of two consecutive exposures, one under lamp "a" and
    one under lamp "b" (count + 1 exposures, `settle_frames` dropped after each switch:
    exposed partly under the other lamp); both lamps are lit again afterwards.

    When one lamp's exposures are under DIM_LAMP_SHARE of the other's brightness, the frames
    are the other lamp's exposures alone and that lamp is named as out. `expose()` gives the
    camera's next frame, `light(which)` lights "a", "b" or "both".
    """
    def under(lamp: str) -> np.ndarray:
        light(lamp)
        for _ in range(settle_frames):
            expose()
        return expose()

    try:
        shots = [under("ab"[i % 2]) for i in range(count + 1)]
    finally:
        light("both")
    level = {lamp: float(np.median([brightness(s) for s in shots[i::2]])) for i, lamp in enumerate("ab")}
    dim, bright = sorted(level, key=level.get)
    if level[dim] < DIM_LAMP_SHARE * level[bright]:
        return LampFrames(shots["ab".index(bright)::2], [], dim)
    return LampFrames([glare_free(a, b) for a, b in zip(shots, shots[1:])], shots, None)
