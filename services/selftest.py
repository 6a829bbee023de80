"""Self-test at boot, before any MQTT traffic: the installed code, the record, the camera and
the sensor. Each failure is a fault; the appliance records and publishes them.

A broken record stays broken, so its fault would come back at every boot; once a technician has
cleared it, the same problems (acknowledged in the clear event) no longer raise it.
"""
from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from services.record import Record

CODE_FAULT = "code_integrity"
RECORD_FAULT = "record_integrity"
CAMERA_FAULT = "camera"
SENSOR_FAULT = "sensor"


@dataclass
class Finding:
    code: str
    message: str
    affects_calls: bool = True
    detail: list[str] | None = None


def default_manifest() -> Path:
    """install.sh writes MANIFEST.sha256 beside the venv (/opt/ballreader/)."""
    return Path(os.environ.get("BALLREADER_MANIFEST", Path(sys.prefix).parent / "MANIFEST.sha256"))


def check_code(manifest: Path) -> Finding | None:
    if not manifest.exists():
        return None  # a development checkout: nothing installed to check
    base = manifest.parent
    bad: list[str] = []
    for line in manifest.read_text().splitlines():
        if not line.strip():
            continue
        digest, _, name = line.partition("  ")
        path = base / name
        try:
            actual = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            bad.append(f"{name}: missing")
            continue
        if actual != digest:
            bad.append(f"{name}: changed")
    if bad:
        return Finding(CODE_FAULT, f"installed code differs from its manifest: {bad[0]}"
                       + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""), detail=bad)
    return None


def acknowledged_record_problems(record: Record) -> list[str]:
    """The problems a technician acknowledged when last clearing the record fault."""
    acknowledged: list[str] = []
    for event in record.events(("fault_cleared",)):
        if event.data.get("code") == RECORD_FAULT:
            acknowledged = event.data.get("acknowledged", [])
    return acknowledged


def check_record(record: Record) -> Finding | None:
    problems = record.verify()
    if not problems or problems == acknowledged_record_problems(record):
        return None
    return Finding(RECORD_FAULT, f"the record fails its integrity check: {problems[0]}"
                   + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""), detail=problems)


def check_camera(camera, timeout: float) -> Finding | None:
    from vision.frame_source import CameraFault

    try:
        camera.read(timeout=timeout)
    except CameraFault as e:
        return Finding(CAMERA_FAULT, str(e))
    return None
