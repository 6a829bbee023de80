"""Train the glyph classifier and calibrate the reader's confidence, from our own renderer.

    python -m vision.train [--seed 1] [--frames 8000] [--calib 16000] [--workers 2] [--calib-only] [--out DIR]
    python -m vision.train --show SEED:K      # write a calibration frame the run listed to a PNG

1. Render random balls (many fonts, see render.TRAIN_FONTS), run the reader's
   own front end on them (find ball, flatten print) and cut glyphs with the
   true print rotation known from the Scene: letters and digits get their
   labels; the same glyphs turned sideways, upside down (when that is not
   another glyph), and blobs of wrong guesses become "reject".
2. Fit a one-hidden-layer perceptron with numpy (Adam, fixed seed); then steps 1-2
   again from seed + 1 for the second classifier, which the reader asks too.
3. Read fresh frames (another seed) and fit the isotonic calibration of the
   confidence; the accept level is 1.25x the best evidence the first classifier
   gave any wrong reading the posterior check would let through, the second level
   1.5x the same for the seconded evidence (SECOND_MARGIN). The run lists the
   wrong readings with the most evidence, by frame (SEED:K), and how levels fitted
   on the first half of the frames do on the second.
Writes vision/data/glyphs.npz, glyphs_second.npz and calibration.npz (or the same names in --out).

The process runs with the CPU's vector paths pinned (see pinned_env), so that
the same seed makes the same bytes whatever vector units an x86-64 CPU has, not
only on one like the machine that made the committed files.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import sys
import time
from pathlib import Path
from multiprocessing import Pool

import cv2
import numpy as np

from .balls import LETTERS, ball_name
from .bench import renderer_scene_at, renderer_scenes
from .classify import CLASSES, REJECT, WEIGHTS, GlyphModel, second_weights
from .glyphs import features, parse, up_guesses
from .locate import find_ball
from .print_find import find_prints
from .reader import CALIBRATION, MIN_CONFIDENCE, MIN_POSTERIOR, Calibration, weights_fingerprint
from .render import _colours, random_scene, render

_FLIP_DIGIT = {"0": "0", "1": "1", "8": "8", "6": "9", "9": "6"}
_FLIP_LETTER = {"N": "N", "O": "O", "I": "I"}


def _true_angle(scene, flat) -> float | None:
    """Rotation (deg) that makes the print upright in this flat patch, or None if not on a print."""
    rot = scene.rotation_matrix()
    axis = rot[:, 2]
    side = axis if axis @ flat.centre > 0 else -axis
    if math.degrees(math.acos(min(1.0, abs(float(side @ flat.centre))))) > 25:
        return None
    up = -rot[:, 1]
    dx, dy = float(up @ flat.e1), float(up @ flat.e2)
    return math.degrees(math.atan2(dx, -dy))


def _ink_polarity(scene) -> str:
    body, disc, ink, _outline = _colours(scene)
    paper = body if scene.style == "ring" else disc
    return "dark" if max(ink) < max(paper) or sum(ink) < sum(paper) else "light"


def _angle_diff(a: float, b: float) -> float:
    return abs((a - b + 180) % 360 - 180)


def _fragment(glyph: np.ndarray, rng) -> tuple[np.ndarray, float] | None:
    """The glyph with 35-60% of its height or width cut away, re-centred and re-scaled
    like a glyph of its own; returns (image, change of aspect ratio)."""
    g = glyph.copy()
    ys, xs = np.nonzero(g > 0.1)
    if len(xs) < 10:
        return None
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    cut = rng.uniform(0.35, 0.6)
    side = int(rng.integers(4))
    if side == 0:
        g[y0:y0 + int(cut * (y1 - y0))] = 0
    elif side == 1:
        g[y1 - int(cut * (y1 - y0)):y1] = 0
    elif side == 2:
        g[:, x0:x0 + int(cut * (x1 - x0))] = 0
    else:
        g[:, x1 - int(cut * (x1 - x0)):x1] = 0
    ys, xs = np.nonzero(g > 0.1)
    if len(xs) < 6:
        return None
    crop = g[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    h, w = crop.shape
    sc = 16.0 / max(h, w)
    nw, nh = max(1, int(round(w * sc))), max(1, int(round(h * sc)))
    out = np.zeros_like(g)
    ox, oy = (g.shape[1] - nw) // 2, (g.shape[0] - nh) // 2
    out[oy:oy + nh, ox:ox + nw] = cv2.resize(crop, (nw, nh), interpolation=cv2.INTER_AREA)
    old = (x1 - x0) / max(1, y1 - y0)
    return out, (w / h) / max(old, 1e-3)


def _glyph_rows(lay):
    return ([lay.letter] if lay.letter is not None else []) + lay.digits, lay.aspects


def samples_for_frame(scene, frame, rng) -> tuple[list, list, list]:
    """(glyph images, aspects, labels) from one rendered frame. Letters are cut as
    one blob (join_letter=False): joined from their pieces in training, they cost
    more than they gave (4 December: accept level 0.248 -> 0.304, make bench-wrong
    readable 2807 -> 2787 and 1427 -> 1422 against the reader joining them at
    read time only)."""
    gl, asp, lab = [], [], []
    # Glyphs are cut under the lip as found, without the reader's holder check: the
    # check changes about one renderer frame in 600, and the committed weights were
    # trained without it (retrained with it, the accept level fell from 0.326 to 0.221
    # and fresh frames of seed 3900000 named 2 wrong against 1; docs/vision.md), nor
    # the reader's second look for a lip in colour (added after these weights).
    ball = find_ball(frame, holder_check=False, colour_lip=False)
    if ball is None:
        return gl, asp, lab
    text = str(scene.number)
    for p in find_prints(frame, ball):
        true = _true_angle(scene, p.flat)
        right_ink = p.polarity == _ink_polarity(scene)
        if true is not None and right_ink:
            lay = parse(p.strength, p.mask, true + rng.uniform(-9, 9), "top", join_letter=False)
            if lay is not None and lay.letter is not None and len(lay.digits) == len(text):
                g, a = _glyph_rows(lay)
                names = [scene.letter] + list(text)
                gl += g
                asp += a
                lab += [CLASSES.index(c) for c in names]
                # The same glyphs upside down: 6 <-> 9, symmetric glyphs stay, others reject.
                for gi, ai, c in zip(g, a, names):
                    flipped = _FLIP_LETTER.get(c) if c in LETTERS else _FLIP_DIGIT.get(c)
                    gl.append(gi[::-1, ::-1].copy())
                    asp.append(ai)
                    lab.append(REJECT if flipped is None else CLASSES.index(flipped))
                    # A glyph with a large part missing is no glyph: the reader must not
                    # be sure of a broken 8 that looks like a 3.
                    if c not in "1I" and rng.random() < 0.6:
                        frag = _fragment(gi, rng)
                        if frag is not None:
                            gl.append(frag[0])
                            asp.append(frag[1] * ai)
                            lab.append(REJECT)
                    # Sideways: no glyph (a round O or 0 stays ambiguous, so left out).
                    if c not in "O0":
                        gl.append(np.rot90(gi, 1 if rng.random() < 0.5 else -1).copy())
                        asp.append(1.0 / max(ai, 1e-3))
                        lab.append(REJECT)
        # Guesses the reader would make that are plainly wrong: all reject.
        for ang, letter_at in up_guesses(p.mask):
            if true is not None and right_ink and (_angle_diff(ang, true) < 35 or _angle_diff(ang, true + 180) < 35):
                continue
            lay = parse(p.strength, p.mask, ang, letter_at, join_letter=False)
            if lay is not None:
                g, a = _glyph_rows(lay)
                gl += g
                asp += a
                lab += [REJECT] * len(g)
    return gl, asp, lab


def _make_chunk(args) -> tuple[np.ndarray, np.ndarray]:
    seed, n = args
    cv2.setNumThreads(1)
    rng = np.random.default_rng(seed)
    gl, asp, lab = [], [], []
    for _ in range(n):
        number = int(rng.integers(1, 76))
        scene = random_scene(number, rng, turned_deg=float(rng.uniform(0, 72)))
        frame = render(scene, rng)
        g, a, l = samples_for_frame(scene, frame, rng)
        gl += g
        asp += a
        lab += l
    if not gl:
        return np.zeros((0, 1), np.float32), np.zeros(0, np.int64)
    return features(gl, asp), np.asarray(lab, np.int64)


def make_dataset(seed: int, frames: int, workers: int) -> tuple[np.ndarray, np.ndarray]:
    chunk = 100
    jobs = [(seed * 100_003 + i, min(chunk, frames - i * chunk)) for i in range((frames + chunk - 1) // chunk)]
    with Pool(workers) as pool:
        parts = pool.map(_make_chunk, jobs)
    parts = [p for p in parts if len(p[1])]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def train_mlp(x: np.ndarray, y: np.ndarray, seed: int, hidden: int = 160, epochs: int = 40,
              batch: int = 256, lr: float = 2e-3) -> GlyphModel:
    rng = np.random.default_rng(seed)
    mean = x.mean(0)
    std = x.std(0) + 1e-3
    xs = ((x - mean) / std).astype(np.float32)
    k = len(CLASSES)
    d = xs.shape[1]
    params = [rng.normal(0, math.sqrt(2 / d), (d, hidden)).astype(np.float32), np.zeros(hidden, np.float32),
              rng.normal(0, math.sqrt(1 / hidden), (hidden, k)).astype(np.float32), np.zeros(k, np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = 0
    n = len(xs)
    for ep in range(epochs):
        order = rng.permutation(n)
        rate = lr * (0.5 * (1 + math.cos(math.pi * ep / epochs)))
        loss_sum = 0.0
        for s in range(0, n, batch):
            idx = order[s:s + batch]
            xb, yb = xs[idx], y[idx]
            # Light input dropout: no single feature may carry a glyph.
            xb = xb * (rng.random(xb.shape) > 0.1).astype(np.float32) / 0.9
            h = np.maximum(xb @ params[0] + params[1], 0)
            z = h @ params[2] + params[3]
            z -= z.max(1, keepdims=True)
            e = np.exp(z)
            pr = e / e.sum(1, keepdims=True)
            loss_sum += float(-np.log(pr[np.arange(len(yb)), yb] + 1e-9).sum())
            g = pr
            g[np.arange(len(yb)), yb] -= 1
            g /= len(yb)
            grads = [None, None, h.T @ g, g.sum(0)]
            gh = (g @ params[2].T) * (h > 0)
            grads[0] = xb.T @ gh + 1e-4 * params[0]
            grads[1] = gh.sum(0)
            grads[2] += 1e-4 * params[2]
            step += 1
            for i, (p, gr) in enumerate(zip(params, grads)):
                m[i] = 0.9 * m[i] + 0.1 * gr
                v[i] = 0.999 * v[i] + 0.001 * gr * gr
                mh = m[i] / (1 - 0.9 ** step)
                vh = v[i] / (1 - 0.999 ** step)
                p -= rate * mh / (np.sqrt(vh) + 1e-8)
        print(f"  epoch {ep + 1}/{epochs} loss {loss_sum / n:.4f}", flush=True)
    return GlyphModel({"mean": mean, "std": std, "w0": params[0], "b0": params[1],
                       "w1": params[2], "b1": params[3]})


# One calibration reading per row; the frame is `k` of the chunk drawn from `seed`.
# "evidence" is what the reader names by (seconded by the second classifier),
# "first_evidence" the first classifier's alone, which sets the accept level.
CALIB_COLUMNS = ("evidence", "right", "ink_visible", "posterior", "seed", "k", "truth", "read", "first_evidence")
_FIRST = CALIB_COLUMNS.index("first_evidence")


def _calib_frames(seed: int, n: int):
    """(k, number, scene, frame) of the calibration chunk drawn from seed: the
    renderer's scenes of the bench (training fonts)."""
    for k, (scene, frame) in enumerate(renderer_scenes(n, seed)):
        yield k, scene.number, scene, frame


def calibration_frame(where: str) -> tuple[int, np.ndarray]:
    """(number, frame) of calibration frame SEED:K, as `worst_wrong` names it."""
    seed, k = (int(v) for v in where.split(":"))
    if seed < 0 or k < 0:
        raise ValueError(f"no calibration frame {where}")
    scene, frame = renderer_scene_at(seed, k)
    return scene.number, frame


def _calib_chunk(args):
    seed, n, weights = args
    cv2.setNumThreads(1)
    from .reader import BallReader, Calibration, best_reading, seconded_evidence
    reader = BallReader(weights=weights, calibration=Calibration())
    rows = []
    for k, number, scene, frame in _calib_frames(seed, n):
        raw = reader.raw(frame)
        if isinstance(raw, str) or not raw[1]:
            continue
        best = best_reading(raw[1], raw[2], reader.model, reader.second)
        if best is None:
            continue
        i, first = best[3], best[4]
        rows.append((seconded_evidence(best, raw[2], reader.second), float(i + 1 == number), scene.ink_visible,
                     float(best[0][i]), seed, k, number, i + 1, first))
    return np.asarray(rows).reshape(-1, len(CALIB_COLUMNS))


def worst_wrong(rows: np.ndarray, n: int = 8) -> list[str]:
    """The n wrong calibration readings with the most first-classifier evidence,
    highest first: the first sets the accept level, and the rest show how far
    below it the tail goes."""
    wrong = rows[rows[:, 1] == 0]
    out = []
    for ev, _right, ink, post, seed, k, truth, read, first in wrong[np.argsort(-wrong[:, _FIRST], kind="stable")][:n]:
        out.append(f"  {ball_name(int(truth))} read {ball_name(int(read))}: evidence {first:.4f} "
                   f"(seconded {ev:.4f}), posterior {post:.3f}{'' if post >= MIN_POSTERIOR else ' (never named)'}, "
                   f"ink visible {ink:.2f}, frame {int(seed)}:{int(k)}")
    return out


def fit_calibration(rows: np.ndarray, margin: float = 1.25,
                    first: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Isotonic (pool-adjacent-violators) P(right | evidence), with a Laplace prior per block,
    and the accept level: `margin` times the highest evidence of any wrong reading
    that could be named (rows: evidence, right, ink visible, posterior, ...; see
    nameable_wrong), taken from `first` where given.

    The reader's second level (second_accept) comes from the seconded evidence
    of column 0, but this one from the first classifier's alone: the second
    classifier takes away misread glyphs, not the rarer wrong layouts (a digit
    cut short, a rim fragment) that calibration hardly sees and that only the
    first's level keeps out (6 December, night: with the seconded level alone
    two of them came back)."""
    order = np.argsort(rows[:, 0])
    x, y = rows[order, 0], rows[order, 1]
    blocks = [[float(x[i]), float(x[i]), float(y[i]), 1.0] for i in range(len(x))]   # lo, hi, sum, n
    merged: list[list[float]] = []
    for b in blocks:
        merged.append(b)
        while len(merged) > 1 and merged[-2][2] / merged[-2][3] >= merged[-1][2] / merged[-1][3]:
            hi = merged.pop()
            merged[-1] = [merged[-1][0], hi[1], merged[-1][2] + hi[2], merged[-1][3] + hi[3]]
    # A step per block, from its lowest to its highest evidence (rising between
    # blocks): block midpoints would let the long last block of right readings
    # start only halfway up its evidence range, understating it below there.
    xs = np.array([edge for b in merged for edge in (b[0], b[1])])
    ps = np.repeat([(b[2] + 1) / (b[3] + 2) for b in merged], 2)
    ps = np.maximum.accumulate(ps)
    return xs, ps, accept_level((rows[:, 0] if first is None else first)[nameable_wrong(rows)], margin)


def nameable_wrong(rows: np.ndarray) -> np.ndarray:
    """Mask of the wrong readings the posterior check would let through: only those
    set the accept levels. One the check refuses (O67 read O61 with 0.66 of the
    posterior, 7 December) would otherwise raise the level over readings it never
    threatens; with 16,000 calibration frames such readings drove it to 0.72."""
    return (rows[:, 1] == 0) & (rows[:, 3] >= MIN_POSTERIOR)


# The seconded level's margin over the worst seconded wrong calibration reading.
# 1.25 was too little: fresh frames showed I23 read I25 at seconded 0.331 where
# calibration's worst (once a lone B1 read B7 was refused) was 0.224, 1.48x.
SECOND_MARGIN = 1.5


def accept_level(wrong: np.ndarray, margin: float = 1.25) -> float:
    """`margin` times the most evidence a wrong calibration reading had (held to 0.05-0.95)."""
    return float(min(0.95, max(0.05, margin * (wrong.max() if len(wrong) else 0.0))))


def pinned_env() -> dict[str, str]:
    """Environment that turns off every vector path a library picks by the CPU it finds.

    numpy's dispatched loops, OpenBLAS's kernels, OpenCV's dispatched code and
    glibc's libm (FMA variants of exp, sin, ...) give results that differ in the
    last bits between those paths, and training amplifies last bits into other
    weights (4 December: a Zen 3 machine made other weights than the machine that
    made the committed ones). What is left is numpy's x86-64-v2 baseline, which
    every machine that runs its wheels has.

    Intel's IPP inside OpenCV picks its own code by CPU, apart from OpenCV's
    dispatch: its AVX-512 path cut a few training glyphs differently from its AVX2
    path (5 December, an AVX-512 machine made other weights). It is held to the AVX2
    path, which the committed weights were made with; a CPU without AVX2 falls back
    to an older path and makes other bits.
    """
    from numpy._core._multiarray_umath import __cpu_dispatch__
    # OpenCV's line marks dispatched features with "*", and those this CPU lacks with "?".
    opencv = [f[1:] for f in cv2.getCPUFeaturesLine().split() if f.startswith("*") and not f.endswith("?")]
    return {
        "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__),
        "OPENBLAS_CORETYPE": "Nehalem",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "OPENCV_CPU_DISABLE": ",".join(opencv),
        "OPENCV_IPP": "avx2",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX,-AVX2,-FMA,-FMA4,-AVX512F",
        "BALLREADER_TRAIN_PINNED": "1",
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--frames", type=int, default=8000)
    ap.add_argument("--calib", type=int, default=16000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--calib-only", action="store_true", help="keep the glyph weights, only recalibrate")
    ap.add_argument("--out", type=Path, default=WEIGHTS.parent,
                    help="where to write glyphs.npz and calibration.npz (default: the package's data)")
    ap.add_argument("--show", metavar="SEED:K", help="write calibration frame SEED:K (as the run lists it) to a PNG")
    args = ap.parse_args(argv)
    if args.show:
        try:
            number, frame = calibration_frame(args.show)
        except ValueError:
            ap.error(f"--show takes SEED:K as a calibration run lists it, e.g. 507925:32, not {args.show!r}")
        name = f"calib-{args.show.replace(':', '-')}.png"
        cv2.imwrite(name, frame)
        print(f"{name}: {ball_name(number)}")
        return
    if args.calib_only and not (args.out / WEIGHTS.name).exists():
        ap.error(f"--calib-only recalibrates the weights in --out, and {args.out / WEIGHTS.name} does not exist: "
                 f"copy glyphs.npz and glyphs_second.npz there, or train them (leave out --calib-only)")
    if os.environ.get("BALLREADER_TRAIN_PINNED") != "1":
        # The libraries read these when loaded (glibc at process start): start over with them.
        os.execve(sys.executable, [sys.executable, "-m", "vision.train", *(sys.argv[1:] if argv is None else argv)],
                  {**os.environ, **pinned_env()})
    print("vector paths turned off: " + "; ".join(
        f"{k}={os.environ.get(k, '')!r}" for k in ("NPY_DISABLE_CPU_FEATURES", "OPENCV_CPU_DISABLE", "OPENCV_IPP", "OPENBLAS_CORETYPE")),
        flush=True)
    t0 = time.time()
    if not args.calib_only:
        train_glyphs(args, t0)
    calibrate(args, t0)


def train_glyphs(args, t0: float) -> None:
    """The glyph classifier from seed, and the second one (vision.classify.second_weights)
    from seed + 1: the same as the first classifier of a run with that seed."""
    for seed, weights in ((args.seed, args.out / WEIGHTS.name), (args.seed + 1, second_weights(args.out / WEIGHTS.name))):
        x, y = make_dataset(seed, args.frames, args.workers)
        # Keep as many reject blobs as real glyphs, so the classes stay balanced.
        rng = np.random.default_rng(seed)
        rej = np.nonzero(y == REJECT)[0]
        keep = np.concatenate([np.nonzero(y != REJECT)[0],
                               rng.choice(rej, min(len(rej), int((y != REJECT).sum())), replace=False)])
        keep.sort()
        x, y = x[keep], y[keep]
        counts = np.bincount(y, minlength=len(CLASSES))
        print(f"glyph samples (seed {seed}): {len(y)} in {time.time() - t0:.0f}s;",
              " ".join(f"{c}:{n}" for c, n in zip(CLASSES, counts)), flush=True)
        model = train_mlp(x, y, seed, epochs=args.epochs)
        model.save(weights)
        acc = float((model.proba(x).argmax(1) == y).mean())
        print(f"train accuracy {acc:.4f}; weights {weights} ({weights.stat().st_size // 1024} KiB); "
              f"{time.time() - t0:.0f}s", flush=True)


def calibrate(args, t0: float) -> None:
    n = args.calib
    chunk = 125
    jobs = [(args.seed * 7_919 + 500_000 + i, min(chunk, n - i * chunk), str(args.out / WEIGHTS.name))
            for i in range((n + chunk - 1) // chunk)]
    with Pool(args.workers) as pool:
        rows = np.concatenate(pool.map(_calib_chunk, jobs))
    cal = fitted_calibration(rows)
    ok = rows[:, 1] == 1
    # Readings not named that the map still puts at the top: how often were they right?
    high = ~named(cal, rows) & (np.array([cal(e) for e in rows[:, 0]]) >= MIN_CONFIDENCE)
    ceiling = float((ok[high].sum() + 1) / (high.sum() + 2))
    np.savez(args.out / CALIBRATION.name, xs=cal.xs, ps=cal.ps, accept=cal.accept, second_accept=cal.second_accept,
             unsure_ceiling=ceiling, weights_sha256=weights_fingerprint(args.out / WEIGHTS.name))
    print(f"calibration frames {len(rows)}: accept evidence >= {cal.accept:.4f}, seconded >= {cal.second_accept:.4f}; "
          f"not named but confidence >= {MIN_CONFIDENCE}: {high.sum()}, right {ok[high].sum()}, so at most "
          f"{ceiling:.4f}; {tally(cal, rows)}; {time.time() - t0:.0f}s total", flush=True)
    print("worst wrong readings:", *worst_wrong(rows), sep="\n", flush=True)
    if len(jobs) > 1:
        # How levels hold on frames they were not fitted on: the first half's on the second half.
        first_half = rows[:, 4] < jobs[len(jobs) // 2][0]
        early = fitted_calibration(rows[first_half])
        print(f"levels fitted on the first half ({early.accept:.4f}, {early.second_accept:.4f}), "
              f"on the second half: {tally(early, rows[~first_half])}", flush=True)


def fitted_calibration(rows: np.ndarray) -> Calibration:
    """The reader's Calibration fitted on calibration rows: map and both accept levels."""
    xs, ps, accept = fit_calibration(rows, first=rows[:, _FIRST])
    return Calibration(xs, ps, accept, second_accept=accept_level(rows[nameable_wrong(rows), 0], SECOND_MARGIN))


def named(cal: Calibration, rows: np.ndarray) -> np.ndarray:
    """Mask of the calibration rows the reader would name under `cal`."""
    return np.array([cal.accepts(e, p, f) for e, p, f in zip(rows[:, 0], rows[:, 3], rows[:, _FIRST])], dtype=bool)


def tally(cal: Calibration, rows: np.ndarray) -> str:
    taken, ok, readable = named(cal, rows), rows[:, 1] == 1, rows[:, 2] >= 0.65
    return f"readable read {(taken & ok & readable).sum()}/{readable.sum()}, wrong {(taken & ~ok).sum()}"


if __name__ == "__main__":
    main()
