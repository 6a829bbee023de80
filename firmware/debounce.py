"""Debouncer for the ball sensor: turns raw pin levels into ball events.

Pure logic: no I/O and no clock reads. The caller feeds it the raw level
with a time, either on an edge (`update`) or when time passes (`poll`).
Events carry the time their condition was met (for example the moment the
input had been stable for `debounce_s`), not the time of the call that
noticed it, so how often the caller polls never changes the result.

Rules, with the input "active" meaning a ball is in front of the sensor:
- arrived: active and stable for `debounce_s`; counts one ball.
- settled: the ball has then stayed active for a further `settle_s`. A
  bounce (the input briefly inactive, shorter than the debounce) restarts
  that wait, because a bouncing ball is not yet still.
- left: inactive and stable for `debounce_s` after a counted ball.
- stuck: active without a break for longer than `stuck_s`; a fault. No
  ball can arrive until the input is inactive-stable again, which gives
  "unstuck".
- Chatter shorter than `debounce_s` gives nothing.
The first level fed sets the starting state without events (as gpiozero
does): a ball already in the holder at start is not a new arrival.
"""

from __future__ import annotations

from dataclasses import dataclass

ARRIVED = "arrived"
SETTLED = "settled"
LEFT = "left"
STUCK = "stuck"
UNSTUCK = "unstuck"

# Order of deadlines that fall at the same instant: a level change first
# (a ball that leaves exactly at the limit was not stuck), then settle.
_FLIP, _SETTLE, _STUCK = 0, 1, 2


@dataclass(frozen=True)
class SensorEvent:
    kind: str  # "arrived" | "settled" | "left" | "stuck" | "unstuck"
    t: float


class Debouncer:
    def __init__(self, debounce_s: float = 0.030, settle_s: float = 0.200, stuck_s: float = 10.0):
        if not debounce_s > 0:
            raise ValueError(f"debounce_s must be > 0, got {debounce_s}")
        if not settle_s >= 0:
            raise ValueError(f"settle_s must be >= 0, got {settle_s}")
        if not stuck_s > debounce_s + settle_s:
            raise ValueError(
                f"stuck_s ({stuck_s}) must be longer than debounce_s + settle_s ({debounce_s + settle_s})"
            )
        self.debounce_s = debounce_s
        self.settle_s = settle_s
        self.stuck_s = stuck_s
        self._started = False
        self._now = 0.0
        self._raw = False  # last level fed
        self._raw_since = 0.0  # when the raw level last changed
        self._stable = False  # debounced level
        self._active_since = 0.0  # start of the current debounced-active period
        self._settle_from = 0.0  # the settle wait runs from here
        self._counted = False  # the current active period counted a ball
        self._settled = False
        self._stuck = False
        self._balls = 0

    @property
    def stable(self) -> bool:
        """The debounced level: True while a ball is (or something is) in front of the sensor."""
        return self._stable

    @property
    def balls(self) -> int:
        return self._balls

    @property
    def stuck(self) -> bool:
        return self._stuck

    def update(self, t: float, level: bool) -> list[SensorEvent]:
        """The raw input is `level` from time `t` on (an edge, or a sample of an unchanged level)."""
        level = bool(level)
        if not self._started:
            self._start(t, level)
            return []
        events = self.poll(t)
        if level != self._raw:
            self._raw = level
            self._raw_since = t
            if level and self._stable and not self._stuck:
                # A bounce inside a ball: it is moving again, wait afresh for it to settle.
                self._settle_from = t
        return events

    def poll(self, t: float) -> list[SensorEvent]:
        """Time has passed up to `t` with no edge; returns the events that fell due."""
        if not self._started:
            return []
        if t < self._now:
            raise ValueError(f"time went backwards: {t} < {self._now}")
        self._now = t
        events: list[SensorEvent] = []
        while True:
            due = self._next_deadline()
            if due is None or due[0] > t:
                return events
            events.extend(self._fire(*due))

    def _start(self, t: float, level: bool) -> None:
        self._started = True
        self._now = t
        self._raw = self._stable = level
        self._raw_since = self._active_since = t

    def _next_deadline(self) -> tuple[float, int] | None:
        deadlines = []
        if self._raw != self._stable:
            deadlines.append((self._raw_since + self.debounce_s, _FLIP))
        if self._stable and not self._stuck:
            deadlines.append((self._active_since + self.stuck_s, _STUCK))
            if self._counted and not self._settled and self._raw:
                deadlines.append((self._settle_from + self.settle_s, _SETTLE))
        return min(deadlines) if deadlines else None

    def _fire(self, at: float, what: int) -> list[SensorEvent]:
        if what == _SETTLE:
            self._settled = True
            return [SensorEvent(SETTLED, at)]
        if what == _STUCK:
            self._stuck = True
            return [SensorEvent(STUCK, at)]
        self._stable = self._raw
        if self._stable:
            self._active_since = self._raw_since
            self._settle_from = at
            self._counted = True
            self._settled = False
            self._balls += 1
            return [SensorEvent(ARRIVED, at)]
        events = []
        if self._counted:
            events.append(SensorEvent(LEFT, at))
        if self._stuck:
            events.append(SensorEvent(UNSTUCK, at))
        self._counted = self._settled = self._stuck = False
        return events
