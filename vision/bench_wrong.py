"""Hunt for wrong readings on many fresh renderer frames (a benchmark, not a test):

    python -m vision.bench_wrong [--frames 6000] [--seed 900000] [--fonts train|unseen|other] [--two-lights] [--workers 2]
    python -m vision.bench_wrong --show SEED:INDEX [--fonts ...] [--two-lights]    # write that frame to a PNG

A wrong reading is rare (about one frame in 5000 since 3 December), so the 700 renderer
frames of `vision.bench` cannot show the rate. Frames come in chunks of 125,
chunk i drawn from seed + i; every named-but-wrong frame is listed as
SEED:INDEX so it can be looked at. Use seeds that no rule was tuned on: the
calibration seeds (vision/train.py) are not fresh.
"""
from __future__ import annotations

import argparse
import time
from multiprocessing import Pool

import cv2
import numpy as np

from .bench import renderer_frames, renderer_scene_at, two_light_frame

CHUNK = 125


def font_set(name: str):
    """None: the training fonts; "unseen": the dev set's two; "other": a third family."""
    from .render import DEV_FONTS, OTHER_FONTS
    return {"unseen": DEV_FONTS, "other": OTHER_FONTS}.get(name)


def _chunk(args):
    seed, n, fonts, two_lights = args
    cv2.setNumThreads(1)
    from .reader import BallReader
    reader = BallReader()
    named = right_readable = readable = 0
    confidence = 0.0
    wrong = []
    for k, (truth, ink, frame) in enumerate(renderer_frames(n, seed, font_set(fonts), two_lights)):
        r = reader.read(frame)
        readable += ink >= 0.65
        if r.ball is None:
            continue
        named += 1
        confidence += r.confidence
        if r.ball == truth:
            right_readable += ink >= 0.65
        else:
            wrong.append((truth, r.ball, r.confidence, ink, f"{seed}:{k}"))
    return n, readable, right_readable, named, confidence, wrong


def hunt(frames: int, seed: int, fonts: str, workers: int, two_lights: bool = False) -> list[tuple]:
    jobs = [(seed + i, min(CHUNK, frames - i * CHUNK), fonts, two_lights)
            for i in range((frames + CHUNK - 1) // CHUNK)]
    t0 = time.time()
    with Pool(workers) as pool:
        parts = pool.map(_chunk, jobs)
    n, readable, right, named, confidence = (sum(p[i] for p in parts) for i in range(5))
    wrong = [w for p in parts for w in p[5]]
    # Does the confidence mean what it says? Compare it with the share named right.
    lights = ", two lights" if two_lights else ""
    print(f"{n} renderer frames ({fonts} fonts{lights}, chunks from seed {seed}), {time.time() - t0:.0f} s: "
          f"named {named} (mean confidence {confidence / max(named, 1):.4f}, right {1 - len(wrong) / max(named, 1):.4f}), "
          f"readable read right {right}/{readable} = {100 * right / max(readable, 1):.1f}%, named WRONG {len(wrong)}")
    for truth, read, conf, ink, where in sorted(wrong, key=lambda w: -w[2]):
        print(f"  {truth} read {read}  confidence {conf:.4f}  ink_visible {ink:.2f}  frame {where}")
    return wrong


def frame_at(where: str, fonts: str, two_lights: bool = False) -> tuple[str, np.ndarray]:
    seed, k = (int(v) for v in where.split(":"))
    scene, frame = renderer_scene_at(seed, k, font_set(fonts))
    return scene.ball, two_light_frame(scene, frame, seed, k) if two_lights else frame


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=900000)
    ap.add_argument("--fonts", choices=("train", "unseen", "other"), default="train")
    ap.add_argument("--two-lights", action="store_true",
                    help="each frame the per-pixel minimum of two exposures under mirrored lights (vision.glare)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--show", metavar="SEED:INDEX", help="write this frame to frame-SEED-INDEX.png instead")
    args = ap.parse_args(argv)
    if args.show:
        truth, frame = frame_at(args.show, args.fonts, args.two_lights)
        out = f"frame-{args.show.replace(':', '-')}.png"
        cv2.imwrite(out, frame)
        print(f"{out}: {truth}")
        return
    hunt(args.frames, args.seed, args.fonts, args.workers, args.two_lights)


if __name__ == "__main__":
    main()
