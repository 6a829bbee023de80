"""The ball sensor: a gpiozero input pin fed through our own debouncer.

The pin factory (lgpio on a Pi, MockFactory in tests and the simulator) is
chosen by the caller and passed in; nothing here sets it globally. Pin edges
feed the debouncer at once; a small thread lets time pass, so "arrived",
"settled" and "stuck" fire even when the pin stays quiet.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from gpiozero import DigitalInputDevice

from firmware.debounce import ARRIVED, LEFT, SETTLED, STUCK, UNSTUCK, Debouncer, SensorEvent

log = logging.getLogger(__name__)


@dataclass
class _Fault:
    t: float
    wall: float
    message: str
    cleared_t: float | None = None


class BallSensor:
    """Ball arrivals on one GPIO input.

    Callbacks are plain attributes, set to a callable or None:
    `on_arrived()`, `on_settled()`, `on_left()`, `on_fault(message)`,
    `on_fault_cleared()`. They run on the thread that noticed the event (a pin
    callback thread or the poll thread), one at a time and in order; keep
    them short. Nothing fires at construction.
    """

    def __init__(
        self,
        pin: int | str,
        *,
        pin_factory=None,
        pull_up: bool | None = True,
        active_state: bool | None = None,
        debounce_s: float = 0.030,
        settle_s: float = 0.200,
        stuck_s: float = 10.0,
        poll_s: float = 0.005,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        max_faults: int = 20,
    ):
        self.on_arrived: Callable[[], object] | None = None
        self.on_settled: Callable[[], object] | None = None
        self.on_left: Callable[[], object] | None = None
        self.on_fault: Callable[[str], object] | None = None
        self.on_fault_cleared: Callable[[], object] | None = None
        self._debouncer = Debouncer(debounce_s, settle_s, stuck_s)
        self._pin_name = str(pin)
        self._pull_up = pull_up
        self._poll_s = poll_s
        self._clock = clock
        self._wall_clock = wall_clock
        self._faults: deque[_Fault] = deque(maxlen=max_faults)
        # One lock around feeding the debouncer and running the callbacks, so
        # events from the pin thread and the poll thread never interleave.
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._closed = False
        self._calling: int | None = None  # thread running a callback, so close() inside one does not wait on itself
        self._device = DigitalInputDevice(
            pin, pull_up=pull_up, active_state=active_state, pin_factory=pin_factory
        )
        with self._lock:
            self._debouncer.update(self._clock(), self._device.is_active)
            self._device.when_activated = self._pin_activated
            self._device.when_deactivated = self._pin_deactivated
        self._thread = threading.Thread(target=self._poll_loop, name=f"ball-sensor-{pin}", daemon=True)
        self._thread.start()

    # -- what the rest of the appliance reads

    @property
    def active(self) -> bool:
        """Debounced: True while a ball (or a blockage) is in front of the sensor."""
        with self._lock:
            return self._debouncer.stable

    @property
    def balls_seen(self) -> int:
        with self._lock:
            return self._debouncer.balls

    @property
    def fault(self) -> str | None:
        """The message of the fault in force, or None."""
        with self._lock:
            if self._debouncer.stuck and self._faults:
                return self._faults[-1].message
            return None

    @property
    def faults(self) -> list[dict]:
        """Recent faults, oldest first, for the web page and logs."""
        with self._lock:
            return [
                {
                    "t": f.t,
                    "time": datetime.fromtimestamp(f.wall, timezone.utc).isoformat(timespec="seconds"),
                    "message": f.message,
                    "cleared_t": f.cleared_t,
                }
                for f in self._faults
            ]

    @property
    def settings(self) -> dict:
        d = self._debouncer
        return {
            "pin": self._pin_name,
            "pull_up": self._pull_up,
            "debounce_s": d.debounce_s,
            "settle_s": d.settle_s,
            "stuck_s": d.stuck_s,
        }

    def poll(self) -> None:
        """Let time pass up to now. The poll thread does this; tests with a stopped clock call it directly."""
        with self._lock:
            if self._closed:
                return
            # Sampling the level, not just the time, repairs an edge a backend may have missed.
            self._dispatch(self._debouncer.update(self._clock(), self._device.is_active))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
        # From inside a callback this thread holds the lock the poll thread may be
        # waiting on: do not wait for it then, it stops by itself.
        if self._calling != threading.get_ident() and self._thread is not threading.current_thread():
            self._thread.join()
        self._device.close()

    def __enter__(self) -> BallSensor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- inside

    def _pin_activated(self) -> None:
        self._pin_changed(True)

    def _pin_deactivated(self) -> None:
        self._pin_changed(False)

    def _pin_changed(self, level: bool) -> None:
        with self._lock:
            if not self._closed:
                self._dispatch(self._debouncer.update(self._clock(), level))

    def _poll_loop(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.poll()
            except Exception:  # the thread must outlive a bad reading
                log.exception("ball sensor %s: poll failed", self._pin_name)

    def _dispatch(self, events: list[SensorEvent]) -> None:
        for event in events:
            if event.kind == STUCK:
                message = (
                    f"ball sensor on pin {self._pin_name} active for more than "
                    f"{self._debouncer.stuck_s:g} s: stuck or blocked"
                )
                self._faults.append(_Fault(event.t, self._wall_clock(), message))
                log.warning(message)
                self._call(self.on_fault, message)
            elif event.kind == UNSTUCK:
                if self._faults:
                    self._faults[-1].cleared_t = event.t
                log.info("ball sensor on pin %s clear again", self._pin_name)
                self._call(self.on_fault_cleared)
            elif event.kind == ARRIVED:
                self._call(self.on_arrived)
            elif event.kind == SETTLED:
                self._call(self.on_settled)
            elif event.kind == LEFT:
                self._call(self.on_left)

    def _call(self, callback, *args) -> None:
        if callback is None:
            return
        self._calling = threading.get_ident()
        try:
            callback(*args)
        except Exception:  # a consumer's bug must not stop the sensor
            log.exception("ball sensor %s: callback %r failed", self._pin_name, callback)
        finally:
            self._calling = None


def drive_chatter(
    pin,
    level: bool,
    *,
    edges: int = 20,
    span_s: float = 0.005,
    rng: random.Random | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> int:
    """Drive a gpiozero MockPin like a bouncing switch: a burst of edges that ends at `level`.

    `level` is the electrical level (True = high), not "active": with a
    pull-up, a ball arriving is `False`. The burst has `edges` edges spread at
    random over `span_s`, one more when needed to end at `level`; if the pin
    is already at `level` and `edges` is even, the burst returns to it.
    Returns the number of edges driven.
    """
    rng = rng or random.Random()
    state = bool(pin.state)
    count = edges if (state ^ (edges % 2 == 1)) == level else edges + 1
    # Random gaps between edges that add up to the span.
    weights = [rng.random() for _ in range(count - 1)]
    total = sum(weights) or 1.0
    gaps = [span_s * w / total for w in weights]
    for i in range(count):
        if i:
            sleep(gaps[i - 1])
        state = not state
        if state:
            pin.drive_high()
        else:
            pin.drive_low()
    return count
