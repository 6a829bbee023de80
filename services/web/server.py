"""Serve the pages with uvicorn in a background thread of the appliance.

The socket is bound here, before uvicorn starts, so port 0 gives a free port that is known at
once (`WebServer.port`) and a port already taken fails the start with a clear error.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import threading

import uvicorn

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0


class WebServer:
    def __init__(self, app, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((host, port))
        except OSError as e:
            self._sock.close()
            raise OSError(f"web page: cannot listen on {host}:{port}: {e.strerror}") from None
        self._sock.listen(64)
        self._sock.setblocking(False)
        self.host = host
        self.port = self._sock.getsockname()[1]
        # Open streams (the live view) are cut after a second at stop rather than waited for.
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1, proxy_headers=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="web", daemon=True)
        self._failed: BaseException | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _serve(self) -> None:
        try:
            # Not the main thread: uvicorn leaves signal handling to the appliance.
            asyncio.run(self._server.serve(sockets=[self._sock]))
        except BaseException as e:  # reported by start()
            self._failed = e
            log.exception("web server stopped")

    def start(self) -> None:
        self._thread.start()
        waited = 0.0
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"web page did not start: {self._failed}")
            if waited > START_TIMEOUT_S:
                raise RuntimeError("web page did not start in time")
            self._thread.join(0.02)
            waited += 0.02
        log.info("web page at %s", self.url)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._sock.close()


def start_web(appliance) -> WebServer:
    """Serve `create_app(appliance)` on `appliance.cfg.web.host` / `.port` (0 = any free port)."""
    from services.web.app import create_app

    web = appliance.cfg.web
    server = WebServer(create_app(appliance), web.host, web.port)
    server.start()
    return server
