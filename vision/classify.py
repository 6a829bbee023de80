"""The glyph classifier: a small multilayer perceptron run with numpy.

Classes: the ten digits, the five column letters, and "reject" (not a glyph
seen upright: a blob of glare, a sideways digit, an underline).
Weights live in vision/data/glyphs.npz and are made by vision/train.py.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

CLASSES = tuple("0123456789") + tuple("BINGO") + ("reject",)
DIGITS = slice(0, 10)
LETTERS = slice(10, 15)
REJECT = 15
WEIGHTS = Path(__file__).with_name("data") / "glyphs.npz"


class GlyphModel:
    def __init__(self, params: dict[str, np.ndarray]):
        self.mean = params["mean"].astype(np.float32)
        self.std = params["std"].astype(np.float32)
        self.layers = []
        i = 0
        while f"w{i}" in params:
            self.layers.append((params[f"w{i}"].astype(np.float32), params[f"b{i}"].astype(np.float32)))
            i += 1

    def logits(self, x: np.ndarray) -> np.ndarray:
        h = (x - self.mean) / self.std
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < len(self.layers) - 1:
                h = np.maximum(h, 0)
        return h

    def proba(self, x: np.ndarray) -> np.ndarray:
        z = self.logits(x)
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        params = {"mean": self.mean, "std": self.std}
        for i, (w, b) in enumerate(self.layers):
            params[f"w{i}"], params[f"b{i}"] = w.astype(np.float16), b.astype(np.float32)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **params)


def second_weights(path: Path) -> Path:
    """The second classifier's weights, kept beside the first's (glyphs.npz -> glyphs_second.npz).
    Trained apart (another seed: other frames, another start), it rarely errs where the first does."""
    return path.with_name(f"{path.stem}_second{path.suffix}")


@functools.lru_cache(maxsize=2)       # the reader's two classifiers
def load_model(path: str | None = None) -> GlyphModel:
    p = Path(path) if path else WEIGHTS
    if not p.exists():
        raise FileNotFoundError(f"glyph weights missing: {p} (make them with: python -m vision.train)")
    with np.load(p) as z:
        return GlyphModel({k: z[k] for k in z.files})
