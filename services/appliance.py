"""The composition root: the one place where the parts are built and wired together.

The ball's path: sensor (settled) -> camera frames -> reader -> fusion -> engine (record) ->
MQTT. Everything here runs the same on the Pi and in simulation; only the pin factory and the
frame source differ.
"""
from __future__ import annotations

import json
import logging
import queue
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from firmware.ball_sensor import BallSensor
from firmware.glare_lights import GlareLights
from services import __version__, selftest, systemd_notify
from services.clock import clock_synchronised
from services.commands import execute
from services.config import Config
from services.engine import DrawEngine, Outcome
from services.ha_discovery import HomeAssistantDiscovery
from services.mqtt_link import MqttLink
from services.record import Record, RecordError, utc_now
from services.serial_board import SerialBoard
from services.speech import Speaker
from vision.frame_source import (
    CameraFault,
    FrameSource,
    OpenCVSource,
    Picamera2Source,
    SimulatedSource,
)
from vision.fusion import FusedReading, fuse
from vision.glare import LampFrames, two_lamp_frames
from vision.reader import BallReader

log = logging.getLogger(__name__)

CAMERA_FAULT = selftest.CAMERA_FAULT
SENSOR_FAULT = "sensor_stuck"
LIGHTS_FAULT = "glare_lights"
DISK_FAULT = "disk_full"
CAMERA_WATCH_S = 1.0
CAMERA_RETRY_S = 1.0


def _transaction(payload: Any) -> Any:
    try:
        data = json.loads(payload) if isinstance(payload, (bytes, str)) else payload
        return data.get("transaction") if isinstance(data, dict) else None
    except ValueError:
        return None


def make_camera(cfg: Config, sim_scene=None, seed: int = 0) -> FrameSource:
    cam = cfg.camera
    if cam.kind == "sim":
        return SimulatedSource(sim_scene or (lambda: None), seed=seed, fps=cam.fps)
    if cam.kind == "picamera2":
        return Picamera2Source(cam.width, cam.height, cam.fps)
    return OpenCVSource(cam.device, cam.width, cam.height, cam.fps)


class Appliance:
    def __init__(self, cfg: Config, *, sim: bool = False, seed: int | None = None,
                 balls: int | None = None, config_path: Path | None = None) -> None:
        self.cfg = cfg
        self.config_path = config_path  # where the web page saves changes; None = not saved
        self.sim = sim
        # Live consumers inside the process (web pages): called with (kind, payload) for
        # kind in state | call | read. They must not block.
        self.observers: list[Callable[[str, dict[str, Any]], None]] = []
        self.web = None
        self.started = time.monotonic()
        self.stop_event = threading.Event()
        self._settled: queue.Queue[float] = queue.Queue()
        self.outcome_listeners: list = []
        self.blower_done = threading.Event()

        self.record = Record(cfg.record.path, clock_ok=clock_synchronised)
        self._camera_lock = threading.RLock()
        self.record_error: str | None = None
        self.engine = DrawEngine.from_config(self.record, cfg, on_change=self._engine_changed,
                                             on_call=lambda call: self.notify("call", call))
        self.record.append("power_on", {"device_id": cfg.device_id, "sim": sim})
        self.reader = BallReader(region=self._region())

        self.pin_factory = None
        self.blower = None
        if sim:
            from gpiozero.pins.mock import MockFactory

            from services.sim import SimBlower

            self.pin_factory = MockFactory()
            pin = self.pin_factory.pin(cfg.sensor.pin)
            in_blower = [n for n in range(1, 76) if n not in self._called_numbers()]
            self.blower = SimBlower(pin, cfg.sim, seed, balls, in_blower, active_high=self._active_high())
            self.outcome_listeners.append(self.blower.outcome)
        self.lights: GlareLights | None = None  # opened by the self-test, when configured
        self.sim_lamps_out: set[str] = set()  # simulation: lamps ("a", "b") burnt out
        self.camera = make_camera(cfg, self._sim_view if self.blower else None, seed or 0)

        self.mqtt = MqttLink(cfg.mqtt, cfg.device_id, self.record, self.engine.state, self._fault_payload,
                             self.request)
        HomeAssistantDiscovery(cfg.mqtt.prefix, cfg.device_id, __version__,
                               enabled=cfg.mqtt.home_assistant).attach(self.mqtt)
        self.integrations = []  # wired boards and speech: fed the same calls as MQTT
        if cfg.serial_board.enabled:
            self.integrations.append(SerialBoard(cfg.serial_board, on_fault=self._side_fault("flashboard")))
        if cfg.speech.enabled:
            self.integrations.append(Speaker(cfg.speech, on_fault=self._side_fault("speech")))
        self.observers.extend(i.observe for i in self.integrations)
        self.sensor: BallSensor | None = None

    # -- wiring helpers --------------------------------------------------------------------
    def _region(self):
        r = self.cfg.reader.region
        return (r.x, r.y, r.r) if r else None

    def _active_high(self) -> bool:
        return self.cfg.sensor.active_high if self.cfg.sensor.pull_up is None else not self.cfg.sensor.pull_up

    def _sim_view(self):
        """What the simulated camera sees: the ball in the holder, under the lamps lit now."""
        from services.sim import under_lamps

        a, b = self.lights.lit if self.lights else (True, False)
        out = self.sim_lamps_out
        return under_lamps(self.blower.scene(), a and "a" not in out, b and "b" not in out)

    def _called_numbers(self) -> list[int]:
        game = self.engine.game
        return game.called_numbers() if game and game.status in ("running", "claims") else []

    def _side_fault(self, code: str) -> Callable[[str | None], None]:
        """A wired board or the speaker failing (message) or working again (None): reported,
        but calls go on, since MQTT boards still show them."""
        def report(message: str | None) -> None:
            if message:
                self.engine.raise_fault(code, message, affects_calls=False)
            else:
                self.engine.clear_fault(code)
        return report

    def _fault_payload(self) -> dict[str, Any]:
        active = self.engine.state()["faults"]
        if self.record_error:  # cannot be in the record: writing the record is what failed
            active.append({"code": "record_write", "message": self.record_error, "since": utc_now(),
                           "affects_calls": True})
        return {"active": active}

    def _record_failed(self, error: RecordError) -> None:
        """Nothing can be called without being recorded first; say so loudly."""
        log.error("%s", error)
        self.record_error = str(error)
        self.mqtt.publish_state()

    def _engine_changed(self) -> None:
        if hasattr(self, "mqtt"):
            self.mqtt.publish_state()
            self.mqtt.flush_calls()
        self.notify("state", self.engine.state())

    def notify(self, kind: str, payload: dict[str, Any]) -> None:
        for observer in list(self.observers):
            try:
                observer(kind, payload)
            except Exception:  # a broken page must not stop a call
                log.exception("observer failed on %s", kind)

    def apply_config(self, cfg: Config) -> None:
        """Take a validated config from the web page: the reader's region and camera controls now."""
        self.cfg = cfg
        self.reader = BallReader(region=self._region())
        self._apply_camera_controls()

    def _apply_camera_controls(self) -> None:
        cam = self.cfg.camera
        # awb "auto" is every camera's own start-up setting (and awb is not edited live).
        wanted = {k: v for k, v in (("exposure_us", cam.exposure_us), ("gain", cam.gain),
                                    ("awb", None if cam.awb == "auto" else cam.awb)) if v is not None}
        try:
            self.camera.set_controls(**wanted)
        except (ValueError, CameraFault) as e:
            log.warning("camera controls not applied: %s", e)

    def request(self, command: str, payload: bytes | str | dict | None) -> dict[str, Any]:
        """Every command, from MQTT or the web pages, goes through here."""
        if command == "new_game" and (low := self._disk_low()):
            self.engine.raise_fault(DISK_FAULT, low, affects_calls=False)
            return {"transaction": _transaction(payload), "status": "error", "error": low}
        if DISK_FAULT in self.engine.faults and not self._disk_low():
            self.engine.clear_fault(DISK_FAULT)
        try:
            return execute(self.engine, command, payload)
        except RecordError as e:
            return {"transaction": _transaction(payload), "status": "error", "error": str(e)}

    def _disk_low(self) -> str | None:
        """A new game needs room in the record for all of its calls and their frames."""
        free_mb = shutil.disk_usage(self.record.path.parent).free / 1e6
        if free_mb < self.cfg.record.min_free_mb:
            return (f"disk nearly full: {free_mb:.0f} MB free beside the record, "
                    f"{self.cfg.record.min_free_mb} MB needed to start a game")
        return None

    # -- the sensor ------------------------------------------------------------------------
    def _start_sensor(self) -> None:
        s = self.cfg.sensor
        sensor = BallSensor(s.pin, pin_factory=self.pin_factory, pull_up=s.pull_up,
                            active_state=s.active_high if s.pull_up is None else None,
                            debounce_s=s.debounce_ms / 1000, settle_s=s.settle_ms / 1000, stuck_s=s.stuck_s)
        sensor.on_settled = lambda: self._settled.put(time.monotonic())
        sensor.on_fault = lambda message: self.engine.raise_fault(SENSOR_FAULT, message, affects_calls=True)
        sensor.on_fault_cleared = lambda: self.engine.clear_fault(SENSOR_FAULT)
        self.sensor = sensor

    def _open_lights(self) -> selftest.Finding | None:
        lights = self.cfg.camera.lights
        if lights is None or self.lights is not None:
            return None
        try:
            self.lights = GlareLights(lights.pin_a, lights.pin_b, active_high=lights.active_high,
                                      pin_factory=self.pin_factory)
        except Exception as e:  # as for the sensor, gpiozero raises many kinds
            return selftest.Finding(LIGHTS_FAULT, f"glare lights on pins {lights.pin_a}, {lights.pin_b}: {e}; "
                                    "reading with the lamps as they are", affects_calls=False)
        return None

    def light_lamps(self, which: str) -> dict[str, bool]:
        """Light glare lamp "a", "b" or "both" now (the technician looks at each lamp's
        highlight); the next reading lights both again. LookupError without lamps."""
        if self.lights is None:
            raise LookupError("no glare lamps: set camera.lights (or see the glare_lights fault)")
        with self._camera_lock:  # not in the middle of a reading's exposures
            self.lights.light(which)
        return self.lamps_lit()

    def lamps_lit(self) -> dict[str, bool] | None:
        """The lamps as they stand between readings: not a lamp lit alone for one exposure
        of a ball being read meanwhile."""
        if self.lights is None:
            return None
        with self._camera_lock:
            a, b = self.lights.lit
        return {"a": a, "b": b}

    # -- reading a ball --------------------------------------------------------------------
    def take_frames(self, count: int, glare_free: bool = True) -> LampFrames:
        """`count` fresh frames to read, as every reading of a ball takes them. With glare lamps
        (camera.lights), each is the per-pixel minimum of an exposure under lamp A and one under
        lamp B (vision.glare.two_lamp_frames), and the single exposures come along to be read
        as a check; a lamp that gives too little light (burnt out, unplugged) is a glare_lights
        fault while the other lamp's exposures are read alone. Raises CameraFault."""
        with self._camera_lock:
            if self.lights is None or not glare_free:
                return LampFrames([self._exposure() for _ in range(count)], [], None)
            taken = two_lamp_frames(self._exposure, self.lights.light, count, self.cfg.camera.lights.settle_frames)
        out = taken.lamp_out
        if out:
            other = "B" if out == "a" else "A"
            self.engine.raise_fault(LIGHTS_FAULT, f"glare lamp {out.upper()} gives too little light: "
                                    f"reading under lamp {other} alone", affects_calls=False)
        elif LIGHTS_FAULT in self.engine.faults:
            self.engine.clear_fault(LIGHTS_FAULT)
        return taken

    def _exposure(self) -> np.ndarray:
        frame = self.camera.read(timeout=self.cfg.camera.frame_timeout_s)
        systemd_notify.watchdog()  # only while frames are really being processed
        return frame

    def _frames(self, count: int, glare_free: bool = True) -> LampFrames | None:
        """take_frames, or None after raising a camera fault and reopening the camera."""
        with self._camera_lock:
            try:
                taken = self.take_frames(count, glare_free)
            except CameraFault as e:
                self.engine.raise_fault(CAMERA_FAULT, str(e), affects_calls=True)
                self._reopen_camera()
                return None
        if CAMERA_FAULT in self.engine.faults:
            self.engine.clear_fault(CAMERA_FAULT)
        return taken

    def _camera_watch(self) -> None:
        """Between balls, keep taking a frame a second: a camera that stops is found (and the
        watchdog starves) even when no ball is drawn. The lamps stay as they are."""
        while not self.stop_event.wait(CAMERA_WATCH_S):
            self._frames(1, glare_free=False)

    def _reopen_camera(self) -> None:
        try:
            self.camera.close()
            self.camera.open()
        except CameraFault as e:
            log.warning("camera reopen failed: %s", e)

    def read_frames(self, taken: LampFrames, reader: BallReader | None = None) -> tuple[list, FusedReading]:
        """Every frame read, and fused with the configured thresholds; with glare lamps the
        single exposures are read too, as a check: a ball one of them names must agree (a
        glare-free frame can read a glyph merged with the ring that one exposure still shows
        apart). The readings of the frames, and the fused reading."""
        reader = reader or self.reader
        readings = [reader.read(f) for f in taken.frames]
        checks = [reader.read(e) for e in taken.exposures]
        cfg = self.cfg.reader
        return readings, fuse(readings, commit_at=cfg.commit_at, confirm_at=cfg.confirm_at, checks=checks)

    def read_ball(self, presentation: int) -> Outcome | None:
        taken = self._frames(self.cfg.reader.frames)
        if taken is None:
            return None
        frames = taken.frames
        readings, fused = self.read_frames(taken)
        decision = fused.decision
        if presentation >= self.cfg.reader.max_presentations:
            if decision == "represent":
                decision = "confirm"  # shaken enough: a person looks at it
        elif decision == "confirm":
            decision = "represent"  # a better view first, before a person is bothered
        ok, jpeg = cv2.imencode(".jpg", frames[-1], [cv2.IMWRITE_JPEG_QUALITY, 85])
        reason = None if decision == "commit" else next((r.reason for r in readings if r.reason), fused.reason)
        outcome = self.engine.on_reading(fused.number, fused.confidence, decision, fused.frames, reason,
                                         jpeg.tobytes() if ok and self.cfg.record.keep_frames else None)
        read = {
            "attempt": self.engine.attempts, "ball": fused.ball if decision in ("commit", "confirm") else None,
            "letter": fused.ball[0] if fused.ball else None, "number": fused.number,
            "confidence": round(fused.confidence, 4), "needs_confirm": outcome.decision == "confirm",
            "decision": outcome.decision if outcome.decision != "called" else "commit",
            "reason": outcome.reason or reason, "frames": fused.frames, "ts": utc_now()}
        self.mqtt.publish("read", read)
        self.notify("read", read)
        for listener in self.outcome_listeners:
            listener(outcome.decision)
        return outcome

    def _read_safely(self, presentation: int) -> Outcome | None:
        """read_ball, with nothing able to stop the reader thread; None when the ball was not read."""
        try:
            return self.read_ball(presentation)
        except RecordError as e:
            self._record_failed(e)
        except Exception:  # a reader bug must not stop the appliance; the ball is read again
            log.exception("reading the ball failed")
            for listener in self.outcome_listeners:
                listener("represent")
        return None

    def _reader_loop(self) -> None:
        presentation = 0
        while not self.stop_event.is_set():
            try:
                self._settled.get(timeout=0.2)
            except queue.Empty:
                continue
            presentation += 1
            outcome = self._read_safely(presentation)
            # A camera fault while the ball is still in the holder: read it again once frames return.
            while (outcome is None and CAMERA_FAULT in self.engine.faults and self.sensor and self.sensor.active
                   and not self.stop_event.wait(CAMERA_RETRY_S)):
                outcome = self._read_safely(presentation)
            if outcome is None or outcome.decision != "represent":
                presentation = 0

    # -- running ---------------------------------------------------------------------------
    def self_test(self) -> None:
        """At boot, before any MQTT traffic: code, record, camera, sensor (see services.selftest)."""
        findings = [selftest.check_code(selftest.default_manifest()), selftest.check_record(self.record)]
        try:
            self.camera.open()
            self._apply_camera_controls()
            findings.append(selftest.check_camera(self.camera, self.cfg.camera.frame_timeout_s))
        except CameraFault as e:
            findings.append(selftest.Finding(CAMERA_FAULT, str(e)))
        try:
            self._start_sensor()
        except Exception as e:  # gpiozero raises many kinds: a missing pin, no GPIO chip, a busy pin
            findings.append(selftest.Finding(selftest.SENSOR_FAULT, f"ball sensor on pin {self.cfg.sensor.pin}: {e}"))
        findings.append(self._open_lights())
        found = {f.code for f in findings if f}
        for f in filter(None, findings):
            self.engine.raise_fault(f.code, f.message, affects_calls=f.affects_calls)
        for code in (CAMERA_FAULT, selftest.SENSOR_FAULT, LIGHTS_FAULT):  # hardware that answers again clears itself
            if code in self.engine.faults and code not in found:
                self.engine.clear_fault(code)
        self.record.append("self_test", {"faults": sorted(found)})

    def start(self) -> None:
        self.self_test()
        self._threads = [threading.Thread(target=self._reader_loop, name="reader", daemon=True),
                         threading.Thread(target=self._camera_watch, name="camera-watch", daemon=True)]
        if self.blower:
            self.blower.on_drawn = lambda msg: self.mqtt.publish("sim/drawn", msg, qos=1)
            self.blower.confirm = self._sim_caller
            self.mqtt.subscriptions[self.mqtt.topic("sim/control")] = self._sim_control
            self._prepare_sim_game()
            self._threads.append(threading.Thread(target=self._run_blower, name="sim-blower", daemon=True))
        self.mqtt.start()
        for t in self._threads:
            t.start()
        if self.cfg.web.enabled:
            from services.web.server import start_web

            self.web = start_web(self)
        systemd_notify.ready()

    def _prepare_sim_game(self) -> None:
        """In simulation, open an occasion and a game when none is running."""
        if not self.engine.occasion:
            self.request("new_occasion", {"by": "sim"})
        game = self.engine.game
        if game and game.status == "running" and len(game.called_numbers()) < 75:
            return
        if game and game.status == "running":
            self.request("end_game", {"by": "sim"})
            self.blower.in_blower = list(range(1, 76))
        answer = self.request("new_game", {"pattern": "any_line", "prize": "$100", "prize_cents": 10000,
                                           "all_balls_in_blower": True, "by": "sim"})
        if answer["status"] != "ok":  # e.g. a profile that wants a ball check first: the console decides
            log.warning("simulation could not start a game: %s", answer["error"])

    def _sim_control(self, msg) -> None:
        """Simulation only: hardware faults on demand, e.g. {"camera": "stall"}, {"sensor": "stuck"}."""
        try:
            control = json.loads(msg.payload)
            camera, sensor, caller = control.get("camera"), control.get("sensor"), control.get("caller")
            if (camera not in (None, "stall", "resume") or sensor not in (None, "stuck", "release")
                    or caller not in (None, "away", "back")):
                raise ValueError("expected camera: stall|resume, sensor: stuck|release, caller: away|back")
        except (ValueError, AttributeError) as e:
            log.warning("sim/control ignored: %s", e)
            return
        if camera:
            self.camera.stall(camera == "stall")
        if sensor:
            self.blower.force_sensor(True if sensor == "stuck" else None)
        if caller:  # away: unsure balls wait for a real console to confirm them
            self.blower.confirm = self._sim_caller if caller == "back" else (lambda number: None)

    def _sim_caller(self, number: int) -> None:
        """The simulated caller looks at the ball and confirms it, as a person at a console would."""
        self.request("confirm", {"ball": number, "by": "sim-caller"})

    def _run_blower(self) -> None:
        self.blower.run(self.stop_event)
        self.blower_done.set()

    def wait(self) -> None:
        """Until stopped; in simulation with --balls, until the blower has drawn them all."""
        done = self.blower_done if self.blower else self.stop_event
        while not done.wait(0.2) and not self.stop_event.is_set():
            pass

    def stop(self, drain_s: float = 30.0) -> None:
        self.stop_event.set()
        systemd_notify.stopping()
        if self.web:
            self.web.stop()
        for t in getattr(self, "_threads", []):
            t.join(timeout=5)
        if self.sensor:
            self.sensor.close()
        if self.lights:
            self.lights.close()
        self.camera.close()
        self.mqtt.stop(timeout=drain_s)
        for integration in self.integrations:
            integration.close()
        self.record.append("power_off", {"clean": True})
        self.record.close()
