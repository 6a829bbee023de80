"""Who may use the pages: login, sessions, CSRF, and a login rate limit.

Everything is behind login unless its path was made public (`auth.make_public`): the
middleware answers a request without a session with a redirect to /login (a page) or 401 (an
API, a stream, anything not GET). Every request that may change something (any method but
GET/HEAD/OPTIONS) must also come from our own origin and carry the session's CSRF token, in
the `X-CSRF-Token` header or a `csrf` form field; otherwise 403.

For routes of other modules (`board_routes(appliance, auth)`):
    auth.make_public("/board", "/events")   # exact paths; a prefix ends with "/"
    auth.session(request)                   # Session (user, csrf) or None
    request.state.session                   # set by the middleware on protected paths
    request.state.csrf                      # the token to put in a page (meta tag / form)

The session cookie is HttpOnly and SameSite=Strict; a login always starts a new session, and
changing the password (`ballreader passwd`) ends every session.
"""
from __future__ import annotations

import hashlib
import hmac
import html
import json
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from services.web.passwd import read_hash, verify_password

log = logging.getLogger(__name__)

USER = "technician"
SESSION_COOKIE = "ballreader_session"
LOGIN_COOKIE = "ballreader_login"  # double-submit token of the login form itself
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
MAX_FORM_BYTES = 64 * 1024
LOGIN_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                                            "form-action 'self'; base-uri 'none'",
                 "Cache-Control": "no-store"}


@dataclass
class Session:
    user: str
    csrf: str
    created: float
    seen: float
    password_hash: str  # the password it was opened with: a new password ends it


class LoginLimiter:
    """At most `max_failures` wrong passwords per remote address in `window_s` seconds (and five
    times that from everyone together); then 429 until the oldest failure leaves the window.
    Nobody is locked out for good: waiting is always enough."""

    def __init__(self, clock: Callable[[], float], max_failures: int = 20, window_s: float = 60.0) -> None:
        self.clock, self.max_failures, self.window_s = clock, max_failures, window_s
        self._by_remote: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()

    def _prune(self, times: deque[float], now: float) -> None:
        while times and now - times[0] >= self.window_s:
            times.popleft()

    def retry_after(self, remote: str) -> float | None:
        """Seconds to wait before the next attempt, or None when one is allowed now."""
        now = self.clock()
        self._prune(self._all, now)
        mine = self._by_remote.get(remote, deque())
        self._prune(mine, now)
        if not mine:
            self._by_remote.pop(remote, None)
        waits = []
        if len(mine) >= self.max_failures:
            waits.append(self.window_s - (now - mine[0]))
        if len(self._all) >= 5 * self.max_failures:
            waits.append(self.window_s - (now - self._all[0]))
        return max(waits) if waits else None

    def failed(self, remote: str) -> None:
        now = self.clock()
        self._by_remote.setdefault(remote, deque()).append(now)
        self._all.append(now)

    def succeeded(self, remote: str) -> None:
        self._by_remote.pop(remote, None)


class Auth:
    def __init__(self, password_file: Path, *, clock: Callable[[], float] = time.monotonic,
                 on_login: Callable[[bool, str], None] | None = None, max_failures: int = 20,
                 window_s: float = 60.0, idle_s: float = 2 * 3600, max_age_s: float = 12 * 3600,
                 max_sessions: int = 50) -> None:
        self.password_file = Path(password_file)
        self.clock = clock
        self.on_login = on_login or (lambda ok, remote: None)  # e.g. into the record
        self.limiter = LoginLimiter(clock, max_failures, window_s)
        self.idle_s, self.max_age_s, self.max_sessions = idle_s, max_age_s, max_sessions
        self._sessions: dict[str, Session] = {}  # sha256(cookie) -> session: the cookie itself is not kept
        self._exact: set[str] = {"/login"}
        self._prefixes: list[str] = ["/static/"]

    # -- what is public --------------------------------------------------------------------
    def make_public(self, *paths: str) -> None:
        for path in paths:
            (self._prefixes.append if path.endswith("/") else self._exact.add)(path)

    def is_public(self, path: str) -> bool:
        return path in self._exact or any(path.startswith(p) for p in self._prefixes)

    # -- sessions --------------------------------------------------------------------------
    @staticmethod
    def _key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def _open(self) -> tuple[str, Session]:
        now = self.clock()
        if len(self._sessions) >= self.max_sessions:  # drop the least recently used
            oldest = min(self._sessions, key=lambda k: self._sessions[k].seen)
            del self._sessions[oldest]
        token = secrets.token_urlsafe(32)
        session = Session(USER, secrets.token_urlsafe(32), now, now, read_hash(self.password_file) or "")
        self._sessions[self._key(token)] = session
        return token, session

    def _close(self, token: str | None) -> None:
        if token:
            self._sessions.pop(self._key(token), None)

    def session_for_token(self, token: str | None) -> Session | None:
        if not token:
            return None
        key = self._key(token)
        session = self._sessions.get(key)
        if session is None:
            return None
        now = self.clock()
        expired = now - session.seen > self.idle_s or now - session.created > self.max_age_s
        if expired or session.password_hash != (read_hash(self.password_file) or ""):
            del self._sessions[key]
            return None
        session.seen = now
        return session

    def session(self, request: Request) -> Session | None:
        return self.session_for_token(request.cookies.get(SESSION_COOKIE))

    # -- the login form --------------------------------------------------------------------
    def routes(self, templates) -> list[Route]:
        async def login_page(request: Request) -> Response:
            return self._login_form(templates, request)

        async def login(request: Request) -> Response:
            return await self._login(templates, request)

        async def logout(request: Request) -> Response:
            # POST only, through the middleware (session + CSRF): a link cannot log anyone out.
            self._close(request.cookies.get(SESSION_COOKIE))
            response = RedirectResponse("/login", status_code=303)
            response.delete_cookie(SESSION_COOKIE, path="/")
            return response

        return [Route("/login", login_page, methods=["GET"]),
                Route("/login", login, methods=["POST"]),
                Route("/logout", logout, methods=["POST"])]

    def _login_form(self, templates, request: Request, message: str = "", status: int = 200,
                    headers: dict[str, str] | None = None, nxt: str | None = None) -> Response:
        token = secrets.token_urlsafe(24)
        nxt = _safe_next(nxt or request.query_params.get("next") or "/")
        response = templates.TemplateResponse(
            request, "login.html", {"login_csrf": token, "next": nxt, "message": message},
            status_code=status, headers={**LOGIN_HEADERS, **(headers or {})})
        _set_cookie(response, request, LOGIN_COOKIE, token, max_age=3600)
        return response

    async def _login(self, templates, request: Request) -> Response:
        remote = request.client.host if request.client else "?"
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return Response("form too large", status_code=413)
        form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
        cookie = request.cookies.get(LOGIN_COOKIE, "")
        if not _same_origin(request.headers, request.scope) or not cookie or \
                not hmac.compare_digest(cookie, form.get("csrf", "")):
            return self._login_form(templates, request, "The login form had expired: please try again.", 403,
                                    nxt=form.get("next"))
        wait = self.limiter.retry_after(remote)
        if wait is not None:
            log.warning("web login from %s refused: too many wrong passwords", remote)
            seconds = int(wait) + 1
            return self._login_form(templates, request,
                                    f"Too many wrong passwords. Try again in {seconds} seconds.", 429,
                                    {"Retry-After": str(seconds)}, nxt=form.get("next"))
        stored = read_hash(self.password_file)
        ok = stored is not None and await run_in_threadpool(verify_password, form.get("password", ""), stored)
        await run_in_threadpool(self.on_login, ok, remote)
        if not ok:
            self.limiter.failed(remote)
            return self._login_form(templates, request, "Wrong password.", 401, nxt=form.get("next"))
        self.limiter.succeeded(remote)
        self._close(request.cookies.get(SESSION_COOKIE))  # never carry a session across a login
        token, _ = self._open()
        response = RedirectResponse(_safe_next(form.get("next", "/")), status_code=303)
        _set_cookie(response, request, SESSION_COOKIE, token)
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response


class AuthMiddleware:
    """Login and CSRF for every route that is not public: `Middleware(AuthMiddleware, auth=auth)`.
    Pure ASGI, so a form body read for its CSRF field can be handed on unchanged."""

    def __init__(self, app, auth: Auth) -> None:
        self.app, self.auth = app, auth

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.auth.is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        token = _cookie(headers.get("cookie", ""), SESSION_COOKIE)
        session = self.auth.session_for_token(token)
        if session is None:
            await self._unauthorised(scope, headers)(scope, receive, send)
            return
        scope.setdefault("state", {}).update(session=session, csrf=session.csrf)
        if scope["method"] not in SAFE_METHODS:
            sent = headers.get("x-csrf-token", "")
            if not sent and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
                body, receive = await _buffer(receive)
                if body is None:
                    await Response("form too large", status_code=413)(scope, receive, send)
                    return
                sent = parse_qs(body.decode(errors="replace")).get("csrf", [""])[0]
            if not _same_origin(headers, scope) or not hmac.compare_digest(sent, session.csrf):
                log.warning("web: %s %s refused: missing or wrong CSRF token / foreign origin",
                            scope["method"], scope["path"])
                await _refusal(headers, 403, "refused: this request did not come from the appliance's own "
                                             "page (missing or wrong CSRF token)")(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _unauthorised(scope, headers: dict[str, str]) -> Response:
        wants_page = scope["method"] in ("GET", "HEAD") and "text/html" in headers.get("accept", "")
        if wants_page:
            path = scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
            return RedirectResponse("/login?next=" + quote(path, safe=""), status_code=303)
        return _json(401, "log in first", {"WWW-Authenticate": 'FormLogin realm="ballreader"'})


# -- small helpers ---------------------------------------------------------------------------

def _refusal(headers: dict[str, str], status: int, error: str) -> Response:
    """A browser that was sent here by a form sees a page; a script gets JSON."""
    if "text/html" in headers.get("accept", ""):
        body = (f"<!doctype html><meta charset=utf-8><title>Refused</title><h1>Refused</h1><p>{html.escape(error)}"
                '<p><a href="/">Back to the appliance</a>')
        return Response(body, status_code=status, media_type="text/html")
    return _json(status, error)


def _json(status: int, error: str, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps({"status": "error", "error": error}), status_code=status,
                    media_type="application/json", headers=headers)


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _set_cookie(response: Response, request: Request, name: str, value: str, max_age: int | None = None) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def _safe_next(path: str) -> str:
    """Only a path on this server: never an address elsewhere (open redirect)."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path or path.startswith("/login"):
        return "/"
    return path


def _same_origin(headers, scope) -> bool:
    """A browser names the page a request came from in Origin (or Referer); it must be ours.
    Clients that send neither (curl, scripts) still need the CSRF token."""
    own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"
    origin = headers.get("origin")
    if origin is not None:
        return origin == own  # "null" (a sandboxed or file page) is never ours
    referer = headers.get("referer")
    if referer:
        return referer == own or referer.startswith(own + "/")
    return True


async def _buffer(receive):
    """Read the whole request body (bounded) and give back a receive that replays it."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None, receive
        chunks.append(chunk)
        more = message.get("more_body", False)
    body = b"".join(chunks)
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay
