"""Calls as the appliance makes them, on many fresh renderer balls (a benchmark, not a test):

    python -m vision.bench_calls [--balls 3000] [--seed 900000] [--fonts train|unseen|other] [--two-lamps]

Each ball rests in the holder while the camera takes `--frames` frames of it (fresh sensor
noise each, the same pose and highlight), each read and all fused with the appliance's default
thresholds (vision.fusion): commit, confirm (a person is asked) or represent (the ball is shaken
and presented again). With --two-lamps the frames come from vision.glare.two_lamp_frames, lamp
B at the mirror place (render.mirror_lit), as the appliance takes them with camera.lights.
Only the first presentation is counted. The balls are those of `vision.bench_wrong` (same
seeds, chunks of 125), so a wrong call can be compared with the single frame there.
"""
from __future__ import annotations

import argparse
import time
from multiprocessing import Pool

import cv2
import numpy as np

from .bench import renderer_scenes
from .bench_wrong import CHUNK, font_set

FRAMES = 5  # reader.frames, the appliance's default


def resting_ball_frames(scene, rng: np.random.Generator, count: int, two_lamps: bool):
    """LampFrames (vision.glare) of the ball resting in the holder."""
    from .glare import LampFrames, two_lamp_frames
    from .render import mirror_lit, render

    if not two_lamps:
        return LampFrames([render(scene, rng) for _ in range(count)], [], None)
    lit = {"now": "both"}

    def light(which: str) -> None:
        lit["now"] = which

    def expose() -> np.ndarray:  # the renderer has no lag: nothing to drop after a switch
        return render(mirror_lit(scene) if lit["now"] == "b" else scene, rng)

    return two_lamp_frames(expose, light, count, settle_frames=0)


def _chunk(args):
    seed, n, fonts, frames, two_lamps, check_exposures = args
    cv2.setNumThreads(1)
    from .fusion import fuse
    from .reader import BallReader

    reader = BallReader()
    rng = np.random.default_rng([seed, 7])  # the frames' noise; the scenes are bench_wrong's
    counts = {"commit": 0, "confirm": 0, "represent": 0, "readable": 0, "readable_called": 0}
    wrong = []
    for k, (scene, _) in enumerate(renderer_scenes(n, seed, font_set(fonts), frames=False)):
        taken = resting_ball_frames(scene, rng, frames, two_lamps)
        checks = [reader.read(e) for e in taken.exposures] if check_exposures else None
        fused = fuse([reader.read(f) for f in taken.frames], checks=checks)
        counts[fused.decision] += 1
        readable = scene.ink_visible >= 0.65
        counts["readable"] += readable
        if fused.decision == "commit" and fused.ball != scene.ball:
            wrong.append((scene.ball, fused.ball, fused.confidence, scene.ink_visible, f"{seed}:{k}"))
        elif fused.decision == "commit":
            counts["readable_called"] += readable
    return counts, wrong


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--balls", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=900000)
    ap.add_argument("--fonts", choices=("train", "unseen", "other"), default="train")
    ap.add_argument("--frames", type=int, default=FRAMES)
    ap.add_argument("--two-lamps", action="store_true", help="frames from exposures under lamp A and lamp B")
    ap.add_argument("--no-check", action="store_true",
                    help="with --two-lamps: do not read the single exposures as a check (fusion's checks)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    jobs = [(args.seed + i, min(CHUNK, args.balls - i * CHUNK), args.fonts, args.frames, args.two_lamps,
             not args.no_check)
            for i in range((args.balls + CHUNK - 1) // CHUNK)]
    t0 = time.time()
    with Pool(args.workers) as pool:
        parts = pool.map(_chunk, jobs)
    total = {key: sum(p[0][key] for p in parts) for key in parts[0][0]}
    wrong = [w for p in parts for w in p[1]]
    lamps = ("two lamps" + (", single exposures not checked" if args.no_check else "")) if args.two_lamps else "one lamp"
    print(f"{args.balls} balls ({args.fonts} fonts, {lamps}, {args.frames} frames each, chunks from seed "
          f"{args.seed}), {time.time() - t0:.0f} s: called {total['commit']} (WRONG {len(wrong)}), "
          f"a person asked {total['confirm']}, presented again {total['represent']}; readable balls called "
          f"right at once {total['readable_called']}/{total['readable']} "
          f"= {100 * total['readable_called'] / max(total['readable'], 1):.1f}%")
    for truth, called, conf, ink, where in wrong:
        print(f"  {truth} called {called}  confidence {conf:.4f}  ink_visible {ink:.2f}  ball {where}")


if __name__ == "__main__":
    main()
