"""The web app: the technician's pages and their small JSON API, behind login.

`create_app(appliance)` is all the appliance needs. Pages are server-rendered (Jinja2) with a
little plain JavaScript from /static; the JavaScript talks to /api/* and sends the session's
CSRF token with every POST. A colleague's module `services/web/board.py`, when present, adds
the flashboard and the caller's console through `board_routes(appliance, auth)`.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from services.web import calibration, mjpeg, status
from services.web.auth import Auth, AuthMiddleware
from services.web.calibration import ConfigSaver, Refused
from services.web.passwd import ensure_password, password_path

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
PAGES = [("live", "Live view"), ("calibrate", "Calibrate"), ("sensor", "Sensor"),
         ("ball-check", "Ball check"), ("status", "Status")]
# The technician's pages load nothing from elsewhere and run no inline script.
PAGE_CSP = ("default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; "
            "frame-ancestors 'none'; form-action 'self'; base-uri 'none'")


class _SecurityHeaders:
    """Headers every answer carries: not framed by other sites, no type sniffing."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                            (b"referrer-policy", b"same-origin")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers if scope["type"] == "http" else send)


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"status": "ok", "result": result}, headers={"Cache-Control": "no-store"})


def _error(status_code: int, message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "error": message}, status_code=status_code)


async def _json_body(request: Request) -> Any:
    try:
        return await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Refused(400, "the request body must be JSON") from None


def _user(request: Request) -> str:
    return request.state.session.user


class LastRead:
    """The newest reading attempt, from the appliance's observers (called on the reader's thread)."""

    def __init__(self) -> None:
        self.payload: dict[str, Any] | None = None

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "read":
            self.payload = payload  # one reference swap: safe across threads


def create_app(appliance, *, clock: Callable[[], float] = time.monotonic) -> Starlette:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    pw_file = password_path(appliance.cfg)
    ensure_password(pw_file)

    def record_login(ok: bool, remote: str) -> None:
        appliance.record.append("login", {"user": "technician", "ok": ok, "remote": remote})

    auth = Auth(pw_file, clock=clock, on_login=record_login)
    saver = ConfigSaver(appliance)
    last_read = LastRead()
    appliance.observers.append(last_read)

    def page(name: str):
        async def endpoint(request: Request) -> Response:
            context = {"page": name, "pages": PAGES, "csrf": request.state.csrf,
                       "device_id": appliance.cfg.device_id, "simulation": bool(appliance.sim),
                       "frame_w": appliance.cfg.camera.width, "frame_h": appliance.cfg.camera.height}
            return templates.TemplateResponse(request, f"{name}.html", context,
                                              headers={"Content-Security-Policy": PAGE_CSP,
                                                       "Cache-Control": "no-store"})
        return endpoint

    def api(handler, *, body: bool = False):
        """A JSON endpoint: the handler runs in a worker thread (it may wait for the camera)."""
        async def endpoint(request: Request) -> Response:
            try:
                args = [await _json_body(request)] if body else []
                return _ok(await run_in_threadpool(handler, request, *args))
            except Refused as e:
                return _error(e.status, str(e))
        return endpoint

    async def home(request: Request) -> Response:
        return RedirectResponse("/live", status_code=303)

    async def live_stream(request: Request) -> Response:
        try:
            fps = min(max(float(request.query_params.get("fps", 5)), 0.5), 15)
        except ValueError:
            fps = 5.0
        return StreamingResponse(mjpeg.stream(appliance, mjpeg.parse_layers(request.query_params), fps),
                                 media_type=f"multipart/x-mixed-replace; boundary={mjpeg.BOUNDARY}",
                                 headers={"Cache-Control": "no-store"})

    def get_config(request: Request) -> dict[str, Any]:
        cfg = appliance.cfg
        region = cfg.reader.region
        game = appliance.engine.game
        return {"region": region.model_dump() if region else None,
                "frame_size": [cfg.camera.width, cfg.camera.height],
                "config_path": str(appliance.config_path) if appliance.config_path else None,
                "game_running": bool(game and game.status == "running"),
                "camera": calibration.camera_controls(appliance), "lamps": appliance.lamps_lit()}

    def save_config(request: Request, data: Any) -> dict[str, Any]:
        return saver.save(data, by=_user(request))

    def test_read(request: Request, data: Any) -> dict[str, Any]:
        data = data if isinstance(data, dict) else {}
        use_saved = "region" not in data
        region = None if use_saved else calibration.parse_region(data["region"])
        return calibration.read_now(appliance, region, use_saved)

    def set_controls(request: Request, data: Any) -> dict[str, Any]:
        return calibration.set_camera_controls(appliance, data)

    def light_lamps(request: Request, data: Any) -> dict[str, Any]:
        return calibration.light_lamps(appliance, data)

    def ball_check_action(request: Request, data: Any) -> dict[str, Any]:
        data = data if isinstance(data, dict) else {}
        action = data.get("action")
        if action not in ("start", "finish", "ball"):
            raise Refused(400, "action must be start, finish or ball")
        payload = {"action": action, "by": _user(request)}
        if action == "ball":  # a ball the reader could not read, entered by hand
            payload["ball"] = data.get("ball")
        # Through the one command table, like MQTT requests.
        answer = appliance.request("ball_check", payload)
        if answer["status"] != "ok":
            raise Refused(409, answer["error"])
        return answer["result"]

    routes = [
        Route("/", home),
        *[Route(f"/{name}", page(name)) for name, _ in PAGES],
        Route("/live.mjpg", live_stream),
        Route("/api/status", api(lambda r: status.status(appliance))),
        Route("/api/sensor", api(lambda r: status.sensor(appliance))),
        Route("/api/ball-check", api(lambda r: status.ball_check(appliance))),
        Route("/api/ball-check", api(ball_check_action, body=True), methods=["POST"]),
        Route("/api/last-read", api(lambda r: last_read.payload)),
        Route("/api/config", api(get_config)),
        Route("/api/config", api(save_config, body=True), methods=["POST"]),
        Route("/api/test-read", api(test_read, body=True), methods=["POST"]),
        Route("/api/camera/controls", api(set_controls, body=True), methods=["POST"]),
        Route("/api/camera/lamps", api(light_lamps, body=True), methods=["POST"]),
        *auth.routes(templates),
    ]
    if importlib.util.find_spec("services.web.board") is not None:
        from services.web.board import board_routes

        routes += board_routes(appliance, auth)
    routes.append(Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"))

    app = Starlette(routes=routes, middleware=[Middleware(_SecurityHeaders), Middleware(AuthMiddleware, auth=auth)])
    app.state.auth = auth
    app.state.appliance = appliance
    return app
