"""`ballreader console`: talk to an appliance over MQTT from a shell.

    ballreader console request <command> [JSON] [--mqtt URL] [--device-id ID] [--timeout S]
        send request/<command>, print the response (one JSON line);
        exit 0 on status ok, 1 on status error, 2 when no answer came in time
    ballreader console follow [--json] [--count N] [--session NAME]
        print each call as one line as it is made, repeats dropped by seq

It uses only the published MQTT contract (docs/mqtt.md), like any integrator's tool.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt

EXIT_OK, EXIT_ERROR, EXIT_NO_ANSWER = 0, 1, 2


def add_parser(subparsers) -> argparse.ArgumentParser:
    console = subparsers.add_parser("console", help="send requests to an appliance, follow its calls")
    sub = console.add_subparsers(dest="console_command", required=True)

    request = sub.add_parser("request", help="send one request and print the response")
    # Any name is sent: the appliance answers an unknown command with an error.
    request.add_argument("name", metavar="command",
                         help="e.g. status, drawn, new_game, manual_call, void (all in docs/mqtt.md)")
    request.add_argument("payload", nargs="?", default="{}", help="the arguments as a JSON object")
    request.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the response")
    _connection_args(request)

    follow = sub.add_parser("follow", help="print each call as one line")
    follow.add_argument("--json", action="store_true", help="print the call messages as JSON lines")
    follow.add_argument("--count", type=int, help="exit after this many calls")
    follow.add_argument("--session", help="client id for a persistent session: calls made while "
                                          "follow is stopped are printed when it starts again")
    _connection_args(follow)

    console.set_defaults(func=run)
    return console


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="take broker, prefix and device id from this config file")
    p.add_argument("--mqtt", help="broker, mqtt://HOST:PORT or mqtts://HOST:PORT (TLS)")
    p.add_argument("--device-id", help="the appliance's device id")
    p.add_argument("--prefix", help="topic prefix (default bingo)")
    p.add_argument("--username", help="broker user; the password comes from $BALLREADER_MQTT_PASSWORD")


def run(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args)
    except ValueError as e:
        print(f"ballreader console: {e}", file=sys.stderr)
        return EXIT_ERROR
    if args.console_command == "request":
        return _request(args, settings)
    return _follow(args, settings)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """Command line over config file over defaults."""
    s = {"url": "mqtt://127.0.0.1:1883", "prefix": "bingo", "device_id": "ballreader", "username": None}
    if args.config:
        from services.config import ConfigError, load_config

        try:
            cfg = load_config(args.config)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        s.update(url=cfg.mqtt.url, prefix=cfg.mqtt.prefix, device_id=cfg.device_id, username=cfg.mqtt.username)
    for key in ("mqtt", "prefix", "device_id", "username"):
        value = getattr(args, key, None)
        if value:
            s["url" if key == "mqtt" else key] = value
    parts = urlsplit(s["url"])
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise ValueError(f"broker must be mqtt://HOST:PORT or mqtts://HOST:PORT, not {s['url']!r}")
    s.update(host=parts.hostname, port=parts.port or (8883 if parts.scheme == "mqtts" else 1883),
             tls=parts.scheme == "mqtts", base=f"{s['prefix']}/{s['device_id']}")
    return s


def _connect(settings: dict[str, Any], topics: list[str], messages: queue.Queue, client_id: str = "",
             timeout: float = 5.0) -> mqtt.Client:
    """A connected client subscribed (QoS 1) to `topics`; every message goes to `messages`."""
    ready: queue.Queue = queue.Queue()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                         clean_session=not client_id)
    if settings["username"]:
        client.username_pw_set(settings["username"], os.environ.get("BALLREADER_MQTT_PASSWORD"))
    if settings["tls"]:
        client.tls_set()

    def on_connect(c, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            ready.put(f"broker refused the connection: {reason_code}")
        else:
            c.subscribe([(t, 1) for t in topics])

    client.on_connect = on_connect
    client.on_subscribe = lambda *a: ready.put(None)
    client.on_message = lambda c, u, msg: messages.put(msg)
    try:
        client.connect(settings["host"], settings["port"], keepalive=30)
    except OSError as e:
        raise ConnectionError(f"cannot reach {settings['url']}: {e}") from None
    client.loop_start()
    try:
        problem = ready.get(timeout=timeout)
    except queue.Empty:
        problem = f"no answer from {settings['url']} in {timeout:g} s"
    if problem:
        client.loop_stop()
        raise ConnectionError(problem)
    return client


def _request(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as e:
        print(f"ballreader console: the arguments are not JSON: {e}", file=sys.stderr)
        return EXIT_ERROR
    if not isinstance(payload, dict):
        print("ballreader console: the arguments must be a JSON object, e.g. '{\"ball\": \"B12\"}'",
              file=sys.stderr)
        return EXIT_ERROR
    payload.setdefault("transaction", f"console-{uuid.uuid4().hex[:12]}")
    payload.setdefault("by", "ballreader-console")
    messages: queue.Queue = queue.Queue()
    base = settings["base"]
    try:
        # Subscribe to the response before asking, or a quick answer is missed.
        client = _connect(settings, [f"{base}/response/{args.name}"], messages, timeout=args.timeout)
    except ConnectionError as e:
        print(f"ballreader console: {e}", file=sys.stderr)
        return EXIT_NO_ANSWER
    try:
        client.publish(f"{base}/request/{args.name}", json.dumps(payload), qos=1, retain=False)
        deadline = time.monotonic() + args.timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = messages.get(timeout=left)
            except queue.Empty:
                break
            try:
                response = json.loads(msg.payload)
            except json.JSONDecodeError:
                continue
            # Another console's answer on the same topic is not ours.
            if isinstance(response, dict) and response.get("transaction") == payload["transaction"]:
                print(json.dumps(response, ensure_ascii=False), flush=True)
                return EXIT_OK if response.get("status") == "ok" else EXIT_ERROR
        print(f"ballreader console: no response from {base} to {args.name} in {args.timeout:g} s "
              "(is the appliance online? is --device-id right?)", file=sys.stderr)
        return EXIT_NO_ANSWER
    finally:
        client.disconnect()
        client.loop_stop()


def call_line(call: dict[str, Any]) -> str:
    """'seq 41  game 3  #3  N33  camera 0.998  2026-12-02T19:41:07Z' (or VOID ... for a void)."""
    what = f"VOID {call['ball']} (seq {call.get('voids_seq')})" if call.get("event_type") == "voided" \
        else call["ball"]
    return (f"seq {call['seq']}  game {call['game']}  #{call['index']}  {what}  "
            f"{call['source']} {call['confidence']:.3f}  {call['ts']}")


def _follow(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    messages: queue.Queue = queue.Queue()
    base = settings["base"]
    try:
        client = _connect(settings, [f"{base}/call", f"{base}/availability"], messages,
                          client_id=args.session or "")
    except ConnectionError as e:
        print(f"ballreader console: {e}", file=sys.stderr)
        return EXIT_NO_ANSWER
    last_seq, printed = 0, 0
    try:
        while args.count is None or printed < args.count:
            msg = messages.get()
            if msg.topic.endswith("/availability"):
                print(f"# {settings['device_id']} is {msg.payload.decode(errors='replace')}", file=sys.stderr,
                      flush=True)
                continue
            try:
                call = json.loads(msg.payload)
                seq = call["seq"]
                line = json.dumps(call, ensure_ascii=False) if args.json else call_line(call)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                print(f"# not a call message: {msg.payload[:200]!r}", file=sys.stderr, flush=True)
                continue
            if seq <= last_seq:  # a QoS 1 repeat
                continue
            if last_seq and seq != last_seq + 1:
                print(f"# seq {last_seq + 1}..{seq - 1} missed (see request status)", file=sys.stderr,
                      flush=True)
            last_seq = seq
            print(line, flush=True)
            printed += 1
    except KeyboardInterrupt:
        pass
    finally:
        client.disconnect()
        client.loop_stop()
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """`python -m services.console_cli ...`, the same as `ballreader console ...`."""
    parser = argparse.ArgumentParser(prog="ballreader")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main(["console", *sys.argv[1:]]))
