"""A TCP proxy on loopback whose link can be cut, as a network cable pulled out.

`cut()` black-holes traffic both ways (connections stay open, nothing passes, new ones are
accepted but go nowhere), like a dead network rather than a refused connection; `restore()`
drops the dead connections and lets new ones through.
"""
from __future__ import annotations

import socket
import threading

from mqtt_broker import free_port


class CuttableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._cut = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._running = True
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def cut(self) -> None:
        self._cut.set()

    def restore(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked in recv; close() alone may not
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass
        self._cut.clear()

    def close(self) -> None:
        self._running = False
        self._server.close()
        self.restore()

    def _accept(self) -> None:
        while self._running:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                self._conns.append(client)
            if self._cut.is_set():
                continue  # accepted, then silence
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if self._cut.is_set():
                    continue  # swallowed: the cable is out
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
