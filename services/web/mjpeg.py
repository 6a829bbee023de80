"""The live view: an MJPEG stream of the camera's preview, with switchable overlays.

Frames are encoded only inside a running stream, so nothing is spent while nobody watches.
Overlays are chosen by query parameters (as Frigate does): `region`, `ball`, `print`,
`reading` (each `=1`). Ball, print and reading need the reader to run on the frame; it runs
on a copy scaled to the reading size, so the live view never takes a frame from the reader.
"""
from __future__ import annotations

import asyncio
import time

import cv2
import numpy as np
from starlette.concurrency import run_in_threadpool

from vision.frame_source import CameraFault

BOUNDARY = "frame"
OVERLAYS = ("region", "ball", "print", "reading")
NEEDS_READING = {"ball", "print", "reading"}
REGION_BGR, BALL_BGR, PRINT_BGR = (255, 200, 0), (0, 220, 0), (0, 160, 255)


def draw_overlays(image: np.ndarray, scale: float, layers: set[str], region, reading) -> np.ndarray:
    """Draw on `image` (preview pixels); `scale` = preview size / reading size."""
    thick = max(1, round(2 * scale))
    if "region" in layers and region:
        x, y, r = (v * scale for v in region)
        cv2.circle(image, (round(x), round(y)), round(r), REGION_BGR, thick, cv2.LINE_AA)
        cv2.drawMarker(image, (round(x), round(y)), REGION_BGR, cv2.MARKER_CROSS, round(12 * scale), thick)
    if reading is None:
        return image
    if "ball" in layers and reading.ball_circle:
        x, y, r = (v * scale for v in reading.ball_circle)
        cv2.circle(image, (round(x), round(y)), round(r), BALL_BGR, thick, cv2.LINE_AA)
    if "print" in layers and reading.print_quad:
        quad = np.array([[round(px * scale), round(py * scale)] for px, py in reading.print_quad], np.int32)
        cv2.polylines(image, [quad], True, PRINT_BGR, thick, cv2.LINE_AA)
    if "reading" in layers:
        label = _label(reading)
        size = 0.7 * scale
        (tw, th), base = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, size, thick)
        cv2.rectangle(image, (0, 0), (tw + 16, th + base + 16), (0, 0, 0), -1)
        cv2.putText(image, label, (8, th + 8), cv2.FONT_HERSHEY_SIMPLEX, size, (255, 255, 255), thick, cv2.LINE_AA)
    return image


def _label(reading) -> str:
    if reading.ball:
        return f"{reading.ball}  {reading.confidence:.1%}"
    return f"unsure ({reading.reason or 'no reading'})  {reading.confidence:.1%}"


def parse_layers(query) -> set[str]:
    return {name for name in OVERLAYS if query.get(name) in ("1", "true", "on")}


def _frame_jpeg(appliance, layers: set[str], timeout: float) -> bytes:
    preview = appliance.camera.preview(timeout=timeout)
    width, height = appliance.cfg.camera.width, appliance.cfg.camera.height
    scale = preview.shape[1] / width
    reading = None
    if layers & NEEDS_READING:
        small = preview if preview.shape[1] == width else cv2.resize(preview, (width, height),
                                                                     interpolation=cv2.INTER_AREA)
        reading = appliance.reader.read(small)
    image = draw_overlays(preview.copy(), scale, layers, appliance.reader.region, reading)
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 75])
    if not ok:
        raise CameraFault("could not encode the preview")
    return data.tobytes()


def _no_picture(width: int, height: int, message: str) -> bytes:
    image = np.full((height, width, 3), 40, np.uint8)
    cv2.putText(image, message[:60], (10, height // 2), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 255), 1, cv2.LINE_AA)
    return cv2.imencode(".jpg", image)[1].tobytes()


async def stream(appliance, layers: set[str], fps: float):
    """The multipart body: one JPEG part per frame, until the watcher leaves or the appliance stops."""
    interval = 1.0 / fps
    timeout = appliance.cfg.camera.frame_timeout_s
    while not appliance.stop_event.is_set():
        started = time.monotonic()
        try:
            jpeg = await run_in_threadpool(_frame_jpeg, appliance, layers, timeout)
        except CameraFault as e:
            jpeg = _no_picture(appliance.cfg.camera.width, appliance.cfg.camera.height, f"no picture: {e}")
        yield (f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n").encode()
        yield jpeg + b"\r\n"
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
