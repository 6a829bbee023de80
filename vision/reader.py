"""Read one camera frame: which ball is in the holder, and how sure we are.

find the ball -> find and flatten the print -> guess its rotation -> classify
letter and digits -> add the column colour -> one probability per number ->
calibrated confidence. A ball is named only when the confidence clears
ACCEPT; otherwise `ball` is None and `reason` says why.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np

from .balls import ball_name, letter_for
from .classify import WEIGHTS, load_model, second_weights
from .colour import column_probabilities
from .decode import (LETTER_UNSEEN, MISSING_LOOP, Grown, Guess, column_vector, combine, glyph_classes, grow,
                     layouts, loop_needed, loops_filled, score_guesses, scores_with_hidden_strokes)
from .heap import keep_freed_memory
from .locate import find_ball
from .print_find import FAINT, PrintFinder
from .sphere import PATCH

CALIBRATION = Path(__file__).with_name("data") / "calibration.npz"
ACCEPT_EVIDENCE = 0.9    # default; the calibration file carries a measured one
MIN_CONFIDENCE = 0.97    # never name a ball below this calibrated confidence
MIN_POSTERIOR = 0.9      # ... nor when other numbers hold more than a tenth of the posterior
UNSURE_CEILING = 0.9     # default confidence cap of a reading not named; the calibration file carries a measured one
EARLY_EXIT = 0.9         # evidence from dark ink at which light ink is not tried
GLARED_LOOP = 0.5        # share of the faint ink that closed a loop lying under glare (_restored)
# Print centre turned further than this from the camera: squeezed to under 0.59 of its
# width, it shows less than its glyphs suggest (fresh wrong readings sat at 55-58 deg).
EDGE_ON = math.cos(math.radians(54))
# Turned further than this (72.5 deg), the print shows under 0.3 of its width and thin
# strokes along the squeeze vanish (a 9 lost its tail: I29 named I20 at 74 deg, fresh
# frame 6300006:151): the evidence is halved once more.
EDGE_ON_FAR = 0.3


class ImageError(ValueError):
    """The file is not an image we can read."""


@dataclass
class Reading:
    ball: str | None                 # "B12", None when unsure
    letter: str | None
    number: int | None
    confidence: float                # calibrated probability that the best reading is right
    ms: float
    reason: str | None = None
    ball_circle: tuple[float, float, float] | None = None
    print_quad: list[tuple[float, float]] | None = None
    print_image: np.ndarray | None = None
    scores: dict[int, float] = field(default_factory=dict)
    clearance: float = 0.0           # how far the evidence clears the accept levels (Calibration.clearance)

    def to_json(self) -> dict:
        return {"ball": self.ball, "letter": self.letter, "number": self.number,
                "confidence": round(float(self.confidence), 4), "ms": round(float(self.ms), 2),
                "reason": self.reason}


def evidence(posterior: float, glyph_score: float) -> float:
    """One number saying how good the best reading is: both the glyphs on their own
    and the posterior after the colour cue and the other numbers must be high."""
    return float(min(posterior, glyph_score))


def glyph_evidence(score: float, guess: Guess | None, colour_p: float) -> float:
    """The glyph score of the best reading; when its letter was not seen, the
    colour cue stands in for the letter."""
    if guess is not None and guess.layout.letter is None:
        return float(score / LETTER_UNSEEN * colour_p)
    return float(score)


def reading_evidence(posterior: float, glyph_score: float, guess: Guess | None, colour_p: float) -> float:
    """Evidence for the best reading, with the penalty the glyph scores cannot see:
    a print squeezed at the rim shows far less than its clean-looking glyphs suggest."""
    ev = evidence(posterior, glyph_evidence(glyph_score, guess, colour_p))
    if guess is not None:
        z = guess.print_.flat.centre[2]
        ev *= (0.5 if z < EDGE_ON else 1.0) * (0.5 if z < EDGE_ON_FAR else 1.0)
    return ev


def weights_fingerprint(path: Path) -> str:
    """SHA-256 of a glyph weights file and the second classifier's beside it, kept in
    the calibration fitted for the two."""
    return hashlib.sha256(Path(path).read_bytes() + second_weights(Path(path)).read_bytes()).hexdigest()


class Calibration:
    """Monotone map from evidence to the probability that the reading is right.

    Fitted by isotonic regression on held-out renderer frames (vision/train.py).
    `accept` is the first classifier's evidence above which no calibration reading
    was wrong, `second_accept` the same for the evidence the second classifier
    seconded (reader.seconded_evidence): a reading is named only above both.
    `unsure_ceiling` is the share of calibration readings right among those the
    reader would not name although the map gives them at least MIN_CONFIDENCE
    (the map is flat at its top, below the accept level too): a reading not
    named reports no more than that, so an unsure ball never shows 0.9996.
    """

    def __init__(self, xs: np.ndarray | None = None, ps: np.ndarray | None = None,
                 accept: float = ACCEPT_EVIDENCE, unsure_ceiling: float = UNSURE_CEILING,
                 second_accept: float = 0.0):
        self.xs, self.ps, self.accept, self.unsure_ceiling = xs, ps, accept, unsure_ceiling
        self.second_accept = second_accept

    @classmethod
    def load(cls, path: Path = CALIBRATION, weights: Path = WEIGHTS) -> "Calibration":
        """The calibration fitted for `weights`: its accept level means nothing for other weights."""
        if not path.exists():
            return cls()
        with np.load(path) as z:
            ceiling = float(z["unsure_ceiling"]) if "unsure_ceiling" in z.files else UNSURE_CEILING
            made_for = str(z["weights_sha256"]) if "weights_sha256" in z.files else None
            second = float(z["second_accept"]) if "second_accept" in z.files else 0.0
            cal = cls(z["xs"], z["ps"], float(z["accept"]), ceiling, second)
        if made_for is not None and made_for != weights_fingerprint(weights):
            raise ValueError(f"{path} was fitted for other glyph weights than {weights}; "
                             f"recalibrate: python -m vision.train --calib-only")
        return cal

    def __call__(self, ev: float) -> float:
        if self.xs is None:            # uncalibrated: the evidence itself, squeezed
            return 0.9 * ev
        return float(np.interp(ev, self.xs, self.ps))

    def accepts(self, ev: float, posterior: float = 1.0, first: float | None = None) -> bool:
        """Name the ball? The first classifier's evidence (`first`; ev when not
        given) must clear the accept level and the seconded evidence `ev` the
        second level, its calibrated confidence MIN_CONFIDENCE, and the best
        number must stand clear of the others: calibration is thin just above
        the accept level, where a 3 read as a 5 with 0.63 of the posterior once
        got 0.9996."""
        first = ev if first is None else first
        return (first >= self.accept and ev >= self.second_accept and self(ev) >= MIN_CONFIDENCE
                and posterior >= MIN_POSTERIOR)

    def clearance(self, ev: float, first: float | None = None) -> float:
        """How far a reading's evidence clears the accept levels, as the smaller
        ratio of the two (1 at the levels). Unlike the map, it moves only when
        calibration's worst wrong readings do: fusion commits on it (fusion.COMMIT_CLEARANCE)."""
        first = ev if first is None else first
        ratios = [first / self.accept] + ([ev / self.second_accept] if self.second_accept > 0 else [])
        return float(min(ratios))

    def confidence(self, ev: float, posterior: float = 1.0, first: float | None = None) -> float:
        """The confidence to report: capped at `unsure_ceiling` when the ball is not named."""
        conf = self(ev)
        return conf if self.accepts(ev, posterior, first) else min(conf, self.unsure_ceiling)


# Faint-ink checks of the best number, in order: (ink level, share of the best
# number's score the other number must reach under it). Paler ink is noisier,
# so there the other number must be a real contender, not a speck's whim.
FAINT_CHECKS = ((FAINT, 0.0), (0.3, 0.2), (0.25, 0.2))


class Best(NamedTuple):
    """The best reading of a frame (best_reading)."""
    post: np.ndarray            # (75,) posterior
    glyph: np.ndarray           # (75,) glyph scores
    who: list                   # the guess that gave each number its score
    i: int                      # best number - 1
    first: float                # the first classifier's evidence
    second_floor: float = 0.0   # the second classifier's score restored by faint ink (seconded_evidence)


def _lightened_away(i: int, scores: list[np.ndarray], glyph: np.ndarray, colour: np.ndarray) -> float | None:
    """The best number's glyph score once its faint ink is added back (scores,
    one per FAINT_CHECKS level), when that makes another number win; None when
    it holds."""
    for grown, (_level, share) in zip(scores, FAINT_CHECKS):
        joint = grown * colour
        j = int(np.argmax(joint))
        if j != i and joint[j] >= share * glyph[i] * colour[i]:
            return float(grown[i])
    return None


def _restored(i: int, grown: Grown, first: list[np.ndarray], second: list[np.ndarray], colour: np.ndarray) -> bool:
    """Does faint ink restore the best number? Both classifiers name it at every
    FAINT_CHECKS level, and at the first level each glyph keeps its loops: what
    came back is a stroke paler than the mask's threshold (under a highlight, or
    a thin serif), not a blur's halo that closes a 3 into an 8 (B3 read B8,
    calibration frame 507926:74) nor pale glare that gives a 6 a second loop
    (O67 read O65, 508021:46): both at 0.9999 without the loop check. A loop
    gained counts where the number needs it and most of the ink that closed it lies
    under glare's glow (GLARED_LOOP): a highlight took the right of a 6's loop (O62
    facing the camera, dev frame ball_00185)."""
    if not all(int(np.argmax(s * colour)) == i for s in first + second):
        return False
    lay = grown.guess.layout
    loops = zip(glyph_classes(i + 1, lay), lay.holes, grown.holes[0])
    return all(now == was or (loop_needed(c, was, now) and grown.under_glare(j) >= GLARED_LOOP)
               for j, (c, was, now) in enumerate(loops))


def best_reading(guesses: list[Guess], cols: dict[str, float], model=None, second=None) -> Best | None:
    """The best reading, or None.
    With the glyph model, a best number that another number beats once its
    glyphs' faint ink is added back (FAINT_CHECKS) keeps only the score it has
    then; up to three best numbers are checked. With the second classifier too,
    a best number that faint ink restores (_restored) takes the scores of its
    restored glyphs where higher: a stroke a highlight lightened does not leave
    the reading unsure. Where a digit of the best number may be another missing
    strokes (an 8 a highlight hides in a 3, a 7 whose bar broke off in a 1:
    decode.scores_with_hidden_strokes), the numbers with that digit share the
    posterior; the best number stays the one read."""
    if not guesses:
        return None
    glyph, who = combine(guesses)
    colour = column_vector(cols)
    checked: set[int] = set()
    levels = tuple(level for level, _share in FAINT_CHECKS)
    grown: dict[int, tuple] = {}

    def grown_of(i: int):
        if i not in grown:
            g = grow(who[i], levels)
            grown[i] = (g, g.scores(model))
        return grown[i]

    while True:
        joint = glyph * colour
        total = joint.sum()
        if total <= 0:
            return None
        post = joint / total
        i = int(np.argmax(post))
        if model is None or i in checked or who[i] is None or len(checked) >= 3:
            break
        checked.add(i)
        g, by_first = grown_of(i)
        # A loop that faint ink fills was a slit blur closed, not a loop: the
        # number is charged for it as for any loop its class needs and lacks.
        cap = glyph[i] * MISSING_LOOP ** loops_filled(i + 1, g)
        lowered = _lightened_away(i, by_first, glyph, colour)
        if lowered is not None:
            cap = min(cap, lowered)
        if cap < glyph[i]:
            glyph = glyph.copy()
            glyph[i] = cap
    hidden = scores_with_hidden_strokes(i + 1, who[i]) if model is not None and who[i] is not None else None
    floor = 0.0
    if hidden is not None:
        hidden[i] = 0.0           # the number read keeps the score it was read with
        joint = np.maximum(glyph, hidden) * colour
        post = joint / joint.sum()
    elif model is not None and second is not None and who[i] is not None:
        g, by_first = grown_of(i)
        by_second = g.scores(second)
        if _restored(i, g, by_first, by_second, colour):
            floor = float(by_second[0][i])
            if by_first[0][i] > glyph[i]:
                glyph = glyph.copy()
                glyph[i] = by_first[0][i]
                post = glyph * colour / (glyph * colour).sum()
    return Best(post, glyph, who, i, reading_evidence(float(post[i]), float(glyph[i]), who[i], float(colour[i])), floor)


def seconded_evidence(best: Best, cols: dict[str, float], second) -> float:
    """The best reading's evidence, no more than the second classifier's glyph
    evidence for the same number under the same layout (or its score restored
    by faint ink, best.second_floor, where higher): a confident misreading
    of a glyph then needs both classifiers to make the same one."""
    g, i = best.who[best.i], best.i
    if g is None:
        return best.first
    score = max(score_guesses([(g.print_, g.layout)], second)[0].scores[i], best.second_floor)
    return min(best.first, glyph_evidence(score, g, float(column_vector(cols)[i])))


class BallReader:
    def __init__(self, region: tuple[float, float, float] | None = None, *,
                 weights: str | None = None, calibration: Calibration | None = None):
        keep_freed_memory()        # process-wide; see vision/heap.py
        self.region = region
        self.model = load_model(weights)
        self.second = load_model(str(second_weights(Path(weights) if weights else WEIGHTS)))
        self.calibration = calibration or Calibration.load(weights=Path(weights) if weights else WEIGHTS)

    def read(self, frame: np.ndarray) -> Reading:
        t0 = time.perf_counter()
        reading = self._read(frame)
        reading.ms = (time.perf_counter() - t0) * 1000
        return reading

    # The raw steps, kept apart so training and calibration can use them.
    def raw(self, frame: np.ndarray):
        """(ball circle, guesses, column probabilities) or a reason string."""
        if frame is None or frame.ndim != 3 or frame.shape[2] != 3 or frame.size == 0:
            return "not a colour frame"
        ball = find_ball(frame, self.region)
        if ball is None:
            return "no ball found"
        finder = PrintFinder(frame, ball)
        cols = column_probabilities(finder.thumb, ball)
        guesses: list[Guess] = []
        # Dark ink is the common case: light ink is tried only when dark ink
        # gives no strong reading (a fixed level, so calibration sees the same).
        for polarity in ("dark", "light"):
            p = finder.find(polarity)
            if p is not None:
                guesses += score_guesses(layouts([p]), self.model)
            best = best_reading(guesses, cols)
            if best is not None and best[4] >= EARLY_EXIT:
                break
        return ball, guesses, cols

    def _read(self, frame: np.ndarray) -> Reading:
        raw = self.raw(frame)
        if isinstance(raw, str):
            return Reading(None, None, None, 0.0, 0.0, raw)
        ball, guesses, cols = raw
        circle = ball.as_tuple()
        best = best_reading(guesses, cols, self.model, self.second)
        if best is None:
            return Reading(None, None, None, 0.0, 0.0, "no print found", circle)
        post, glyph, who, i, first, _floor = best
        ev = seconded_evidence(best, cols, self.second)
        number = i + 1
        conf = self.calibration.confidence(ev, float(post[i]), first)
        scores = {int(n + 1): float(post[n]) for n in np.nonzero(post > 1e-4)[0]}
        g = who[i]
        quad, image = _print_outline(g) if g is not None else (None, None)
        reading = Reading(None, None, None, conf, 0.0, None, circle, quad, image, scores,
                          self.calibration.clearance(ev, first))
        glyph_best = int(np.argmax(glyph)) + 1
        if self.calibration.accepts(ev, float(post[i]), first):
            reading.ball, reading.letter, reading.number = ball_name(number), letter_for(number), number
        elif cols[letter_for(glyph_best)] < 0.1 and glyph[glyph_best - 1] > 0.5:
            reading.reason = "cues disagree"
        else:
            reading.reason = "unsure"
        return reading


def _print_outline(g: Guess):
    """The print's outline in frame pixels and the upright print image."""
    lay, flat = g.layout, g.print_.flat
    xs = [b[0] for b in lay.boxes] + [b[0] + b[2] for b in lay.boxes]
    ys = [b[1] for b in lay.boxes] + [b[1] + b[3] for b in lay.boxes]
    x0, x1, y0, y1 = min(xs) - 2, max(xs) + 2, min(ys) - 2, max(ys) + 2
    m = cv2.getRotationMatrix2D((PATCH / 2 - 0.5, PATCH / 2 - 0.5), lay.angle_deg, 1.0)
    inv = cv2.invertAffineTransform(m)
    quad = []
    for px, py in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)):
        qx, qy = inv @ np.array([px, py, 1.0])
        ix = int(min(max(round(qx), 0), PATCH - 1))
        iy = int(min(max(round(qy), 0), PATCH - 1))
        quad.append((float(flat.map_x[iy, ix]), float(flat.map_y[iy, ix])))
    upright = cv2.warpAffine(flat.image, m, (PATCH, PATCH), flags=cv2.INTER_LINEAR)
    return quad, upright


_default_reader: BallReader | None = None


def load_image(path) -> np.ndarray:
    """An image file as a BGR frame; raises ImageError when the file is not an image."""
    p = Path(path)
    if not p.is_file():
        raise ImageError(f"{p}: no such file")
    data = np.fromfile(str(p), dtype=np.uint8)
    frame = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if frame is None:
        raise ImageError(f"{p}: not an image OpenCV can decode (JPEG, PNG, BMP, ...)")
    return frame


def read_image_file(path, reader: BallReader | None = None) -> Reading:
    """Read a ball from an image file; raises ImageError when the file is not an image."""
    frame = load_image(path)
    global _default_reader
    if reader is None:
        if _default_reader is None:
            _default_reader = BallReader()
        reader = _default_reader
    return reader.read(frame)
