"""A wired flashboard on a serial port: each call, void, clear and new game as a line of bytes.

Halls' wired boards each speak their own little protocol, so the bytes come from templates
in the config, e.g. call = "\\x02C{number:02d}\\x03" or "{letter} {number}\\r\\n".
Placeholders: {ball} {letter} {number} {game} {index} {seq} {prize} {pattern}, with Python
format specs ({number:02d}). Escapes in the template: \\xHH, \\r, \\n, \\t, \\0, \\\\.

The board keeps the balls it shows: a repeated call changes nothing, a void unlights its
ball, a state message catches up what was missed, and a new game number clears the board.
Writes happen on a worker thread, so a slow or unplugged board never holds up a call. A
board that is missing or fails is reported (`last_error`, `on_fault`) and opened again with
the next message, and then repainted whole: calling never waits for it.
"""
from __future__ import annotations

import logging
import queue
import re
import string
import threading
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from firmware.serial_port import PySerialLink, SerialPortError
from vision.balls import parse_ball

log = logging.getLogger(__name__)

PLACEHOLDERS = ("ball", "letter", "number", "game", "index", "seq", "prize", "pattern")
_SAMPLE = {"ball": "B12", "letter": "B", "number": 12, "game": 1, "index": 1, "seq": 1,
           "prize": "", "pattern": "any_line"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|[rnt0\\])")
_SIMPLE = {"r": "\r", "n": "\n", "t": "\t", "0": "\0", "\\": "\\"}


def unescape(text: str) -> str:
    """'\\x02A\\r\\n' (as written in a TOML literal string) -> the control characters."""
    def one(m: re.Match) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if code[0] == "x" else _SIMPLE[code]
    return _ESCAPE.sub(one, text)


def render(template: str, fields: dict[str, Any], encoding: str = "latin-1") -> bytes:
    """Fill a template. Escapes count only in the template's own text, never in the values
    (a prize written "\\x03" must not end a frame early)."""
    out = []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        out.append(unescape(literal))
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            raise KeyError(f"unknown placeholder {{{name}}}; known: {', '.join(PLACEHOLDERS)}")
        value = fields.get(name, "")
        if conversion:
            value = {"r": repr, "s": str, "a": ascii}[conversion](value)
        out.append(format(value, spec or ""))
    return "".join(out).encode(encoding, errors="replace")


class SerialBoardConfig(BaseModel):
    """[serial_board] in the config."""
    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    port: str = Field("/dev/ttyUSB0", description="Device path or pyserial URL (e.g. socket://host:4001)")
    baudrate: int = Field(9600, ge=50, le=4_000_000)
    parity: Literal["N", "E", "O", "M", "S"] = "N"
    bytesize: Literal[5, 6, 7, 8] = 8
    stopbits: Literal[1, 1.5, 2] = 1
    encoding: str = Field("latin-1", description="Text encoding of the rendered templates")
    write_timeout_s: float = Field(1.0, gt=0, le=30)
    call: str = Field("{ball}\\r\\n", description="Sent for each call")
    void: str = Field("VOID {ball}\\r\\n", description="Sent when a call is voided")
    clear: str = Field("CLEAR\\r\\n", description="Sent to blank the board (before a new game)")
    new_game: str = Field("GAME {game}\\r\\n", description="Sent when a new game starts")

    @field_validator("call", "void", "clear", "new_game")
    @classmethod
    def _template(cls, v: str) -> str:
        try:
            render(v, _SAMPLE)
        except (KeyError, ValueError, IndexError) as e:
            raise ValueError(f"bad template {v!r}: {e}") from None
        return v

    @field_validator("encoding")
    @classmethod
    def _encoding(cls, v: str) -> str:
        import codecs
        codecs.lookup(v)  # LookupError -> refused at start
        return v


class SerialBoard:
    def __init__(self, config: SerialBoardConfig, link_factory: Callable[..., Any] = PySerialLink,
                 on_fault: Callable[[str | None], None] | None = None) -> None:
        """`on_fault(message)` is called when the board cannot be written, `on_fault(None)`
        when it can again (for a fault that does not stop calling)."""
        self.config = config
        self._link_factory = link_factory
        self.link = None  # opened by the writer, so a missing board never stops the start
        self.on_fault = on_fault or (lambda message: None)
        self.game: int | None = None
        self.shown: list[str] = []  # balls lit on the board for this game, in call order
        self.last_error: str | None = None
        self._game_fields: dict[str, Any] = {}
        self._lost = False  # a write failed: the board must be repainted once it answers
        self._lock = threading.Lock()
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._worker = threading.Thread(target=self._write_loop, name="serial-board", daemon=True)
        self._worker.start()

    # -- what the board is told ------------------------------------------------------------
    # The board keeps which balls it shows, so a repeated message changes nothing and a
    # state message brings it up to date after it missed some (or at start).
    def on_call(self, call: dict[str, Any]) -> None:
        """A call message, called or voided."""
        with self._lock:
            if call["game"] != self.game:
                self._start_game(call["game"], {})
            if call["event_type"] == "voided":
                if call["ball"] in self.shown:
                    self.shown.remove(call["ball"])
                    self._send(self.config.void, call)
            elif call["ball"] not in self.shown:
                self.shown.append(call["ball"])
                self._send(self.config.call, call)

    def on_state(self, state: dict[str, Any]) -> None:
        """A state message: a new game clears the board; missed calls and voids are caught up."""
        game = state.get("game")
        if not game:
            return
        with self._lock:
            if game["number"] != self.game:
                self._start_game(game["number"], {"prize": game.get("prize") or "",
                                                  "pattern": (game.get("pattern") or {}).get("name", "")})
            for ball in [b for b in self.shown if b not in game["called"]]:
                self.shown.remove(ball)
                self._send(self.config.void, self._fields(ball, game["number"]))
            for index, ball in enumerate(game["called"], start=1):
                if ball not in self.shown:
                    self.shown.append(ball)
                    self._send(self.config.call, {**self._fields(ball, game["number"]), "index": index})

    def observe(self, kind: str, payload: dict[str, Any]) -> None:
        """For the appliance's in-process observers, called with (kind, payload): the board
        follows calls even while the broker is away."""
        if kind == "call":
            self.on_call(payload)
        elif kind == "state":
            self.on_state(payload)

    def clear(self) -> None:
        self._send(self.config.clear, {"game": self.game or 0})

    @staticmethod
    def _fields(ball: str, game: int) -> dict[str, Any]:
        number = parse_ball(ball)
        return {"ball": ball, "letter": ball[0], "number": number, "game": game}

    def _start_game(self, number: int, extra: dict[str, Any]) -> None:
        self.game = number
        self._game_fields = {"game": number, **extra}
        self.shown = []
        self.clear()
        self._send(self.config.new_game, {"game": number, **extra})

    def _send(self, template: str, fields: dict[str, Any]) -> None:
        try:
            self._queue.put(render(template, fields, self.config.encoding))
        except (ValueError, TypeError) as e:  # e.g. {number:02d} in a template with no number
            self.last_error = f"template {template!r}: {e}"
            log.warning("flashboard: %s", self.last_error)

    # -- the port ---------------------------------------------------------------------------
    def _open(self) -> None:
        c = self.config
        self.link = self._link_factory(c.port, baudrate=c.baudrate, parity=c.parity, bytesize=c.bytesize,
                                       stopbits=c.stopbits, timeout=c.write_timeout_s)

    def _repaint(self) -> bytes:
        """Everything the board should show now: after it was away it may show anything."""
        with self._lock:
            if self.game is None:
                return render(self.config.clear, {"game": 0}, self.config.encoding)
            parts = [render(self.config.clear, self._game_fields, self.config.encoding),
                     render(self.config.new_game, self._game_fields, self.config.encoding)]
            parts += [render(self.config.call, {**self._fields(ball, self.game), "index": i}, self.config.encoding)
                      for i, ball in enumerate(self.shown, start=1)]
            return b"".join(parts)

    def _write_loop(self) -> None:
        while (data := self._queue.get()) is not None:
            try:
                if self.link is None:
                    self._open()
                if self._lost:
                    # The repaint already holds what `data` would have changed.
                    data = self._repaint()
                self.link.write(data)
                self._lost = False
                if self.last_error is not None:
                    self.last_error = None
                    self.on_fault(None)
            except SerialPortError as e:
                # Missing, unplugged or stuck: say so once, drop the port so the next
                # message opens it again, and keep calling.
                self._lost = True
                self._close_link()
                if str(e) != self.last_error:
                    log.warning("flashboard: %s", e)
                    self.on_fault(str(e))
                self.last_error = str(e)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _close_link(self) -> None:
        if self.link is not None:
            try:
                self.link.close()
            except (SerialPortError, OSError):
                pass
            self.link = None

    def flush(self) -> None:
        """Wait until everything queued has been written (or failed)."""
        self._queue.join()

    def close(self) -> None:
        self._queue.put(None)
        self._worker.join(timeout=5)
        self._close_link()
