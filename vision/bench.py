"""Benchmark of the ball reader (not a test): python -m vision.bench

Prints, for the dev frames (../shared/datasets/balls-dev, labels.csv) and for
a set from our renderer (its own seed), correct / abstained / wrong per
visibility band, milliseconds per frame (median, p95) on one core, a plain
Tesseract pipeline on a subset side by side, and the memory the reader adds.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

DEV = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "balls-dev"
BANDS = (("readable", 0.65, 9.0), ("borderline", 0.30, 0.65), ("unreadable", -1.0, 0.30))


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def band_of(ink: float) -> str:
    for name, lo, hi in BANDS:
        if lo <= ink < hi:
            return name
    return "unreadable"


def summarise(title: str, rows: list[tuple[str, str | None, float, float]]) -> None:
    """rows: (true ball, read ball or None, ink_visible, ms)."""
    print(f"\n== {title}: {len(rows)} frames")
    print(f"{'band':<12}{'frames':>8}{'correct':>10}{'abstained':>11}{'wrong':>7}{'correct %':>11}")
    for name, lo, hi in BANDS:
        sel = [r for r in rows if lo <= r[2] < hi]
        if not sel:
            continue
        ok = sum(1 for t, b, *_ in sel if b == t)
        wrong = sum(1 for t, b, *_ in sel if b is not None and b != t)
        none = sum(1 for _t, b, *_ in sel if b is None)
        print(f"{name:<12}{len(sel):>8}{ok:>10}{none:>11}{wrong:>7}{100 * ok / len(sel):>10.1f}%")
    ms = np.array([r[3] for r in rows])
    print(f"ms per frame: median {np.median(ms):.2f}, p95 {np.percentile(ms, 95):.2f}, max {ms.max():.2f}")


def dev_frames(limit: int | None = None):
    with open(DEV / "labels.csv") as f:
        rows = list(csv.DictReader(f))
    for r in rows[:limit]:
        yield r["ball"], float(r["ink_visible"]), cv2.imread(str(DEV / r["image"]))


def renderer_scenes(n: int, seed: int, fonts=None, *, start: int = 0, frames: bool = True):
    """(scene, frame) of random scenes start..n-1 drawn from seed. The frames
    before start are not drawn, nor any with frames=False (frame None): only
    their random draws are made, so scene k is the same however it is reached."""
    from .render import random_scene, render, skip_frame
    rng = np.random.default_rng(seed)
    for k in range(n):
        number = int(rng.integers(1, 76))
        kw = {"font": str(rng.choice(fonts))} if fonts else {}
        scene = random_scene(number, rng, **kw)
        if k < start:
            skip_frame(rng)
        elif frames:
            yield scene, render(scene, rng)
        else:
            skip_frame(rng)
            yield scene, None


def renderer_scene_at(seed: int, k: int, fonts=None, frame: bool = True):
    """(scene, frame) of renderer scene k of seed (frame None with frame=False)."""
    return next(renderer_scenes(k + 1, seed, fonts, start=k, frames=frame))


def two_light_frame(scene, frame: np.ndarray, seed: int, k: int) -> np.ndarray:
    """One frame from `frame` and a second exposure of the same ball under a light at
    the mirror place, with its own noise, as the appliance makes it (vision.glare.glare_free)."""
    from .glare import glare_free
    from .render import mirror_lit, render
    return glare_free(frame, render(mirror_lit(scene), np.random.default_rng([seed, k])))


def renderer_frames(n: int, seed: int, fonts=None, two_lights: bool = False):
    """(ball, ink_visible, frame) of n random scenes; with two_lights each frame is
    two_light_frame (the scenes and first exposures stay those of one light)."""
    for k, (scene, frame) in enumerate(renderer_scenes(n, seed, fonts)):
        if two_lights:
            frame = two_light_frame(scene, frame, seed, k)
        yield scene.ball, scene.ink_visible, frame


def run_reader(reader, frames) -> list:
    rows = []
    for truth, ink, frame in frames:
        r = reader.read(frame)
        rows.append((truth, r.ball, ink, r.ms))
    return rows


# ---------------------------------------------------------------- Tesseract baseline

def tesseract_read(frames: list[np.ndarray]) -> tuple[list[str | None], list[float]]:
    """Plain pipeline: find the ball, crop, Otsu threshold, Tesseract at 12 rotations
    (whitelist BINGO0123456789), vote. One Tesseract process per frame for all 12
    rotations (a list file), so start-up is paid once per frame, not 12 times."""
    from .balls import ALL_BALLS, ball_name
    from .locate import find_ball
    exe = shutil.which("tesseract")
    if exe is None:
        raise RuntimeError("tesseract not installed (apt install tesseract-ocr)")
    out, times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k, frame in enumerate(frames):
            t0 = time.perf_counter()
            ball = find_ball(frame)
            if ball is None:
                out.append(None)
                times.append(time.perf_counter() - t0)
                continue
            x, y, r = ball.as_tuple()
            h, w = frame.shape[:2]
            x0, y0 = int(max(0, x - r)), int(max(0, y - r))
            crop = frame[y0:int(min(h, y + r)), x0:int(min(w, x + r))]
            gray = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
            # Dark print on a lighter disc or ball: a local (adaptive) threshold,
            # everything outside the ball white.
            block = int(r / 2) | 1
            bw = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY, block, 15)
            yy, xx = np.mgrid[0:bw.shape[0], 0:bw.shape[1]]
            bw[(xx + x0 - x) ** 2 + (yy + y0 - y) ** 2 > (0.92 * r) ** 2] = 255
            paths = []
            for i in range(12):
                m = cv2.getRotationMatrix2D((bw.shape[1] / 2, bw.shape[0] / 2), 30 * i, 1.0)
                rot = cv2.warpAffine(bw, m, (bw.shape[1], bw.shape[0]), borderValue=255)
                p = os.path.join(tmp, f"f{k}_{i}.png")
                cv2.imwrite(p, rot)
                paths.append(p)
            lst = os.path.join(tmp, f"f{k}.txt")
            Path(lst).write_text("\n".join(paths) + "\n")
            res = subprocess.run([exe, lst, "stdout", "--psm", "6", "-c",
                                  "tessedit_char_whitelist=BINGO0123456789"],
                                 capture_output=True, text=True, timeout=120)
            votes: dict[str, float] = {}
            for page in res.stdout.split("\f"):
                text = "".join(page.split())
                named = [c for c in ALL_BALLS if c in text]
                for cand in named:
                    votes[cand] = votes.get(cand, 0) + 1
                if not named:   # a number alone is half a vote for its ball
                    for num in re.findall(r"\d+", text):
                        if 1 <= int(num) <= 75:
                            cand = ball_name(int(num))
                            votes[cand] = votes.get(cand, 0) + 0.5
            best = max(votes, key=lambda b: (votes[b], len(b))) if votes else None
            out.append(best)
            times.append(time.perf_counter() - t0)
    return out, times


def main(argv=None) -> None:
    global DEV
    ap = argparse.ArgumentParser(description="ball reader benchmark")
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument("--render", type=int, default=400, help="renderer frames (>= 300)")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--tesseract", type=int, default=40, help="frames for the Tesseract pipeline (0 = skip)")
    args = ap.parse_args(argv)
    cv2.setNumThreads(1)
    DEV = args.dev

    from .reader import BallReader
    # Memory: what building the reader and reading adds to this process.
    first = next(dev_frames(1))[2]
    rss0 = _rss_kib()
    reader = BallReader()
    for _ in range(20):
        reader.read(first)
    rss1 = _rss_kib()

    dev_rows = run_reader(reader, dev_frames())
    rss_dev = _rss_kib()
    summarise(f"dev set {DEV}", dev_rows)
    from .render import DEV_FONTS, TRAIN_FONTS
    rend_rows = run_reader(reader, renderer_frames(args.render, args.seed))
    summarise(f"renderer, seed {args.seed}, training fonts", rend_rows)
    held = run_reader(reader, renderer_frames(max(300, args.render // 2), args.seed + 1, DEV_FONTS))
    summarise(f"renderer, seed {args.seed + 1}, fonts never trained on {DEV_FONTS}", held)
    print(f"\nmemory: the reader adds {(rss1 - rss0) / 1024:.1f} MB (RSS before building it, after "
          f"cv2/numpy and one frame: {rss0 / 1024:.0f} MB; after building it and 20 reads: {rss1 / 1024:.0f} MB; "
          f"after reading the {len(dev_rows)} dev frames: {rss_dev / 1024:.0f} MB, "
          f"+{(rss_dev - rss0) / 1024:.1f} MB). Classifier trained on {len(TRAIN_FONTS)} fonts.")

    if args.tesseract > 0:
        sub = list(dev_frames(args.tesseract))
        frames = [f for _t, _i, f in sub]
        reads, tess_times = tesseract_read(frames)
        rows = [(t, b, i, s * 1000) for (t, i, _f), b, s in zip(sub, reads, tess_times)]
        tess_ms = float(np.median(tess_times)) * 1000
        summarise(f"Tesseract pipeline, first {len(sub)} dev frames (slow: a subset only)", rows)
        ours = [r for r in dev_rows[:len(sub)]]
        ours_ms = float(np.median([r[3] for r in ours]))
        summarise(f"our reader on the same {len(sub)} frames", ours)
        print(f"\nspeed: Tesseract median {tess_ms:.0f} ms/frame vs ours median {ours_ms:.2f} ms "
              f"-> {tess_ms / ours_ms:.0f}x faster")


if __name__ == "__main__":
    main()
