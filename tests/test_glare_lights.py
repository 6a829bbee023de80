"""Two glare lamps (camera.lights): the firmware's outputs on gpiozero's MockFactory, and the
appliance reading balls a highlight damages, with one lamp and with two, publishing its
call on a real mosquitto."""
import functools
import json

import numpy as np
import pytest
from gpiozero import DigitalOutputDevice
from gpiozero.exc import GPIOPinInUse
from mqtt_broker import Subscriber

from firmware.glare_lights import GlareLights
from services.appliance import LIGHTS_FAULT, Appliance
from services.config import parse_config
from vision.bench import renderer_scene_at
from vision.bench_wrong import font_set
from vision.render import random_scene

PIN_A, PIN_B = 5, 6
LAMPS = {"pin_a": PIN_A, "pin_b": PIN_B}


def levels(factory):
    return factory.pin(PIN_A).state, factory.pin(PIN_B).state


def test_each_lamp_lights_alone_and_both_are_lit_between_readings(factory):
    lights = GlareLights(PIN_A, PIN_B, pin_factory=factory)
    assert lights.lit == (True, True) and levels(factory) == (1, 1)
    for which, lit in (("a", (True, False)), ("b", (False, True)), ("off", (False, False)), ("both", (True, True))):
        lights.light(which)
        assert lights.lit == lit and levels(factory) == lit
    with pytest.raises(ValueError, match="expected one of a, b, both, off"):
        lights.light("left")
    assert lights.lit == (True, True)  # a bad name changes nothing


def test_lamps_wired_active_low_are_lit_by_a_low_output(factory):
    lights = GlareLights(PIN_A, PIN_B, active_high=False, pin_factory=factory)
    lights.light("a")
    assert lights.lit == (True, False) and levels(factory) == (0, 1)


def test_a_busy_second_pin_leaves_the_first_one_free(factory):
    holder = DigitalOutputDevice(PIN_B, pin_factory=factory)  # another program's
    with pytest.raises(GPIOPinInUse):
        GlareLights(PIN_A, PIN_B, pin_factory=factory)
    GlareLights(PIN_A, 7, pin_factory=factory)  # pin A was given back


@functools.cache
def renderer_ball(where, fonts=None):
    """The scene of renderer frame SEED:INDEX (as vision.bench_wrong numbers them)."""
    seed, k = (int(v) for v in where.split(":"))
    return renderer_scene_at(seed, k, fonts, frame=False)[0]


def o68_under_glare():
    # The 8 of O68 lies half under a saturated highlight: with one light the frames of the
    # resting ball showed a clean 3 (called O63 by the weights before 4 December's retrain).
    scene = renderer_ball("960015:119")
    assert scene.ball == "O68"
    return scene


def i23_under_glare():
    # A highlight washes out the top of the 3 of I23 (a font family never trained on): with
    # one light the resting ball's frames fused into a confident I25 until 5 December.
    scene = renderer_ball("1200033:54", font_set("other"))
    assert scene.ball == "I23"
    return scene


def o72_under_glare():
    # A highlight on the 7 of O72: with one light no frame is named; lamp B's exposure shows it.
    scene = renderer_ball("900003:7")
    assert scene.ball == "O72"
    return scene


def appliance_with(tmp_path, broker, lights, shake_px=0):
    """The simulated appliance, built but not booted."""
    camera = {"kind": "sim", **({"lights": lights} if lights else {})}
    cfg = parse_config({"device_id": "t1", "mqtt": {"url": broker.url}, "camera": camera,
                        "record": {"path": str(tmp_path / "record.db")}, "web": {"enabled": False},
                        "sim": {"shake_px": shake_px}})
    return Appliance(cfg, sim=True, seed=3)


def boot(app):
    app.self_test()  # opens the camera, the sensor and the lamps, as at boot
    app.mqtt.start()
    assert app.request("new_occasion", {})["status"] == "ok"
    assert app.request("new_game", {"all_balls_in_blower": True})["status"] == "ok"
    return app


def close(app):
    app.sensor.close()
    if app.lights:
        app.lights.close()
    app.camera.close()
    app.mqtt.stop(timeout=5)
    app.record.close()


def read_once(app, scene):
    app.blower.seat(scene)
    outcome = app.read_ball(presentation=1)
    return outcome, outcome.call["ball"] if outcome.call else None


@pytest.mark.parametrize("lamps", [None, LAMPS], ids=["one-lamp", "two-lamps"])
def test_two_lamps_call_a_ball_a_highlight_keeps_one_lamp_from_reading(tmp_path, mosquitto, lamps):
    app = boot(appliance_with(tmp_path, mosquitto, lamps))
    try:
        with Subscriber(mosquitto, "bingo/t1/call") as sub:
            outcome, called = read_once(app, o72_under_glare())
            if lamps is None:
                assert (outcome.decision, called) == ("represent", None)  # shaken and shown again
                return
            assert (outcome.decision, called) == ("called", "O72")
            published = json.loads(sub.wait_for(lambda m: True, timeout=10).payload)
            assert published["ball"] == "O72" and published["source"] == "camera"
        assert app.lights.lit == (True, True)  # both lamps lit again after the reading
        assert LIGHTS_FAULT not in app.engine.faults
    finally:
        close(app)


@pytest.mark.parametrize("lamps", [None, LAMPS], ids=["one-lamp", "two-lamps"])
def test_a_highlight_that_makes_another_number_is_never_called_and_two_lamps_call_the_ball(tmp_path, mosquitto, lamps):
    app = boot(appliance_with(tmp_path, mosquitto, lamps))
    try:
        outcome, called = read_once(app, i23_under_glare())
        if lamps is None:
            # One lamp called I25 before the washed-out 3 could grow its faint ink back
            # (5 December); now the reader is unsure and the ball is not called.
            assert (outcome.decision, called) == ("represent", None)
        else:
            assert (outcome.decision, called) == ("called", "I23")
    finally:
        close(app)


def test_a_ball_that_shakes_between_the_exposures_is_still_called(tmp_path, mosquitto):
    # The ball rattles in the holder: it moves up to 25 px each way between frames. Each
    # exposure is moved back onto the one before it ahead of the minimum (without that, not called).
    app = boot(appliance_with(tmp_path, mosquitto, LAMPS, shake_px=25))
    try:
        outcome, called = read_once(app, o72_under_glare())
        assert (outcome.decision, called) == ("called", "O72")
    finally:
        close(app)


def test_lamps_that_cannot_be_had_are_a_fault_and_balls_are_still_read(tmp_path, mosquitto):
    app = appliance_with(tmp_path, mosquitto, LAMPS)
    holder = DigitalOutputDevice(PIN_B, pin_factory=app.pin_factory)  # another program holds lamp B's pin
    boot(app)
    try:
        assert app.lights is None
        fault = app.engine.faults[LIGHTS_FAULT]
        assert "glare lights on pins 5, 6" in fault["message"] and not fault["affects_calls"]
        app.blower.seat(o68_under_glare())
        assert app.read_ball(presentation=1) is not None  # read from one lamp's frames
        assert app.engine.state()["faults"][0]["code"] == LIGHTS_FAULT
    finally:
        close(app)


def test_a_lamp_burnt_out_is_a_fault_and_the_other_lamp_reads_alone(tmp_path, mosquitto):
    # The minimum of an exposure under a lamp that is out is as dark as that exposure.
    app = boot(appliance_with(tmp_path, mosquitto, LAMPS))
    try:
        app.sim_lamps_out = {"b"}
        app.blower.seat(random_scene(33, np.random.default_rng(4), glare=0.0, turned_deg=5.0, lip_frac=0.0))
        outcome = app.read_ball(presentation=1)
        assert (outcome.decision, outcome.call["ball"]) == ("called", "N33")
        fault = app.engine.faults[LIGHTS_FAULT]
        assert fault["message"] == "glare lamp B gives too little light: reading under lamp A alone"
        assert not fault["affects_calls"]
        assert app.lights.lit == (True, True)
        app.sim_lamps_out = set()  # the lamp is replaced: the next reading clears the fault
        assert len(app.take_frames(5).frames) == 5
        assert LIGHTS_FAULT not in app.engine.faults
    finally:
        close(app)
