"""From glyph layouts to a score for every ball number.

For each reading guess (ink polarity x "which blob is the letter"), the
classifier gives letter and digit probabilities; a number's score under the
guess is P(its letter) x P(each of its digits). The best guess for each number
wins. Rejected glyphs (class "reject") pull every score down, so a print that
does not look like a print scores low everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .balls import LETTERS, letter_for
from .classify import CLASSES, DIGITS, LETTERS as LETTER_SLICE, GlyphModel
from .glyphs import Layout, added_share, features, grown_glyphs, parse, up_guesses, upright_mask
from .print_find import FAINT, Print

_NUMS = np.arange(1, 76)
_COL = np.array([LETTERS.index(letter_for(int(n))) for n in _NUMS])
_TENS = _NUMS // 10
_ONES = _NUMS % 10
_ONE_DIGIT = _NUMS < 10


# Score factor for a print whose letter is not seen (hidden by glare or the
# lip): weaker than a clearly read letter, and the colour must carry the column.
LETTER_UNSEEN = 0.3
# Score factor for a layout the frame does not show whole: it may name the
# right ball, but never strongly enough to call it alone.
TRUNCATED = 0.02
# A glyph touching the lip or the rim may have lost an edge: weaker evidence.
CLIPPED = 0.75
# A digit much shorter than its neighbour (Layout.short_digit) lost a part to
# the lip, the rim or a highlight: a 9 without its tail reads as a 0. The same
# for a digit other than 1 much narrower than its neighbour at the rim
# (Layout.narrow_at_edge): a 2 the rim cut down reads as a 7.
SHORT_DIGIT = 0.5
# A short digit that touches the unseen part (Layout.short_at_edge) may have lost
# what tells it apart there: the top of a 3 the lip cut short is a clean 2
# (G53 read G52 at 0.9996, fresh frame 3900039:15).
CUT_SHORT = 0.25
# A lone digit whose foot the lip or the rim hides (Layout.foot_unseen) read as a 7
# may be a 1 or a 2 that lost its foot: the flag and stem of a 1 or the hook and
# stroke of a 2 are a 7 (B1 read B7 at 0.9999, fresh frame 5900015:8; B2 read B7,
# 2700017:6). A 7 read there weighs CUT_SHORT, in a two-digit number too (a 2 at
# the rim with its base squeezed out of sight: I22 read I27 at 0.9975, 6900012:58).
_LONE_SEVEN = 7 - 1


# Closed loops each class may have (digits 0-9, letters B I N G O, reject). Ink
# hardly gains a loop, so a glyph with more loops than its class allows is
# not that class (a broken 8 with one loop left is no 3); a loop can be lost
# (glare or blur breaks or fills it), so too few loops costs only a little.
# A slashed zero (monospace fonts) has two.
_MAX_HOLES = np.array([2, 0, 0, 0, 1, 0, 1, 0, 2, 1, 2, 0, 0, 0, 1, 99])
_MIN_HOLES = np.array([1, 0, 0, 0, 0, 0, 1, 0, 2, 1, 2, 0, 0, 0, 1, 0])
EXTRA_LOOP = 0.02
MISSING_LOOP = 0.5


def glyph_classes(number: int, lay: Layout) -> list[int]:
    """Class index of each of the layout's glyphs (letter first) when it reads `number`."""
    letter = [CLASSES.index(letter_for(number))] if lay.letter is not None else []
    return letter + [CLASSES.index(d) for d in str(number)]


def loop_needed(cls: int, was: int, now: int) -> bool:
    """Did a glyph that lacked a loop its class needs gain one, and no more than
    the class has? (A 6 given a second loop gained one it lacks.)"""
    return was < now <= _MAX_HOLES[cls] and was < _MIN_HOLES[cls]


def loop_factors(holes: list[int], open_loops: list[bool] | None = None) -> np.ndarray:
    """(n glyphs, 16 classes) factor for how well each glyph's loops fit each class.
    A glyph joined from pieces (open_loops) is not charged for loops it lacks."""
    h = np.asarray(holes, np.int64)[:, None]
    extra = np.where(h > _MAX_HOLES[None, :], EXTRA_LOOP, 1.0)
    missing = MISSING_LOOP ** np.clip(_MIN_HOLES[None, :] - h, 0, None)
    if open_loops is not None:
        missing = np.where(np.asarray(open_loops, bool)[:, None], 1.0, missing)
    return extra * missing


# Where a glyph stands says whether it is the letter or a digit, and many fonts
# draw O and 0 alike: in its place, a glyph's twin counts for it. (Not I and 1:
# a clipped sliver of any digit looks like an I, and would then count as a 1.)
_TWINS = ((CLASSES.index("0"), CLASSES.index("O")),)


def as_letter(p: np.ndarray) -> np.ndarray:
    """P(each column letter) of a glyph in the letter's place."""
    out = p[LETTER_SLICE].copy()
    for digit, letter in _TWINS:
        out[letter - LETTER_SLICE.start] += p[digit]
    return out


def as_digit(p: np.ndarray) -> np.ndarray:
    """P(each digit) of a glyph in a digit's place."""
    out = p[DIGITS].copy()
    for digit, letter in _TWINS:
        out[digit] += p[letter]
    return out


# Lone digits that are half of a number of their own column when a digit hides
# beside them: B1-B5 with the left place unseen (B11-B15), B1 with the right (B10-B15).
_LONE = _NUMS[_ONE_DIGIT]
_SAME_COLUMN_LEFT = np.array([any(_COL[n - 1] == _COL[d - 1] for n in range(10 + d, 76, 10)) for d in _LONE])
_SAME_COLUMN_RIGHT = np.array([any(_COL[n - 1] == _COL[d - 1] for n in range(10 * d, min(76, 10 * d + 10)))
                               for d in _LONE])


def hidden_neighbour_factor(sides: str) -> np.ndarray:
    """(9,) score factor of the lone-digit readings 1-9 when the frame hides the
    digit's neighbour place(s): too weak to call where a digit hidden there makes a
    number of the same column, which the letter cannot tell apart (B3 may be B13);
    elsewhere (B7: there is no B17, and I17 needs another letter and colour) the
    digit only counts as clipped."""
    same_column = np.zeros(len(_LONE), bool)
    if "l" in sides:
        same_column |= _SAME_COLUMN_LEFT
    if "r" in sides:
        same_column |= _SAME_COLUMN_RIGHT
    return np.where(same_column, TRUNCATED, CLIPPED)


def _glyphs(lay: Layout) -> list:
    return ([lay.letter] if lay.letter is not None else []) + lay.digits


@dataclass
class Guess:
    print_: Print
    layout: Layout
    scores: np.ndarray          # (75,) score of numbers 1..75 under this guess
    probs: np.ndarray           # class probabilities of its glyphs (letter first), loops counted


def layouts(prints: list[Print], max_guesses: int = 4) -> list[tuple[Print, Layout]]:
    out = []
    for p in prints:
        for angle, letter_at in up_guesses(p.mask, max_guesses):
            lay = parse(p.strength, p.mask, angle, letter_at, p.flat.valid, p.faint(), glare=p.highlights)
            if lay is not None:
                out.append((p, lay))
    return out


def score_guesses(pairs: list[tuple[Print, Layout]], model: GlyphModel) -> list[Guess]:
    """Classify all glyphs of all guesses in one batch and score the 75 numbers under each."""
    if not pairs:
        return []
    glyphs, aspects, holes, open_loops = [], [], [], []
    for _p, lay in pairs:
        glyphs += _glyphs(lay)
        aspects += lay.aspects
        holes += lay.holes
        open_loops += lay.open_loops
    probs = model.proba(features(glyphs, aspects)) * loop_factors(holes, open_loops)
    out = []
    k = 0
    for p, lay in pairs:
        n = len(lay.digits) + (lay.letter is not None)
        out.append(Guess(p, lay, _layout_scores(lay, probs[k:k + n]), probs[k:k + n]))
        k += n
    return out


def _layout_scores(lay: Layout, probs: np.ndarray) -> np.ndarray:
    """(75,) score of each number under one layout, from its glyphs' class probabilities (letter first)."""
    if lay.letter is not None:
        pl, probs = as_letter(probs[0]), probs[1:]
    else:
        pl = np.full(5, LETTER_UNSEEN)
    pd = [as_digit(q) for q in probs]
    s = np.zeros(75)
    if len(pd) == 1:
        s[_ONE_DIGIT] = pl[_COL[_ONE_DIGIT]] * pd[0][_ONES[_ONE_DIGIT]]
        if lay.unseen_beside:
            s[_ONE_DIGIT] *= hidden_neighbour_factor(lay.unseen_beside)
        if any(lay.foot_unseen):
            s[_LONE_SEVEN] *= CUT_SHORT
    else:
        two = ~_ONE_DIGIT
        s[two] = pl[_COL[two]] * pd[0][_TENS[two]] * pd[1][_ONES[two]]
        for place, unseen in zip((_TENS, _ONES), lay.foot_unseen):
            if unseen:
                s[two & (place == 7)] *= CUT_SHORT
    if lay.truncated:
        s *= TRUNCATED
    elif lay.clipped:
        s *= CLIPPED
    if lay.short_digit:
        s *= CUT_SHORT if lay.short_at_edge else SHORT_DIGIT
    if lay.narrow_at_edge >= 0 and len(pd) == 2:
        # Only a 1 is that much narrower than its neighbour; any other digit there lost a side.
        place = _TENS if lay.narrow_at_edge == 0 else _ONES
        s[~_ONE_DIGIT & (place != 1)] *= SHORT_DIGIT
    return s


@dataclass
class Grown:
    """A guess's glyphs with their faint ink (Print.faint at each level) added
    back (glyphs.grown_glyphs), cut once and classified by either classifier."""
    guess: Guess
    levels: tuple[float, ...]
    features: np.ndarray        # every level's glyphs (letter first), level after level
    loops: np.ndarray           # their loop factors, row for row
    holes: list[list[int]]      # each level's glyphs' loops
    added: list[list[tuple]]    # each level's glyphs' added ink (glyphs.grown_glyphs)

    def under_glare(self, glyph: int, level: int = 0) -> float:
        """Share of the ink added to a glyph (letter first) at levels[level] that lies
        where glare may have washed ink out (Print.glare_halo)."""
        return added_share(self.guess.print_.glare_halo, self.guess.layout, self.added[level][glyph])

    def scores(self, model: GlyphModel) -> list[np.ndarray]:
        """(75,) scores under the guess, one array per level."""
        n = len(self.guess.layout.boxes)
        probs = model.proba(self.features) * self.loops
        return [_layout_scores(self.guess.layout, probs[k * n:(k + 1) * n]) for k in range(len(self.levels))]


def grow(guess: Guess, levels: tuple[float, ...] = (FAINT,)) -> Grown:
    """The guess's glyphs grown at each faint-ink level, in one batch: a reading
    that only holds while lightened ink is left out (a 3 that is an 8 under a
    highlight) loses there, and one the paler strokes make clearer gains
    (reader.best_reading)."""
    p = guess.print_
    cuts = grown_glyphs(p.strength, p.mask, [p.faint(level) for level in levels], guess.layout)
    images = [im for c in cuts for im in c[0]]
    aspects = [a for c in cuts for a in c[1]]
    holes = [h for c in cuts for h in c[2]]
    # Faint ink thickens every stroke and can close a narrow opening (a 6's hook
    # onto its bowl makes a second loop): a class the glyph's own loops fit is
    # not refused for the loop its grown version gained.
    open_loops = guess.layout.open_loops * len(levels)
    loops = np.maximum(loop_factors(holes, open_loops), loop_factors(list(guess.layout.holes) * len(levels), open_loops))
    return Grown(guess, levels, features(images, aspects), loops, [list(c[2]) for c in cuts],
                 [list(c[3]) for c in cuts])


def loops_filled(number: int, grown: Grown) -> int:
    """Loops the number's glyphs need that faint ink at the first level fills: a
    loop of the mask with paler ink inside is a slit between strokes that blur
    closed, not a loop (a blurred 3 with ball ends closed its upper notch and
    read B8 at 0.9974, fresh frame 7700000:622). Not the letter's (Layout.open_loops)."""
    lay = grown.guess.layout
    classes = glyph_classes(number, lay)
    if len(classes) != len(lay.holes):
        return 0
    return sum(max(0, min(was, int(_MIN_HOLES[c])) - now)
               for c, was, now, open_ in zip(classes, lay.holes, grown.holes[0], lay.open_loops) if not open_)


# Share of the rows where an 8's upper-left and lower-left strokes would cross that a
# highlight must reach in each half before a 3 there may be an 8.
HIDDEN_ROWS = 0.8
_EIGHT, _SEVEN = CLASSES.index("8"), CLASSES.index("7")


def _eight_hidden(spots: np.ndarray, box) -> bool:
    """Does a highlight hide where an 8's left strokes would be beside this 3? Each
    of its upper and lower halves (the 3's left part and a little beyond, without
    its top and bottom sixth) must have a highlight in nearly every row: a row
    of plain paper there shows that no stroke crosses it."""
    x, y, w, h = box
    x0, x1 = max(0, x - round(0.2 * w)), x + round(0.45 * w)
    halves = (spots[r0:r1, x0:x1] for r0, r1 in ((y + h // 6, y + h // 2), (y + h // 2, y + h - h // 6)))
    return all(half.size > 0 and half.any(axis=1).mean() >= HIDDEN_ROWS for half in halves)


def scores_with_hidden_strokes(number: int, guess: Guess) -> np.ndarray | None:
    """(75,) scores under the guess with each digit of number that may be another
    digit missing strokes counted as likely that digit too; None when none may be:
    - a 3 whose 8-half a saturated highlight or its glow (Print.glare_halo) hides
      (a G58 under a highlight shows a clean G53, and no faint ink is left to grow back);
    - a 1 joined from pieces stacked in its column (Layout.joined): a 7 whose bar
      glare broke off at the corner is a 1 with a long flag (G57 read G51 at 0.9974,
      the stem pale under a highlight's glow, fresh frame 7700033:64).
    The other digit's number counts only as far as the letter and the colour allow
    it: a hidden 8 makes neither N80 nor, under a clear N, N48."""
    digits, lay = str(number), guess.layout
    if len(lay.digits) != len(digits):
        return None
    probs = guess.probs.copy()
    first = len(lay.boxes) - len(digits)
    spots = None
    hidden = False
    for k, (digit, box) in enumerate(zip(digits, lay.boxes[first:])):
        if digit == "1" and k < len(lay.joined) and lay.joined[k]:
            other = _SEVEN
        elif digit == "3":
            if spots is None:
                spots = upright_mask(guess.print_.glare_halo, lay.angle_deg)
            other = _EIGHT if _eight_hidden(spots, box) else None
        else:
            other = None
        if other is not None:
            probs[first + k, other] = max(probs[first + k, other], probs[first + k, CLASSES.index(digit)])
            hidden = True
    return _layout_scores(lay, probs) if hidden else None


def combine(guesses: list[Guess]) -> tuple[np.ndarray, list[Guess | None]]:
    """Best score of each number over the guesses, and which guess gave it."""
    best = np.zeros(75)
    who: list[Guess | None] = [None] * 75
    for g in guesses:
        better = g.scores > best
        best = np.where(better, g.scores, best)
        for i in np.nonzero(better)[0]:
            who[i] = g
    return best, who


def column_vector(col_probs: dict[str, float]) -> np.ndarray:
    """(75,) probability of each number's column from the colour cue."""
    return np.array([col_probs[LETTERS[c]] for c in _COL])
