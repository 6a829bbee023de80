"""The `ballreader` command."""
from __future__ import annotations

import argparse
import faulthandler
import importlib
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from services.config import ConfigError, load_config


STOP_STACKS_AFTER_S = 25.0


def _run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    updates: dict = {}
    if args.device_id:
        updates["device_id"] = args.device_id
    if args.mqtt:
        updates.setdefault("mqtt", cfg.mqtt.model_dump())["url"] = args.mqtt
    if args.sim:
        updates.setdefault("camera", cfg.camera.model_dump())["kind"] = "sim"
    if args.record:
        updates.setdefault("record", cfg.record.model_dump())["path"] = args.record
    if updates:
        from services.config import parse_config

        cfg = parse_config({**cfg.model_dump(), **updates}, "command line")
    if cfg.camera.kind == "sim" and not args.sim:
        raise ConfigError("camera.kind is 'sim': run with --sim, or set a real camera in the config")

    from services.appliance import Appliance

    appliance = Appliance(cfg, sim=args.sim, seed=args.seed, balls=args.balls, config_path=args.config)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    appliance.start()
    logging.info("ballreader %s running (device %s, broker %s)", "simulation" if args.sim else "appliance",
                 cfg.device_id, cfg.mqtt.url)
    waiter = threading.Thread(target=lambda: (appliance.wait(), stop.set()), daemon=True)
    waiter.start()
    stop.wait()
    logging.info("stopping")
    # A stop that hangs (a thread that will not end holds the process up at exit)
    # leaves every thread's stack in the log; systemd or a test kills it later.
    faulthandler.dump_traceback_later(STOP_STACKS_AFTER_S)
    appliance.stop()
    logging.info("stopped")
    return 0


def _read(args: argparse.Namespace) -> int:
    from vision.glare import glare_free
    from vision.reader import BallReader, ImageError, load_image

    if args.pairs and len(args.images) % 2:
        print("ballreader read --pairs: give the images two by two (lamp A, lamp B)", file=sys.stderr)
        return 2
    reader = BallReader()
    failed = False
    step = 2 if args.pairs else 1
    for i in range(0, len(args.images), step):
        shots = args.images[i:i + step]
        line = {"images": shots} if args.pairs else {"image": shots[0]}
        try:
            frames = [load_image(path) for path in shots]
            r = reader.read(glare_free(*frames) if args.pairs else frames[0])
            line.update(ball=r.ball, letter=r.letter, number=r.number, confidence=round(r.confidence, 4),
                        ms=round(r.ms, 2))
            if r.reason and r.ball is None:
                line["reason"] = r.reason
        except (ImageError, ValueError) as e:  # ValueError: a pair of different sizes
            failed = True
            line["error"] = str(e)
        print(json.dumps(line), flush=True)
    return 1 if failed else 0


def _config_check(args: argparse.Namespace) -> int:
    load_config(args.path)
    print(f"{args.path}: ok")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ballreader", description="Bingo ball reader appliance")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the appliance")
    run.add_argument("--config", type=Path, help="TOML config file (default: built-in defaults)")
    run.add_argument("--sim", action="store_true", help="simulated blower, sensor and camera")
    run.add_argument("--balls", type=int, help="simulation: stop after N draws")
    run.add_argument("--seed", type=int, help="simulation: make the run repeatable")
    run.add_argument("--mqtt", help="broker, mqtt://HOST:PORT (overrides the config)")
    run.add_argument("--device-id", help="device id in topics (overrides the config)")
    run.add_argument("--record", help="record (SQLite journal) path (overrides the config)")
    run.set_defaults(func=_run)

    read = sub.add_parser("read", help="read balls in image files, one JSON line per image")
    read.add_argument("--json", action="store_true", help="JSON lines (the default and only format)")
    read.add_argument("--pairs", action="store_true",
                      help="images two by two, one under each glare lamp: each pair is read as one "
                           "frame (aligned, then their per-pixel minimum), as the appliance does with camera.lights")
    read.add_argument("images", nargs="+")
    read.set_defaults(func=_read)

    config = sub.add_parser("config", help="configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    check = config_sub.add_parser("check", help="validate a config file and exit")
    check.add_argument("path", type=Path)
    check.set_defaults(func=_config_check)

    # Subcommands that live with the part they serve; each module adds its own parser.
    for module in _SUBCOMMAND_MODULES:
        importlib.import_module(module).add_parser(sub)
    return parser


_SUBCOMMAND_MODULES = ("services.console_cli", "services.audit", "services.web.passwd")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"ballreader: config error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
