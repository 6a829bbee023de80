"""Whole-path benchmark (not a test): simulated draws of all 75 balls, calls checked against the
simulator's truth. Run with `make bench-sim` (SEEDS="11 12" by default).

Prints per seed: calls, wrong calls, calls read by the camera, balls a person (the simulated
caller) had to confirm, readings, presentations asked for, and seconds. With --two-lamps the
appliance has glare lamps (camera.lights) and reads each frame from two exposures.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paho.mqtt.client as mqtt

from services.bench_footprint import start_broker


TWO_LAMPS = "\n[camera.lights]\npin_a = 5\npin_b = 6\n"


def draw_all(port: int, seed: int, folder: Path, two_lamps: bool = False) -> dict:
    device = f"bench-{seed}"
    messages: list[tuple[str, bytes]] = []
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.on_message = lambda c, u, m: messages.append((m.topic.rsplit("/", 1)[-1], m.payload))
    client.connect("127.0.0.1", port)
    client.subscribe(f"bingo/{device}/#", qos=1)
    client.loop_start()
    time.sleep(0.5)
    cfg = folder / "bench.toml"
    cfg.write_text("[web]\nenabled = false\n" + (TWO_LAMPS if two_lamps else ""))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "services.cli", "run", "--sim", "--balls", "75",
                           "--seed", str(seed), "--config", str(cfg), "--mqtt", f"mqtt://127.0.0.1:{port}",
                           "--device-id", device, "--record", str(folder / f"{seed}.db")],
                          capture_output=True)
    time.sleep(1)
    client.loop_stop()
    drawn = [json.loads(p)["ball"] for t, p in messages if t == "drawn"]
    calls = {json.loads(p)["seq"]: json.loads(p) for t, p in messages if t == "call"}
    calls_in_order = [calls[k] for k in sorted(calls)]
    reads = [json.loads(p) for t, p in messages if t == "read"]
    return {"seed": seed, "exit": proc.returncode, "drawn": len(drawn), "calls": len(calls_in_order),
            "wrong": sum(c["ball"] != d for c, d in zip(calls_in_order, drawn)),
            "camera": sum(c["source"] == "camera" for c in calls_in_order),
            "confirmed": sum(c["source"] == "console" for c in calls_in_order),
            "reads": len(reads), "represent": sum(r["decision"] == "represent" for r in reads),
            "seconds": round(time.monotonic() - started)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seeds", nargs="*", type=int, default=[11, 12])
    ap.add_argument("--two-lamps", action="store_true", help="glare lamps A and B (camera.lights)")
    args = ap.parse_args(argv)
    with start_broker() as port, tempfile.TemporaryDirectory() as tmp:
        rows = [draw_all(port, seed, Path(tmp), args.two_lamps) for seed in args.seeds]
    print("simulated draws of 75 balls, calls checked against the simulator's truth"
          + (", two glare lamps" if args.two_lamps else ""))
    print(f"{'seed':>5}{'calls':>7}{'wrong':>7}{'camera':>8}{'confirmed':>11}{'reads':>7}{'again':>7}{'s':>6}")
    for r in rows:
        print(f"{r['seed']:>5}{r['calls']:>7}{r['wrong']:>7}{r['camera']:>8}{r['confirmed']:>11}{r['reads']:>7}"
              f"{r['represent']:>7}{r['seconds']:>6}")
    return 1 if any(r["wrong"] or r["exit"] or r["calls"] != r["drawn"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
