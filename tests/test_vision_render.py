"""The synthetic renderer draws what its Scene says."""
import numpy as np
import pytest

from vision.render import STYLES, Scene, random_scene, render, scene_with


def _ball_pixels(frame, scene):
    h, w = frame.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    cx, cy = scene.centre
    return (xx - cx) ** 2 + (yy - cy) ** 2 < (0.9 * scene.radius) ** 2


def test_frame_shape_and_type():
    rng = np.random.default_rng(0)
    frame = render(random_scene(12, rng), rng)
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8


def test_same_scene_gives_same_ball_with_fresh_noise():
    rng = np.random.default_rng(1)
    scene = random_scene(40, rng, noise=4.0)
    a, b = render(scene, rng), render(scene, rng)
    diff = np.abs(a.astype(int) - b.astype(int))
    assert diff.mean() > 0.5          # fresh noise each frame
    assert diff.mean() < 6            # but the same ball and holder


def test_ball_is_where_the_scene_says():
    rng = np.random.default_rng(2)
    scene = Scene(number=50, style="solid", font="DejaVuSans-Bold.ttf", centre=(200, 220), radius=120,
                  lip_frac=-0.3, noise=1.0, background_bgr=(30, 30, 30))
    frame = render(scene, rng).astype(float)
    inside = _ball_pixels(frame, scene)
    # The solid green ball is far greener than the dark background around it.
    green_in = frame[inside][:, 1].mean()
    far = frame[:, 450:][:, :, 1].mean()
    assert green_in > far + 40


def test_empty_holder_has_no_ball():
    rng = np.random.default_rng(3)
    scene = Scene(number=5, style="disc", font="DejaVuSans-Bold.ttf", noise=1.0, lip_frac=-0.3)
    with_ball = render(scene, rng).astype(float)
    empty = render(None, rng, holder=scene).astype(float)
    inside = _ball_pixels(empty, scene)
    assert with_ball[inside].mean() > empty[inside].mean() + 60


@pytest.mark.parametrize("style", STYLES)
def test_ink_visible_falls_as_the_ball_turns(style):
    rng = np.random.default_rng(4)
    base = random_scene(27, rng, style=style, lip_frac=-0.3, turned_deg=0.0,
                        centre=(320, 240), radius=130)
    seen = [scene_with(base, turned_deg=t).ink_visible for t in (0, 30, 60, 85)]
    assert seen[0] == pytest.approx(1.0, abs=0.02)
    assert seen[0] > seen[1] > seen[2] > seen[3]
    # Foreshortening: about cos(turn) of the ink's area is seen.
    assert seen[2] == pytest.approx(0.5, abs=0.12)


def test_lip_hides_ink():
    rng = np.random.default_rng(5)
    base = random_scene(33, rng, turned_deg=40.0, turn_dir_deg=90.0, lip_frac=-0.3,
                        centre=(320, 200), radius=130)
    hidden = scene_with(base, lip_frac=0.35)
    assert hidden.ink_visible < base.ink_visible - 0.2


def test_print_turned_half_way_round_shows_the_other_side():
    rng = np.random.default_rng(6)
    base = random_scene(61, rng, lip_frac=-0.3, centre=(320, 240), radius=130)
    assert scene_with(base, turned_deg=180.0).ink_visible == pytest.approx(1.0, abs=0.02)
    assert scene_with(base, turned_deg=90.0).ink_visible < 0.1


def test_every_font_the_renderer_draws_with_is_installed():
    # `make setup` installs them (fonts-urw-base35, fonts-noto-mono, ...); a missing
    # one would only show up later as a random failure in training or the simulator.
    from vision.render import DEV_FONTS, OTHER_FONTS, TRAIN_FONTS
    from vision.render_decal import font_path

    for name in TRAIN_FONTS + DEV_FONTS + OTHER_FONTS:
        assert font_path(name).endswith(name)


def test_a_second_light_at_the_mirror_place_moves_the_glare_so_the_minimum_loses_it():
    from vision.glare import remove_glare
    from vision.render import mirror_lit
    rng = np.random.default_rng(5)
    scene = scene_with(random_scene(68, rng), glare=1.0, glare_pos=(-0.4, -0.3), light_az_deg=-130.0)
    other = mirror_lit(scene)
    assert other.light_az_deg == -50.0 and other.glare_pos == (0.4, -0.3) and other.ball == scene.ball
    a, b = render(scene, rng), render(other, rng)
    ball = _ball_pixels(a, scene)
    saturated = lambda f: int(((f.min(axis=2) >= 250) & ball).sum())
    assert saturated(a) > 150 and saturated(b) > 150      # each exposure has its glare spot ...
    assert saturated(remove_glare(a, b)) < 0.1 * saturated(a)   # ... in another place


def test_a_scene_reached_without_drawing_the_frames_before_it_is_the_same_frame():
    # Tests and hunts name renderer frames SEED:INDEX; reaching one skips drawing the
    # frames before it (render.skip_frame), which must leave the random stream as drawing them does.
    from vision.bench import renderer_scene_at, renderer_scenes
    from vision.render import OTHER_FONTS

    drawn = list(renderer_scenes(4, 31, OTHER_FONTS))
    scene, frame = renderer_scene_at(31, 3, OTHER_FONTS)
    assert scene == drawn[3][0]
    assert np.array_equal(frame, drawn[3][1])
    assert renderer_scene_at(31, 2, OTHER_FONTS, frame=False) == (drawn[2][0], None)
    assert [s for s, _ in renderer_scenes(4, 31, OTHER_FONTS, frames=False)] == [s for s, _ in drawn]
