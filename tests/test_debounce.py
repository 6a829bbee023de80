"""The debouncer, fed raw levels at chosen times (no clock, no threads)."""

import random

import pytest

from firmware.debounce import Debouncer, SensorEvent

DEBOUNCE, SETTLE, STUCK = 0.030, 0.200, 10.0


def kinds(events):
    return [e.kind for e in events]


def chatter(t0, end_level, rng, edges=20, span=0.005):
    """A burst of `edges` alternating edges within `span` from t0, ending at end_level."""
    times = sorted(t0 + rng.uniform(0, span) for _ in range(edges))
    levels = [(end_level if (edges - 1 - i) % 2 == 0 else not end_level) for i in range(edges)]
    return list(zip(times, levels))


def feed(deb, samples):
    events = []
    for t, level in samples:
        events += deb.update(t, level)
    return events


def test_one_ball_per_ball_under_chatter():
    rng = random.Random(1)
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    events, t = [], 1.0
    for _ in range(75):
        burst = chatter(t, True, rng)
        events += feed(deb, burst)
        last_rise = burst[-1][0]
        t = last_rise + 1.0  # the ball sits in the holder for a second
        events += deb.poll(t)
        burst = chatter(t, False, rng)
        events += feed(deb, burst)
        t = burst[-1][0] + 0.5
        events += deb.poll(t)
    assert kinds(events) == ["arrived", "settled", "left"] * 75
    assert deb.balls == 75
    assert deb.stable is False and deb.stuck is False


def test_arrival_is_stamped_when_the_input_has_been_stable_for_the_debounce():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    burst = chatter(1.0, True, random.Random(2))
    feed(deb, burst)
    assert deb.poll(burst[-1][0] + DEBOUNCE - 0.001) == []
    assert deb.stable is False
    events = deb.poll(burst[-1][0] + DEBOUNCE + SETTLE + 0.001)
    assert events == [
        SensorEvent("arrived", pytest.approx(burst[-1][0] + DEBOUNCE)),
        SensorEvent("settled", pytest.approx(burst[-1][0] + DEBOUNCE + SETTLE)),
    ]
    assert deb.stable is True


def test_chatter_alone_shorter_than_the_debounce_gives_nothing():
    rng = random.Random(3)
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    events = []
    for i in range(50):
        # 20 edges in 5 ms ending where they started: a knock, not a ball.
        events += feed(deb, chatter(1.0 + i, False, rng))
        events += deb.poll(1.5 + i)
    assert events == []
    assert deb.balls == 0


def test_a_pulse_just_shorter_than_the_debounce_is_not_a_ball():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    events = deb.update(1.0, True) + deb.update(1.0 + DEBOUNCE - 1e-6, False) + deb.poll(5.0)
    assert events == []


def test_an_event_falls_due_at_exactly_its_time():
    deb = Debouncer(0.25, 0.5, 8.0)
    deb.update(0.0, False)
    deb.update(1.0, True)
    assert deb.poll(1.25) == [SensorEvent("arrived", 1.25)]
    assert deb.poll(1.75) == [SensorEvent("settled", 1.75)]


def test_level_samples_that_repeat_the_level_do_not_restart_the_debounce():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    deb.update(1.0, True)
    events = []
    for i in range(1, 10):
        events += deb.update(1.0 + i * 0.005, True)
    assert kinds(events) == ["arrived"]
    assert events[0].t == pytest.approx(1.0 + DEBOUNCE)


def test_settled_waits_afresh_after_a_bounce():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    deb.update(1.0, True)
    assert kinds(deb.poll(1.1)) == ["arrived"]
    # The ball bounces off the sensor for 10 ms: too short to leave, but it is not still.
    assert deb.update(1.15, False) == []
    assert deb.update(1.16, True) == []
    assert deb.poll(1.16 + SETTLE - 0.001) == []
    assert deb.poll(1.16 + SETTLE + 0.001) == [SensorEvent("settled", pytest.approx(1.16 + SETTLE))]


def test_a_ball_that_leaves_before_settling_never_settles():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    deb.update(1.0, True)
    events = deb.update(1.1, False) + deb.poll(3.0)
    assert kinds(events) == ["arrived", "left"]
    assert events[1].t == pytest.approx(1.1 + DEBOUNCE)


def test_stuck_sensor_raises_a_fault_and_gives_no_balls_until_clear():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    deb.update(0.0, False)
    deb.update(1.0, True)
    assert kinds(deb.poll(1.0 + STUCK - 0.001)) == ["arrived", "settled"]
    assert deb.stuck is False
    assert deb.poll(1.0 + STUCK + 0.001) == [SensorEvent("stuck", pytest.approx(1.0 + STUCK))]
    assert deb.stuck is True
    # While stuck, chatter and short drop-outs give nothing at all.
    rng = random.Random(4)
    events = []
    t = 12.0
    for _ in range(20):
        events += feed(deb, chatter(t, True, rng))
        events += deb.update(t + 0.01, False) + deb.update(t + 0.02, True)
        t += 1.0
        events += deb.poll(t)
    assert events == []
    assert deb.balls == 1
    # Inactive and stable again: the ball leaves and the fault clears.
    deb.update(40.0, False)
    assert kinds(deb.poll(41.0)) == ["left", "unstuck"]
    assert deb.stuck is False and deb.stable is False
    # And balls count again.
    deb.update(42.0, True)
    assert kinds(deb.poll(43.0)) == ["arrived", "settled"]
    assert deb.balls == 2


def test_sensor_active_at_start_is_no_ball_but_can_be_stuck():
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    assert deb.update(0.0, True) == []
    assert deb.stable is True
    assert kinds(deb.poll(STUCK + 1.0)) == ["stuck"]
    deb.update(20.0, False)
    assert kinds(deb.poll(21.0)) == ["unstuck"]
    assert deb.balls == 0


def test_leaving_exactly_at_the_limit_is_not_stuck():
    # Times that are exact in binary, so the two deadlines really coincide.
    deb = Debouncer(0.25, 0.5, 8.0)
    deb.update(0.0, False)
    events = deb.update(1.0, True) + deb.update(8.75, False) + deb.poll(30.0)
    assert events == [SensorEvent("arrived", 1.25), SensorEvent("settled", 1.75), SensorEvent("left", 9.0)]


def test_time_going_backwards_is_refused():
    deb = Debouncer()
    deb.update(5.0, False)
    with pytest.raises(ValueError, match="backwards"):
        deb.poll(4.0)


@pytest.mark.parametrize(
    "args", [(0.0, 0.2, 10.0), (0.03, -1.0, 10.0), (0.03, 0.2, 0.2)], ids=["debounce", "settle", "stuck"]
)
def test_settings_out_of_range_are_refused(args):
    with pytest.raises(ValueError):
        Debouncer(*args)


# -- property style: random chatter against a reference written a different way


def random_signal(rng, n_edges):
    """Raw edges with gaps from well under to well over the debounce."""
    t, level, samples = 0.0, False, [(0.0, False)]
    for _ in range(n_edges):
        t += rng.choice([rng.uniform(0, 0.01), rng.uniform(0, 0.06), rng.uniform(0.02, 0.5)])
        level = not level
        samples.append((t, level))
    return samples, t + 1.0


def reference_balls(samples, end, debounce):
    """Balls by a second method: walk the constant stretches between edges; a
    stretch at least `debounce` long decides the debounced level."""
    stable, balls = samples[0][1], 0
    for (t, level), nxt in zip(samples, samples[1:] + [(end, None)]):
        if nxt[0] - t >= debounce and level != stable:
            stable = level
            balls += level
    return balls


@pytest.mark.parametrize("seed", range(40))
def test_random_chatter_matches_the_reference_and_events_alternate(seed):
    rng = random.Random(seed)
    samples, end = random_signal(rng, rng.randint(1, 300))
    deb = Debouncer(DEBOUNCE, SETTLE, STUCK)
    events = feed(deb, samples) + deb.poll(end)

    assert deb.balls == reference_balls(samples, end, DEBOUNCE)
    times = [e.t for e in events]
    assert times == sorted(times)
    # "arrived" and "left" alternate; every "settled" sits inside a ball.
    in_ball = False
    for e in events:
        if e.kind == "arrived":
            assert not in_ball
            in_ball = True
        elif e.kind == "left":
            assert in_ball
            in_ball = False
        elif e.kind == "settled":
            assert in_ball
    assert in_ball == deb.stable
    # Each arrival comes exactly one debounce after the last edge before it.
    edge_times = [t for t, _ in samples[1:]]
    for e in events:
        if e.kind == "arrived":
            last_edge = max(t for t in edge_times if t <= e.t)
            assert e.t == pytest.approx(last_edge + DEBOUNCE)
    # A ball settles only on an active input that has been still for the settle time.
    for e in events:
        if e.kind == "settled":
            t_edge, level = max(s for s in samples if s[0] <= e.t)
            assert level is True
            assert e.t >= t_edge + SETTLE - 1e-9


@pytest.mark.parametrize("seed", range(20))
def test_how_often_time_is_polled_does_not_change_the_events(seed):
    rng = random.Random(1000 + seed)
    samples, end = random_signal(rng, rng.randint(1, 200))
    # Make some long stretches so settle and stuck (short limit here) happen too.
    samples = [(t * 20 if i % 7 == 0 else t, lvl) for i, (t, lvl) in enumerate(samples)]
    samples.sort()
    end = samples[-1][0] + 5.0
    args = (DEBOUNCE, SETTLE, 2.0)

    sparse = Debouncer(*args)
    sparse_events = feed(sparse, samples) + sparse.poll(end)

    dense = Debouncer(*args)
    dense_events, t_poll = [], 0.0
    for t, level in samples:
        while t_poll + 0.004 < t:
            t_poll += rng.uniform(0.0005, 0.004)
            dense_events += dense.poll(t_poll)
        dense_events += dense.update(t, level)
        t_poll = t
    dense_events += dense.poll(end)

    assert dense_events == sparse_events
    assert (dense.balls, dense.stable, dense.stuck) == (sparse.balls, sparse.stable, sparse.stuck)
