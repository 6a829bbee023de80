"""The live feed: Server-Sent Events at `/events` for the flashboard and the console.

The appliance calls its observers from its own threads (reader, MQTT, web requests) with
(kind, payload), kind in state | call | read. The observer here only serialises the payload
and hands it to the event loop with `call_soon_threadsafe`: a call never waits for a page.
In the loop each connected client has its own bounded queue; a client too slow to keep up
loses its backlog and is sent the whole state instead, which is all a board needs.

A client that connects (or reconnects) is sent the current state first, so it catches up
at once; then the live events; and a `ping` every few seconds so it can tell a quiet hall
from a dead connection.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

log = logging.getLogger(__name__)

KINDS = ("state", "call", "read")
PING_S = 5.0  # the pages call themselves stale after about two missed pings
QUEUE_SIZE = 100  # events a client may lag behind before it is resynced with the state
RETRY_MS = 1000  # how soon a browser's EventSource reconnects after a drop
STOP_POLL_S = 1.0  # how often an open stream looks whether the appliance is stopping
MAX_CLIENTS = 64  # the feed is public on the hall's network: a bound on what it may cost

_RESYNC = object()  # in a client's queue: "you lost events, send the whole state"


def sse(kind: str, data: str) -> bytes:
    """One Server-Sent Event; `data` is one line of JSON."""
    return f"event: {kind}\ndata: {data}\n\n".encode()


class LiveFeed:
    def __init__(self, appliance, kinds: tuple[str, ...] = KINDS) -> None:
        self.appliance = appliance
        self.kinds = kinds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: set[asyncio.Queue] = set()  # touched only in the loop's thread
        self._lock = threading.Lock()  # guards _loop, read from the appliance's threads
        appliance.observers.append(self.observe)

    @property
    def clients(self) -> int:
        return len(self._clients)

    # -- the appliance's threads -------------------------------------------------------------
    def observe(self, kind: str, payload: dict[str, Any]) -> None:
        if kind not in self.kinds:
            return
        with self._lock:
            loop = self._loop
        if loop is None or loop.is_closed():
            return  # nobody has connected yet
        data = json.dumps(payload, separators=(",", ":"), default=str)
        try:
            loop.call_soon_threadsafe(self._fan_out, kind, data)
        except RuntimeError:  # the loop closed between the check and the call
            pass

    # -- the event loop ----------------------------------------------------------------------
    def _fan_out(self, kind: str, data: str) -> None:
        for q in self._clients:
            try:
                q.put_nowait((kind, data))
            except asyncio.QueueFull:
                # Too slow: drop its backlog; the state it gets next says everything.
                while not q.empty():
                    q.get_nowait()
                q.put_nowait(_RESYNC)

    def _state(self) -> bytes:
        return sse("state", json.dumps(self.appliance.engine.state(), separators=(",", ":"), default=str))

    async def stream(self, request: Request) -> AsyncIterator[bytes]:
        with self._lock:
            self._loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._clients.add(q)
        try:
            # Registered before the state is taken, so nothing falls between the two.
            yield f"retry: {RETRY_MS}\n\n".encode() + self._state()
            idle = 0.0
            while not self.appliance.stop_event.is_set():
                try:
                    item = await asyncio.wait_for(q.get(), timeout=STOP_POLL_S)
                except asyncio.TimeoutError:
                    idle += STOP_POLL_S
                    if idle >= PING_S:
                        idle = 0.0
                        yield b"event: ping\ndata: {}\n\n"
                    continue
                idle = 0.0
                yield self._state() if item is _RESYNC else sse(*item)
        finally:
            self._clients.discard(q)

    async def endpoint(self, request: Request) -> Response:
        if len(self._clients) >= MAX_CLIENTS:
            return Response("too many live pages open", status_code=503, headers={"Retry-After": "10"})
        return StreamingResponse(self.stream(request), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
