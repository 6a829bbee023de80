"""The flashboard and the caller's console in a real browser (Debian's headless Chromium).

The board and most of the console run against the real appliance as a process
(`ballreader run --sim` with the web page on) and a real mosquitto: the simulated blower
draws balls, the appliance reads and calls them, and the page must show what the broker
carried. A lost connection is a real one: the browser talks to the appliance through a
small TCP relay that the test cuts and restores.

Confirming an unsure ball needs a reading that waits for a person, which the simulated
caller in `--sim` always answers at once; that test builds the appliance in this process,
with the simulated camera (the only stand-in, for the hardware) looking at one ball.
"""
from __future__ import annotations

import dataclasses
import json
import re
import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from appliance_proc import log_of, start_appliance
from mqtt_broker import Subscriber, free_port

PASSWORD = "hall-console-pw"
DEVICE = "t1"
WAIT_MS = 15_000  # how long the page may take to show something (not a speed check)


# -- fixtures -------------------------------------------------------------------------------

@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # A blocked script or style (Content-Security-Policy) shows up only as a console error.
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "Security Policy" in m.text else None)
    yield page
    context.close()
    assert not errors, f"JavaScript or Content-Security-Policy errors on the page: {errors}"


def _password_file(tmp_path: Path) -> Path:
    from services.web.passwd import write_password

    path = tmp_path / "web-password"
    write_password(path, PASSWORD)
    return path


def _wait_http(url: str, proc=None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the appliance exited ({proc.returncode}):\n{log_of(proc)}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer in {timeout} s" + (f":\n{log_of(proc)}" if proc else ""))
        time.sleep(0.1)


@pytest.fixture
def run_appliance(tmp_path, mosquitto):
    """Start `ballreader run --sim` with the web page on a free port; yields (proc, base_url)."""
    procs = []

    def start(sim: dict | None = None, seed: int = 3):
        port = free_port()
        config = {"web": {"enabled": True, "host": "127.0.0.1", "port": port,
                          "password_file": str(_password_file(tmp_path))},
                  "sim": {"chatter_edges": 4, **(sim or {})}}
        proc = start_appliance(tmp_path, mosquitto, "--sim", "--seed", str(seed), device_id=DEVICE, config=config)
        procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        _wait_http(base + "/board", proc)
        return proc, base

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except Exception:
            proc.kill()
            proc.wait()


class Relay:
    """A TCP relay between the browser and the appliance that the test can cut (both ways,
    every open connection, and no new ones) and restore on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.port = free_port()
        self._server: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(16)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return  # cut
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        # shutdown() wakes the thread blocked in accept(); close() alone would leave it listening.
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _calls(sub: Subscriber) -> list[dict]:
    return [json.loads(m.payload) for m in sub.messages if m.topic.endswith("/call")]


def _next_call(sub: Subscriber, after_seq: int, timeout: float = 30.0) -> dict:
    msg = sub.wait_for(lambda m: m.topic.endswith("/call") and json.loads(m.payload)["seq"] > after_seq,
                       timeout=timeout)
    return json.loads(msg.payload)


def _ts(payload: dict) -> datetime:
    return datetime.fromisoformat(payload["ts"].replace("Z", "+00:00"))


def _board_last(page: Page) -> str:
    return page.locator("#last").inner_text()


def login(page: Page, base: str, path: str = "/console") -> None:
    page.goto(base + path)
    expect(page).to_have_url(re.compile(r"/login"))
    page.fill("input[name=password]", PASSWORD)
    page.locator("form button[type=submit], form input[type=submit]").first.click()
    expect(page).to_have_url(base + path)


# -- the flashboard -------------------------------------------------------------------------

def test_board_shows_each_call_as_the_broker_carries_it(run_appliance, mosquitto, page, output_dir):
    # Balls a few seconds apart, so "the last ball" has one right answer while we look.
    with Subscriber(mosquitto, f"bingo/{DEVICE}/call", f"bingo/{DEVICE}/sim/drawn") as sub:
        proc, base = run_appliance(sim={"hold_s": 1.5, "gap_s": 1.0})
        page.goto(base + "/board")
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        # For the latency figure only (no assertion on it): when each last ball appeared.
        page.evaluate(SHOWN_AT_JS)

        for _ in range(CALLS_WATCHED):
            seen = max([c["seq"] for c in _calls(sub)], default=0)
            call = _next_call(sub, seen)
            drawn = [json.loads(m.payload) for m in sub.messages if m.topic.endswith("/sim/drawn")]
            assert call["event_type"] == "called"
            assert call["ball"] == drawn[-1]["ball"], "the appliance called a ball the blower did not draw"
            expect(page.locator("#last")).to_have_text(call["ball"], timeout=WAIT_MS)
            expect(page.locator(f"#n{call['number']}")).to_have_class(re.compile(r"\bon\b"))
            expect(page.locator(f"#n{call['number']}")).to_have_class(re.compile(r"\blast\b"))

        # Every live call is lit, and nothing else.
        called = {c["number"] for c in _calls(sub) if c["event_type"] == "called"}
        lit = set(page.eval_on_selector_all("#grid td.on", "cells => cells.map(c => +c.textContent)"))
        assert called <= lit and len(lit) == int(page.locator("#count").inner_text())
        assert page.locator("#game").inner_text().startswith("Game ")
        # The pattern picture: any_line shows one line, five squares.
        assert page.locator("#pattern td.need").count() == 5
        page.screenshot(path=str(output_dir / "board.png"))
        _write_latency(page.evaluate("window.shownAt"), _calls(sub), output_dir / "board-latency.json")


CALLS_WATCHED = 4
SHOWN_AT_JS = """() => {
  window.shownAt = [];
  const last = document.getElementById("last");
  new MutationObserver(() => window.shownAt.push({ball: last.textContent, at: Date.now()}))
    .observe(last, {childList: true, characterData: true, subtree: true});
}"""


def _write_latency(shown: list[dict], calls: list[dict], path: Path) -> None:
    """Milliseconds from a call's time stamp (made as it is recorded) to the board showing it;
    the browser and the appliance share this machine's clock."""
    ms = []
    for call in calls:
        at = next((s["at"] for s in shown if s["ball"] == call["ball"]), None)
        if at is not None and call["event_type"] == "called":
            ms.append(round(at - _ts(call).timestamp() * 1000, 1))
    path.write_text(json.dumps({"call_to_board_ms": ms, "max_ms": max(ms, default=None)}, indent=1))
    print(f"call to board (ms): {ms}")


def test_board_shows_stale_when_cut_off_and_catches_up(run_appliance, mosquitto, page, output_dir):
    with Subscriber(mosquitto, f"bingo/{DEVICE}/call") as sub:
        proc, base = run_appliance(sim={"hold_s": 0.8, "gap_s": 0.5})
        web_port = int(base.rsplit(":", 1)[1])
        relay = Relay(web_port)
        relay.start()
        page.goto(f"http://127.0.0.1:{relay.port}/board")
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        first = _next_call(sub, 0)
        expect(page.locator(f"#n{first['number']}")).to_have_class(re.compile(r"\bon\b"), timeout=WAIT_MS)

        relay.cut()
        cut_at = datetime.now(timezone.utc)
        expect(page.locator("#live")).to_have_text(re.compile("stale"), timeout=WAIT_MS)
        expect(page.locator("body")).to_have_class(re.compile("is-stale"))
        shown_before = _board_last(page)
        # Calls go on while the board is cut off (made after the cut, by their own time
        # stamps on the same clock); it must not pretend to have them.
        msg = sub.wait_for(lambda m: m.topic.endswith("/call") and _ts(json.loads(m.payload)) > cut_at,
                           timeout=30)
        missed = json.loads(msg.payload)
        assert missed["event_type"] == "called"
        expect(page.locator(f"#n{missed['number']}")).not_to_have_class(re.compile(r"\bon\b"))
        assert _board_last(page) == shown_before
        page.screenshot(path=str(output_dir / "board-stale.png"))

        relay.start()
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        expect(page.locator(f"#n{missed['number']}")).to_have_class(re.compile(r"\bon\b"), timeout=WAIT_MS)
        expect(page.locator("body")).not_to_have_class(re.compile("is-stale"))
        page.screenshot(path=str(output_dir / "board-caught-up.png"))
        relay.cut()


# -- the caller's console -------------------------------------------------------------------

CARDS_CSV = ("serial,b1,b2,b3,b4,b5,i1,i2,i3,i4,i5,n1,n2,n3,n4,g1,g2,g3,g4,g5,o1,o2,o3,o4,o5\n"
             "C100,1,2,3,4,5,16,17,18,19,20,31,32,33,34,46,47,48,49,50,61,62,63,64,65\n")


def _message(page: Page):
    return page.locator("#message")


def test_console_calls_voids_starts_a_game_and_verifies_a_card(run_appliance, mosquitto, page, output_dir, tmp_path):
    # One ball at the start, then a long pause: the console's own calls do not race the blower.
    with Subscriber(mosquitto, f"bingo/{DEVICE}/call") as sub:
        proc, base = run_appliance(sim={"hold_s": 30.0, "gap_s": 30.0})
        _next_call(sub, 0)  # the blower's first ball is in

        # Without a session the console is not shown.
        assert urllib.request.urlopen(base + "/board").status == 200
        login(page, base)
        expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
        expect(page.locator("#drawn tbody tr")).to_have_count(1, timeout=WAIT_MS)
        expect(page.locator("#remaining-count")).to_have_text("(74)")

        # Call by hand a ball still in the blower.
        ball = page.locator("#remaining .ball").last.inner_text()
        page.fill("#manual-ball", ball)
        page.click("#manual button")
        expect(_message(page)).to_have_text(f"Called {ball}.")
        manual = _next_call(sub, 1)
        assert (manual["ball"], manual["source"], manual["event_type"]) == (ball, "console", "called")
        expect(page.locator("#drawn tbody tr")).to_have_count(2)
        expect(page.locator("#remaining-count")).to_have_text("(73)")
        expect(page.locator("#remaining .ball", has_text=re.compile(f"^{ball}$"))).to_have_count(0)

        # The same ball again: refused, with the engine's reason on screen.
        page.fill("#manual-ball", ball)
        page.click("#manual button")
        expect(_message(page)).to_have_text(re.compile(f"Refused: {ball} was already called"))
        expect(_message(page)).to_have_class(re.compile("error"))

        # Void it.
        page.fill("#void-reason", "ball fell back into the blower")
        page.locator("#drawn tbody tr", has=page.locator(f"td:text-is('{ball}')")).locator("button.void").click()
        expect(_message(page)).to_have_text(re.compile(f"Voided {ball}"))
        void = _next_call(sub, manual["seq"])
        assert (void["event_type"], void["voids_seq"], void["reason"]) == \
               ("voided", manual["seq"], "ball fell back into the blower")
        expect(page.locator("#drawn tbody tr")).to_have_count(1)
        expect(page.locator("#remaining-count")).to_have_text("(74)")
        page.screenshot(path=str(output_dir / "console.png"), full_page=True)

        # A new game: refused while one runs, then refused without the all-balls check.
        page.select_option("#pattern", "four_corners")
        page.fill("#prize", "£25")
        page.click("#new-game button.primary")
        expect(_message(page)).to_have_text(re.compile(r"Refused: only one game at a time"))
        page.click("#end-game")
        expect(_message(page)).to_have_text(re.compile(r"Game \d+ ended\."))
        page.click("#new-game button.primary")
        expect(_message(page)).to_have_text(re.compile("Refused: .*all 75 balls"))
        page.check("#all-balls")
        page.click("#new-game button.primary")
        expect(_message(page)).to_have_text(re.compile(r"Game \d+ started\."))
        expect(page.locator("#summary")).to_have_text(re.compile(r"running · four corners · prize £25 · 0 called"))
        expect(page.locator("#remaining-count")).to_have_text("(75)")

        # Verify a card by serial: the hall's cards are imported from its CSV first.
        if page.locator("#verify").count():
            csv_path = tmp_path / "cards.csv"
            csv_path.write_text(CARDS_CSV)
            page.set_input_files("#cards-file", str(csv_path))
            expect(_message(page)).to_have_text(re.compile("1 card"))
            for corner in ("B1", "B5", "O61"):
                page.fill("#manual-ball", corner)
                page.click("#manual button")
                expect(_message(page)).to_have_text(f"Called {corner}.")
            page.fill("#verify-serial", "C100")
            page.click("#verify button")
            expect(page.locator("#verify-result")).to_have_text(re.compile("^Not a winner"))
            page.fill("#manual-ball", "O65")
            page.click("#manual button")
            expect(_message(page)).to_have_text("Called O65.")
            # A player calls bingo: calling pauses while the card is checked.
            page.click("#claim")
            expect(_message(page)).to_have_text(re.compile("Calling paused after call 4"))
            expect(page.locator("#summary")).to_have_text(re.compile("· claims ·"))
            page.fill("#manual-ball", "N40")
            page.click("#manual button")
            expect(_message(page)).to_have_text(re.compile("^Refused: calling is paused while a claim is checked"))
            page.click("#verify button")
            expect(page.locator("#verify-result")).to_have_text(re.compile("^WINNER .*completed by call 4 \\(O65\\)"))
            winning = page.eval_on_selector_all("#verify-card td.winning", "cells => cells.map(c => c.textContent)")
            assert sorted(winning) == ["1", "5", "61", "65"]
            page.screenshot(path=str(output_dir / "console-verify.png"), full_page=True)
            page.fill("#verify-serial", "NOPE")
            page.click("#verify button")
            expect(_message(page)).to_have_text(re.compile("Refused: no card with serial 'NOPE'"))
            page.click("#resume")
            expect(_message(page)).to_have_text("Calling goes on.")
            expect(page.locator("#summary")).to_have_text(re.compile("· running ·"))
        page.screenshot(path=str(output_dir / "console-new-game.png"), full_page=True)


def test_console_post_needs_the_csrf_token_and_a_session(run_appliance):
    import httpx

    proc, base = run_appliance(sim={"hold_s": 30.0, "gap_s": 30.0})
    anonymous = httpx.post(base + "/console/request/manual_call", json={"ball": "B1"})
    assert anonymous.status_code == 401
    with httpx.Client(base_url=base) as client:
        form = client.get("/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
        r = client.post("/login", data={"password": PASSWORD, "csrf": token, "next": "/console"})
        assert r.status_code == 303, r.text
        console = client.get("/console")
        assert console.status_code == 200
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', console.text).group(1)
        forged = client.post("/console/request/manual_call", json={"ball": "B1"})
        assert forged.status_code == 403
        unknown = client.post("/console/request/split_prize", json={}, headers={"X-CSRF-Token": csrf})
        assert unknown.status_code == 404
        refused = client.post("/console/request/void", json={"seq": 999}, headers={"X-CSRF-Token": csrf})
        assert refused.status_code == 409 and "no call with seq 999" in refused.json()["error"]


def test_console_confirms_an_unsure_ball_showing_its_frame(tmp_path, mosquitto, page, output_dir):
    from services.appliance import Appliance
    from services.config import parse_config
    from services.web.server import start_web
    from vision.frame_source import SimulatedSource
    from vision.render import random_scene

    port = free_port()
    cfg = parse_config({
        "device_id": DEVICE, "mqtt": {"url": mosquitto.url}, "camera": {"kind": "sim"},
        "record": {"path": str(tmp_path / "record.db")},
        # Anything short of certain goes to a person, at the first presentation.
        "reader": {"commit_at": 1.0, "confirm_at": 0.05, "max_presentations": 1},
        "web": {"enabled": True, "port": port, "password_file": str(_password_file(tmp_path))},
    })
    appliance = Appliance(cfg)
    # The hardware edge: a camera looking at one ball, I16, in the holder, its print turned
    # well away from the lens, as a ball that needs a person's eyes.
    scene = dataclasses.replace(random_scene(16, np.random.default_rng(5)), turned_deg=62.0, _cache={})
    appliance.camera = SimulatedSource(lambda: scene, seed=5, fps=cfg.camera.fps)
    appliance.camera.open()
    appliance.mqtt.start()
    web = start_web(appliance)
    try:
        assert appliance.request("new_occasion", {})["status"] == "ok"
        assert appliance.request("new_game", {"all_balls_in_blower": True})["status"] == "ok"
        outcome = appliance.read_ball(presentation=1)
        assert outcome is not None and outcome.decision == "confirm", outcome
        pending = appliance.engine.awaiting_confirm

        login(page, f"http://127.0.0.1:{port}")
        expect(page.locator("#confirm")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#confirm-ball")).to_have_text(pending["ball"] or "nothing")
        image = page.locator("#confirm-frame")
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
        size = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
        assert size == [cfg.camera.width, cfg.camera.height]
        page.screenshot(path=str(output_dir / "console-confirm.png"), full_page=True)

        # The caller looks at the picture: it is I16 (whatever the reader thought).
        page.fill("#confirm-other", "I16")
        page.click("#confirm-correct button")
        expect(page.locator("#message")).to_have_text("Called I16.")
        expect(page.locator("#confirm")).to_be_hidden()
        call = appliance.engine.game.live_calls()[-1]
        assert (call["ball"], call["source"]) == ("I16", "console")
        # The confirmed call keeps the frame the person looked at.
        assert appliance.record.frame(pending["read_event"])
    finally:
        web.stop()
        appliance.mqtt.stop(timeout=2)
        appliance.record.close()


# -- the live feed, without a browser ----------------------------------------------------------

def _events(chunk: bytes) -> list[tuple[str, dict]]:
    found = []
    for block in chunk.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def test_live_feed_sends_state_first_and_resyncs_a_client_that_falls_behind(tmp_path, monkeypatch):
    import asyncio
    from types import SimpleNamespace

    from services.engine import DrawEngine
    from services.record import Record
    from services.web import live

    record = Record(tmp_path / "record.db")
    appliance = SimpleNamespace(observers=[], stop_event=threading.Event())
    appliance.engine = DrawEngine(record, on_change=lambda: appliance_notify("state", appliance.engine.state()),
                                  on_call=lambda call: appliance_notify("call", call))

    def appliance_notify(kind, payload):
        for observer in appliance.observers:
            observer(kind, payload)

    feed = live.LiveFeed(appliance)
    assert appliance.observers == [feed.observe]

    async def scenario():
        stream = feed.stream(None)
        first = _events(await stream.__anext__())
        assert [kind for kind, _ in first] == ["state"] and first[0][1]["game"] is None
        # The public feed has a bound on open pages; one more is turned away, not queued.
        monkeypatch.setattr(live, "MAX_CLIENTS", 1)
        assert (await feed.endpoint(None)).status_code == 503
        monkeypatch.setattr(live, "MAX_CLIENTS", 2)
        assert (await feed.endpoint(None)).status_code == 200

        # A caller makes many calls from another thread while this client reads nothing.
        def caller():
            appliance.engine.new_occasion()
            appliance.engine.new_game({"name": "any_line", "spec": "any_line"}, all_balls_in_blower=True)
            for n in range(1, 76):
                appliance.engine.manual_call(n)

        worker = threading.Thread(target=caller)
        worker.start()
        while worker.is_alive():  # the caller never waits for the page
            await asyncio.sleep(0.01)
        worker.join()
        await asyncio.sleep(0.05)  # let the handed-over events reach the client's queue

        # It lost its backlog and gets the whole state instead: all 75 balls.
        kind, state = _events(await stream.__anext__())[0]
        assert kind == "state" and state["game"]["count"] == 75
        assert feed.clients == 1
        appliance.stop_event.set()
        with pytest.raises(StopAsyncIteration):
            while True:
                await stream.__anext__()
        assert feed.clients == 0

    # In a thread of its own: Playwright's sync API keeps an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()
    record.close()
