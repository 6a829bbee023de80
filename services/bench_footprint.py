"""Footprint benchmark (not a test): resident memory and CPU of the simulated appliance,
idle and while calling a ball about every 2 s. Run with `make bench-footprint`.

Targets (issue 7): under 150 MB resident, under 5% of one core when idle. The process gets the
environment of the systemd unit (MALLOC_ARENA_MAX).
The simulated camera renders frames in the appliance process itself, which a real camera
would not: the figures are an upper bound for the Pi's own work per frame.
"""
from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
UNIT = Path(__file__).resolve().parent.parent / "systemd" / "ballreader.service"


def unit_environment() -> dict[str, str]:
    """The Environment= settings of the appliance's systemd unit: measured as it runs there."""
    settings = [line.split("=", 1)[1].split() for line in UNIT.read_text().splitlines()
                if line.startswith("Environment=")]
    return dict(pair.split("=", 1) for line in settings for pair in line)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(pid: int, seconds: float, step: float = 2.0) -> tuple[list[float], list[float]]:
    """RSS samples (MB) and CPU share of one core per step."""
    rss, cpu = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c0, t0 = _cpu_s(pid), time.monotonic()
        time.sleep(step)
        cpu.append(100 * (_cpu_s(pid) - c0) / (time.monotonic() - t0))
        rss.append(_rss_mb(pid))
    return rss, cpu


def run(label: str, gap_s: float, port: int, folder: Path, warmup: float, seconds: float) -> dict:
    cfg = folder / f"{label}.toml"
    cfg.write_text(f"[sim]\ngap_s = {gap_s}\nhold_s = 0.5\n[web]\nport = 0\n")
    proc = subprocess.Popen([sys.executable, "-m", "services.cli", "run", "--sim", "--seed", "1",
                             "--config", str(cfg), "--mqtt", f"mqtt://127.0.0.1:{port}",
                             "--device-id", "bench", "--record", str(folder / f"{label}.db")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **unit_environment()})
    try:
        time.sleep(warmup)
        rss, cpu = measure(proc.pid, seconds)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {"label": label, "rss_median": statistics.median(rss), "rss_max": max(rss),
            "cpu_median": statistics.median(cpu), "cpu_max": max(cpu), "samples": len(cpu)}


@contextmanager
def start_broker() -> Iterator[int]:
    """A throwaway mosquitto on a free loopback port."""
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    port = _free_port()
    broker = subprocess.Popen([mosquitto, "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        yield port
    finally:
        broker.terminate()
        broker.wait(timeout=10)


def main() -> int:
    with start_broker() as port, tempfile.TemporaryDirectory() as tmp:
        # Idle: the first ball is called, then the blower waits an hour.
        idle = run("idle", 3600, port, Path(tmp), warmup=8, seconds=30)
        # Calling: about one ball every 2 s (hold 0.5 s + gap + reading).
        busy = run("calling", 1.0, port, Path(tmp), warmup=5, seconds=30)
    print("ballreader footprint (simulation; 2 s samples over 30 s)")
    print(f"{'state':<10}{'RSS median MB':>15}{'RSS max MB':>12}{'CPU median %':>14}{'CPU max %':>11}")
    for r in (idle, busy):
        print(f"{r['label']:<10}{r['rss_median']:>15.1f}{r['rss_max']:>12.1f}{r['cpu_median']:>14.1f}"
              f"{r['cpu_max']:>11.1f}")
    ok = idle["rss_max"] < 150 and busy["rss_max"] < 150 and idle["cpu_median"] < 5
    print("targets (RSS < 150 MB, idle CPU < 5% of one core):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
