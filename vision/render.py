"""Synthetic camera frames of a bingo ball resting in the holder.

A Scene fixes everything about one ball in the holder; render() turns it into
a BGR frame with fresh sensor noise and JPEG compression each call, so the
simulator can take many frames of one ball. The expensive part (the shaded,
blurred ball over the holder) is computed once per Scene and cached on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import cv2
import numpy as np

from .balls import COLUMN_COLOURS, letter_for
from .render_decal import ANGLE_PER_PX, COLOUR_BGR, TEX, decal_texture

STYLES = ("disc", "ring", "solid")

# Fonts a hall ball set is likely printed in; the dev set's two fonts are left
# out on purpose so that the dev set checks fonts the reader never trained on.
TRAIN_FONTS = (
    "DejaVuSans.ttf", "DejaVuSansCondensed-Bold.ttf", "DejaVuSansCondensed.ttf",
    "DejaVuSansMono-Bold.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif.ttf",
    "DejaVuSerifCondensed-Bold.ttf",
    "LiberationSans-Regular.ttf", "LiberationSansNarrow-Bold.ttf", "LiberationSerif-Bold.ttf",
    "LiberationSerif-Regular.ttf", "LiberationMono-Bold.ttf",
    "NotoSansMono-Bold.ttf", "NotoSansMono-Regular.ttf",
    "NimbusSans-Bold.otf", "NimbusSans-Regular.otf", "NimbusSansNarrow-Bold.otf",
    "NimbusRoman-Bold.otf", "NimbusMonoPS-Bold.otf", "URWGothic-Demi.otf", "URWGothic-Book.otf",
    "URWBookman-Demi.otf", "C059-Bold.otf", "P052-Bold.otf",
    "DejaVuSans-BoldOblique.ttf", "LiberationSans-BoldItalic.ttf",
)
DEV_FONTS = ("DejaVuSans-Bold.ttf", "LiberationSans-Bold.ttf")
# A third family, neither trained on nor in the dev set: a check of fonts
# the reader has never met (vision.bench_wrong --fonts other).
OTHER_FONTS = ("FreeSansBold.ttf", "FreeSerifBold.ttf", "FreeSans.ttf")


@dataclass
class Scene:
    """Everything fixed about one ball resting in the holder."""

    number: int
    style: str                       # "disc" | "ring" | "solid"
    font: str                        # font file name, e.g. "DejaVuSans-Bold.ttf"
    rotation_deg: float = 0.0        # print rotation in the image plane
    turned_deg: float = 0.0          # print turned away from the camera (0 = facing it)
    turn_dir_deg: float = 90.0       # image direction the print moves to when turned (90 = down)
    centre: tuple[int, int] = (320, 240)
    radius: int = 140
    colour: str | None = None        # column colour name; None = COLUMN_COLOURS of the letter
    light_ink: bool = False          # disc style: white print on a dark disc
    disc_deg: float = 44.0           # angular radius of the disc / ring
    print_deg: float = 46.0          # angular height of the print (letter + number)
    underline: bool | None = None    # None = the usual rule (6, 9, 66, 69)
    light_az_deg: float = -120.0     # light direction in the image plane (-90 = from above)
    light_elev_deg: float = 55.0     # light elevation above the image plane
    ambient: float = 0.35
    specular: float = 0.5            # strength of the light's highlight
    shininess: float = 40.0
    glare: float = 0.0               # extra broad, saturating glare spot (0 = none)
    glare_pos: tuple[float, float] = (-0.3, -0.35)  # glare centre on the ball, in radii
    background_bgr: tuple[int, int, int] = (60, 45, 40)
    lip_frac: float = 0.1            # share of the ball's diameter hidden by the holder lip (<0: lip below ball)
    lip_curve: float = 0.1           # bend of the lip edge, in radii
    blur_sigma: float = 0.0          # defocus, pixels
    motion_px: float = 0.0           # motion blur length, pixels
    motion_deg: float = 0.0
    noise: float = 3.0               # sensor noise sigma, grey levels
    jpeg_quality: int = 85
    gain: float = 1.0                # exposure
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def letter(self) -> str:
        return letter_for(self.number)

    @property
    def ball(self) -> str:
        return f"{self.letter}{self.number}"

    @property
    def ink_visible(self) -> float:
        """Share of the print's ink the frame shows, against the same ball facing the camera."""
        if "ink_visible" not in self._cache:
            self._cache["ink_visible"] = _ink_visible(self)
        return self._cache["ink_visible"]

    def rotation_matrix(self) -> np.ndarray:
        """Body -> camera rotation. Camera axes: x right, y down, z toward the camera."""
        rz = math.radians(self.rotation_deg)
        c, s = math.cos(rz), math.sin(rz)
        r_plane = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], np.float64)
        t = math.radians(self.turned_deg)
        d = math.radians(self.turn_dir_deg)
        # Rotating about (-dy, dx, 0) by +t moves the body's +z toward image direction d.
        axis = np.array([-math.sin(d), math.cos(d), 0.0]) * t
        r_turn, _ = cv2.Rodrigues(axis)
        return r_turn @ r_plane


def random_scene(number: int, rng: np.random.Generator, **overrides) -> Scene:
    """A plausible random ball in the holder; any Scene field can be fixed by keyword."""
    letter = letter_for(number)
    style = str(rng.choice(STYLES))
    colour = COLUMN_COLOURS[letter]
    if letter == "O" and rng.random() < 0.4:
        colour = "yellow"
    radius = int(rng.integers(95, 175))
    cx = int(rng.integers(radius + 10, 640 - radius - 10))
    cy = int(rng.integers(radius + 5, max(radius + 6, 480 - int(radius * 0.7))))
    bg = rng.uniform(20, 85)
    tint = rng.uniform(-1, 1, 3) * np.array([20, 8, 8])
    kw = dict(
        number=number, style=style, colour=colour,
        font=str(rng.choice(TRAIN_FONTS)),
        rotation_deg=float(rng.uniform(-180, 180)),
        turned_deg=float(rng.uniform(0, 90)),
        turn_dir_deg=float(rng.uniform(-180, 180)),
        centre=(cx, cy), radius=radius,
        light_ink=bool(style == "disc" and colour in ("blue", "red", "green") and rng.random() < 0.35),
        disc_deg=float(rng.uniform(38, 50)),
        print_deg=float(rng.uniform(38, 52)),
        light_az_deg=float(rng.uniform(-170, -10)),
        light_elev_deg=float(rng.uniform(35, 80)),
        ambient=float(rng.uniform(0.3, 0.6)),
        specular=float(rng.uniform(0.1, 0.8)),
        shininess=float(rng.uniform(10, 80)),
        glare=float(rng.uniform(0.3, 1.2)) if rng.random() < 0.3 else 0.0,
        glare_pos=(float(rng.uniform(-0.6, 0.6)), float(rng.uniform(-0.6, 0.6))),
        background_bgr=tuple(int(v) for v in np.clip(bg + tint, 10, 140)),
        lip_frac=float(rng.uniform(-0.2, 0.35)),
        lip_curve=float(rng.uniform(-0.4, 0.4)),
        blur_sigma=float(rng.uniform(0, 2.0)) if rng.random() < 0.5 else 0.0,
        motion_px=float(rng.uniform(2, 8)) if rng.random() < 0.25 else 0.0,
        motion_deg=float(rng.uniform(0, 180)),
        noise=float(rng.uniform(1, 7)),
        jpeg_quality=int(rng.integers(55, 96)),
        gain=float(rng.uniform(0.75, 1.2)),
    )
    kw.update(overrides)
    return Scene(**kw)


# The empty holder when no scene says how it is lit: one object, so its clean
# frame is drawn once (the simulated camera shows it every second between balls).
_DEFAULT_HOLDER = Scene(number=1, style="disc", font="")


def render(scene: Scene | None, rng: np.random.Generator, size=(640, 480), *,
           holder: Scene | None = None) -> np.ndarray:
    """One camera frame (BGR uint8, size = (width, height)).

    scene None renders the empty holder (lit like `holder` when given).
    """
    if scene is None:
        base = holder or _DEFAULT_HOLDER
        clean = _empty_clean(base, size)
    else:
        key = ("clean", tuple(size))
        if key not in scene._cache:
            scene._cache[key] = _clean_frame(scene, size)
        clean = scene._cache[key]
        base = scene
    noisy = clean + _sensor_noise(clean.shape, rng) * np.float32(base.noise)
    frame = np.clip(noisy, 0, 255).astype(np.uint8)
    ok, jpg = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, int(base.jpeg_quality)])
    return cv2.imdecode(jpg, cv2.IMREAD_COLOR)


def skip_frame(rng: np.random.Generator, size=(640, 480)) -> None:
    """Make the random draws render makes for one frame, without drawing it: a
    scene drawn from rng next is then the one that follows that frame."""
    _sensor_noise((size[1], size[0], 3), rng)


def _sensor_noise(shape, rng: np.random.Generator) -> np.ndarray:
    # render's only draws from rng (skip_frame repeats them): unit noise, then scaled.
    return rng.standard_normal(shape, dtype=np.float32)


def mirror_lit(scene: Scene) -> Scene:
    """The same ball lit from the mirror place across the camera's vertical axis
    (a second light, for two-exposure glare removal: vision.glare)."""
    if "mirror_lit" not in scene._cache:  # kept, so its own rendered-frame cache is kept too
        gx, gy = scene.glare_pos
        scene._cache["mirror_lit"] = scene_with(scene, light_az_deg=-180.0 - scene.light_az_deg,
                                                glare_pos=(-gx, gy))
    return scene._cache["mirror_lit"]


# ---------------------------------------------------------------- internals

def _colours(scene: Scene):
    """(body, disc, ink, outline) BGR of the scene's ball design."""
    name = scene.colour or COLUMN_COLOURS[scene.letter]
    col = COLOUR_BGR[name]
    white, black = (238, 240, 240), (25, 25, 25)
    outline = None
    if scene.style == "disc":
        body, disc = white, col
        ink = white if (scene.light_ink and name in ("blue", "red", "green")) else black
        if name == "white":
            disc, outline = (232, 232, 232), black   # white disc on a white ball: drawn as a thin circle
    elif scene.style == "ring":
        body, disc = white, (col if name != "white" else black)
        ink = col if name not in ("white", "yellow") else black
        if name == "yellow":
            ink = (20, 150, 200)
    else:  # solid
        body, disc, ink = (col if name != "white" else (200, 200, 200)), white, black
        if name == "white":
            outline = black
    return body, disc, ink, outline


def _textures(scene: Scene):
    key = "textures"
    if key not in scene._cache:
        body, disc, ink, outline = _colours(scene)
        tex, mask = decal_texture(scene.number, scene.style, scene.font, body_bgr=body, disc_bgr=disc,
                                  ink_bgr=ink, disc_deg=scene.disc_deg, print_deg=scene.print_deg,
                                  underline=scene.underline, outline_bgr=outline)
        scene._cache[key] = (tex, mask, np.float32(body))
    return scene._cache[key]


def _lip_y(scene: Scene, xs: np.ndarray) -> np.ndarray:
    """Image row of the holder lip's upper edge at columns xs."""
    cx, cy = scene.centre
    r = scene.radius
    y0 = cy + r * (1 - 2 * scene.lip_frac)
    # A gentle bow over the frame width, as a round holder seen from the front.
    return y0 + scene.lip_curve * r * ((xs - cx) / (2.5 * r)) ** 2


def _background(scene: Scene, size) -> np.ndarray:
    w, h = size
    bg = np.float32(scene.background_bgr)
    ys = np.linspace(1.1, 0.85, h, dtype=np.float32)[:, None, None]
    img = np.broadcast_to(bg * ys, (h, w, 3)).copy()
    # The cup of the holder: a soft dark hollow around the ball.
    cx, cy = scene.centre
    r = scene.radius
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    d = np.hypot(xx - cx, yy - (cy + 0.05 * r))
    hollow = np.clip((1.18 * r - d) / (0.08 * r), 0, 1)
    img *= (1 - 0.6 * hollow)[..., None]
    return img


def _draw_lip(scene: Scene, img: np.ndarray) -> None:
    h, w = img.shape[:2]
    xs = np.arange(w, dtype=np.float32)
    top = _lip_y(scene, xs)
    yy = np.arange(h, dtype=np.float32)[:, None]
    cover = np.clip(yy - top[None, :] + 0.5, 0, 1)[..., None]
    lip_col = np.float32(scene.background_bgr) * 1.25 + 8
    shade = np.clip(1.0 - (yy - top[None, :]) / 600.0, 0.7, 1.0)[..., None]
    edge = np.exp(-((yy - top[None, :] - 1.5) ** 2) / 2.0)[..., None] * 25
    lip = lip_col * shade + edge
    img[:] = img * (1 - cover) + lip * cover


def _shade_ball(scene: Scene, img: np.ndarray) -> None:
    """Draw the shaded, printed sphere into img (float32 BGR)."""
    h, w = img.shape[:2]
    cx, cy = scene.centre
    r = float(scene.radius)
    x0, x1 = max(0, int(cx - r - 2)), min(w, int(cx + r + 3))
    y0, y1 = max(0, int(cy - r - 2)), min(h, int(cy + r + 3))
    if x0 >= x1 or y0 >= y1:
        return
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    nx, ny = (xx + 0.5 - cx) / r, (yy + 0.5 - cy) / r
    rho2 = nx * nx + ny * ny
    alpha = np.clip((1 - np.sqrt(rho2)) * r + 0.5, 0, 1)
    nz = np.sqrt(np.clip(1 - rho2, 0, 1))
    n = np.stack([nx, ny, nz], -1)
    rot = scene.rotation_matrix().astype(np.float32)
    body = n @ rot          # rows of n times R == R^T n: camera -> body
    bx, by, bz = body[..., 0], body[..., 1], body[..., 2]
    tex, _mask, body_col = _textures(scene)

    def uv(z, x, y):
        theta = np.arccos(np.clip(z, -1, 1))
        k = np.where(theta > 1e-4, theta / np.maximum(np.sin(theta), 1e-6), 1.0) / ANGLE_PER_PX
        return (TEX / 2 + k * x).astype(np.float32), (TEX / 2 + k * y).astype(np.float32)

    border = tuple(float(v) for v in body_col)
    fu, fv = uv(bz, bx, by)
    front = cv2.remap(tex, fu, fv, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    bu, bv = uv(-bz, -bx, by)
    back = cv2.remap(tex, bu, bv, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    albedo = np.where((bz >= 0)[..., None], front, back)

    az, el = math.radians(scene.light_az_deg), math.radians(scene.light_elev_deg)
    light = np.float32([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    half = light + np.float32([0, 0, 1])
    half /= np.linalg.norm(half)
    diffuse = np.clip(n @ light, 0, 1)
    spec = scene.specular * np.clip(n @ half, 0, 1) ** scene.shininess
    # Rim darkening: light grazing the edge of a matte sphere.
    occl = 0.85 + 0.15 * nz
    colour = albedo * ((scene.ambient + (1 - scene.ambient) * diffuse) * occl * scene.gain)[..., None]
    colour += (spec * 255)[..., None]
    if scene.glare > 0:
        gx, gy = scene.glare_pos
        d2 = (nx - gx) ** 2 + (ny - gy) ** 2
        colour += (scene.glare * 255 * np.exp(-d2 / (2 * 0.12 ** 2)))[..., None]
    a = alpha[..., None]
    img[y0:y1, x0:x1] = img[y0:y1, x0:x1] * (1 - a) + colour * a


def _blur(scene: Scene, img: np.ndarray) -> np.ndarray:
    if scene.blur_sigma > 0.3:
        img = cv2.GaussianBlur(img, (0, 0), scene.blur_sigma)
    if scene.motion_px >= 1.5:
        n = int(round(scene.motion_px)) | 1
        k = np.zeros((n, n), np.float32)
        k[n // 2, :] = 1
        rot = cv2.getRotationMatrix2D(((n - 1) / 2, (n - 1) / 2), scene.motion_deg, 1.0)
        k = cv2.warpAffine(k, rot, (n, n))
        img = cv2.filter2D(img, -1, k / k.sum())
    return img


def _clean_frame(scene: Scene, size) -> np.ndarray:
    img = _background(scene, size)
    _shade_ball(scene, img)
    _draw_lip(scene, img)
    return _blur(scene, img)


def _empty_clean(holder: Scene, size) -> np.ndarray:
    key = ("empty", tuple(size))
    if key not in holder._cache:
        img = _background(holder, size)
        _draw_lip(holder, img)
        holder._cache[key] = _blur(holder, img)
    return holder._cache[key]


def _ink_visible(scene: Scene) -> float:
    """Projected ink area seen in the frame over the projected ink area when facing the camera."""
    _tex, mask, _body = _textures(scene)
    ys, xs = np.nonzero(mask > 0.05)
    wgt = mask[ys, xs]
    u = (xs + 0.5 - TEX / 2) * ANGLE_PER_PX
    v = (ys + 0.5 - TEX / 2) * ANGLE_PER_PX
    theta = np.hypot(u, v)
    phi = np.arctan2(v, u)
    area = wgt * np.sinc(theta / np.pi)           # sin(theta)/theta: equal-angle texel area on the sphere
    st = np.sin(theta)
    px, py, pz = st * np.cos(phi), st * np.sin(phi), np.cos(theta)
    facing = float(np.sum(area * np.clip(pz, 0, None)))
    rot = scene.rotation_matrix()
    w, h = 640, 480
    best = 0.0
    for side in (1, -1):
        body = np.stack([side * px, py, side * pz])
        cam = rot @ body
        qx = scene.centre[0] + scene.radius * cam[0]
        qy = scene.centre[1] + scene.radius * cam[1]
        seen = (cam[2] > 0) & (qy < _lip_y(scene, qx)) & (qx >= 0) & (qx < w) & (qy >= 0) & (qy < h)
        best = max(best, float(np.sum(area * np.clip(cam[2], 0, None) * seen)))
    return best / facing if facing > 0 else 0.0


def scene_with(scene: Scene, **changes) -> Scene:
    """A copy of scene with some fields changed (and a fresh cache)."""
    return replace(scene, _cache={}, **changes)
