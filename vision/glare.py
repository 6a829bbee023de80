"""Glare removal for cameras that take two exposures under different lights.

A specular highlight sits where the light's mirror image is, so with two
lights at different places the glare falls on different pixels. The print
and the ball's colour are the same in both frames. Per-pixel minimum keeps
the darker (non-glare) value of each pixel.
"""
from __future__ import annotations

import cv2
import numpy as np


def remove_glare(frame_a: np.ndarray, frame_b: np.ndarray) -> np.ndarray:
    """Per-pixel minimum of two aligned exposures of the same scene (same shape and type)."""
    if frame_a.shape != frame_b.shape or frame_a.dtype != frame_b.dtype:
        raise ValueError(f"frames differ: {frame_a.shape} {frame_a.dtype} vs {frame_b.shape} {frame_b.dtype}")
    return cv2.min(frame_a, frame_b)
