"""The flashboard (`/board`, public, for a TV) and the caller's console (`/console`, logged in).

Both pages draw the state the live feed (`/events`) sends them. The console changes things
only through `appliance.request`, the one command table MQTT uses too, so a refusal here is
the same refusal, with the same reason, as on MQTT. Login and the CSRF token on every POST
are checked by the auth middleware before a console route runs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.templating import Jinja2Templates

from services.commands import COMMANDS, MAX_CSV_CHARS
from services.patterns import BUILTIN_PATTERNS
from services.web.live import LiveFeed

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
MAX_BODY_BYTES = MAX_CSV_CHARS + 64 * 1024  # room for a hall's whole card file
# What a caller may do from the console; reads (drawn, status) have their own GET.
CONSOLE_COMMANDS = ("confirm", "manual_call", "void", "new_occasion", "new_game", "end_game",
                    "end_occasion", "claim", "resume", "import_cards", "verify_card")
NO_STORE = {"Cache-Control": "no-store"}
# The pages load nothing from elsewhere and run no inline script.
PAGE_HEADERS = {**NO_STORE, "Content-Security-Policy": (
    "default-src 'self'; img-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'")}


def board_routes(appliance, auth) -> list[BaseRoute]:
    feed = LiveFeed(appliance)
    auth.make_public("/board", "/events")

    async def board(request: Request) -> Response:
        return TEMPLATES.TemplateResponse(request, "board.html", {}, headers=PAGE_HEADERS)

    async def console(request: Request) -> Response:
        patterns = [(name, p.description) for name, p in BUILTIN_PATTERNS.items()]
        return TEMPLATES.TemplateResponse(
            request, "console.html",
            {"csrf": request.state.csrf, "patterns": patterns,
             "can_verify": "verify_card" in COMMANDS}, headers=PAGE_HEADERS)

    async def command(request: Request) -> Response:
        name = request.path_params["command"]
        if name not in CONSOLE_COMMANDS or name not in COMMANDS:
            return _answer({"status": "error", "error": f"the console cannot send {name!r}"}, 404)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return _answer({"status": "error", "error": "request too large"}, 413)
        try:
            payload = json.loads(body) if body.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return _answer({"status": "error", "error": f"not valid JSON: {e}"}, 400)
        if not isinstance(payload, dict):
            return _answer({"status": "error", "error": "payload must be a JSON object"}, 400)
        payload.setdefault("by", request.state.session.user)
        # The engine takes a lock and writes the record: not on the event loop.
        response = await run_in_threadpool(appliance.request, name, payload)
        return _answer(response, 200 if response["status"] == "ok" else 409)

    async def drawn(request: Request) -> Response:
        # Asked only when there is a game: a refused `drawn` would be written to the record,
        # and a GET must change nothing.
        if appliance.engine.game is None:
            return _answer({"status": "ok", "result": {"game": None, "drawn": [], "remaining": []}}, 200)
        return _answer(await run_in_threadpool(appliance.request, "drawn", {}), 200)

    async def frame(request: Request) -> Response:
        pending = appliance.engine.awaiting_confirm
        jpeg = await run_in_threadpool(appliance.record.frame, pending["read_event"]) if pending else None
        if not jpeg:
            return Response("no frame is waiting for confirmation", status_code=404, headers=NO_STORE)
        return Response(jpeg, media_type="image/jpeg",
                        headers={**NO_STORE, "X-Attempt": str(pending["attempt"])})

    return [
        Route("/board", board, methods=["GET"]),
        Route("/events", feed.endpoint, methods=["GET"]),
        Route("/console", console, methods=["GET"]),
        Route("/console/drawn", drawn, methods=["GET"]),
        Route("/console/frame", frame, methods=["GET"]),
        Route("/console/request/{command}", command, methods=["POST"]),
    ]


def _answer(response: dict[str, Any], status: int) -> JSONResponse:
    return JSONResponse(response, status_code=status, headers=NO_STORE)
