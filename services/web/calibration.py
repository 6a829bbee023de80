"""Calibration from the page: where the ball sits, camera controls, a test read, and saving.

Saving changes only the keys the page edits, in the config file as it is on disk (so options
given on the command line, such as --mqtt, are not written into it), validates the result
with the same pydantic models as a start does, writes it atomically and applies it. It is
refused while a game runs: the reader must not change under a game.
"""
from __future__ import annotations

import base64
import os
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from services.config import ConfigError, dump_toml, parse_config
from vision.balls import ball_name
from vision.frame_source import CameraFault
from vision.reader import BallReader, Reading

# What the page may change, as (section, key).
EDITABLE = {("reader", "region"), ("camera", "exposure_us"), ("camera", "gain")}


class Refused(Exception):
    """Not saved; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _merge(data: dict[str, Any], changes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for section, values in changes.items():
        target = merged.setdefault(section, {})
        for key, value in values.items():
            if value is None:
                target.pop(key, None)  # None = back to the default (e.g. no region)
            else:
                target[key] = value
    return merged


def check_changes(changes: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(changes, dict) or not changes:
        raise Refused(400, "nothing to save")
    for section, values in changes.items():
        if not isinstance(values, dict):
            raise Refused(400, f"{section}: expected an object")
        for key in values:
            if (section, key) not in EDITABLE:
                raise Refused(400, f"{section}.{key} cannot be changed from this page")
    return changes


def write_atomically(path: Path, text: str) -> None:
    """Temporary file beside it, fsync, rename, fsync the folder: the old or the new file,
    never half of one, even after a power cut."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


class ConfigSaver:
    def __init__(self, appliance) -> None:
        self.appliance = appliance
        self._lock = threading.Lock()  # one save at a time

    def save(self, changes: Any, by: str) -> dict[str, Any]:
        changes = check_changes(changes)
        app = self.appliance
        with self._lock:
            game = app.engine.game
            if game is not None and game.status == "running":
                raise Refused(409, f"game {game.number} is running: end it before changing the calibration")
            path = app.config_path
            if path is None:
                raise Refused(409, "this appliance was started without --config, so there is no config "
                                   "file to save to: start it with --config PATH")
            path = Path(path)
            try:
                on_disk = tomllib.loads(path.read_text()) if path.exists() else {}
            except tomllib.TOMLDecodeError as e:
                raise Refused(409, f"{path}: not valid TOML, not overwritten: {e}") from None
            try:
                saved = parse_config(_merge(on_disk, changes), str(path))
                running = parse_config(_merge(app.cfg.model_dump(mode="json"), changes), "page")
            except ConfigError as e:
                raise Refused(400, str(e)) from None
            write_atomically(path, dump_toml(saved))
            app.apply_config(running)
            app.record.append("config_changed", {"by": by, "path": str(path), "changes": changes})
        return {"saved": str(path), "changes": changes}


# -- the test read ---------------------------------------------------------------------------

def _data_url(image: np.ndarray, ext: str) -> str | None:
    ok, data = cv2.imencode(ext, image)
    if not ok:
        return None
    kind = "png" if ext == ".png" else "jpeg"
    return f"data:image/{kind};base64," + base64.b64encode(data.tobytes()).decode()


def best_guess(reading: Reading) -> dict[str, Any] | None:
    """When the reader is unsure, the number it thinks most likely (for the technician only)."""
    if not reading.scores:
        return None
    number = max(reading.scores, key=reading.scores.get)
    return {"ball": ball_name(number), "p": round(reading.scores[number], 4)}


def parse_region(value: Any) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        x, y, r = (float(value[k]) for k in ("x", "y", "r"))
    except (KeyError, TypeError, ValueError):
        raise Refused(400, "region must be {x, y, r} in pixels") from None
    if r <= 5 or x < 0 or y < 0:
        raise Refused(400, "region: x and y must be >= 0 and r > 5")
    return x, y, r


def read_now(appliance, region: tuple[float, float, float] | None, use_saved: bool) -> dict[str, Any]:
    """Read the ball in the holder now, as the appliance would: the configured number of
    frames, each read, then fused into one decision. With the saved region or the one being
    edited."""
    cfg = appliance.cfg.reader
    reader = appliance.reader if use_saved else BallReader(region=region)
    started = time.perf_counter()
    try:
        taken = appliance.take_frames(cfg.frames)
    except CameraFault as e:
        raise Refused(503, f"camera: {e}") from None
    frames = taken.frames
    readings, fused = appliance.read_frames(taken, reader)
    took_ms = (time.perf_counter() - started) * 1000
    # Show the frame the reader did best on: its print, its ball and print outlines.
    i = max(range(len(readings)), key=lambda k: (readings[k].print_image is not None, readings[k].confidence))
    best = readings[i]
    from services.web.mjpeg import draw_overlays

    shown = draw_overlays(frames[i].copy(), 1.0, {"region", "ball", "print"}, reader.region, best)
    h, w = frames[i].shape[:2]
    committed = fused.decision == "commit"
    return {"ball": fused.ball if committed else None, "number": fused.number if committed else None,
            "decision": fused.decision, "confidence": round(fused.confidence, 4),
            "guess": {"ball": fused.ball, "p": round(fused.confidence, 4)} if fused.decision == "confirm"
            else best_guess(best),
            "reason": None if committed else next((r.reason for r in readings if r.reason), None),
            "frames": len(readings), "ms": round(took_ms, 1),
            "ms_per_frame": round(sum(r.ms for r in readings) / len(readings), 1),
            "circle": [round(v, 1) for v in best.ball_circle] if best.ball_circle else None,
            "region": list(reader.region) if reader.region else None,
            "frame_size": [w, h], "lamps": appliance.lamps_lit(),
            "print_image": _data_url(best.print_image, ".png") if best.print_image is not None else None,
            "frame": _data_url(shown, ".jpg")}


# -- camera controls -------------------------------------------------------------------------

def camera_controls(appliance) -> dict[str, Any]:
    try:
        controls = appliance.camera.controls()
    except Exception as e:  # a driver that cannot tell: show it, do not fail the page
        return {"controls": {}, "error": str(e)}
    # Only plain numbers can be edited in a form field.
    return {"controls": {k: v for k, v in controls.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
            "other": {k: v for k, v in controls.items() if not isinstance(v, (int, float)) or isinstance(v, bool)}}


def light_lamps(appliance, data: Any) -> dict[str, bool]:
    which = data.get("lit") if isinstance(data, dict) else None
    if which not in ("a", "b", "both"):
        raise Refused(400, 'lit must be "a", "b" or "both"')
    try:
        return appliance.light_lamps(which)
    except LookupError as e:
        raise Refused(409, str(e)) from None


def set_camera_controls(appliance, values: Any) -> dict[str, Any]:
    if not isinstance(values, dict) or not values:
        raise Refused(400, "no controls given")
    try:
        appliance.camera.set_controls(**{str(k): float(v) for k, v in values.items()})
    except (ValueError, TypeError) as e:
        raise Refused(400, str(e)) from None
    return camera_controls(appliance)
