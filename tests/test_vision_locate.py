"""Finding the ball and the holder's lip on rendered frames (the truth is known)."""
import cv2
import numpy as np
import pytest

from vision.locate import above_lip, find_ball
from vision.render import _lip_y, random_scene, render, scene_with


def _scenes(seed, n, **kw):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        scene = random_scene(int(rng.integers(1, 76)), rng, **kw)
        yield scene, render(scene, rng)


def test_a_shadowed_bottom_is_not_taken_for_the_lip():
    # Dark balls on dark backgrounds lose their lower rim in the shading; the print
    # there must not be cut off as if a lip hid it (that cost a tenth of the readable frames).
    seen = 0
    for scene, frame in _scenes(3, 40, lip_frac=-0.2, colour="red", style="solid"):
        if scene.centre[1] + scene.radius > frame.shape[0] - 4:
            continue            # the frame's own edge cuts the ball: that hides it like a lip
        seen += 1
        ball = find_ball(frame)
        assert ball is not None
        assert ball.lip is None, scene
    assert seen >= 20


@pytest.mark.parametrize("lip_frac", [0.15, 0.3])
def test_the_lip_is_found_where_it_hides_the_ball(lip_frac):
    found = 0
    for scene, frame in _scenes(4, 12, lip_frac=lip_frac, lip_curve=0.0):
        ball = find_ball(frame)
        assert ball is not None
        if ball.lip is None:
            continue    # a lip about as bright as the ball's shaded bottom, or blurred, can be missed
        found += 1
        true_row = float(_lip_y(scene, np.array([scene.centre[0]]))[0])
        # Never below the true edge by more than a pixel or two (the lip would read
        # as ink), and not far above it (print would be thrown away).
        assert -0.06 * scene.radius < ball.lip_y - true_row < 2.0, (scene, ball)
    assert found >= 10


def test_a_slanted_lip_is_a_slanted_line():
    rng = np.random.default_rng(9)
    scene = scene_with(random_scene(12, rng), lip_frac=-0.2, style="disc", centre=(320, 230), radius=140)
    frame = render(scene, rng)
    # A holder edge tilted by 0.25 rows per column, across the lower part of the ball.
    slope, row_at_centre = 0.25, 230 + 0.55 * 140
    xs = np.array([0, 639])
    ys = row_at_centre + slope * (xs - 320)
    poly = np.array([[0, ys[0]], [639, ys[1]], [639, 479], [0, 479]], np.int32)
    cv2.fillPoly(frame, [poly], (70, 60, 55))
    ball = find_ball(frame)
    assert ball is not None and ball.lip is not None
    assert ball.lip_slope == pytest.approx(slope, abs=0.05)
    assert ball.lip_y == pytest.approx(row_at_centre, abs=6)
    # Points just above the edge are seen, points on the holder are not.
    probe_x = np.array([220.0, 420.0])
    edge = row_at_centre + slope * (probe_x - 320)
    assert above_lip(ball.lip, probe_x, edge - 8).all()
    assert not above_lip(ball.lip, probe_x, edge + 3).any()


def test_a_straight_edge_with_ball_under_it_is_no_lip():
    # A disc's edge or a number's baseline can line up like a lip; under a lip the
    # frame shows the holder, as it does beside the ball, not more ball.
    rng = np.random.default_rng(9)
    scene = scene_with(random_scene(12, rng), lip_frac=-0.2, style="solid", colour="white",
                       centre=(320, 230), radius=140)
    frame = render(scene, rng)
    yy, xx = np.mgrid[0:480, 0:640]
    edge = 230 + 0.55 * 140 + 0.1 * (xx - 320)
    # A dark red disc below the edge, its rim lost in the ball's shadow.
    disc = ((xx - 320) ** 2 + (yy - 230) ** 2 < 141 ** 2) & (yy > edge)
    frame[disc] = (20, 20, 50)
    ball = find_ball(frame)
    assert ball is not None and ball.lip is None, ball
    # A holder of that colour hiding the ball below the same edge is a lip.
    frame[yy > edge] = (20, 20, 50)
    ball = find_ball(frame)
    assert ball is not None and ball.lip is not None
    assert ball.lip_y == pytest.approx(230 + 0.55 * 140, abs=6)


def test_a_lip_only_its_colour_shows_is_found():
    # In dim light a brown lip under a blue disc is as bright as the disc: the
    # edge is a change of colour only (calibration frame 507925:32, B3 read B2
    # with the 3's lower half hidden). Here a brown holder hides the blue ball
    # below the edge, as bright (its brightest channel) as the ball just above it.
    rng = np.random.default_rng(9)
    scene = scene_with(random_scene(12, rng), lip_frac=-0.2, style="solid", colour="blue",
                       centre=(320, 230), radius=140)
    frame = render(scene, rng)
    row = 230 + int(0.55 * 140)
    v = float(np.median(frame[row - 1, 220:420].max(axis=1)))
    frame[row:] = (0.45 * v, 0.6 * v, v)
    assert find_ball(frame, colour_lip=False).lip is None
    ball = find_ball(frame)
    assert ball is not None and ball.lip is not None
    assert ball.lip_y == pytest.approx(row, abs=6) and abs(ball.lip_slope) < 0.05
