"""Camera frame sources behind one interface.

`read()` always gives the newest frame (older ones are dropped and counted, never queued), and
a camera that fails to open or stops delivering raises `CameraFault` within the timeout
instead of hanging the appliance.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import cv2
import numpy as np


class CameraFault(Exception):
    """The camera cannot be opened or has stopped delivering frames."""


# White balance presets (camera.awb) as colour temperatures, for cameras set in kelvin.
AWB_KELVIN = {"daylight": 5500, "fluorescent": 4000, "indoor": 3500, "tungsten": 3000}


class FrameSource(Protocol):
    name: str

    def open(self) -> None: ...
    def read(self, timeout: float = 2.0) -> np.ndarray:
        """The newest frame for reading (BGR uint8), newer than the last one returned."""
    def preview(self, timeout: float = 2.0) -> np.ndarray:
        """The newest frame for the live view (may be larger than the reading frame)."""
    def controls(self) -> dict[str, Any]:
        """Camera controls this source supports, with their current values."""
    def set_controls(self, **values: Any) -> None: ...
    def stats(self) -> dict[str, float]: ...
    def close(self) -> None: ...


class _FrameRate:
    """Frames per second over the last few seconds, and frames dropped unread."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.delivered = 0
        self.dropped = 0

    def tick(self, now: float) -> None:
        self.times.append(now)
        self.times = [t for t in self.times if now - t <= 3.0]

    def stats(self) -> dict[str, float]:
        span = (self.times[-1] - self.times[0]) if len(self.times) > 1 else 0.0
        fps = (len(self.times) - 1) / span if span > 0 else 0.0
        return {"fps": round(fps, 1), "delivered": self.delivered, "dropped": self.dropped}


class ThreadedSource:
    """A capture thread keeps only the newest frame; readers wait for a fresher one.

    Subclasses implement `_start()`, `_grab() -> (frame, preview) | None` and `_stop()`.
    """

    name = "camera"

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._frame: np.ndarray | None = None
        self._preview: np.ndarray | None = None
        self._frame_no = 0
        self._last_read = 0
        self._error: str | None = None
        self._running = False
        self._thread: threading.Thread | None = None
        self._rate = _FrameRate()

    def open(self) -> None:
        self._error = None
        self._start()
        self._running = True
        self._thread = threading.Thread(target=self._loop, name=f"capture-{self.name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while self._running:
            try:
                got = self._grab()
            except Exception as e:  # a driver error ends capture; readers see a fault
                got, self._error = None, f"{self.name}: {e}"
            if got is None:
                # Nothing delivered: keep trying without spinning; readers time out into a fault.
                time.sleep(0.05)
                continue
            with self._cond:
                if self._frame_no > self._last_read:
                    self._rate.dropped += 1
                self._frame, self._preview = got
                self._frame_no += 1
                self._rate.tick(time.monotonic())
                self._cond.notify_all()

    def _wait(self, timeout: float, fresh: bool) -> tuple[np.ndarray, np.ndarray]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._frame is None or (fresh and self._frame_no <= self._last_read):
                left = deadline - time.monotonic()
                if left <= 0 or not self._running:
                    why = self._error or f"{self.name}: no frame for {timeout:.1f} s"
                    raise CameraFault(why)
                self._cond.wait(left)
            if fresh:
                self._last_read = self._frame_no
                self._rate.delivered += 1
            return self._frame, self._preview

    def read(self, timeout: float = 2.0) -> np.ndarray:
        return self._wait(timeout, fresh=True)[0]

    def preview(self, timeout: float = 2.0) -> np.ndarray:
        return self._wait(timeout, fresh=False)[1]

    def controls(self) -> dict[str, Any]:
        return {}

    def set_controls(self, **values: Any) -> None:
        if values:
            raise ValueError(f"{self.name} has no controls: {', '.join(values)}")

    def stats(self) -> dict[str, float]:
        with self._cond:
            return self._rate.stats()

    def close(self) -> None:
        self._running = False
        if self._thread:
            self._thread.join(timeout=2)
        self._stop()

    def _start(self) -> None: ...
    def _grab(self) -> tuple[np.ndarray, np.ndarray] | None: ...
    def _stop(self) -> None: ...


class OpenCVSource(ThreadedSource):
    """A USB camera (device index) or a video file / stream URL through cv2.VideoCapture."""

    def __init__(self, device: int | str = 0, width: int = 640, height: int = 480, fps: float = 30) -> None:
        super().__init__()
        self.device, self.width, self.height, self.fps = device, width, height, fps
        self.name = f"opencv:{device}"
        self._cap: cv2.VideoCapture | None = None
        self._is_file = isinstance(device, str) and not device.isdigit()

    def _start(self) -> None:
        dev = int(self.device) if isinstance(self.device, str) and self.device.isdigit() else self.device
        cap = cv2.VideoCapture(dev)
        if not cap.isOpened():
            raise CameraFault(f"{self.name}: cannot open camera")
        if not self._is_file:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.width)
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.height)
            cap.set(cv2.CAP_PROP_FPS, self.fps)
        self._cap = cap

    def _grab(self) -> tuple[np.ndarray, np.ndarray] | None:
        ok, frame = self._cap.read()
        if not ok:
            return None
        if self._is_file:
            time.sleep(1.0 / self.fps)  # play a file at camera speed
        if frame.shape[1] != self.width or frame.shape[0] != self.height:
            small = cv2.resize(frame, (self.width, self.height), interpolation=cv2.INTER_AREA)
            return small, frame
        return frame, frame

    _PROPS = {"exposure_us": cv2.CAP_PROP_EXPOSURE, "gain": cv2.CAP_PROP_GAIN}

    def controls(self) -> dict[str, Any]:
        cap = self._cap
        if cap is None or self._is_file:
            return {}
        return {name: cap.get(prop) for name, prop in self._PROPS.items()}

    def set_controls(self, **values: Any) -> None:
        props = self._PROPS
        unknown = set(values) - set(props) - {"awb"}
        if unknown or self._cap is None or self._is_file:
            raise ValueError(f"{self.name} cannot set: {', '.join(sorted(unknown or values))}")
        awb = values.pop("awb", None)
        if awb is not None:
            if awb != "auto" and awb not in AWB_KELVIN:
                raise ValueError(f"{self.name}: unknown white balance {awb!r}")
            self._cap.set(cv2.CAP_PROP_AUTO_WB, 1.0 if awb == "auto" else 0.0)
            if awb != "auto":
                self._cap.set(cv2.CAP_PROP_WB_TEMPERATURE, float(AWB_KELVIN[awb]))
        for key, value in values.items():
            self._cap.set(props[key], float(value))

    def _stop(self) -> None:
        if self._cap is not None:
            self._cap.release()


class Picamera2Source(ThreadedSource):
    """The Raspberry Pi camera: read on the small `lores` stream, preview on `main`.

    picamera2 is imported here only: it exists only on Raspberry Pi OS (python3-picamera2).
    """

    name = "picamera2"

    def __init__(self, width: int = 640, height: int = 480, fps: float = 30,
                 preview_size: tuple[int, int] = (1280, 960)) -> None:
        super().__init__()
        self.width, self.height, self.fps, self.preview_size = width, height, fps, preview_size
        self._cam = None

    def _start(self) -> None:
        try:
            from picamera2 import Picamera2  # only on a Pi
        except ImportError as e:
            raise CameraFault(f"picamera2 is not installed (apt install python3-picamera2): {e}") from None
        except Exception as e:  # e.g. apt's simplejpeg, built for numpy 1, under the venv's numpy 2
            raise CameraFault(f"picamera2 cannot be imported: {e} (with numpy 2 in the virtual environment "
                              "it needs simplejpeg from PyPI there too: run install.sh again)") from None
        try:
            cam = Picamera2()
            config = cam.create_video_configuration(
                main={"size": self.preview_size, "format": "RGB888"},
                lores={"size": (self.width, self.height), "format": "YUV420"},
                controls={"FrameRate": self.fps},
            )
            cam.configure(config)
            cam.start()
        except Exception as e:
            raise CameraFault(f"picamera2: cannot open camera: {e}") from None
        self._cam = cam

    def _grab(self) -> tuple[np.ndarray, np.ndarray] | None:
        request = self._cam.capture_request()
        try:
            lores = request.make_array("lores")
            main = request.make_array("main")
        finally:
            request.release()
        # RGB888 in picamera2 is BGR in memory order, which is what OpenCV wants.
        return cv2.cvtColor(lores, cv2.COLOR_YUV420p2BGR), main

    def controls(self) -> dict[str, Any]:
        if self._cam is None:
            return {}
        meta = self._cam.capture_metadata()
        return {"exposure_us": meta.get("ExposureTime"), "gain": meta.get("AnalogueGain"),
                "colour_gains": meta.get("ColourGains")}

    def set_controls(self, **values: Any) -> None:
        names = {"exposure_us": "ExposureTime", "gain": "AnalogueGain", "awb": "AwbMode"}
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f"picamera2 cannot set: {', '.join(sorted(unknown))}")
        if "awb" in values:  # libcamera's preset by name: Auto, Daylight, Tungsten, ...
            from libcamera import controls  # beside picamera2, only on a Pi

            try:
                values["awb"] = getattr(controls.AwbModeEnum, str(values["awb"]).capitalize())
            except AttributeError:
                raise ValueError(f"picamera2: unknown white balance {values['awb']!r}") from None
        self._cam.set_controls({names[k]: v for k, v in values.items()})

    def _stop(self) -> None:
        if self._cam is not None:
            self._cam.stop()
            self._cam.close()


class SimulatedSource:
    """A camera looking at the simulated holder: renders whatever ball is in it now.

    `scene()` returns the renderer's Scene of the ball in the holder, or None when it is empty.
    `stall()` makes it stop delivering frames, as a camera with a loose cable does.
    """

    name = "sim"

    def __init__(self, scene: Callable[[], Any], seed: int = 0, fps: float = 30) -> None:
        from vision.render import render  # imported late: the renderer pulls in Pillow fonts

        self._render = render
        self._scene = scene
        self._rng = np.random.default_rng(seed)
        self._interval = 1.0 / fps
        self._last = 0.0
        self._stalled = threading.Event()
        self._lock = threading.Lock()
        self._rate = _FrameRate()
        self._frame: np.ndarray | None = None
        self._open = False

    def open(self) -> None:
        self._open = True

    def stall(self, stalled: bool = True) -> None:
        (self._stalled.set if stalled else self._stalled.clear)()

    def read(self, timeout: float = 2.0) -> np.ndarray:
        if not self._open:
            raise CameraFault("sim: camera not open")
        if self._stalled.is_set():
            time.sleep(timeout)
            raise CameraFault(f"sim: no frame for {timeout:.1f} s")
        with self._lock:
            wait = self._last + self._interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # no faster than a real camera
            frame = self._render(self._scene(), self._rng)
            self._last = time.monotonic()
            self._rate.tick(self._last)
            self._rate.delivered += 1
            self._frame = frame
            return frame

    def preview(self, timeout: float = 2.0) -> np.ndarray:
        with self._lock:
            frame, fresh = self._frame, time.monotonic() - self._last < self._interval * 2
        return frame if frame is not None and fresh else self.read(timeout)

    def controls(self) -> dict[str, Any]:
        return {}

    def set_controls(self, **values: Any) -> None:
        if values:
            raise ValueError(f"the simulated camera has no controls: {', '.join(values)}")

    def stats(self) -> dict[str, float]:
        with self._lock:
            return self._rate.stats()

    def close(self) -> None:
        self._open = False
