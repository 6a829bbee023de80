"""Run the real appliance as a separate process, as systemd would, for end-to-end tests.

    proc = start_appliance(tmp_path, broker, "--sim", "--balls", "5", "--seed", "7")
    proc.wait(timeout=120)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomli_w

ROOT = Path(__file__).resolve().parent.parent


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(tomli_w.dumps(config))
    return path


def start_appliance(tmp_path: Path, broker, *args: str, device_id: str = "t1",
                    config: dict[str, Any] | None = None, record: Path | None = None,
                    log_name: str = "appliance.log") -> subprocess.Popen:
    """`ballreader run` against `broker`, with its record in tmp_path; output to a log file."""
    config = dict(config or {})
    config.setdefault("web", {"port": 0})  # any free port: appliances of other tests may still be up
    cfg_path = write_config(tmp_path / "ballreader.toml", config)
    record = record or tmp_path / "record.db"
    cmd = [sys.executable, "-m", "services.cli", "run", "--config", str(cfg_path),
           "--mqtt", broker.url, "--device-id", device_id, "--record", str(record), *args]
    log = open(tmp_path / log_name, "ab")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env)
    log.close()
    proc.log_path = tmp_path / log_name
    return proc


def log_of(proc) -> str:
    return Path(proc.log_path).read_text(errors="replace")[-4000:]
