"""The technician's pages at the HTTP level: login, sessions, CSRF, rate limit, saving.

A real appliance (simulation, not started: no broker needed) behind the real app served by
uvicorn on a free loopback port; httpx talks to it as a browser would. The login clock is
injected so the rate limit's minute passes without waiting.
"""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
from starlette.routing import Route

from services.appliance import Appliance
from services.config import load_config
from services.web.app import create_app
from services.web.passwd import ensure_password, password_path, read_hash, verify_password, write_password
from services.web.server import WebServer

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery"
REGION = {"x": 320.0, "y": 250.0, "r": 120.0}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Site:
    def __init__(self, tmp_path: Path) -> None:
        self.config_path = tmp_path / "ballreader.toml"
        self.config_path.write_text(f'device_id = "web-t"\n\n[record]\npath = "{tmp_path / "record.db"}"\n\n'
                                    '[web]\nenabled = true\nport = 0\n')
        cfg = load_config(self.config_path)
        write_password(password_path(cfg), PASSWORD)
        self.appliance = Appliance(cfg, sim=True, seed=1, config_path=self.config_path)
        self.appliance.camera.open()
        self.clock = FakeClock()
        self.app = create_app(self.appliance, clock=self.clock)
        self.server = WebServer(self.app, "127.0.0.1", 0)
        self.server.start()
        self.base = f"http://127.0.0.1:{self.server.port}"
        self._clients: list[httpx.Client] = []

    def client(self) -> httpx.Client:
        client = httpx.Client(base_url=self.base, follow_redirects=False, timeout=30)
        self._clients.append(client)
        return client

    def login(self, client: httpx.Client, password: str = PASSWORD, next_path: str = "/") -> httpx.Response:
        form = client.get("/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
        return client.post("/login", data={"csrf": token, "password": password, "next": next_path})

    def csrf(self, client: httpx.Client) -> str:
        page = client.get("/calibrate")
        return re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)

    def logged_in(self) -> tuple[httpx.Client, str]:
        client = self.client()
        assert self.login(client).status_code == 303
        return client, self.csrf(client)

    def close(self) -> None:
        for client in self._clients:
            client.close()
        self.server.stop()
        self.appliance.camera.close()
        self.appliance.record.close()


@pytest.fixture
def site(tmp_path):
    s = Site(tmp_path)
    yield s
    s.close()


def _routes(site: Site) -> list[tuple[str, str]]:
    """Every (method, path) the app answers, except the public ones."""
    out = []
    for route in site.app.routes:
        if isinstance(route, Route) and not site.app.state.auth.is_public(route.path):
            out += [(m, route.path) for m in sorted(route.methods - {"HEAD"})]
    return out


def _events(site: Site, kind: str) -> list[dict]:
    return [e.data for e in site.appliance.record.events((kind,))]


def test_every_page_but_login_needs_a_session(site):
    routes = _routes(site)
    assert ("GET", "/calibrate") in routes and ("POST", "/api/config") in routes
    client = site.client()
    for method, path in routes:
        r = client.request(method, path, headers={"Accept": "text/html"})
        if method == "GET":
            assert r.status_code == 303, (method, path)
            assert r.headers["location"].startswith("/login?next="), path
        else:
            assert r.status_code == 401, (method, path)
        api = client.request(method, path, headers={"Accept": "application/json"})
        assert api.status_code == 401, (method, path)
    assert client.get("/login").status_code == 200
    assert client.get("/static/tech.css").status_code == 200


def test_login_sets_a_strict_httponly_cookie_and_a_new_session_each_time(site):
    client = site.client()
    first = site.login(client)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    old = client.cookies.get("ballreader_session")
    assert client.get("/api/status").status_code == 200
    again = site.login(client)
    assert again.status_code == 303
    assert client.cookies.get("ballreader_session") != old
    # The session from before the second login no longer works.
    other = site.client()
    other.cookies.set("ballreader_session", old)
    assert other.get("/api/status").status_code == 401


def test_wrong_password_is_refused_and_recorded(site):
    client = site.client()
    r = site.login(client, "wrong password")
    assert r.status_code == 401 and "Wrong password" in r.text
    assert client.get("/api/status").status_code == 401
    site.login(client)
    assert [e["ok"] for e in _events(site, "login")] == [False, True]
    assert all(e["user"] == "technician" and e["remote"] == "127.0.0.1" for e in _events(site, "login"))


def test_twenty_wrong_passwords_in_a_minute_get_429_then_login_works_again(site):
    client = site.client()
    for _ in range(20):
        assert site.login(client, "guess").status_code == 401
    limited = site.login(client)  # even the right password waits
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) > 0
    site.clock.now += 30
    assert site.login(client).status_code == 429
    site.clock.now += 31  # the first failure has left the minute
    assert site.login(client).status_code == 303
    assert client.get("/api/status").status_code == 200


def test_login_form_without_its_token_is_refused(site):
    client = site.client()
    r = client.post("/login", data={"password": PASSWORD})
    assert r.status_code == 403
    assert "ballreader_session" not in client.cookies


def test_next_never_leads_off_the_appliance(site):
    client = site.client()
    for evil in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        assert site.login(client, next_path=evil).headers["location"] == "/"
    assert site.login(client, next_path="/sensor").headers["location"] == "/sensor"


def test_session_ends_after_idle_time(site):
    client, _ = site.logged_in()
    site.clock.now += 2 * 3600 + 1
    assert client.get("/api/status").status_code == 401


def test_state_changing_request_without_csrf_token_is_refused(site):
    before = site.config_path.read_bytes()
    client, token = site.logged_in()
    change = {"reader": {"region": REGION}}
    assert client.post("/api/config", json=change).status_code == 403
    assert client.post("/api/config", json=change, headers={"X-CSRF-Token": "x" + token}).status_code == 403
    # The right token from a foreign page (Origin) is refused too.
    foreign = {"X-CSRF-Token": token, "Origin": "http://evil.example"}
    assert client.post("/api/config", json=change, headers=foreign).status_code == 403
    assert client.post("/logout").status_code == 403  # a form without its csrf field
    assert site.config_path.read_bytes() == before
    assert client.get("/api/status").status_code == 200  # still logged in
    ok = client.post("/api/config", json=change, headers={"X-CSRF-Token": token})
    assert ok.status_code == 200, ok.text
    out = client.post("/logout", data={"csrf": token})
    assert out.status_code == 303
    assert client.get("/api/status").status_code == 401


def test_no_get_changes_anything(site):
    record_before = site.appliance.record.last_id()
    config_before = site.config_path.read_bytes()
    client, _ = site.logged_in()
    record_before = site.appliance.record.last_id()  # the login itself is recorded
    for method, path in _routes(site):
        if method != "GET" or path == "/live.mjpg":
            continue
        assert client.get(path).status_code < 500, path
    with client.stream("GET", "/live.mjpg") as stream:
        head = next(stream.iter_bytes())
        assert head.startswith(b"--frame\r\nContent-Type: image/jpeg")
    for path in ("/logout", "/api/test-read", "/api/camera/controls"):
        assert client.get(path).status_code == 405, path
    assert site.appliance.record.last_id() == record_before
    assert site.config_path.read_bytes() == config_before


def test_save_is_validated_written_applied_and_recorded(site):
    client, token = site.logged_in()
    headers = {"X-CSRF-Token": token}
    bad = client.post("/api/config", json={"reader": {"region": {"x": 10, "y": 10, "r": 2}}}, headers=headers)
    assert bad.status_code == 400 and "reader.region.r" in bad.json()["error"]
    other = client.post("/api/config", json={"mqtt": {"url": "mqtt://elsewhere:1"}}, headers=headers)
    assert other.status_code == 400 and "cannot be changed" in other.json()["error"]
    ok = client.post("/api/config", json={"reader": {"region": REGION}}, headers=headers)
    assert ok.status_code == 200, ok.text
    saved = tomllib.loads(site.config_path.read_text())
    assert saved["reader"]["region"] == REGION
    assert saved["device_id"] == "web-t"  # the rest kept
    reloaded = load_config(site.config_path)
    assert reloaded.web.enabled is True and reloaded.reader.region.r == 120
    assert site.appliance.reader.region == (320.0, 250.0, 120.0)
    assert client.get("/api/config").json()["result"]["region"] == REGION
    [changed] = _events(site, "config_changed")
    assert changed["by"] == "technician" and changed["changes"] == {"reader": {"region": REGION}}
    assert not list(site.config_path.parent.glob(".*.tmp"))
    # A game running: refused, nothing written.
    site.appliance.request("new_occasion", {"by": "test"})
    site.appliance.request("new_game", {"all_balls_in_blower": True, "by": "test"})
    before = site.config_path.read_bytes()
    refused = client.post("/api/config", json={"reader": {"region": None}}, headers=headers)
    assert refused.status_code == 409 and "running" in refused.json()["error"]
    assert site.config_path.read_bytes() == before


def test_save_without_a_config_file_says_so(site):
    site.appliance.config_path = None
    client, token = site.logged_in()
    r = client.post("/api/config", json={"reader": {"region": REGION}}, headers={"X-CSRF-Token": token})
    assert r.status_code == 409 and "--config" in r.json()["error"]


def test_status_and_sensor_answer(site):
    client, _ = site.logged_in()
    s = client.get("/api/status").json()["result"]
    assert s["device_id"] == "web-t" and s["mqtt_connected"] is False and s["disk_free_mb"] > 0
    assert client.get("/api/sensor").json()["result"] == {"running": False}  # appliance not started


def test_lamps_without_glare_lamps_say_how_to_have_them(site):
    client, token = site.logged_in()
    headers = {"X-CSRF-Token": token}
    assert client.get("/api/config").json()["result"]["lamps"] is None  # the page hides its lamp buttons
    none = client.post("/api/camera/lamps", json={"lit": "a"}, headers=headers)
    assert none.status_code == 409 and "set camera.lights" in none.json()["error"]
    bad = client.post("/api/camera/lamps", json={"lit": "left"}, headers=headers)
    assert bad.status_code == 400 and '"a", "b" or "both"' in bad.json()["error"]


def test_passwd_command_stores_a_hash_and_ends_sessions(site):
    client, _ = site.logged_in()
    cmd = [sys.executable, "-m", "services.cli", "passwd", "--config", str(site.config_path)]
    short = subprocess.run(cmd, input="short\n", capture_output=True, text=True, cwd=ROOT)
    assert short.returncode == 1 and "at least" in short.stderr
    done = subprocess.run(cmd, input="a new password\n", capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    path = password_path(site.appliance.cfg)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    stored = read_hash(path)
    assert stored.startswith("scrypt$") and "a new password" not in stored
    assert verify_password("a new password", stored) and not verify_password(PASSWORD, stored)
    assert client.get("/api/status").status_code == 401  # the old session ended
    assert site.login(client, "a new password").status_code == 303


def test_a_password_is_generated_once_when_none_is_set(tmp_path, caplog):
    path = tmp_path / "web-password"
    with caplog.at_level("WARNING"):
        password = ensure_password(path)
    assert password and password in caplog.text
    assert verify_password(password, read_hash(path))
    assert ensure_password(path) is None  # never again, never shown again


def test_ball_check_goes_through_the_command_table(site):
    client, token = site.logged_in()
    headers = {"X-CSRF-Token": token}
    assert client.get("/api/ball-check").json()["result"]["status"] == "none"
    site.appliance.request("new_occasion", {"by": "test"})
    started = client.post("/api/ball-check", json={"action": "start"}, headers=headers)
    assert started.status_code == 200, started.text
    for ball in ("B1", "B1", "N40"):  # entered by hand, for balls the reader could not read
        r = client.post("/api/ball-check", json={"action": "ball", "ball": ball}, headers=headers)
        assert r.status_code == 200, r.text
    bad = client.post("/api/ball-check", json={"action": "ball", "ball": "X99"}, headers=headers)
    assert bad.status_code == 409 and "ball" in bad.json()["error"]
    check = client.get("/api/ball-check").json()["result"]
    states = {b["ball"]: b["state"] for b in check["balls"]}
    assert (states["B1"], states["N40"], states["O75"]) == ("duplicated", "seen", "missing")
    assert check["status"] == "running" and check["counts"]["missing"] == 73
    assert client.post("/api/ball-check", json={"action": "finish"}, headers=headers).status_code == 200
    assert client.get("/api/ball-check").json()["result"]["status"] == "failed"
    assert [e["by"] for e in _events(site, "ball_check_started")] == ["technician"]
    again = client.post("/api/ball-check", json={"action": "finish"}, headers=headers)
    assert again.status_code == 409 and "no ball check is running" in again.json()["error"]


def test_cpu_temperature_from_the_kernel_thermal_zones(tmp_path):
    from services.web.status import cpu_temperature_c

    assert cpu_temperature_c(tmp_path) is None  # a machine that reports none
    for name, kind, milli in (("thermal_zone0", "acpitz", "30000"), ("thermal_zone1", "cpu-thermal", "48312")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "type").write_text(kind + "\n")
        (tmp_path / name / "temp").write_text(milli + "\n")
    assert cpu_temperature_c(tmp_path) == 48.3  # the CPU's zone, not the first one
