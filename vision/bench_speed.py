"""Is the reader faster than it was? (a benchmark, not a test):

    python -m vision.bench_speed [--base HEAD] [--render 200] [--dev 100] [--rounds 2]

On a shared 2-core VM the same code's median drifts by a third from one run
to the next (5 December: 7.6 ms on the dev set; 6 December: 10-14 ms, run
after run), so two `make bench-vision` runs cannot show a 5% change. Here the
reader of git revision --base (its vision/ package and data, unpacked into a
scratch directory as `vision_base`) and the working tree's reader take turns
on every frame in one process, the first to read swapping each frame, so both
meet the machine in the same state. It prints both medians, the ratio of the
totals and of each frame's times, and whether the two read every frame alike
(a speed change that should not change readings must show 0 different).
"""
from __future__ import annotations

import argparse
import importlib
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import cv2
import numpy as np

from .bench import dev_frames, renderer_frames

ROOT = Path(__file__).resolve().parent.parent


def base_reader_class(rev: str, scratch: Path):
    """BallReader of `rev`'s vision/ package, imported as vision_base from scratch
    (the caller takes scratch off sys.path when done)."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "vision"],
                         capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(scratch, filter="data")
    (scratch / "vision").rename(scratch / "vision_base")
    for name in [m for m in sys.modules if m == "vision_base" or m.startswith("vision_base.")]:
        del sys.modules[name]           # an earlier call's revision
    sys.path.insert(0, str(scratch))
    return importlib.import_module("vision_base.reader").BallReader


def outcome(r) -> tuple:
    return r.ball, round(r.confidence, 6), r.reason


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="the working tree's reader against another revision's, frame by frame")
    ap.add_argument("--base", default="HEAD", help="git revision to compare with (default HEAD)")
    ap.add_argument("--render", type=int, default=200, help="renderer frames (training fonts)")
    ap.add_argument("--dev", type=int, default=100, help="dev set frames (0: none; the set lies outside the repository)")
    ap.add_argument("--seed", type=int, default=7777)
    ap.add_argument("--rounds", type=int, default=2, help="passes over the frames")
    args = ap.parse_args(argv)
    cv2.setNumThreads(1)
    from .reader import BallReader
    frames = [f for *_, f in renderer_frames(args.render, args.seed)]
    frames += [f for *_, f in dev_frames(args.dev)] if args.dev else []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            base, new = base_reader_class(args.base, Path(tmp))(), BallReader()
            for f in frames[:10]:                  # warm both up
                base.read(f), new.read(f)
            t_base, t_new, differ = [], [], 0
            for rnd in range(args.rounds):
                for k, f in enumerate(frames):
                    first, second = (base, new) if (k + rnd) % 2 else (new, base)
                    readings = {first: first.read(f), second: second.read(f)}
                    t_base.append(readings[base].ms)
                    t_new.append(readings[new].ms)
                    if rnd == 0 and outcome(readings[base]) != outcome(readings[new]):
                        differ += 1
        finally:
            if tmp in sys.path:
                sys.path.remove(tmp)
    tb, tn = np.array(t_base), np.array(t_new)
    print(f"{len(frames)} frames x {args.rounds} rounds: {args.base} median {np.median(tb):.2f} ms, "
          f"working tree median {np.median(tn):.2f} ms")
    print(f"working tree / {args.base}: total {tn.sum() / tb.sum():.3f}, median of per-frame ratios "
          f"{np.median(tn / tb):.3f}")
    print(f"readings (ball, confidence, reason) that differ: {differ} of {len(frames)}")


if __name__ == "__main__":
    main()
