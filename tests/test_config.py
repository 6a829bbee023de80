import subprocess
import sys

import pytest

from services.config import Config, ConfigError, dump_toml, load_config, parse_config


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "services.cli", *args], capture_output=True, text=True)


def test_defaults_work_without_a_file():
    cfg = load_config(None)
    assert cfg.camera.kind == "sim" and cfg.mqtt.prefix == "bingo" and cfg.sensor.debounce_ms == 30


def test_misspelt_key_is_refused_naming_it(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[sensor]\ndebounce_ms = 30\nsetle_ms = 100\n')
    with pytest.raises(ConfigError, match=r"sensor\.setle_ms: unknown key"):
        load_config(path)


def test_value_out_of_range_is_refused_naming_it():
    with pytest.raises(ConfigError, match=r"reader\.frames"):
        parse_config({"reader": {"frames": 0}})
    with pytest.raises(ConfigError, match=r"device_id: must match"):
        parse_config({"device_id": "Hall 1"})
    with pytest.raises(ConfigError, match=r"mqtt\.url"):
        parse_config({"mqtt": {"url": "http://x"}})


def test_cross_field_check():
    with pytest.raises(ConfigError, match="confirm_at must not exceed"):
        parse_config({"reader": {"commit_at": 0.95, "confirm_at": 0.99}})


def test_glare_lamps_need_two_pins_of_their_own():
    cfg = parse_config({"camera": {"lights": {"pin_a": 5, "pin_b": "GPIO6"}}})
    assert (cfg.camera.lights.pin_a, cfg.camera.lights.settle_frames) == (5, 2)
    with pytest.raises(ConfigError, match="pin_a and pin_b must be different"):
        parse_config({"camera": {"lights": {"pin_a": 5, "pin_b": 5}}})
    with pytest.raises(ConfigError, match="pin 17 is the ball sensor's"):
        parse_config({"sensor": {"pin": 17}, "camera": {"lights": {"pin_a": 17, "pin_b": 6}}})
    with pytest.raises(ConfigError, match=r"camera\.lights\.pin_b: Field required"):
        parse_config({"camera": {"lights": {"pin_a": 5}}})


def test_saved_config_loads_back_the_same(tmp_path):
    cfg = parse_config({"device_id": "hall-2", "reader": {"region": {"x": 300, "y": 200, "r": 120}},
                        "rules": {"profile": "delaware"}})
    path = tmp_path / "saved.toml"
    path.write_text(dump_toml(cfg))
    assert load_config(path) == cfg
    assert dump_toml(Config()) == ""


def test_config_check_command(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('device_id = "hall-1"\n[mqtt]\nurl = "mqtt://127.0.0.1:1884"\n')
    out = run_cli("config", "check", str(good))
    assert out.returncode == 0 and "ok" in out.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[mqtt]\nprefx = "bingo"\n')
    out = run_cli("config", "check", str(bad))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "mqtt.prefx" in lines[0] and "unknown key" in lines[0]
    broken = tmp_path / "broken.toml"
    broken.write_text("[mqtt\n")
    out = run_cli("config", "check", str(broken))
    assert out.returncode == 2 and "not valid TOML" in out.stderr
