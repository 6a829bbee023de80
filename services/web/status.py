"""What the status, sensor and ball check pages show: plain dicts read from the appliance."""
from __future__ import annotations

import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from vision.balls import ball_name, parse_ball

THERMAL = Path("/sys/class/thermal")


def cpu_temperature_c(root: Path = THERMAL) -> float | None:
    """The CPU's temperature where the kernel reports one (a Pi does; most containers do not)."""
    zones = sorted(root.glob("thermal_zone*"))
    # Prefer a zone that says it is the CPU; else the first one that reads.
    zones.sort(key=lambda z: 0 if "cpu" in _read(z / "type").lower() or "x86_pkg" in _read(z / "type") else 1)
    for zone in zones:
        try:
            return round(int(_read(zone / "temp")) / 1000, 1)
        except ValueError:
            continue
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def version() -> str:
    try:
        return metadata.version("ballreader")
    except metadata.PackageNotFoundError:
        return "unknown"


def status(appliance) -> dict[str, Any]:
    record_dir = Path(appliance.cfg.record.path).resolve().parent
    disk = shutil.disk_usage(record_dir)
    state = appliance.engine.state()
    game = state["game"]
    return {
        "device_id": appliance.cfg.device_id,
        "simulation": bool(appliance.sim),
        "mqtt_connected": appliance.mqtt.connected.is_set(),
        "mqtt_url": appliance.cfg.mqtt.url,
        "camera": getattr(appliance.camera, "name", "camera"),
        "camera_fps": appliance.camera.stats().get("fps", 0.0),
        "cpu_temp_c": cpu_temperature_c(),
        "disk_free_mb": round(disk.free / 2 ** 20),
        "disk_min_free_mb": appliance.cfg.record.min_free_mb,
        "version": version(),
        "uptime_s": round(time.monotonic() - appliance.started),
        "game": {"number": game["number"], "status": game["status"], "count": game["count"]} if game else None,
        "faults": state["faults"],
    }


def sensor(appliance) -> dict[str, Any]:
    s = appliance.sensor
    if s is None:
        return {"running": False}
    return {"running": True, "active": s.active, "balls_seen": s.balls_seen, "fault": s.fault,
            "settings": s.settings, "faults": s.faults[-10:]}


def _numbers(names) -> set[int]:
    return {parse_ball(str(name)) for name in names or []}


def ball_check(appliance) -> dict[str, Any]:
    """The 75-ball grid of the occasion's running or last ball check.

    Read from `engine.occasion_info()` (read-only: a page view must not record anything).
    """
    from services.commands import COMMANDS
    from services.engine import Refused

    available = "ball_check" in COMMANDS
    try:
        check = appliance.engine.occasion_info().get("ball_check")
    except Refused:  # no occasion open
        check = None
    if not check:
        return {"available": available, "status": "none", "balls": [], "counts": {}}
    missing, duplicated = _numbers(check.get("missing")), _numbers(check.get("duplicated"))
    balls = [{"number": n, "ball": ball_name(n),
              "state": "duplicated" if n in duplicated else "missing" if n in missing else "seen"}
             for n in range(1, 76)]
    if check.get("running"):
        state = "running"
    else:
        state = "passed" if check.get("passed") else "failed"
    return {"available": available, "status": state, "check": check.get("check"), "balls": balls,
            "counts": {"seen": check.get("seen", 0), "missing": len(missing), "duplicated": len(duplicated),
                       "unreadable": check.get("unreadable", 0)}}
