"""The ball sensor through gpiozero's MockFactory: real pin objects driven with chatter.

Most tests use a hand-moved clock: drive_chatter "sleeps" by moving it, and
sensor.poll() lets the sensor see the time; the poll thread still runs but
cannot move time. One test runs on the real clock and the real poll thread.
"""

import random
import threading

import pytest

from firmware.ball_sensor import BallSensor, drive_chatter

PIN = 17


class HandClock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t

    def advance(self, dt):
        self.t += dt


@pytest.fixture
def clock():
    return HandClock()


class Recorder:
    """Collects callbacks in order, as (name, time, args)."""

    def __init__(self, sensor, clock):
        self.calls = []
        self._clock = clock
        sensor.on_arrived = lambda: self._add("arrived")
        sensor.on_settled = lambda: self._add("settled")
        sensor.on_left = lambda: self._add("left")
        sensor.on_fault = lambda message: self._add("fault", message)
        sensor.on_fault_cleared = lambda: self._add("fault_cleared")

    def _add(self, name, *args):
        self.calls.append((name, *args))

    @property
    def names(self):
        return [c[0] for c in self.calls]


def make_sensor(factory, clock, **kw):
    kw.setdefault("pull_up", True)
    return BallSensor(PIN, pin_factory=factory, clock=clock, **kw)


def present_ball(pin, clock, sensor, rng, level, hold_s):
    """The blower drops a ball (or takes it away): chatter ending at `level`, then `hold_s` of quiet."""
    drive_chatter(pin, level, rng=rng, sleep=clock.advance)
    clock.advance(hold_s)
    sensor.poll()


def test_one_ball_per_ball_through_a_mock_pin(factory, clock):
    rng = random.Random(7)
    pin = factory.pin(PIN)
    with make_sensor(factory, clock) as sensor:
        rec = Recorder(sensor, clock)
        for _ in range(30):
            # Pulled up: a ball pulls the input low.
            present_ball(pin, clock, sensor, rng, False, 1.0)
            assert sensor.active is True
            present_ball(pin, clock, sensor, rng, True, 0.5)
            assert sensor.active is False
        assert rec.names == ["arrived", "settled", "left"] * 30
        assert sensor.balls_seen == 30
        # The chatter was real: the pin went through every edge of every burst.
        assert len(pin.states) > 30 * 2 * 20


def test_chatter_alone_gives_no_ball(factory, clock):
    rng = random.Random(8)
    pin = factory.pin(PIN)
    with make_sensor(factory, clock) as sensor:
        rec = Recorder(sensor, clock)
        for _ in range(20):
            # A knock on the holder: 20 edges in 5 ms that end where they began (high, empty).
            n = drive_chatter(pin, True, rng=rng, sleep=clock.advance)
            assert n == 20
            clock.advance(0.5)
            sensor.poll()
        assert rec.calls == []
        assert sensor.balls_seen == 0 and sensor.active is False


def test_stuck_sensor_is_a_fault_not_balls(factory, clock):
    rng = random.Random(9)
    pin = factory.pin(PIN)
    wall = iter(range(1_800_000_000, 1_800_000_100))
    with make_sensor(factory, clock, stuck_s=5.0, wall_clock=lambda: next(wall)) as sensor:
        rec = Recorder(sensor, clock)
        present_ball(pin, clock, sensor, rng, False, 4.0)
        assert sensor.fault is None
        clock.advance(2.0)
        sensor.poll()
        assert rec.names == ["arrived", "settled", "fault"]
        assert "pin 17" in rec.calls[-1][1] and "5 s" in rec.calls[-1][1]
        assert sensor.fault == rec.calls[-1][1]
        # Chatter while stuck gives no balls.
        for _ in range(5):
            present_ball(pin, clock, sensor, rng, False, 1.0)
        assert sensor.balls_seen == 1
        # The blockage clears.
        present_ball(pin, clock, sensor, rng, True, 0.5)
        assert rec.names == ["arrived", "settled", "fault", "left", "fault_cleared"]
        assert sensor.fault is None
        [fault] = sensor.faults
        assert fault["message"] == rec.calls[2][1]
        assert fault["time"] == "2027-01-15T08:00:00+00:00"
        assert fault["cleared_t"] is not None and fault["cleared_t"] > fault["t"]
        # And the next ball counts.
        present_ball(pin, clock, sensor, rng, False, 1.0)
        assert sensor.balls_seen == 2


def test_nothing_fires_at_construction_even_with_a_ball_already_in(factory, clock):
    pin = factory.pin(PIN)
    pin.drive_high()  # a ball was left in the holder (active high, no pull to reset the mock pin)
    with make_sensor(factory, clock, pull_up=None, active_state=True) as sensor:
        rec = Recorder(sensor, clock)
        clock.advance(1.0)
        sensor.poll()
        # Already there is not a new arrival, but it is seen as present.
        assert rec.calls == [] and sensor.active is True
        present_ball(pin, clock, sensor, random.Random(1), False, 0.5)
        present_ball(pin, clock, sensor, random.Random(2), True, 0.5)
        assert rec.names == ["arrived", "settled"]


def test_active_high_sensor_without_pull(factory, clock):
    pin = factory.pin(PIN)
    with make_sensor(factory, clock, pull_up=None, active_state=True) as sensor:
        rec = Recorder(sensor, clock)
        present_ball(pin, clock, sensor, random.Random(3), True, 1.0)
        present_ball(pin, clock, sensor, random.Random(4), False, 1.0)
        assert rec.names == ["arrived", "settled", "left"]


def test_a_missed_edge_is_repaired_by_the_poll(factory, clock):
    pin = factory.pin(PIN)
    with make_sensor(factory, clock) as sensor:
        rec = Recorder(sensor, clock)
        pin.edges = "none"  # the backend reports no edges at all
        present_ball(pin, clock, sensor, random.Random(13), False, 0.1)
        present_ball(pin, clock, sensor, random.Random(14), False, 1.0)
        assert rec.names == ["arrived", "settled"]


def test_a_failing_callback_does_not_stop_the_sensor(factory, clock):
    pin = factory.pin(PIN)
    with make_sensor(factory, clock) as sensor:
        left = []

        def broken():
            raise RuntimeError("consumer bug")

        sensor.on_arrived = broken
        sensor.on_left = lambda: left.append(clock())
        present_ball(pin, clock, sensor, random.Random(5), False, 1.0)
        present_ball(pin, clock, sensor, random.Random(6), True, 1.0)
        assert sensor.balls_seen == 1 and len(left) == 1


def test_close_from_inside_a_callback(factory):
    pin = factory.pin(PIN)
    sensor = BallSensor(PIN, pin_factory=factory, pull_up=True, settle_s=0.0)
    closed = threading.Event()

    def close_now():
        sensor.close()
        closed.set()

    sensor.on_arrived = close_now
    drive_chatter(pin, False, rng=random.Random(12))
    assert closed.wait(10)
    sensor._thread.join(10)
    assert not sensor._thread.is_alive()
    # Closed means deaf: the pin is released and nothing more fires.
    sensor.on_left = lambda: pytest.fail("event after close")
    factory.pin(PIN).drive_high()
    assert sensor.balls_seen == 1


def test_settings_and_close(factory, clock):
    sensor = make_sensor(factory, clock, debounce_s=0.02, settle_s=0.3, stuck_s=8.0)
    assert sensor.settings == {"pin": "17", "pull_up": True, "debounce_s": 0.02, "settle_s": 0.3, "stuck_s": 8.0}
    sensor.close()
    sensor.close()  # twice is fine
    # The pin is free again for a new device.
    make_sensor(factory, clock).close()


def test_on_the_real_clock_with_the_poll_thread(factory):
    pin = factory.pin(PIN)
    arrived, settled, left = threading.Event(), threading.Event(), threading.Event()
    with BallSensor(PIN, pin_factory=factory, pull_up=True, settle_s=0.05) as sensor:
        sensor.on_arrived, sensor.on_settled, sensor.on_left = arrived.set, settled.set, left.set
        drive_chatter(pin, False, rng=random.Random(10))
        # The pin now stays quiet: only the poll thread can notice the ball.
        assert settled.wait(10) and arrived.is_set()
        drive_chatter(pin, True, rng=random.Random(11))
        assert left.wait(10)
        assert sensor.balls_seen == 1


@pytest.mark.parametrize("start_high", [False, True])
@pytest.mark.parametrize("level", [False, True])
@pytest.mark.parametrize("edges", [0, 1, 19, 20])
def test_drive_chatter_ends_at_the_level_within_the_span(factory, start_high, level, edges):
    pin = factory.pin(PIN)
    (pin.drive_high if start_high else pin.drive_low)()
    pin.clear_states()
    slept = []
    n = drive_chatter(pin, level, edges=edges, span_s=0.005, rng=random.Random(edges), sleep=slept.append)
    assert pin.state == level
    assert n in (edges, edges + 1) and (start_high ^ (n % 2 == 1)) == level
    assert len(pin.states) == n + 1  # the first entry is the starting state
    assert sum(slept) == pytest.approx(0.005 if n > 1 else 0.0)
