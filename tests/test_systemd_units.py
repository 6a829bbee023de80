"""Every unit in systemd/ passes `systemd-analyze verify`, against a staging install.

verify insists that ExecStart= names an executable file; the unit names the installed
path (/opt/ballreader/...). So each unit is verified as a copy whose /opt/ballreader
points into a real staging install: the command the unit starts is the one install.sh
laid out. verify only warns about unknown keys and keeps exit status 0, so any output
counts as a failure too; and it lets a misspelt target through, which is checked apart.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from staging import REPO, shared_install

SYSTEMD_ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
UNIT_SUFFIXES = (".service", ".socket", ".timer", ".path", ".target", ".mount")
UNITS = sorted(p for p in (REPO / "systemd").iterdir() if p.suffix in UNIT_SUFFIXES)
UNIT_DIRS = [Path("/etc/systemd/system"), Path("/lib/systemd/system"), Path("/usr/lib/systemd/system")]
INSTALLED = "/opt/ballreader"


@pytest.fixture(scope="module")
def staged_root(tmp_path_factory) -> Path:
    return shared_install(tmp_path_factory)[1]


def verify(unit_text: str, name: str, folder: Path) -> str:
    """systemd-analyze verify on unit_text saved as folder/name: '' when clean, else its words."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(unit_text)
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", str(path)],
                          capture_output=True, text=True)
    words = (done.stdout + done.stderr).strip()
    if done.returncode != 0 and not words:
        words = f"exit status {done.returncode}"
    return words


def pointed_at(unit_text: str, root: Path) -> str:
    return unit_text.replace(INSTALLED + "/", f"{root}{INSTALLED}/")


def settings(unit_text: str) -> dict[str, str]:
    """'Section.Key' -> value (units here never repeat a key)."""
    found, section = {}, ""
    for line in unit_text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        assert f"{section}.{key}" not in found, f"{key} set twice"
        found[f"{section}.{key}"] = value
    return found


def test_there_are_units():
    assert "ballreader.service" in [p.name for p in UNITS]


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_verify(unit, staged_root, tmp_path):
    text = pointed_at(unit.read_text(), staged_root)
    assert verify(text, unit.name, tmp_path) == ""


def test_verify_catches_mistakes(staged_root, tmp_path):
    """The check above can fail: a misspelt key, and a command that is not there."""
    text = pointed_at((REPO / "systemd/ballreader.service").read_text(), staged_root)
    assert "WatchdgSec" in verify(text.replace("WatchdogSec", "WatchdgSec"), "a.service", tmp_path / "a")
    missing = text.replace("venv/bin/ballreader", "venv/bin/ballreaderx")
    assert "ballreaderx" in verify(missing, "b.service", tmp_path / "b")


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_referenced_units_exist(unit):
    """verify accepts After=/Wants=/WantedBy= naming units that do not exist."""
    found = settings(unit.read_text())
    names = []
    for key in ("Unit.After", "Unit.Wants", "Unit.Requires", "Unit.Before", "Install.WantedBy"):
        names += found.get(key, "").split()
    assert names
    missing = [n for n in names if not any((d / n).exists() for d in UNIT_DIRS)]
    assert missing == []


def test_appliance_unit_settings(staged_root):
    found = settings((REPO / "systemd/ballreader.service").read_text())
    assert found["Service.Type"] == "notify"
    assert found["Service.NotifyAccess"] == "main"
    assert re.fullmatch(r"\d+s?", found["Service.WatchdogSec"])
    assert found["Service.Restart"] == "always"
    assert int(found["Unit.StartLimitBurst"]) > 0 and found["Unit.StartLimitIntervalSec"]
    assert found["Service.User"] == "ballreader"
    assert found["Service.SupplementaryGroups"].split() == ["video", "gpio", "dialout", "audio"]
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp"):
        assert found[f"Service.{key}"] == "yes", key
    assert found["Service.ProtectSystem"] == "strict"
    # The record, and the config the web page saves calibration into.
    assert found["Service.ReadWritePaths"].split() == ["/var/lib/ballreader", "/etc/ballreader"]
    assert found["Service.StateDirectory"] == "ballreader"
    assert found["Service.LoadCredential"] == "mqtt-password:/etc/ballreader/credentials/mqtt-password"
    for key in ("Wants", "After"):
        assert {"network-online.target", "mosquitto.service"} <= set(found[f"Unit.{key}"].split())
    # What the unit starts and reads is what install.sh laid out.
    command = found["Service.ExecStart"].split()
    assert command[:2] == [f"{INSTALLED}/venv/bin/ballreader", "run"]
    config = command[command.index("--config") + 1]
    assert (staged_root / config.lstrip("/")).is_file()
    credential = found["Service.LoadCredential"].split(":", 1)[1]
    assert (staged_root / credential.lstrip("/")).is_file()
