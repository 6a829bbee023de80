"""The technician's pages in a real browser (Debian's headless Chromium, driven by Playwright).

Against the real appliance as a process (`python -m services.cli run --sim`, web page on a free
port, no password set so one is generated and logged) and a real mosquitto. The simulated
blower draws balls and `sim/drawn` on MQTT says which ball is really in the holder, so a test
read on the page can be checked against the truth. The simulation opens a game at start, so
saving the calibration must be refused.

Screenshots of every page go to test-output/ (the `output_dir` fixture).
"""
from __future__ import annotations

import http.server
import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from appliance_proc import log_of, start_appliance
from mqtt_broker import Subscriber, free_port, start_mosquitto

DEVICE = "t-web"
WAIT_MS = 20_000  # how long the page may take to show something (not a speed check)
VIEWPORT = {"width": 1280, "height": 900}


class Running:
    """The appliance process, where its page is, its generated password, and the broker's view."""

    def __init__(self, tmp: Path) -> None:
        self.broker = start_mosquitto(tmp)
        self.sub = Subscriber(self.broker, f"bingo/{DEVICE}/sim/drawn", f"bingo/{DEVICE}/call")
        # Each ball stays in the holder 6 s after its call: time for test reads of it.
        # With glare lamps: every reading here is made of exposures under lamp A and lamp B.
        config = {"web": {"enabled": True, "port": 0}, "sim": {"hold_s": 6, "chatter_edges": 4},
                  "camera": {"lights": {"pin_a": 5, "pin_b": 6}}}
        self.proc = start_appliance(tmp, self.broker, "--sim", "--seed", "3", device_id=DEVICE, config=config)
        self.config_path = tmp / "ballreader.toml"
        self.base, self.password = self._from_log()

    def _from_log(self) -> tuple[str, str]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the appliance exited ({self.proc.returncode}):\n{log_of(self.proc)}")
            log = Path(self.proc.log_path).read_text(errors="replace")
            url = re.search(r"web page at (http://127\.0\.0\.1:\d+)/", log)
            password = re.search(r"generated one for user 'technician': (\S+)", log)
            if url and password:
                return url.group(1), password.group(1)
            time.sleep(0.1)
        raise AssertionError(f"no web page or password in the log:\n{log_of(self.proc)}")

    def messages(self, kind: str) -> list[dict]:
        self.sub.drain(quiet_s=0.05)
        return [json.loads(m.payload) for m in self.sub.messages if m.topic.endswith("/" + kind)]

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # The appliance logs every thread's stack when its stop hangs (services.cli).
            raise AssertionError(f"the appliance did not stop in 30 s:\n{log_of(self.proc)}") from None
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.sub.close()
            self.broker.kill()


@pytest.fixture(scope="module")
def running(tmp_path_factory, browser):
    run = Running(tmp_path_factory.mktemp("web-browser"))
    yield run
    # Stop with a live view open: the stream must not hold the appliance up.
    context = browser.new_context()
    watcher = context.new_page()
    _log_in(watcher, run)
    watcher.goto(run.base + "/live", wait_until="domcontentloaded")
    code = run.stop()
    context.close()
    assert code == 0, log_of(run.proc)


@pytest.fixture
def page(browser, running):
    """A logged-in page; any JavaScript error on it fails the test."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _log_in(page, running)
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def _log_in(page: Page, running: Running, path: str = "/live") -> None:
    page.goto(running.base + path, wait_until="domcontentloaded")
    page.fill("#password", running.password)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}", wait_until="domcontentloaded")


def _shot(page: Page, output_dir: Path, name: str) -> None:
    page.screenshot(path=str(output_dir / f"web-{name}.png"), full_page=True)


def _wait_for_picture(page: Page, selector: str) -> None:
    """Until the MJPEG image has a frame (polled from here: the page's CSP forbids eval)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while page.locator(selector).evaluate("img => img.naturalWidth") == 0:
        assert time.monotonic() < deadline, f"no picture in {selector}"
        page.wait_for_timeout(100)


def _frame_px(page: Page) -> float:
    """Reading-frame pixels per screen pixel on the region editor."""
    box = page.locator("#region-svg").bounding_box()
    return int(page.locator("#region-svg").get_attribute("data-width")) / box["width"]


def _region(page: Page) -> tuple[float, float, float]:
    return tuple(float(page.input_value(f"#region-{k}")) for k in ("x", "y", "r"))


def _test_read(page: Page) -> dict:
    with page.expect_response("**/api/test-read") as answer:
        page.click("#test-read")
    result = answer.value.json()
    assert result["status"] == "ok", result
    expect(page.locator("#read-result")).to_be_visible()
    return result["result"]


# -- the tests ------------------------------------------------------------------------------

def test_login_is_needed_and_works(browser, running, output_dir):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(running.base + "/calibrate", wait_until="domcontentloaded")
    assert "/login" in page.url
    page.fill("#password", "not the password")
    page.click("button[type=submit]")
    expect(page.locator(".message.error")).to_contain_text("Wrong password")
    _shot(page, output_dir, "login")
    page.fill("#password", running.password)
    page.click("button[type=submit]")
    page.wait_for_url("**/calibrate", wait_until="domcontentloaded")
    expect(page.locator("h1")).to_have_text("Calibrate")
    cookie = next(c for c in context.cookies() if c["name"] == "ballreader_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    context.close()


def test_every_page_shows_live_data(page, output_dir):
    base = page.url.rsplit("/", 1)[0]
    page.goto(base + "/live", wait_until="domcontentloaded")
    _wait_for_picture(page, "#live-img")
    expect(page.locator('#last-read [data-key="decision"]')).not_to_be_empty(timeout=WAIT_MS)
    _shot(page, output_dir, "live")
    page.goto(base + "/sensor", wait_until="domcontentloaded")
    expect(page.locator("#sensor-state")).to_have_text(re.compile("Ball in the holder|Holder empty"),
                                                       timeout=WAIT_MS)
    expect(page.locator("#sensor-debounce")).to_have_text("30 ms")
    _shot(page, output_dir, "sensor")
    page.goto(base + "/status", wait_until="domcontentloaded")
    expect(page.locator("#st-mqtt")).to_contain_text("connected to mqtt://127.0.0.1", timeout=WAIT_MS)
    expect(page.locator("#st-game")).to_contain_text("running")
    _shot(page, output_dir, "status")
    page.goto(base + "/ball-check", wait_until="domcontentloaded")
    expect(page.locator("#ball-grid .cell")).to_have_count(75)
    page.click("#start-check")  # a game runs: the rules refuse, and the page says why
    expect(page.locator("#message")).to_contain_text("Refused", timeout=WAIT_MS)
    _shot(page, output_dir, "ball-check")


def test_save_is_refused_while_a_game_runs(page, running, output_dir):
    before = running.config_path.read_bytes()
    page.goto(running.base + "/calibrate", wait_until="domcontentloaded")
    expect(page.locator("#game-warning")).to_be_visible(timeout=WAIT_MS)
    page.fill("#region-x", "300")
    page.fill("#region-y", "240")
    page.fill("#region-r", "120")
    page.locator("#region-r").dispatch_event("change")
    with page.expect_response("**/api/config") as answer:
        page.click("#save")
    assert answer.value.status == 409
    expect(page.locator("#message")).to_contain_text("Not saved: game 1 is running")
    _shot(page, output_dir, "calibrate-save-refused")
    assert running.config_path.read_bytes() == before


def test_forged_cross_site_post_is_refused(page, running, output_dir):
    """Another site's page (another origin on the same host, so the browser even sends the
    cookie) posts a form to the appliance: refused for want of the CSRF token."""
    before = running.config_path.read_bytes()
    evil_port = free_port()
    form = (f'<form id="f" method="post" action="{running.base}/api/config">'
            '<input name="reader" value="x"></form><script>document.getElementById("f").submit()</script>')

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = form.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", evil_port), Evil)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with page.expect_response(lambda r: r.url.startswith(running.base) and r.request.method == "POST") as got:
            page.goto(f"http://127.0.0.1:{evil_port}/", wait_until="domcontentloaded")
        response = got.value
        # 403, not 401: the session cookie came along and the CSRF check is what refused it.
        assert response.status == 403
        assert "CSRF" in response.text()
        page.wait_for_load_state("domcontentloaded")
        _shot(page, output_dir, "forged-post-refused")
    finally:
        server.shutdown()
        server.server_close()
    assert running.config_path.read_bytes() == before
    page.goto(running.base + "/status", wait_until="domcontentloaded")
    expect(page.locator("h1")).to_have_text("Status")  # still logged in, nothing else happened


def _held_ball(running: Running, after_draws: int) -> tuple[str, int]:
    """Wait for a ball drawn after the first `after_draws` that has been called and is still
    in the holder; its name and the number of draws so far."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        drawn = running.messages("drawn")
        calls = running.messages("call")
        if len(drawn) > after_draws and calls and calls[-1]["ball"] == drawn[-1]["ball"]:
            return drawn[-1]["ball"], len(drawn)
        time.sleep(0.2)
    raise AssertionError(f"no ball called within 90 s after draw {after_draws}")


def _read_named(page: Page, truth: str, changed) -> dict | None:
    """Test reads until one names a ball: the reader may be unsure of a ball (a pose that
    hides its print), never wrong. None when it stays unsure or the ball changed meanwhile."""
    for _ in range(3):
        reading = _test_read(page)
        if reading["ball"] is not None and reading["ball"] != truth and changed():
            return None
        assert reading["ball"] in (None, truth), (reading, truth)
        if reading["ball"]:
            return reading
    return None


def test_drag_region_and_test_read_show_the_true_ball(page, running, output_dir):
    page.goto(running.base + "/calibrate", wait_until="domcontentloaded")
    draws = 0
    for attempt in range(8):  # a ball the reader is unsure of, or that leaves meanwhile: the next one
        truth, draws = _held_ball(running, draws)
        changed = lambda: len(running.messages("drawn")) != draws  # noqa: E731
        page.click("#no-region")
        reading = _read_named(page, truth, changed)
        if reading is None:
            continue
        assert reading["ball"] == truth, (reading, truth)
        expect(page.locator("#read-ball")).to_have_text(truth)
        expect(page.locator("#read-detail")).to_contain_text("confidence")
        assert page.locator("#print-image").get_attribute("src").startswith("data:image/png")

        # Put the region on the ball found, then drag it and resize it on the picture.
        page.click("#fit-ball")
        x0, y0, r0 = _region(page)
        assert all(abs(a - b) <= 0.5 for a, b in zip((x0, y0, r0), reading["circle"]))
        scale = _frame_px(page)
        centre = page.locator("#region-centre").bounding_box()
        cx, cy = centre["x"] + centre["width"] / 2, centre["y"] + centre["height"] / 2
        page.mouse.move(cx, cy)
        page.mouse.down()
        page.mouse.move(cx + 10, cy + 6, steps=5)
        page.mouse.up()
        x1, y1, r1 = _region(page)
        assert abs(x1 - x0 - 10 * scale) <= 2 and abs(y1 - y0 - 6 * scale) <= 2 and r1 == r0
        handle = page.locator("#region-handle").bounding_box()
        hx, hy = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
        page.mouse.move(hx, hy)
        page.mouse.down()
        page.mouse.move(hx + 8, hy, steps=5)
        page.mouse.up()
        x2, y2, r2 = _region(page)
        assert (x2, y2) == (x1, y1) and abs(r2 - r1 - 8 * scale) <= 2

        # The test read uses the region being edited, and still finds the same ball.
        edited = _read_named(page, truth, changed)
        if edited is None:
            continue
        assert all(abs(a - b) <= 0.5 for a, b in zip(edited["region"], (x2, y2, r2)))
        assert edited["ball"] == truth, (edited, truth)
        _shot(page, output_dir, "calibrate")
        return
    raise AssertionError("no test read named the ball in the holder in 8 balls")


def test_each_glare_lamp_can_be_lit_alone_and_a_reading_lights_both(page, running, output_dir):
    page.goto(running.base + "/calibrate", wait_until="domcontentloaded")
    expect(page.locator("#lamps")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#lamps-state")).to_have_text("Both lamps lit.")
    for name, state in (("Lamp B", "Lamp B lit alone."), ("Lamp A", "Lamp A lit alone.")):
        with page.expect_response("**/api/camera/lamps") as answer:
            page.get_by_role("button", name=name, exact=True).click()
        assert answer.value.json()["result"] == {"a": name == "Lamp A", "b": name == "Lamp B"}
        expect(page.locator("#lamps-state")).to_have_text(state)
    _shot(page, output_dir, "calibrate-lamps")
    _test_read(page)
    expect(page.locator("#lamps-state")).to_have_text("Both lamps lit.")
