"""Glyph probabilities to ball numbers, and the calibration that decides when to name one."""
import numpy as np
import pytest

from vision.classify import CLASSES
from vision.decode import as_digit, as_letter
from vision.reader import MIN_CONFIDENCE, Calibration
from vision.train import fit_calibration


def _glyph(**p):
    v = np.zeros(len(CLASSES))
    for name, value in p.items():
        v[CLASSES.index(name.lstrip("_"))] = value
    return v


def test_an_O_in_a_digit_place_is_a_zero_and_a_zero_in_the_letter_place_an_O():
    # Many fonts draw O and 0 alike: the classifier splits its belief between them.
    round_glyph = _glyph(O=0.7, _0=0.3)
    assert as_digit(round_glyph)[0] == 1.0
    assert as_letter(round_glyph)[CLASSES.index("O") - CLASSES.index("B")] == 1.0


def test_an_I_in_a_digit_place_is_not_made_a_one():
    # A clipped sliver of an 8 looks like an I: it must stay weak evidence for a 1.
    sliver = _glyph(I=0.5, reject=0.4, _1=0.1)
    assert as_digit(sliver)[1] == 0.1
    assert as_letter(_glyph(_1=0.9, I=0.1))[CLASSES.index("I") - CLASSES.index("B")] == 0.1


def test_calibration_trusts_readings_just_above_the_last_wrong_one():
    rng = np.random.default_rng(3)
    # evidence, right, ink visible, posterior
    right = np.column_stack([rng.uniform(0.0, 1.0, 2000), np.ones(2000), np.ones(2000), np.ones(2000)])
    wrong = np.column_stack([rng.uniform(0.0, 0.28, 60), np.zeros(60), np.ones(60), np.ones(60)])
    wrong[0, 0] = 0.28
    xs, ps, accept = fit_calibration(np.vstack([right, wrong]))
    cal = Calibration(xs, ps, accept)
    assert accept == 1.25 * 0.28
    # All of some 1300 readings above 0.28 were right: just above the accept level the
    # calibrated confidence is near 1, not dragged down towards the wrong ones.
    assert cal(accept + 0.01) > 0.99 >= MIN_CONFIDENCE
    assert cal.accepts(accept + 0.01) and not cal.accepts(accept - 0.01)
    assert cal(0.1) < 0.97                  # among the wrong readings it is not
    assert np.all(np.diff(ps) >= 0)         # monotone


def test_the_accept_level_comes_from_the_first_classifiers_evidence():
    # The second classifier lowered every wrong reading's evidence to 0.1; the level
    # still comes from the 0.28 the first classifier gave the worst of them.
    rng = np.random.default_rng(4)
    ev = np.concatenate([rng.uniform(0.0, 1.0, 500), np.full(20, 0.1)])
    right = np.concatenate([np.ones(500), np.zeros(20)])
    first = np.concatenate([ev[:500], rng.uniform(0.0, 0.28, 20)])
    first[-1] = 0.28
    rows = np.column_stack([ev, right, np.ones(520), np.ones(520)])
    assert fit_calibration(rows, first=first)[2] == 1.25 * 0.28
    assert fit_calibration(rows)[2] == 1.25 * 0.1


def test_a_wrong_reading_the_posterior_check_refuses_sets_no_accept_level():
    # O67 read O61 with 0.66 of the posterior is never named, whatever its evidence
    # (0.57 among 16,000 calibration frames, 7 December): the levels come from the
    # wrong readings that could be named, here the one at 0.2 with 0.95 of it.
    from vision.train import CALIB_COLUMNS, SECOND_MARGIN, fitted_calibration
    rng = np.random.default_rng(5)
    rows = np.zeros((503, len(CALIB_COLUMNS)))
    rows[:500, 0] = rng.uniform(0.0, 1.0, 500)
    rows[:500, 1] = 1.0
    rows[500:, 0] = (0.57, 0.2, 0.05)
    rows[:, 2] = 1.0
    rows[:, 3] = 0.99
    rows[500:, 3] = (0.66, 0.95, 0.5)
    rows[:, CALIB_COLUMNS.index("first_evidence")] = rows[:, 0]
    cal = fitted_calibration(rows)
    assert cal.accept == pytest.approx(1.25 * 0.2) and cal.second_accept == pytest.approx(SECOND_MARGIN * 0.2)
    assert not cal.accepts(0.57, posterior=0.66)


def test_a_lone_digit_beside_a_hidden_place_is_weak_only_where_it_may_be_half_of_its_own_column():
    from vision.decode import CLIPPED, TRUNCATED, hidden_neighbour_factor
    left = hidden_neighbour_factor("l")
    # B3 may be B13 with its 1 hidden: too weak to call. B7 cannot be B17 (no such ball).
    assert list(left[:5]) == [TRUNCATED] * 5 and list(left[5:]) == [CLIPPED] * 4
    right = hidden_neighbour_factor("r")
    assert right[0] == TRUNCATED and list(right[1:]) == [CLIPPED] * 8     # B1 may be B10-B15
    assert list(hidden_neighbour_factor("lr")) == list(left)


def test_a_digit_narrow_at_the_edge_weakens_every_number_but_those_with_a_1_there():
    from vision.decode import SHORT_DIGIT, _layout_scores
    from vision.glyphs import Layout
    probs = np.array([_glyph(N=1.0), _glyph(_3=1.0), _glyph(_7=0.6, _1=0.2, _2=0.2)])
    lay = Layout(0.0, np.zeros((20, 20), np.float32), [np.zeros((20, 20), np.float32)] * 2, 20.0, 35.0, False)
    whole = _layout_scores(lay, probs)
    lay.narrow_at_edge = 1
    cut = _layout_scores(lay, probs)
    assert cut[37 - 1] == pytest.approx(SHORT_DIGIT * whole[37 - 1])      # a 7 that narrow lost a side
    assert cut[32 - 1] == pytest.approx(SHORT_DIGIT * whole[32 - 1])
    assert cut[31 - 1] == whole[31 - 1] > 0                               # a 1 is that narrow
    lay.narrow_at_edge = 0
    assert _layout_scores(lay, probs)[37 - 1] == pytest.approx(SHORT_DIGIT * whole[37 - 1])  # the 3 lost a side


def test_a_reading_is_not_named_when_other_numbers_hold_a_tenth_of_the_posterior():
    # Calibration is thin just above its accept level: a 3 read as a 5 once had
    # evidence 0.6 (confidence 0.9996) with only 0.63 of the posterior on it.
    cal = Calibration(np.array([0.0, 0.3, 0.3, 1.0]), np.array([0.5, 0.5, 0.9996, 0.9996]), 0.31)
    assert cal.accepts(0.6, posterior=0.95)
    assert not cal.accepts(0.6, posterior=0.63)
    assert not cal.accepts(0.2, posterior=1.0)


def test_a_reading_not_named_reports_no_more_than_the_unsure_ceiling():
    cal = Calibration(np.array([0.0, 0.2, 0.2, 1.0]), np.array([0.5, 0.5, 0.9996, 0.9996]), 0.31, 0.98)
    assert cal.confidence(0.6) == pytest.approx(0.9996)                  # named
    assert cal.confidence(0.25) == 0.98                                  # under the accept level
    assert cal.confidence(0.6, posterior=0.63) == 0.98                   # others hold too much
    assert cal.confidence(0.1) == 0.5                                    # low stays low
