"""The reader names rendered balls right, and says so when it cannot."""
import numpy as np
import pytest

from vision.reader import BallReader, ImageError, read_image_file
from vision.render import DEV_FONTS, STYLES, random_scene, render, scene_with


@pytest.fixture(scope="module")
def reader():
    return BallReader()


def _frames(style, n, seed, **kw):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        number = int(rng.integers(1, 76))
        scene = random_scene(number, rng, style=style, font=str(rng.choice(DEV_FONTS)),
                             turned_deg=float(rng.uniform(0, 25)), lip_frac=float(rng.uniform(-0.2, 0.0)),
                             glare=0.0, **kw)
        out.append((scene, render(scene, rng)))
    return out


@pytest.mark.parametrize("style", STYLES)
def test_reads_clear_balls_of_each_design_and_never_wrong(reader, style):
    # Fonts the classifier never trained on (render.DEV_FONTS).
    frames = _frames(style, 12, seed=100 + STYLES.index(style))
    got = [(scene.ball, reader.read(frame)) for scene, frame in frames]
    wrong = [(truth, r.ball) for truth, r in got if r.ball is not None and r.ball != truth]
    right = sum(1 for truth, r in got if r.ball == truth)
    assert wrong == []
    # The reader abstains rather than risk a wrong call; on clear frames in
    # fonts it never trained on it still names most balls.
    assert right >= 8, [(t, r.ball, r.reason, round(r.confidence, 3)) for t, r in got]


def _clear(number, style, seed):
    """A ball facing the camera, in a font the classifier trained on, lip below it."""
    rng = np.random.default_rng(seed)
    scene = random_scene(number, rng, style=style, font="NimbusSans-Bold.otf", turned_deg=5.0,
                         lip_frac=-0.2, glare=0.0, blur_sigma=0.0, motion_px=0.0, centre=(300, 230), radius=140)
    return scene, render(scene, rng)


def test_reading_carries_geometry_and_scores(reader):
    scene, frame = _clear(47, "solid", seed=7)
    r = reader.read(frame)
    assert r.ball == scene.ball and r.letter == scene.letter and r.number == scene.number
    x, y, rad = r.ball_circle
    assert abs(x - scene.centre[0]) < 0.05 * scene.radius and abs(rad - scene.radius) < 0.05 * scene.radius
    assert len(r.print_quad) == 4 and r.print_image.ndim == 3
    assert max(r.scores, key=r.scores.get) == scene.number
    assert 0.0 <= r.confidence <= 1.0 and r.ms > 0


def test_empty_holder_is_no_ball(reader):
    rng = np.random.default_rng(3)
    for i in range(4):
        holder = random_scene(1, rng)
        r = reader.read(render(None, rng, holder=holder))
        assert r.ball is None and r.reason


def test_blank_and_black_frames_are_no_ball(reader):
    for value in (0, 128, 255):
        r = reader.read(np.full((480, 640, 3), value, np.uint8))
        assert r.ball is None and r.reason == "no ball found"


def test_print_turned_away_is_not_read(reader):
    rng = np.random.default_rng(11)
    for i in range(6):
        scene = random_scene(int(rng.integers(1, 76)), rng, turned_deg=86.0, lip_frac=0.0)
        assert scene.ink_visible < 0.15
        r = reader.read(render(scene, rng))
        assert r.ball is None, (scene.ball, r.ball, r.confidence)


def test_read_image_file_reads_a_jpeg(tmp_path, reader):
    import cv2
    scene, frame = _clear(23, "disc", seed=21)
    path = tmp_path / "ball.jpg"
    cv2.imwrite(str(path), frame)
    assert read_image_file(path, reader).ball == scene.ball


def test_read_image_file_refuses_a_non_image(tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("this is not a picture")
    with pytest.raises(ImageError, match="not an image"):
        read_image_file(bad)
    with pytest.raises(ImageError, match="no such file"):
        read_image_file(tmp_path / "missing.png")


# Renderer frames (make bench-wrong, SEED:INDEX) where a highlight lightened part
# of one glyph below the ink threshold and the rest read cleanly as another
# digit: named wrong at confidence 0.9996 before faint ink was added back.
# The last two are lighter still: another number wins only with ink at 0.3x
# of the mask's weakest added back (reader.FAINT_CHECKS).
@pytest.mark.parametrize("where, truth, wrong", [("900000:66", "O68", "O63"), ("900005:26", "O69", "O62"),
                                                 ("960049:73", "I28", "I23"), ("900026:57", "O66", "O65")])
def test_glyph_a_highlight_lightened_is_not_read_as_another_digit(reader, where, truth, wrong):
    _assert_not_read_as(reader, where, truth, wrong)


def _assert_not_read_as(reader, where, truth, wrong, fonts="train"):
    from vision.bench_wrong import frame_at
    ball, frame = frame_at(where, fonts)
    assert ball == truth
    r = reader.read(frame)
    assert r.ball != wrong
    assert r.ball in (truth, None)


# Faint ink thickens every stroke: in fonts whose 6 and 9 nearly close (URW
# Bookman) the grown glyph gained a second loop, so only an 8 fitted it and the
# faint-ink check refused these clear balls (renderer frames, seed 1500000 on).
@pytest.mark.parametrize("where, truth", [("1500003:61", "I26"), ("1500008:34", "I16"), ("1500015:3", "I29")])
def test_a_loop_faint_ink_closes_does_not_refuse_a_clear_ball(reader, where, truth):
    from vision.bench_wrong import frame_at
    ball, frame = frame_at(where, "train")
    assert ball == truth
    assert reader.read(frame).ball == truth


# The B of these lone digits broke into its stem and bowls (a thin serif B):
# the pieces left out made the layout "truncated", and a B without its loops
# cost x0.25 (renderer frames, seed 1510000 on).
@pytest.mark.parametrize("where, truth", [("1510014:112", "B6"), ("1510012:27", "B9")])
def test_a_letter_broken_into_pieces_does_not_refuse_a_clear_ball(reader, where, truth):
    from vision.bench_wrong import frame_at
    ball, frame = frame_at(where, "train")
    assert ball == truth
    assert reader.read(frame).ball == truth


# A highlight lightened the whole tens digit (a pale 1 beside the 3 of B13):
# the lone 3 was named B3 at confidence 0.9996 before faint ink beside a lone
# digit counted as a place where a digit may stand.
@pytest.mark.parametrize("where, truth, wrong", [("900000:34", "B13", "B3"), ("900034:58", "B12", "B2")])
def test_a_lone_digit_beside_a_lightened_digit_is_not_named(reader, where, truth, wrong):
    _assert_not_read_as(reader, where, truth, wrong)


# A digit the lip cut short (a 9 without its tail is a 0; a 1 with only its
# flag shows, print upside down) was named at 0.9996 before a digit much shorter
# than its neighbour weakened the reading (decode.SHORT_DIGIT).
@pytest.mark.parametrize("where, truth, wrong", [("960043:80", "G59", "G50"), ("990040:56", "I21", "I17")])
def test_a_digit_cut_short_is_not_read_as_another(reader, where, truth, wrong):
    _assert_not_read_as(reader, where, truth, wrong)


# A fresh frame named G52 at 0.9996: the lip hid the lower half of the 3 of G53, and
# both classifiers read its top as a 2 (0.98). A digit cut short where the frame
# hides the rest weighs x0.25, not x0.5 (decode.CUT_SHORT).
def test_a_digit_the_lip_cut_short_is_weaker_still(reader):
    _assert_not_read_as(reader, "3900039:15", "G53", "G52")


# Fresh frames (unseen fonts) named wrong at 0.9996 by what the rim left of a digit:
# the 4 of N34 squeezed to a fragment 0.70 of the 3's height, classified as a 1 (a
# tenth of a pixel over the short-digit limit; touching the rim, it counts as cut
# short), and the 2 of N32 cut to its hook and stroke, 0.67 of the 3's width, read
# as a 7 (only a 1 is that narrow: glyphs.NARROW_AT_EDGE).
@pytest.mark.parametrize("where, truth, wrong", [("2100001:56", "N34", "N31"), ("2300023:65", "N32", "N37")])
def test_a_fragment_at_the_rim_is_not_read_as_a_digit(reader, where, truth, wrong):
    _assert_not_read_as(reader, where, truth, wrong, fonts="unseen")


# A fresh frame (training fonts) named B1 at 0.9996: the 2 of B12 at the rim broke
# into its hook and its base, which reached past the stray-ink window of a lone
# digit; the window now takes in the digit's neighbour places (glyphs.LONE_REACH).
def test_a_digit_broken_up_beside_a_lone_one_is_not_left_out(reader):
    _assert_not_read_as(reader, "2500030:46", "B12", "B1")


# Fresh frames the first classifier named wrong at 0.9996, with evidence 0.67 and
# 0.34: G52 as G53 (3800042:42) and N41 as N43 (2700009:6, a blurred 1 at the rim),
# unseen fonts. The second classifier, trained apart, gives the same layout's number
# 0.11 and 0.13, under its level: misreadings it does not share. In a font family
# never trained on (4800063:118, 7 December), the lip hides the right of the 3 of
# I23: first 0.87 for I25, seconded 0.331, just under the level (0.334).
@pytest.mark.parametrize("where, fonts, truth, wrong", [("3800042:42", "unseen", "G52", "G53"),
                                                        ("2700009:6", "unseen", "N41", "N43"),
                                                        ("4800063:118", "other", "I23", "I25")])
def test_a_reading_the_second_classifier_does_not_back_is_not_named(reader, where, fonts, truth, wrong):
    from vision.bench_wrong import frame_at
    from vision.reader import best_reading
    _ball, frame = frame_at(where, fonts)
    first = best_reading(*reader.raw(frame)[1:], reader.model)
    assert first[3] + 1 == int(wrong[1:]) and first[4] >= reader.calibration.accept     # the first alone names it
    _assert_not_read_as(reader, where, truth, wrong, fonts=fonts)


# A fresh frame named I20 at 0.9979: I29 turned 74 deg from the camera (the print centre's
# z 0.27), its 9 squeezed to a loop without a tail. Past 72.5 deg (reader.EDGE_ON_FAR) the
# evidence is halved once more.
def test_a_print_turned_past_72_degrees_is_not_named_on_what_the_squeeze_left(reader):
    _assert_not_read_as(reader, "6300006:151", "I29", "I20")


# Fresh frames named I21 (4400041:74, at 0.9996) and nearly (3900029:2): I18 printed
# upside down, turned 55-57 deg, the letter hidden, the squeezed 8 read as a 2 by both
# classifiers. Prints turned past 54 deg (reader.EDGE_ON; 58 before) count as edge-on.
@pytest.mark.parametrize("where, fonts", [("4400041:74", "unseen"), ("3900029:2", "train")])
def test_a_print_squeezed_near_the_rim_is_not_named_on_its_clean_look(reader, where, fonts):
    _assert_not_read_as(reader, where, "I18", "I21", fonts=fonts)


# A highlight washed out the top of the 3 of I23 (a font family never trained on):
# the hook left read as a 5, named I25 at 0.9996 before a digit shorter than its
# row could grow its faint ink back above and below it (glyphs.grown_glyphs).
def test_a_digit_whose_top_a_highlight_lightened_is_not_read_as_another(reader):
    _assert_not_read_as(reader, "1200033:54", "I23", "I25", fonts="other")


# The hook of the 6 of B6 broke off under a highlight and motion blur, and lay alone
# between the letter and the number; the bowl left read as a 9: named B9 at 0.9996
# before ink in that gap made the layout truncated (glyphs._ink_in_gap).
def test_a_piece_a_highlight_broke_off_into_the_gap_is_not_ignored(reader):
    _assert_not_read_as(reader, "900045:100", "B6", "B9")


def test_a_ball_not_named_never_shows_the_confidence_of_a_named_one(reader):
    # 960043:80 (G59, the 9 cut short) is not named, yet its evidence sits where
    # the calibration map is flat at 0.9996; a console showed that figure, and
    # five such frames fused to more than the commit level.
    from vision.bench_wrong import frame_at
    from vision.fusion import fuse
    _ball, frame = frame_at("960043:80", "train")
    r = reader.read(frame)
    assert r.ball is None and r.reason == "unsure"
    # (The ceiling is what calibration measured: 0.984 before 6 December, night, 0.993 with
    # the second classifier's level, which refuses readings that were nearly all right.)
    assert r.confidence <= reader.calibration.unsure_ceiling < 0.995
    assert fuse([r] * 5).confidence < 0.999


def test_a_ball_named_just_over_the_accept_levels_is_not_called_whatever_the_map(reader):
    # N41 at 6600000:130 is named, 1.115x over the accept levels. The map puts it in one
    # flat block with readings under the levels: 0.99757 now, 0.9979 after the midday
    # recalibration of 7 December, when five such frames fused to a call. Lifted to that,
    # the ball still goes to a person.
    from vision.bench_wrong import frame_at
    from vision.fusion import fuse
    from vision.reader import Calibration
    cal = reader.calibration
    lifted = Calibration(cal.xs, np.where(cal.ps >= 0.995, np.maximum(cal.ps, 0.9979), cal.ps),
                         cal.accept, cal.unsure_ceiling, cal.second_accept)
    _ball, frame = frame_at("6600000:130", "train")
    r = BallReader(calibration=lifted).read(frame)
    assert r.ball == "N41" and 1 <= r.clearance < 1.15
    fused = fuse([r] * 5)
    assert fused.confidence >= 0.999 and fused.decision == "confirm"


# An 8 half under a saturated highlight is a clean 3 or 6 in one exposure (named
# O63 and G46 at 0.9996 with one light by the weights before 4 December's retrain); a second exposure under a light at the
# mirror place, taken through vision.glare's per-pixel minimum, shows the 8.
@pytest.mark.parametrize("where, truth", [("960015:119", "O68"), ("990013:101", "G48")])
def test_two_exposures_under_mirrored_lights_read_the_ball_glare_hid(reader, where, truth):
    from vision.bench_wrong import frame_at
    ball, frame = frame_at(where, "train", two_lights=True)
    assert ball == truth
    assert reader.read(frame).ball == truth


@pytest.mark.parametrize("where, fonts, truth, wrong", [
    ("1240047:41", "unseen", "G58", "G53"),     # dark print: the 8's left half under the highlight
    ("1400032:61", "unseen", "I28", "I23"),     # white print on a red disc: the highlight swallows it
])
def test_an_eight_half_under_a_highlight_is_not_called_a_three(reader, where, fonts, truth, wrong):
    # Fresh renderer frames (make bench-wrong) the reader named wrong at 0.9996: what is
    # left of the 8 is a clean 3, and no faint ink is left to grow it back.
    from vision.bench_wrong import frame_at
    ball, frame = frame_at(where, fonts)
    assert ball == truth
    r = reader.read(frame)
    assert r.ball is None and r.reason == "unsure"
    assert r.scores[int(truth[1:])] > 0.2          # the 8 shares the posterior with the 3


def test_an_eight_whose_lower_loop_a_highlight_took_is_not_called_a_three(reader):
    # Fresh frame (training fonts) named I23 at 0.9999: on a red disc the highlight took
    # the 8's lower loop, not its left strokes, so the hidden-eight rule did not apply;
    # the 3 left is short beside the 2 and touches the spot (glyphs.parse, glare).
    _assert_not_read_as(reader, "4900003:98", "I28", "I23")


def test_an_eight_half_under_a_highlight_s_glow_is_not_called_a_three(reader):
    # Fresh frame 5200000:2354 (training fonts), named B3 at 0.9999: on a blue disc the
    # saturated spot covered only the middle of the 8's left half, and its glow washed
    # out the rest (Print.glare_halo). Rendered from the generator's state before that
    # frame, as rendering the 2354 frames before it takes minutes.
    from vision.render import random_scene, render
    rng = np.random.default_rng()
    rng.bit_generator.state = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 256385108, "state": {
        "state": 282043306484490146168891398931219125829, "inc": 202215957271228697387430234048597551157}}
    scene = random_scene(int(rng.integers(1, 76)), rng)
    assert scene.ball == "B8"
    r = reader.read(render(scene, rng))
    assert r.ball is None and r.reason == "unsure"
    assert r.scores[8] > 0.2                        # the 8 shares the posterior with the 3


def test_an_eight_half_under_a_broad_glare_on_white_paper_is_not_called_a_three(reader):
    # Fresh frame 5700041:97 (unseen fonts), named B3 at 0.9999: on a white disc the
    # glare that took the 8's upper left is one saturated region reaching the patch's
    # edge, so no highlight; its core counts (Print._white_glare_core).
    _assert_not_read_as(reader, "5700041:97", "B8", "B3", fonts="unseen")


def test_a_three_beside_bright_white_paper_is_still_read(reader):
    # Fresh frame 5800010:103 (training fonts): the paper left of this clear 3 is
    # saturated up to its box. Only the saturated region's core may hide a stroke,
    # or every 3 on brightly lit white paper would be a possible 8.
    from vision.bench_wrong import frame_at
    ball, frame = frame_at("5800010:103", "train")
    assert ball == "B3"
    assert reader.read(frame).ball == "B3"


def test_a_three_whose_top_a_broad_glare_took_is_not_called_a_five(reader):
    # Fresh frame (training fonts) named N35 at 0.9999: a glare over a tenth of the
    # flattened print, more than highlights were allowed before, washed out the top of
    # the second 3 of N33; what was left is short beside the first 3 and touches it.
    _assert_not_read_as(reader, "5300009:12", "N33", "N35")


def test_on_white_paper_the_core_of_a_saturated_region_may_hide_ink():
    from vision.print_find import WHITE_GLARE_CORE_PX
    from vision.sphere import PATCH
    white = _print_on((226, 228, 230))
    white.flat.image[:40, :50] = 255                # a broad glare reaching the patch's edge
    core = white.glare_halo
    assert core[:40 - WHITE_GLARE_CORE_PX, :50 - WHITE_GLARE_CORE_PX].all()
    assert not core[:, 50 - WHITE_GLARE_CORE_PX:].any() and not core[40 - WHITE_GLARE_CORE_PX:].any()
    orange = _print_on((30, 140, 240))              # the white ball around a coloured disc
    orange.flat.image[:, PATCH - 20:] = 255
    assert not orange.glare_halo.any()
    whiter = _print_on((236, 236, 236))             # paper this bright hides no glare
    whiter.flat.image[:40, :50] = 255
    assert not whiter.glare_halo.any()


# A lone digit whose foot the holder's lip hides (Layout.foot_unseen): the flag and
# stem of a 1, or the hook and stroke of a 2, read as a 7 by both classifiers
# (fresh frames, named B7 at 0.9999 before).
@pytest.mark.parametrize("where, truth, fonts", [("5900015:8", "B1", "train"), ("2700017:6", "B2", "unseen")])
def test_a_lone_digit_whose_foot_the_lip_hides_is_not_called_a_seven(reader, where, truth, fonts):
    _assert_not_read_as(reader, where, truth, "B7", fonts=fonts)


# The same in a two-digit number: a 2 near the rim with its base squeezed out of
# sight (I22 named I27 at 0.9975, fresh frame 6900012:58, fonts never trained on).
def test_a_digit_of_two_whose_foot_the_rim_hides_is_not_called_a_seven(reader):
    _assert_not_read_as(reader, "6900012:58", "I22", "I27", fonts="unseen")


def test_a_lone_digit_s_foot_is_unseen_only_where_its_lower_third_meets_the_unseen_part():
    from vision.glyphs import _foot_unseen
    visible = np.ones((102, 102), bool)
    box = (40, 30, 20, 36)                          # x, y, w, h; tall 36
    assert not _foot_unseen(visible, box, 36)
    visible[62:, :] = False                         # the lip across the digit's lower fifth
    assert _foot_unseen(visible, box, 36)
    visible[:] = True
    visible[:40, :] = False                         # the rim across its top: the foot is seen
    assert not _foot_unseen(visible, box, 36)


def test_a_digit_of_two_has_its_foot_unseen_only_where_the_band_under_it_is_unseen():
    from vision.glyphs import _foot_unseen, _under_unseen
    visible = np.ones((102, 102), bool)
    box = (40, 30, 20, 36)                          # x, y, w, h; tall 36
    assert not _under_unseen(visible, box, 36)
    visible[50:, 62:] = False                       # the rim beside the digit's lower right
    assert _foot_unseen(visible, box, 36) and not _under_unseen(visible, box, 36)
    visible[66:, 45:55] = False                     # and under its foot
    assert _under_unseen(visible, box, 36)


def test_a_three_is_an_eight_only_where_a_highlight_hides_both_left_strokes():
    from vision.decode import _eight_hidden
    spots = np.zeros((102, 102), bool)
    box = (40, 30, 20, 36)                          # the 3's box: x, y, w, h
    spots[30:66, 34:46] = True                      # a highlight over its whole left part
    assert _eight_hidden(spots, box)
    spots[50:58, :] = False                         # plain paper across its lower half's rows
    assert not _eight_hidden(spots, box)


def _print_on(paper_bgr):
    """A flattened print of plain paper with no ink, whose image a test may paint on."""
    from vision.print_find import Print
    from vision.sphere import PATCH, Flat
    img = np.empty((PATCH, PATCH, 3), np.uint8)
    img[:] = paper_bgr
    flat = Flat(img, np.ones((PATCH, PATCH), bool), None, None, None, None, None)
    no_ink = np.zeros((PATCH, PATCH), bool)
    return Print("dark", flat, no_ink.astype(np.float32), no_ink, no_ink.astype(np.float32))


def test_highlights_are_saturated_spots_on_paper_that_is_not_white():
    from vision.sphere import PATCH
    orange = _print_on((30, 140, 240))
    orange.flat.image[40:55, 30:42] = 255           # a highlight on the disc
    orange.flat.image[:, PATCH - 6:] = 255          # white ball at the patch's edge: not a highlight
    spots = orange.highlights()
    assert spots[40:55, 30:42].all() and spots.sum() == 15 * 12
    white = _print_on((236, 236, 236))              # paper this bright hides no highlight
    white.flat.image[40:55, 30:42] = 255
    assert not white.highlights().any()
    broad = _print_on((30, 140, 240))               # a broad glare, a tenth of the patch, still counts
    broad.flat.image[20:52, 20:53] = 255
    assert broad.highlights().sum() == 32 * 33
    lit = _print_on((40, 40, 200))                  # white print on a red disc: its ink is no highlight
    lit.flat.image[60:80, 60:63] = 255
    lit.mask[60:80, 60:63] = True
    assert not lit.highlights().any()


def test_a_highlight_s_halo_is_the_spot_grown_by_its_glow():
    from vision.print_find import HALO_PX
    assert not _print_on((200, 90, 20)).glare_halo.any()
    spotted = _print_on((200, 90, 20))              # a blue disc with a 2x2 spot
    spotted.flat.image[50:52, 50:52] = 255
    halo = spotted.glare_halo
    assert halo[50, 51 + HALO_PX] and not halo[50, 52 + HALO_PX] and halo[51 + HALO_PX, 51]


def _calibration_reading(reader, where, truth):
    from vision.train import calibration_frame
    number, frame = calibration_frame(where)
    assert number == int(truth[1:])
    return reader.read(frame)


# Faint ink restores a reading (reader._restored): a stroke paler than the mask's
# threshold (a thin serif under soft light) left N31 unsure at evidence 0.06; with
# its faint ink both classifiers name N31, each glyph keeping its loops.
def test_a_reading_its_faint_ink_restores_is_named(reader):
    from vision.bench_wrong import frame_at
    assert _calibration_reading(reader, "508035:2", "N31").ball == "N31"
    ball, frame = frame_at("6300000:49", "train")        # a fresh frame, unsure before
    assert ball == "B1" and reader.read(frame).ball == "B1"


# A loop a highlight broke, closed again by the faint ink under its glow, counts where the
# number read needs it (decode.loop_needed, reader.GLARED_LOOP): an 8 with one loop (G48),
# an 8 with none (B8), a 6 with none (O66). Fresh frames, all three unsure before.
@pytest.mark.parametrize("where, truth", [("6600014:151", "G48"), ("6600029:184", "B8"), ("6600002:146", "O66")])
def test_a_loop_glare_broke_is_restored_by_its_faint_ink(reader, where, truth):
    from vision.bench_wrong import frame_at
    ball, frame = frame_at(where, "train")
    assert ball == truth and reader.read(frame).ball == truth


# The lip over the top of an upside-down I23, the letter under it too: both digits lost
# their tops alike, neither short beside the other, and the 3 read as a 5 at 0.9999 (fresh
# frame 6800008:62, a font family never trained on). Both tops touching the unseen part
# with the letter unseen count as cut short at the edge.
def test_two_digits_the_lip_took_the_tops_of_are_not_named_another_number(reader):
    from vision.bench_wrong import frame_at
    ball, frame = frame_at("6800008:62", "other")
    assert ball == "I23" and reader.read(frame).ball in ("I23", None)


# ... but not where faint ink closes a loop away from glare, or one the number does not
# have: a blur's halo closes a 3 into an 8 (B3 at 507926:74) and glare's pale ink gives a
# 6 a second loop beside a 7 read as a 5 (O67 at 508021:46); both were named wrong at
# 0.9999 without the loop check.
@pytest.mark.parametrize("where, truth, wrong", [("507926:74", "B3", "B8"), ("508021:46", "O67", "O65")])
def test_faint_ink_that_closes_a_loop_restores_no_reading(reader, where, truth, wrong):
    ball = _calibration_reading(reader, where, truth).ball
    assert ball != wrong and ball in (truth, None)


# A blurred 3 with ball ends: the blur closed its upper notch into a loop, and both
# classifiers took it for an 8 lacking one loop (0.43 and 0.40 after the x0.5 for it):
# named B8 at 0.9974 (fresh frame 7700000:622, training fonts). Faint ink fills that
# loop, so it was a slit the blur closed, and the 8 is charged for it too
# (decode.loops_filled).
def test_a_loop_faint_ink_fills_is_no_loop(reader):
    from vision.decode import grow, loops_filled
    from vision.reader import FAINT_CHECKS, best_reading
    from vision.bench_wrong import frame_at
    ball, frame = frame_at("7700000:622", "train")
    assert ball == "B3"
    _circle, guesses, cols = reader.raw(frame)
    eight = best_reading(guesses, cols).who[8 - 1]
    assert eight.layout.holes[-1] == 1
    assert loops_filled(8, grow(eight, tuple(level for level, _share in FAINT_CHECKS))) == 1
    assert reader.read(frame).ball in ("B3", None)


# A 7 whose bar glare broke off at the corner: the bar and the stem, pale under a
# highlight's glow, stack in one column and are joined (glyphs._merge_columns), and
# both classifiers read a 1 with a long flag: named G51 at 0.9974 (fresh frame
# 7700033:64, training fonts). A 1 joined from pieces may be a 7, so G51 and G57
# share the posterior (decode.scores_with_hidden_strokes); a 1 in one piece does not.
def test_a_one_joined_from_pieces_may_be_a_seven(reader):
    import dataclasses
    from vision.decode import scores_with_hidden_strokes
    from vision.reader import best_reading
    from vision.bench_wrong import frame_at
    ball, frame = frame_at("7700033:64", "train")
    assert ball == "G57"
    _circle, guesses, cols = reader.raw(frame)
    one = best_reading(guesses, cols).who[51 - 1]
    assert one.layout.joined == (False, True)
    shared = scores_with_hidden_strokes(51, one)
    assert shared[57 - 1] == pytest.approx(one.scores[51 - 1]) and shared[57 - 1] > 100 * one.scores[57 - 1]
    whole = dataclasses.replace(one, layout=dataclasses.replace(one.layout, joined=(False, False)))
    assert scores_with_hidden_strokes(51, whole) is None
    assert reader.read(frame).ball in ("G57", None)


# A brown lip as bright as the blue disc above it, found by its colour only (vision.locate):
# the 3 under it lost its lower half, and what was left read as a 2 (calibration frame
# 507925:32). Only the B's open loops held B2 down (first evidence 0.26); with the letter
# no longer charged for them B2 rose to 0.52, and the accept level, 1.25 times the worst
# wrong calibration reading, to 0.65. With the lip found, no 2 is read there.
def test_a_three_under_a_lip_only_its_colour_shows_is_not_read_a_two(reader):
    from vision.locate import find_ball
    from vision.reader import best_reading
    from vision.train import calibration_frame
    number, frame = calibration_frame("507925:32")
    assert number == 3 and find_ball(frame).lip is not None
    ball, guesses, cols = reader.raw(frame)
    best = best_reading(guesses, cols, reader.model, reader.second)
    assert best.i + 1 != 2 or best.first < reader.calibration.accept
    assert reader.read(frame).ball in ("B3", None)
