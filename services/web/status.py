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


def _numbers(items) -> list[int]:
    """Ball numbers from a list (or dict keys) of numbers or names such as "B12"."""
    out = []
    for item in items or []:
        try:
            out.append(item if isinstance(item, int) else parse_ball(str(item)))
        except ValueError:
            continue
    return out


def ball_check(appliance) -> dict[str, Any]:
    """The 75-ball grid: state of each ball in the current or last ball check.

    Reads `engine.state()["ball_check"]` (seen / missing / duplicated / unreadable), which the
    draw engine provides once the `ball_check` command exists.
    """
    from services.commands import COMMANDS

    check = appliance.engine.state().get("ball_check")
    available = "ball_check" in COMMANDS
    if not check:
        return {"available": available, "status": "none", "balls": [], "counts": {}}
    seen = check.get("seen") or []
    counts: dict[int, int] = {}
    if isinstance(seen, dict):
        for key, n in seen.items():
            for number in _numbers([key]):
                counts[number] = int(n)
    else:
        for number in _numbers(seen):
            counts[number] = counts.get(number, 0) + 1
    for number in _numbers(check.get("duplicated")):
        counts[number] = max(counts.get(number, 0), 2)
    balls = []
    for number in range(1, 76):
        n = counts.get(number, 0)
        balls.append({"number": number, "ball": ball_name(number), "seen": n,
                      "state": "duplicated" if n > 1 else "seen" if n == 1 else "missing"})
    unreadable = check.get("unreadable", 0)
    return {"available": available, "status": check.get("status", "running"), "balls": balls,
            "counts": {"seen": sum(1 for b in balls if b["seen"]),
                       "missing": sum(1 for b in balls if not b["seen"]),
                       "duplicated": sum(1 for b in balls if b["seen"] > 1),
                       "unreadable": len(unreadable) if isinstance(unreadable, list) else int(unreadable)},
            "passed": check.get("passed")}
