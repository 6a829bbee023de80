"""The simulated blower: draws balls without replacement, seats each in the holder at a random
pose, and drives the sensor pin with chatter, so the appliance reads it exactly as on the Pi.

Only the hardware edge is simulated (the pin and what the camera sees); everything behind it is
the real appliance. When the appliance asks for the ball again, the simulator lifts and reseats
it at a new pose (as a caller shakes the holder). When it asks a person to confirm, a simulated
caller looks at the ball and confirms it through the same command as a console would.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from firmware.ball_sensor import drive_chatter
from services.config import SimConfig
from vision.balls import ball_name
from vision.render import Scene, mirror_lit, random_scene, scene_with

log = logging.getLogger(__name__)

OUTCOME_TIMEOUT_S = 30.0
RELEASE_S = 0.2  # a freed switch stays open this long before the ball is seen again
HALL_LIGHT = 0.15  # exposure with neither glare lamp lit, against one lamp


def under_lamps(scene: Scene | None, lamp_a: bool, lamp_b: bool) -> Scene | None:
    """What the simulated camera sees with glare lamp A and/or B lit (camera.lights).

    The renderer has one light: lamp A is the scene's own, lamp B its mirror place
    (render.mirror_lit). With both lit the camera sees lamp A's highlight only, which is
    enough for the live view; readings take one lamp at a time.
    """
    if scene is None or lamp_a:
        return scene
    if lamp_b:
        return mirror_lit(scene)
    return scene_with(scene, gain=scene.gain * HALL_LIGHT, specular=0.0, glare=0.0,
                      background_bgr=tuple(round(c * HALL_LIGHT) for c in scene.background_bgr))


class SimBlower:
    def __init__(self, pin, cfg: SimConfig, seed: int | None, balls: int | None,
                 in_blower: list[int], active_high: bool = True) -> None:
        self.pin, self.cfg, self.limit = pin, cfg, balls
        self.rng = np.random.default_rng(seed)
        self._chatter_rng = random.Random(seed)
        self._shake_rng = np.random.default_rng(seed)
        self.in_blower = sorted(in_blower)
        self.active_high = active_high
        # One hall, one ball set: a design and a font for the whole run.
        first = random_scene(1, self.rng)
        self.ball_set = {"style": first.style, "font": first.font}
        self._scene: Scene | None = None
        self._forced: bool | None = None
        self._holder = first  # lighting of the empty holder
        self._lock = threading.Lock()
        self._outcome = threading.Event()
        self._last_outcome: str | None = None
        self.drawn: list[int] = []
        self.on_drawn: Callable[[dict[str, Any]], None] = lambda msg: None
        self.confirm: Callable[[int], None] = lambda number: None  # the simulated caller

    # -- what the simulated camera sees ----------------------------------------------------
    def scene(self) -> Scene | None:
        with self._lock:
            scene = self._scene
        if scene is None or not self.cfg.shake_px:
            return scene
        (cx, cy), (dx, dy) = scene.centre, self._shake_rng.uniform(-1, 1, 2) * self.cfg.shake_px
        return scene_with(scene, centre=(round(cx + dx), round(cy + dy)))

    def seat(self, scene: Scene | None) -> None:
        """Put a ball in the holder (None: take it out), driving the sensor pin as it lands."""
        with self._lock:
            self._scene = scene
            if self._forced is not None:
                return  # the pin is held by a simulated fault
        self._drive(scene is not None)

    def force_sensor(self, active: bool | None) -> None:
        """Hold the sensor pin (a stuck switch), or give it back to the holder with None."""
        with self._lock:
            self._forced = active
            present = self._scene is not None
        if active is None:
            # The switch frees: it opens, then sees the ball still in the holder (if any).
            self._drive(False)
            time.sleep(RELEASE_S)
            self._drive(present)
        else:
            self._drive(active)

    def _drive(self, present: bool) -> None:
        level = present if self.active_high else not present
        drive_chatter(self.pin, level, edges=self.cfg.chatter_edges, span_s=self.cfg.chatter_ms / 1000,
                      rng=self._chatter_rng)

    def _pose(self, number: int) -> Scene:
        return random_scene(number, self.rng, **self.ball_set)

    def _turn(self, scene: Scene) -> Scene:
        fresh = self._pose(scene.number)
        return dataclasses.replace(scene, rotation_deg=fresh.rotation_deg, turned_deg=fresh.turned_deg,
                                   turn_dir_deg=fresh.turn_dir_deg, _cache={})

    # -- what the appliance tells the holder ------------------------------------------------
    def outcome(self, decision: str) -> None:
        """Called by the appliance after each reading of the ball in the holder."""
        self._last_outcome = decision
        self._outcome.set()

    # -- the draw --------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        draws = 0
        while not stop.is_set() and self.in_blower and (self.limit is None or draws < self.limit):
            number = int(self.rng.choice(self.in_blower))
            self.in_blower.remove(number)
            draws += 1
            self.drawn.append(number)
            self.on_drawn({"draw": draws, "ball": ball_name(number), "number": number})
            scene = self._pose(number)
            self._present(scene, stop)
            stop.wait(self.cfg.hold_s)
            self.seat(None)
            stop.wait(self.cfg.gap_s)

    def _present(self, scene: Scene, stop: threading.Event) -> None:
        """Seat the ball and wait until it is called, reseating it when asked to."""
        while not stop.is_set():
            self._outcome.clear()
            self.seat(scene)
            if not self._outcome.wait(OUTCOME_TIMEOUT_S):
                log.warning("sim: no reading of %s within %.0f s", scene.ball, OUTCOME_TIMEOUT_S)
                return
            decision = self._last_outcome
            if decision in ("called", "refused"):
                return
            if decision == "confirm":
                # The simulated caller looks at the ball and confirms it.
                self._outcome.clear()
                self.confirm(scene.number)
                return
            # represent / duplicate: lift the ball and reseat it at a new pose.
            self.seat(None)
            stop.wait(0.1)
            scene = self._turn(scene)
