"""`ballreader audit`: check the record's chain, and export it for an examiner (Delaware 4.5).

    ballreader audit verify [--record PATH | --config PATH] [--anchor EVENT:HASH ...] [--anchors FILE]
    ballreader audit export --from 2026-12-02 --to 2026-12-03 --out DIR [--record PATH | --config PATH]

`verify` exits 0 when the record is intact and 1 with every problem listed when it is not
(an edited, inserted or deleted row, a cut-off end, a gap in the call numbers). With anchors,
the event ids and hashes published in `state` messages at the time (`record`) and kept by
someone else, it also finds a record rewritten with every hash recomputed. `export` writes
the events in the time range as CSV and JSON, the calls on their own as CSV, the frame of each
called ball as `frames/<event id>.jpg`, and a manifest with the SHA-256 of every file.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import string
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from services.config import load_config
from services.record import Event, Record, utc_now

CALL_FIELDS = ("event_id", "ts", "seq", "game", "index", "ball", "number", "confidence", "source",
               "event_type", "voids_seq", "reason", "by", "frame")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add `audit verify` and `audit export` to the `ballreader` command."""
    audit = subparsers.add_parser("audit", help="check and export the official record")
    sub = audit.add_subparsers(dest="audit_command", required=True)

    verify = sub.add_parser("verify", help="check the record's hash chain; exit 1 if it is broken")
    _record_args(verify)
    verify.add_argument("--anchor", action="append", default=[], type=parse_anchor, metavar="EVENT:HASH",
                        help="an event id and the hash published for it in a state message (repeatable)")
    verify.add_argument("--anchors", type=Path, metavar="FILE",
                        help="state messages kept by someone else, one per line (mosquitto_sub output, "
                             "with or without the topic): each one's record is an anchor")
    verify.set_defaults(func=verify_command)

    export = sub.add_parser("export", help="write events, calls and frames of a time range for an examiner")
    _record_args(export)
    export.add_argument("--from", dest="start", required=True, type=parse_time,
                        help="start, ISO 8601 (a date, or a time; without an offset it is UTC)")
    export.add_argument("--to", dest="end", required=True, type=parse_time,
                        help="end (not included), ISO 8601")
    export.add_argument("--out", required=True, type=Path, help="folder to write into (created)")
    export.set_defaults(func=export_command)
    return audit


def _record_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--record", type=Path, help="the record (SQLite journal)")
    where.add_argument("--config", type=Path, help="take the record's path from this config file")


def parse_time(text: str) -> datetime:
    """An ISO 8601 date or time as aware UTC; a time without an offset is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def parse_anchor(text: str) -> tuple[int, str]:
    event, _, digest = text.partition(":")
    if not event.isdigit() or len(digest) != 64 or not all(c in string.hexdigits for c in digest):
        raise argparse.ArgumentTypeError(f"expected EVENT:HASH (an event id and 64 hex digits): {text!r}")
    return int(event), digest.lower()


def read_anchors(path: Path) -> dict[int, str]:
    """The `record` of every state message in a file of them, one per line (a topic before it
    is allowed); lines without one are skipped, a line that is not JSON is an error."""
    anchors: dict[int, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        start = line.find("{")
        if start < 0:
            continue
        try:
            state = json.loads(line[start:])
        except ValueError:
            raise ValueError(f"{path}:{n}: not a JSON message") from None
        head = state.get("record") if isinstance(state, dict) else None
        if isinstance(head, dict) and isinstance(head.get("event"), int) and head["event"] > 0:
            anchors[head["event"]] = str(head.get("hash"))
    return anchors


def record_path(args: argparse.Namespace) -> Path:
    if getattr(args, "record", None):
        return args.record
    return load_config(getattr(args, "config", None)).record.path


def _open(args: argparse.Namespace) -> Record | None:
    """The record the command names, or None after saying it is missing.

    Record() would create an empty journal where none is: an examiner must hear it is missing.
    """
    path = record_path(args)
    if not path.is_file():
        print(f"ballreader audit: no record at {path}", file=sys.stderr)
        return None
    return Record(path)


def problems(record: Record, anchors: dict[int, str] | None = None) -> list[str]:
    """The chain's problems (anchors: see Record.verify), and gaps or repeats in the call numbers (seq)."""
    found = record.verify(anchors)
    expected = 1
    for event in record.events(("call", "void")):
        seq = event.data.get("seq")
        if seq != expected:
            found.append(f"event {event.id}: call seq {seq}, expected {expected}")
        expected = (seq if isinstance(seq, int) else expected) + 1
    return found


def verify_command(args: argparse.Namespace) -> int:
    try:
        anchors = read_anchors(args.anchors) if args.anchors else {}
    except (OSError, ValueError) as e:
        print(f"ballreader audit verify: {e}", file=sys.stderr)
        return 2
    anchors.update(dict(args.anchor))
    record = _open(args)
    if record is None:
        return 2
    try:
        found = problems(record, anchors)
        last = record.last_id()
    finally:
        record.close()
    if found:
        print(f"{record.path}: the record is NOT intact ({len(found)} problem(s)):")
        for problem in found:
            print(f"  {problem}")
        return 1
    pinned = f", {len(anchors)} published hash(es) match" if anchors else ""
    print(f"{record.path}: intact, {last} events, hash chain and call numbers check out{pinned}")
    return 0


def _in_range(event: Event, start: datetime, end: datetime) -> bool:
    return start <= parse_time(event.ts) < end


def _event_json(event: Event) -> dict[str, Any]:
    return {"id": event.id, "ts": event.ts, "clock_ok": event.clock_ok, "kind": event.kind,
            "data": event.data, "prev": event.prev, "hash": event.hash}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def export(record: Record, start: datetime, end: datetime, out: Path) -> dict[str, Any]:
    """Write the events from `start` (included) to `end` (not included) into `out`; the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    frames_dir = out / "frames"
    events = [e for e in record.events() if _in_range(e, start, end)]
    calls: list[dict[str, Any]] = []
    for e in events:
        jpeg = record.frame(e.id)
        frame = None
        if jpeg is not None:
            frames_dir.mkdir(exist_ok=True)
            frame = f"frames/{e.id}.jpg"
            (out / frame).write_bytes(jpeg)
        if e.kind in ("call", "void"):
            calls.append({**{k: e.data.get(k) for k in CALL_FIELDS}, "event_id": e.id, "frame": frame})

    with open(out / "events.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "ts", "clock_ok", "kind", "data", "prev", "hash"])
        for e in events:
            writer.writerow([e.id, e.ts, int(e.clock_ok), e.kind,
                             json.dumps(e.data, sort_keys=True, ensure_ascii=False), e.prev, e.hash])
    with open(out / "calls.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CALL_FIELDS)
        writer.writeheader()
        writer.writerows(calls)
    (out / "events.json").write_text(json.dumps([_event_json(e) for e in events], indent=1, ensure_ascii=False),
                                     encoding="utf-8")

    found = problems(record)
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {"record": str(record.path), "from": start.isoformat(), "to": end.isoformat(),
                "exported_at": utc_now(), "events": len(events), "calls": len(calls),
                "first_event": events[0].id if events else None, "last_event": events[-1].id if events else None,
                "record_last_event": record.last_id(), "chain_intact": not found, "problems": found,
                "files": {str(p.relative_to(out)): _sha256(p) for p in files}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    return manifest


def export_command(args: argparse.Namespace) -> int:
    if args.end <= args.start:
        print("ballreader audit: --to must be after --from", file=sys.stderr)
        return 2
    record = _open(args)
    if record is None:
        return 2
    try:
        manifest = export(record, args.start, args.end, args.out)
    finally:
        record.close()
    print(f"{args.out}: {manifest['events']} events, {manifest['calls']} calls, "
          f"{sum(1 for f in manifest['files'] if f.startswith('frames/'))} frames")
    if not manifest["chain_intact"]:
        print(f"WARNING: the record is NOT intact ({len(manifest['problems'])} problem(s)):")
        for problem in manifest["problems"]:
            print(f"  {problem}")
        return 1
    return 0

