"""The flat print of a ball (disc or ring, letter above number) drawn with Pillow.

The print is drawn in an angular texture: a pixel at offset (u, v) from the
texture centre stands for the point of the sphere at angle |(u, v)| * ANGLE_PER_PX
from the print's centre, in direction atan2(v, u). The renderer wraps it on
the sphere with one cv2.remap.
"""
from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .balls import letter_for

TEX = 384                       # texture side in pixels
TEX_HALF_ANGLE = math.radians(75)  # the texture covers 75 degrees around the print centre
ANGLE_PER_PX = TEX_HALF_ANGLE / (TEX / 2)

FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", str(Path.home() / ".fonts"))

# Numbers that read as another number upside down carry an underline.
UNDERLINED = frozenset({6, 9, 66, 69})

# Column colours as BGR, close to real hall ball sets.
COLOUR_BGR = {
    "blue": (200, 90, 25),
    "red": (40, 35, 215),
    "white": (240, 240, 240),
    "green": (60, 160, 35),
    "orange": (20, 140, 245),
    "yellow": (30, 205, 240),
}


@functools.lru_cache(maxsize=None)
def font_path(name: str) -> str:
    """Full path of a font given by file name (e.g. 'DejaVuSans-Bold.ttf') or path."""
    if os.path.isabs(name) and os.path.exists(name):
        return name
    for root in FONT_DIRS:
        for dirpath, _dirs, files in os.walk(root):
            if name in files:
                return os.path.join(dirpath, name)
    raise FileNotFoundError(f"font not found: {name} (looked in {', '.join(FONT_DIRS)})")


def installed_fonts() -> list[str]:
    """File names of the TrueType/OpenType fonts on this machine that can draw digits."""
    names = set()
    for root in FONT_DIRS:
        for _dirpath, _dirs, files in os.walk(root):
            names.update(f for f in files if f.lower().endswith((".ttf", ".otf")))
    skip = ("Symbol", "Math", "Fallback", "D050000L", "Z003", "Dingbat")
    return sorted(n for n in names if not any(s in n for s in skip))


@functools.lru_cache(maxsize=256)
def _font(name: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(font_path(name), size)


def _text_mask(text: str, font: str, size: int) -> np.ndarray:
    """Tight 0..255 mask of text."""
    f = _font(font, size)
    left, top, right, bottom = f.getbbox(text)
    img = Image.new("L", (right - left + 4, bottom - top + 4), 0)
    ImageDraw.Draw(img).text((2 - left, 2 - top), text, font=f, fill=255)
    a = np.asarray(img)
    ys, xs = np.nonzero(a > 20)
    return a[ys.min():ys.max() + 1, xs.min():xs.max() + 1]


@functools.lru_cache(maxsize=512)
def print_mask(number: int, font: str, underline: bool, letter_scale: float = 0.55) -> np.ndarray:
    """Ink mask (float32 0..1) of the print: letter above number, underline below; tight box."""
    big = 160
    num = _text_mask(str(number), font, big).astype(np.float32) / 255
    let = _text_mask(letter_for(number), font, int(big * letter_scale)).astype(np.float32) / 255
    h_num, w_num = num.shape
    gap = int(0.12 * h_num)
    bar_h = max(3, int(0.09 * h_num)) if underline else 0
    bar_gap = int(0.10 * h_num) if underline else 0
    w = max(w_num, let.shape[1])
    h = let.shape[0] + gap + h_num + bar_gap + bar_h
    out = np.zeros((h, w), np.float32)
    x = (w - let.shape[1]) // 2
    out[:let.shape[0], x:x + let.shape[1]] = let
    y = let.shape[0] + gap
    x = (w - w_num) // 2
    out[y:y + h_num, x:x + w_num] = np.maximum(out[y:y + h_num, x:x + w_num], num)
    if underline:
        y += h_num + bar_gap
        bw = int(w_num * 0.8)
        x = (w - bw) // 2
        out[y:y + bar_h, x:x + bw] = 1.0
    return out


def _place(mask: np.ndarray, height_px: float, centre_offset_px: float) -> np.ndarray:
    """Resize the print mask to height_px and paste it in a TEX x TEX canvas, its number near the centre."""
    import cv2

    scale = height_px / mask.shape[0]
    w = max(1, int(round(mask.shape[1] * scale)))
    h = max(1, int(round(height_px)))
    small = cv2.resize(mask, (w, h), interpolation=cv2.INTER_AREA)
    canvas = np.zeros((TEX, TEX), np.float32)
    cx = TEX // 2 - w // 2
    cy = int(TEX // 2 - h // 2 + centre_offset_px)
    canvas[cy:cy + h, cx:cx + w] = small[: TEX - cy, : TEX - cx]
    return canvas


def _disc(radius_px: float, soft: float = 1.0) -> np.ndarray:
    yy, xx = np.mgrid[0:TEX, 0:TEX].astype(np.float32)
    d = np.hypot(xx - (TEX - 1) / 2, yy - (TEX - 1) / 2)
    return np.clip((radius_px - d) / soft + 0.5, 0, 1)


def decal_texture(number: int, style: str, font: str, *, body_bgr, disc_bgr, ink_bgr,
                  disc_deg: float, print_deg: float, ring_deg: float = 3.0,
                  underline: bool | None = None, outline_bgr=None) -> tuple[np.ndarray, np.ndarray]:
    """BGR float32 albedo texture of one printed side and its ink mask (float32 0..1).

    disc_deg: angular radius of the disc or ring; print_deg: angular height of the print.
    """
    if underline is None:
        underline = number in UNDERLINED
    px = 1.0 / math.degrees(ANGLE_PER_PX)
    mask = print_mask(number, font, underline)
    height = print_deg * px
    # Keep the number (not the letter) near the centre of the disc, as on real balls.
    ink = _place(mask, height, centre_offset_px=-0.08 * height)
    tex = np.empty((TEX, TEX, 3), np.float32)
    tex[:] = body_bgr
    disc = _disc(disc_deg * px)
    if style == "ring":
        inner = _disc((disc_deg - ring_deg) * px)
        ring = disc - inner
        tex = tex * (1 - ring[..., None]) + np.float32(disc_bgr) * ring[..., None]
    else:
        tex = tex * (1 - disc[..., None]) + np.float32(disc_bgr) * disc[..., None]
        if outline_bgr is not None:
            inner = _disc((disc_deg - 1.2) * px)
            line = disc - inner
            tex = tex * (1 - line[..., None]) + np.float32(outline_bgr) * line[..., None]
    tex = tex * (1 - ink[..., None]) + np.float32(ink_bgr) * ink[..., None]
    return tex.astype(np.float32), ink
