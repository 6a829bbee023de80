"""Find the print on the ball and flatten it.

The ball is a sphere seen (nearly) orthographically: a frame pixel inside the
ball's circle is a point of the sphere. The print is a decal on the sphere, so
we find its centre as a direction on the sphere, then sample the sphere around
that direction on an equal-angle grid: the result is the print as if it faced
the camera (foreshortening undone), rotated in its own plane by an unknown angle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from .locate import above_lip

PATCH = 102                           # flattened print: PATCH x PATCH pixels (0.82 deg each)
PATCH_HALF_DEG = 42.0                 # ... covering +-42 degrees around the print centre
_DEG_PER_PX = 2 * PATCH_HALF_DEG / PATCH


@dataclass
class Flat:
    """The flattened print and how it maps back to the frame."""

    image: np.ndarray         # PATCH x PATCH x 3 BGR
    valid: np.ndarray         # PATCH x PATCH bool: the frame shows this point of the sphere
    centre: np.ndarray        # unit vector of the print centre (camera axes: x right, y down, z out)
    e1: np.ndarray            # patch x axis on the sphere
    e2: np.ndarray            # patch y axis
    map_x: np.ndarray         # frame coordinates of every patch pixel
    map_y: np.ndarray


def basis(centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tangent axes at centre, oriented like the image's x and y as far as possible."""
    c = centre / np.linalg.norm(centre)
    ref = np.array([1.0, 0.0, 0.0]) if abs(c[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = ref - c * (ref @ c)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(c, e1)
    if e2[1] < 0 and abs(c[0]) < 0.9:
        e2 = -e2                                    # keep y pointing down, like the image
    return e1, e2


_g = (np.arange(PATCH, dtype=np.float64) + 0.5 - PATCH / 2) * math.radians(_DEG_PER_PX)
_GU, _GV = np.meshgrid(_g, _g)
_THETA = np.hypot(_GU, _GV)
_SINC = np.where(_THETA > 1e-9, np.sin(_THETA) / np.maximum(_THETA, 1e-12), 1.0)
_COS_T = np.cos(_THETA)
# Grid point = cos(t) * centre + sinc(t) * (u * e1 + v * e2): one matrix product per patch.
_GRID = np.stack([_COS_T, _SINC * _GU, _SINC * _GV], -1).reshape(-1, 3).astype(np.float32)


def sphere_points(centre: np.ndarray, e1: np.ndarray, e2: np.ndarray) -> np.ndarray:
    """Unit vectors (PATCH, PATCH, 3) of the equal-angle grid around centre."""
    frame = np.stack([centre, e1, e2]).astype(np.float32)
    return (_GRID @ frame).reshape(PATCH, PATCH, 3)


def flatten(frame: np.ndarray, ball: tuple[float, float, float], centre: np.ndarray,
            lip: tuple[float, float, float] | None = None) -> Flat:
    """Sample the sphere around centre into a PATCH x PATCH image."""
    x, y, r = ball
    c = centre / np.linalg.norm(centre)
    e1, e2 = basis(c)
    p = sphere_points(c, e1, e2)
    mx = p[..., 0] * np.float32(r) + np.float32(x - 0.5)
    my = p[..., 1] * np.float32(r) + np.float32(y - 0.5)
    h, w = frame.shape[:2]
    valid = (p[..., 2] > 0.08) & (mx >= 0) & (mx <= w - 1) & (my >= 0) & (my <= h - 1)
    valid &= above_lip(lip, mx, my, 1.5)
    img = cv2.remap(frame, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return Flat(img, valid, c, e1, e2, mx, my)


def pixel_normals(xs: np.ndarray, ys: np.ndarray, ball) -> np.ndarray:
    """Sphere normals of frame pixels (N, 3); points outside the circle are pulled onto the rim."""
    x, y, r = ball
    nx = (xs + 0.5 - x) / r
    ny = (ys + 0.5 - y) / r
    rho = np.hypot(nx, ny)
    scale = np.where(rho > 0.999, 0.999 / np.maximum(rho, 1e-9), 1.0)
    nx, ny = nx * scale, ny * scale
    nz = np.sqrt(np.clip(1 - nx * nx - ny * ny, 0, 1))
    return np.stack([nx, ny, nz], 1)


def patch_to_sphere(flat: Flat, px: float, py: float) -> np.ndarray:
    """Unit vector of patch pixel (px, py)."""
    u = (px + 0.5 - PATCH / 2) * math.radians(_DEG_PER_PX)
    v = (py + 0.5 - PATCH / 2) * math.radians(_DEG_PER_PX)
    t = math.hypot(u, v)
    s = math.sin(t) / t if t > 1e-9 else 1.0
    p = math.cos(t) * flat.centre + s * u * flat.e1 + s * v * flat.e2
    return p / np.linalg.norm(p)


def deg_per_px() -> float:
    return _DEG_PER_PX
