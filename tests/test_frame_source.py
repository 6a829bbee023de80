"""Camera frame sources: OpenCV's VideoCapture on a real video file, and picamera2's controls
with libcamera's bindings stood in for (they exist only on a Raspberry Pi)."""
import sys
import types

import cv2
import numpy as np
import pytest

from vision.frame_source import CameraFault, OpenCVSource, Picamera2Source


def video(path, size, frames=60):
    """A file whose frames get brighter one after the other."""
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, size)
    for k in range(frames):
        frame = np.full((size[1], size[0], 3), 4 * k, np.uint8)
        out.write(frame)
    out.release()
    return path


def test_a_video_file_gives_its_frames_in_order_at_the_reading_size(tmp_path):
    source = OpenCVSource(str(video(tmp_path / "big.avi", (1280, 960))), fps=60)
    source.open()
    try:
        first, second = source.read(), source.read()
        assert first.shape == (480, 640, 3) and source.preview().shape == (960, 1280, 3)
        assert second.mean() > first.mean()  # a newer frame each time
        assert source.controls() == {}
        with pytest.raises(ValueError, match="cannot set"):
            source.set_controls(awb="daylight")  # a file has no white balance to set
    finally:
        source.close()


def test_a_file_that_ends_or_is_missing_is_a_camera_fault(tmp_path):
    source = OpenCVSource(str(video(tmp_path / "short.avi", (640, 480), frames=2)), fps=60)
    source.open()
    try:
        with pytest.raises(CameraFault, match="no frame for 0.5 s"):
            for _ in range(5):
                source.read(timeout=0.5)
    finally:
        source.close()
    with pytest.raises(CameraFault, match="cannot open"):
        OpenCVSource(str(tmp_path / "missing.avi")).open()


class FakeCamera:
    def __init__(self):
        self.sent = []

    def set_controls(self, controls):
        self.sent.append(controls)


def test_picamera2_white_balance_is_set_by_libcamera_preset(monkeypatch):
    enum = types.SimpleNamespace(Auto=0, Tungsten=2, Fluorescent=3, Indoor=4, Daylight=5)
    monkeypatch.setitem(sys.modules, "libcamera", types.SimpleNamespace(controls=types.SimpleNamespace(AwbModeEnum=enum)))
    source = Picamera2Source()
    source._cam = FakeCamera()
    source.set_controls(awb="daylight", gain=2.0)
    assert source._cam.sent == [{"AwbMode": 5, "AnalogueGain": 2.0}]
    with pytest.raises(ValueError, match="unknown white balance 'sunset'"):
        source.set_controls(awb="sunset")
    with pytest.raises(ValueError, match="cannot set: focus"):
        source.set_controls(focus=1)


def test_a_picamera2_that_cannot_be_imported_is_a_camera_fault_not_a_crash(monkeypatch):
    # What Raspberry Pi OS's picamera2 does under numpy 2 when apt's simplejpeg was built for
    # numpy 1 (raspberrypi/picamera2#1088): the import raises ValueError, not ImportError.
    broken = types.ModuleType("picamera2")

    def attribute(name):
        raise ValueError("numpy.dtype size changed, may indicate binary incompatibility")

    broken.__getattr__ = attribute
    monkeypatch.setitem(sys.modules, "picamera2", broken)
    with pytest.raises(CameraFault, match="cannot be imported: numpy.dtype size changed.*simplejpeg"):
        Picamera2Source().open()
