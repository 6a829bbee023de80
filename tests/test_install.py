"""install.sh into a staging root: the tree it lays out, a second run, uninstall and purge,
and the broker files it writes, loaded by a real mosquitto."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import threading
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from mqtt_broker import Subscriber, start_mosquitto
from staging import REPO, copy_tree, run_install, shared_install, tree

APT_PACKAGES = ["python3-picamera2", "mosquitto", "mosquitto-clients", "espeak-ng", "python3-venv"]


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    return shared_install(tmp_path_factory)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_layout_and_modes(staged):
    _, root, _ = staged
    expected = {
        "etc/ballreader": 0o770,
        "etc/ballreader/ballreader.toml": 0o640,
        "etc/ballreader/credentials": 0o700,
        "etc/ballreader/credentials/mqtt-password": 0o600,
        "var/lib/ballreader": 0o750,
        "opt/ballreader": 0o755,
        "opt/ballreader/MANIFEST.sha256": 0o644,
        "opt/ballreader/docs/install.md": 0o644,
        "etc/systemd/system/ballreader.service": 0o644,
        "etc/mosquitto/conf.d/ballreader.conf": 0o644,
        "etc/mosquitto/ballreader.passwd": 0o640,
        "etc/mosquitto/ballreader.acl": 0o640,
    }
    found = {rel: mode(root / rel) for rel in expected if (root / rel).exists()}
    assert found == expected
    assert (root / "etc/systemd/system/ballreader.service").read_bytes() == \
        (REPO / "systemd/ballreader.service").read_bytes()
    assert (root / "etc/mosquitto/conf.d/ballreader.conf").read_bytes() == \
        (REPO / "systemd/mosquitto-ballreader.conf").read_bytes()
    assert (root / "etc/ballreader/ballreader.toml").read_bytes() == \
        (REPO / "systemd/ballreader.toml").read_bytes()


def test_unit_is_enabled(staged):
    """Enabling is a symlink that `systemctl --root` lays without a running systemd."""
    assert shutil.which("systemctl"), "systemctl is needed to enable the unit in staging"
    _, root, _ = staged
    link = root / "etc/systemd/system/multi-user.target.wants/ballreader.service"
    assert link.is_symlink()
    assert str(link.readlink()) == "/etc/systemd/system/ballreader.service"


def test_venv_sees_system_packages_and_runs_the_command(staged):
    _, root, _ = staged
    venv = root / "opt/ballreader/venv"
    assert "include-system-site-packages = true" in (venv / "pyvenv.cfg").read_text()
    config = root / "etc/ballreader/ballreader.toml"
    check = subprocess.run([str(venv / "bin/ballreader"), "config", "check", str(config)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_installed_config_is_what_the_brief_asks(staged, tmp_path):
    _, root, _ = staged
    venv_python = root / "opt/ballreader/venv/bin/python"
    code = ("import sys; from services.config import load_config; c = load_config(sys.argv[1]); "
            "print(c.device_id, c.mqtt.username, c.camera.kind, c.record.path, c.web.host, c.web.port)")
    out = subprocess.run([str(venv_python), "-c", code, str(root / "etc/ballreader/ballreader.toml")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["hall-1", "ballreader", "picamera2", "/var/lib/ballreader/record.db", "0.0.0.0", "8080"]
    # The installed checker refuses a misspelt key, so the check above means something.
    bad = tmp_path / "bad.toml"
    bad.write_text((root / "etc/ballreader/ballreader.toml").read_text().replace("[camera]\nkind", "[camera]\nknd"))
    refused = subprocess.run([str(root / "opt/ballreader/venv/bin/ballreader"), "config", "check", str(bad)],
                             capture_output=True, text=True)
    assert refused.returncode != 0
    assert "knd" in refused.stdout + refused.stderr


def test_secret_is_generated_and_hashed_for_the_broker(staged):
    _, root, _ = staged
    password = (root / "etc/ballreader/credentials/mqtt-password").read_text().strip()
    assert len(password) >= 24
    passwd = (root / "etc/mosquitto/ballreader.passwd").read_text()
    assert passwd.startswith("ballreader:$7$")
    assert password not in passwd


def test_acl_names_the_configured_device(staged):
    _, root, _ = staged
    acl = (root / "etc/mosquitto/ballreader.acl").read_text()
    assert "topic readwrite bingo/hall-1/#" in acl
    assert "topic write homeassistant/device/bingo_hall_1/config" in acl
    assert "@" not in acl


def test_manifest_covers_the_installed_code(staged):
    _, root, _ = staged
    opt = root / "opt/ballreader"
    subprocess.run(["sha256sum", "--check", "--quiet", "MANIFEST.sha256"], cwd=opt, check=True)
    names = {line.split("  ", 1)[1] for line in (opt / "MANIFEST.sha256").read_text().splitlines()}
    assert "venv/bin/ballreader" in names
    assert not [n for n in names if "__pycache__" in n]
    installed = {n.split("site-packages/", 1)[1] for n in names if "site-packages/" in n}
    source, _, _ = staged
    in_source = {str(p.relative_to(source)) for pkg in ("firmware", "vision", "services")
                 for p in (source / pkg).rglob("*.py")}
    assert in_source and in_source <= installed


def test_staging_only_shows_live_changes(staged):
    _, _, output = staged
    apt = [line for line in output.splitlines() if "would run: apt-get install" in line]
    assert len(apt) == 1 and all(pkg in apt[0] for pkg in APT_PACKAGES)
    assert "system user ballreader" in output
    assert "would run: systemctl daemon-reload" in output


def test_second_run_changes_nothing(staged):
    source, root, _ = staged
    before = tree(root)
    output = run_install(source, root)
    assert tree(root) == before
    assert "code is up to date" in output
    assert " wrote " not in output and " made " not in output


def test_changed_code_is_reinstalled_and_broken_code_repaired(staged, tmp_path):
    """A new source reinstalls; a damaged install (manifest broken) is repaired."""
    source, root, _ = staged
    src2 = tmp_path / "source"
    shutil.copytree(source, src2, symlinks=True)
    # The copy's venv still works: install.sh runs pip as `venv/bin/python -m pip`.
    root2 = copy_tree(root, tmp_path / "root")
    (src2 / "services/systemd_notify.py").write_text(
        (src2 / "services/systemd_notify.py").read_text() + "\n# changed\n")
    output = run_install(src2, root2)
    assert "installed ballreader" in output
    opt = root2 / "opt/ballreader"
    installed = next(opt.glob("venv/lib/python3*/site-packages/services/systemd_notify.py"))
    assert installed.read_text().endswith("# changed\n")
    installed.write_text("damaged\n")
    assert subprocess.run(["sha256sum", "--check", "--quiet", "--status", "MANIFEST.sha256"],
                          cwd=opt).returncode != 0
    run_install(src2, root2)
    subprocess.run(["sha256sum", "--check", "--quiet", "MANIFEST.sha256"], cwd=opt, check=True)


def test_config_and_secret_are_not_overwritten(staged, tmp_path):
    source, root, _ = staged
    root2 = copy_tree(root, tmp_path / "root")
    config = root2 / "etc/ballreader/ballreader.toml"
    config.write_text(config.read_text().replace('device_id = "hall-1"', 'device_id = "hall-2"'))
    secret = (root2 / "etc/ballreader/credentials/mqtt-password").read_text()
    output = run_install(source, root2)
    assert 'device_id = "hall-2"' in config.read_text()
    assert "keeping /etc/ballreader/ballreader.toml" in output
    assert (root2 / "etc/ballreader/credentials/mqtt-password").read_text() == secret


def test_lost_secret_is_remade_and_other_broker_users_kept(staged, tmp_path):
    source, root, _ = staged
    root2 = copy_tree(root, tmp_path / "root")
    passwd = root2 / "etc/mosquitto/ballreader.passwd"
    subprocess.run(["mosquitto_passwd", "-b", str(passwd), "console", "console-pw"], check=True)
    console_line = [line for line in passwd.read_text().splitlines() if line.startswith("console:")]
    old_line = [line for line in passwd.read_text().splitlines() if line.startswith("ballreader:")]
    (root2 / "etc/ballreader/credentials/mqtt-password").unlink()
    run_install(source, root2)
    assert (root2 / "etc/ballreader/credentials/mqtt-password").stat().st_size > 0
    lines = passwd.read_text().splitlines()
    assert [line for line in lines if line.startswith("console:")] == console_line
    new_line = [line for line in lines if line.startswith("ballreader:")]
    assert len(new_line) == 1 and new_line != old_line


def test_uninstall_keeps_the_record(staged, tmp_path):
    source, root, _ = staged
    root2 = copy_tree(root, tmp_path / "root")
    record = root2 / "var/lib/ballreader/record.db"
    record.write_bytes(b"the official record")
    run_install(source, root2, "--uninstall")
    for gone in ("opt/ballreader", "etc/systemd/system/ballreader.service",
                 "etc/systemd/system/multi-user.target.wants/ballreader.service",
                 "etc/mosquitto/conf.d/ballreader.conf"):
        assert not (root2 / gone).exists() and not (root2 / gone).is_symlink(), gone
    assert record.read_bytes() == b"the official record"
    for kept in ("etc/ballreader/ballreader.toml", "etc/ballreader/credentials/mqtt-password",
                 "etc/mosquitto/ballreader.passwd", "etc/mosquitto/ballreader.acl"):
        assert (root2 / kept).is_file(), kept


def test_uninstall_script_and_purge_remove_everything(staged, tmp_path):
    source, root, _ = staged
    root2 = copy_tree(root, tmp_path / "root")
    (root2 / "var/lib/ballreader/record.db").write_bytes(b"the official record")
    done = subprocess.run(["bash", str(source / "uninstall.sh"), "--root", str(root2), "--purge"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "would run: userdel ballreader" in done.stdout
    left = [rel for rel, entry in tree(root2).items() if entry[0] != "dir"]
    assert left == []


# ---------------------------------------------------------------- the broker files, live


class Publisher:
    def __init__(self, broker, username: str, password: str):
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.username_pw_set(username, password)
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()

    def publish(self, topic: str, payload: str) -> None:
        """QoS 1 and wait for the broker's PUBACK: by then it has routed or dropped it."""
        self.client.publish(topic, payload, qos=1).wait_for_publish(timeout=10)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def connack(broker, username: str | None, password: str | None):
    """The broker's answer to a connection attempt."""
    answered = threading.Event()
    result = {}
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    if username:
        client.username_pw_set(username, password)

    def on_connect(client, userdata, flags, reason_code, properties):
        result["reason"] = reason_code
        answered.set()

    client.on_connect = on_connect
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        assert answered.wait(10), "no CONNACK"
    finally:
        client.disconnect()
        client.loop_stop()
    return result["reason"]


def staged_broker(root: Path, tmp_path: Path):
    """A real mosquitto with the staged drop-in, ACL and password file (plus a board
    and a console user), on a free loopback port instead of 1883."""
    passwd = tmp_path / "ballreader.passwd"
    shutil.copy(root / "etc/mosquitto/ballreader.passwd", passwd)
    for user in ("board", "console", "homeassistant"):
        subprocess.run(["mosquitto_passwd", "-b", str(passwd), user, f"{user}-pw"], check=True)
    dropin = (root / "etc/mosquitto/conf.d/ballreader.conf").read_text()
    extra = "\n".join(line for line in dropin.splitlines() if not line.startswith("listener"))
    extra = extra.replace("/etc/mosquitto/ballreader.passwd", str(passwd))
    extra = extra.replace("/etc/mosquitto/ballreader.acl", str(root / "etc/mosquitto/ballreader.acl"))
    assert str(passwd) in extra and str(root) in extra
    return start_mosquitto(tmp_path, extra_conf=extra)


def test_broker_enforces_passwords_and_acl(staged, tmp_path):
    _, root, _ = staged
    broker = staged_broker(root, tmp_path)
    app_password = (root / "etc/ballreader/credentials/mqtt-password").read_text().strip()
    publishers: list[Publisher] = []
    try:
        assert connack(broker, None, None).is_failure
        assert connack(broker, "ballreader", "wrong").is_failure
        assert not connack(broker, "ballreader", app_password).is_failure
        with Subscriber(broker, "bingo/#", username="board", password="board-pw") as board, \
                Subscriber(broker, "bingo/hall-1/request/#", username="ballreader",
                           password=app_password) as appliance:
            app, board_pub, console = (Publisher(broker, "ballreader", app_password),
                                       Publisher(broker, "board", "board-pw"),
                                       Publisher(broker, "console", "console-pw"))
            publishers += [app, board_pub, console]
            # The appliance writes only under its own device.
            app.publish("bingo/hall-2/call", "not mine")
            app.publish("bingo/hall-1/call", "B12")
            assert board.wait_for(lambda m: m.topic.endswith("/call")).payload == b"B12"
            # Only the console may send requests; a board's is dropped.
            board_pub.publish("bingo/hall-1/request/confirm", "from a board")
            console.publish("bingo/hall-1/request/confirm", "from the console")
            assert appliance.wait_for().payload == b"from the console"
            # Nobody but the appliance may publish calls.
            console.publish("bingo/hall-1/call", "forged")
            app.publish("bingo/hall-1/call", "I17")
            n = len(board.messages)
            assert board.wait_for(lambda m: m.topic.endswith("/call"), after=n).payload == b"I17"
            assert [m.payload for m in board.messages if m.topic.endswith("/call")] == [b"B12", b"I17"]
        # Home Assistant discovery: the appliance announces itself and no other device.
        with Subscriber(broker, "homeassistant/device/#", username="homeassistant",
                        password="homeassistant-pw") as home_assistant:
            app.publish("homeassistant/device/bingo_hall_2/config", "not mine")
            app.publish("homeassistant/device/bingo_hall_1/config", "mine")
            assert home_assistant.wait_for().topic == "homeassistant/device/bingo_hall_1/config"
    finally:
        for p in publishers:
            p.close()
        broker.kill()


class NotifyListener:
    """Reads the notify socket all the time, as systemd does, and keeps what it hears."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.heard: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                message = self.sock.recv(4096).decode()
            except TimeoutError:
                continue
            if message != "WATCHDOG=1" or "WATCHDOG=1" not in self.heard[-1:]:
                self.heard.append(message)  # runs of pings kept as one

    def close(self) -> list[str]:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self.sock.close()
        return self.heard


def test_installed_appliance_runs_as_systemd_starts_it(staged, tmp_path):
    """The installed command, with the installed config, the credential handed over as
    LoadCredential= does and a notify socket: calls reach a board through the ACL, and
    systemd hears READY, WATCHDOG and STOPPING."""
    _, root, _ = staged
    broker = staged_broker(root, tmp_path)
    notify = NotifyListener(tmp_path / "notify.sock")
    # Only what a machine without a camera needs differs: the simulated camera, no web page.
    config = tmp_path / "ballreader.toml"
    config.write_text((root / "etc/ballreader/ballreader.toml").read_text()
                      .replace('kind = "picamera2"', 'kind = "sim"')
                      .replace("[web]\n", "[web]\nenabled = false\n"))
    env = dict(os.environ, CREDENTIALS_DIRECTORY=str(root / "etc/ballreader/credentials"),
               NOTIFY_SOCKET=str(tmp_path / "notify.sock"), WATCHDOG_USEC="30000000")
    try:
        with Subscriber(broker, "bingo/#", username="board", password="board-pw") as board:
            done = subprocess.run(
                [str(root / "opt/ballreader/venv/bin/ballreader"), "run", "--config", str(config),
                 "--sim", "--balls", "3", "--seed", "5", "--mqtt", broker.url,
                 "--record", str(tmp_path / "record.db")],
                env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
            assert done.returncode == 0, done.stdout + done.stderr
            calls = []
            while len(calls) < 3:
                message = board.wait_for(lambda m: m.topic == "bingo/hall-1/call", after=len(board.messages))
                calls.append(json.loads(message.payload))
        assert [c["index"] for c in calls] == [1, 2, 3]
        assert calls[0]["seq"] < calls[1]["seq"] < calls[2]["seq"]
        heard = notify.close()
        assert "READY=1" in heard and "WATCHDOG=1" in heard and "STOPPING=1" in heard, heard
        assert heard.index("READY=1") < heard.index("STOPPING=1")
    finally:
        notify.close()
        broker.kill()


# ---------------------------------------------------------------- the live path, walled in

LIVE_SCRIPT = r"""
set -euo pipefail
T=$1 SRC=$2
# Everything the live install writes lands in overlay upper folders under $T.
for d in etc opt var/lib; do
    mkdir -p "$T/up/$d" "$T/work/$d"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/up/$d,workdir=$T/work/$d" "/$d"
    [ "$(findmnt -n -o FSTYPE "/$d")" = overlay ] || exit 97
done
export PATH="$T/bin:$PATH"
snap() { # NAME: owners and modes, and content hashes, of what the install touches
    find /etc/ballreader /etc/mosquitto /etc/systemd/system /opt/ballreader /var/lib/ballreader \
        -printf '%p %u:%g %m\n' | sort > "$T/$1.modes"
    find /etc/ballreader /etc/mosquitto /opt/ballreader -type f -exec sha256sum {} + | sort > "$T/$1.sums"
}
cd "$SRC"
date +%s.%N > "$T/times"
./install.sh > "$T/first.out" 2>&1
date +%s.%N >> "$T/times"
snap first
id -nG ballreader > "$T/groups"
echo "--- second run" >> "$T/calls"
./install.sh > "$T/second.out" 2>&1
date +%s.%N >> "$T/times"
snap second
echo "--- uninstall" >> "$T/calls"
echo "the official record" > /var/lib/ballreader/record.db
./uninstall.sh > "$T/uninstall.out" 2>&1
cat /var/lib/ballreader/record.db > "$T/record-after-uninstall"
./uninstall.sh --purge > "$T/purge.out" 2>&1
(getent passwd ballreader || echo "no user") > "$T/user-after-purge"
(ls -d /var/lib/ballreader /etc/ballreader /opt/ballreader 2>/dev/null || true) > "$T/left-after-purge"
"""

# No systemd runs in this container and apt must not touch the machine: these two record
# what they are asked and keep just enough state (enabled, active) to answer queries.
STAND_INS = {
    "systemctl": r"""#!/bin/sh
echo "systemctl $*" >> "$T/calls"
for last; do :; done
case "$*" in
    *is-enabled*) [ -f "$T/state/enabled-$last" ];;
    *is-active*) [ -f "$T/state/active-$last" ];;
    *" enable "*|enable*) touch "$T/state/enabled-$last";;
    *disable*) rm -f "$T/state/enabled-$last" "$T/state/active-$last";;
    *start*) touch "$T/state/active-$last";;
    *) exit 0;;
esac
""",
    "apt-get": "#!/bin/sh\necho \"apt-get $*\" >> \"$T/calls\"\n",
}


def test_live_install_in_a_private_mount_namespace(staged, tmp_path):
    """The live path (owners, useradd, groups, systemctl calls) with /etc, /opt and
    /var/lib overlaid in a private mount namespace, so the machine itself is untouched."""
    source, root, _ = staged
    assert shutil.which("unshare") and shutil.which("findmnt")
    # The code as staged: pip works the same in both modes and is tested above; here the
    # install finds it up to date, which keeps this test short.
    (tmp_path / "up/opt").mkdir(parents=True)
    copy_tree(root / "opt/ballreader", tmp_path / "up/opt/ballreader")
    (tmp_path / "bin").mkdir()
    (tmp_path / "state").mkdir()
    for name, text in STAND_INS.items():
        (tmp_path / "bin" / name).write_text(text)
        (tmp_path / "bin" / name).chmod(0o755)
    script = tmp_path / "live.sh"
    script.write_text(LIVE_SCRIPT)
    done = subprocess.run(["unshare", "--mount", "--propagation", "private",
                           "bash", str(script), str(tmp_path), str(source)],
                          env=dict(os.environ, T=str(tmp_path)), capture_output=True, text=True)
    outputs = "".join(f"\n--- {p.name}\n{p.read_text()}" for p in sorted(tmp_path.glob("*.out")))
    assert done.returncode == 0, done.stdout + done.stderr + outputs
    assert not Path("/etc/ballreader").exists() and not Path("/opt/ballreader").exists()
    assert "code is up to date" in (tmp_path / "first.out").read_text()

    first = dict(line.split(" ", 1) for line in (tmp_path / "first.modes").read_text().splitlines())
    assert first["/etc/ballreader"] == "root:ballreader 770"
    assert first["/etc/ballreader/ballreader.toml"] == "root:ballreader 640"
    assert first["/etc/ballreader/credentials"] == "root:root 700"
    assert first["/etc/ballreader/credentials/mqtt-password"] == "root:root 600"
    assert first["/etc/mosquitto/ballreader.passwd"] == "root:mosquitto 640"
    assert first["/etc/mosquitto/ballreader.acl"] == "root:mosquitto 640"
    assert first["/var/lib/ballreader"] == "ballreader:ballreader 750"
    assert first["/opt/ballreader/MANIFEST.sha256"] == "root:root 644"
    assert {"video", "gpio", "dialout", "audio"} <= set((tmp_path / "groups").read_text().split())

    # Second run: not a byte, mode or owner changes, and nothing is restarted.
    for kind in ("modes", "sums"):
        assert (tmp_path / f"second.{kind}").read_text() == (tmp_path / f"first.{kind}").read_text()
    first_calls, rest = (tmp_path / "calls").read_text().split("--- second run\n")
    second_calls = rest.split("--- uninstall\n")[0]
    assert "systemctl daemon-reload" in first_calls
    assert "systemctl enable ballreader.service" in first_calls
    assert "systemctl restart --no-block ballreader.service" in first_calls
    assert "restart" not in second_calls and "daemon-reload" not in second_calls
    assert "enable" not in second_calls.replace("is-enabled", "")

    assert (tmp_path / "record-after-uninstall").read_text() == "the official record\n"
    assert (tmp_path / "user-after-purge").read_text() == "no user\n"
    assert (tmp_path / "left-after-purge").read_text() == ""
