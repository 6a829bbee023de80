"""The draw engine: occasions, games and calls, rebuilt from the record.

Every change is an event appended to the record first and then applied to the in-memory
state by the same `_apply` that replays the record at start, so the state after a restart is
exactly the state before it. A request that is not allowed now raises `Refused` with the
reason; the refusal is recorded and nothing else changes.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.record import Event, Record, utc_now
from vision.balls import ALL_NUMBERS, ball_name, letter_for


class Refused(Exception):
    """A request that is not allowed now; the message says why."""


@dataclass
class Game:
    number: int
    pattern: dict[str, Any]
    prize: str
    kind: str
    status: str = "announced"  # announced -> running -> closed
    calls: list[dict[str, Any]] = field(default_factory=list)  # every call event, voided ones too
    voided: set[int] = field(default_factory=set)  # seq of voided calls

    def live_calls(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["seq"] not in self.voided]

    def called_numbers(self) -> list[int]:
        return [c["number"] for c in self.live_calls()]


@dataclass
class Occasion:
    id: int
    started_at: str
    games: int = 0


@dataclass
class Outcome:
    """What became of one fused reading."""
    decision: str  # called | confirm | represent | duplicate | refused
    call: dict[str, Any] | None = None
    reason: str | None = None


class DrawEngine:
    def __init__(self, record: Record, on_change: Callable[[], None] | None = None,
                 on_call: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.record = record
        self.on_change = on_change or (lambda: None)
        self.on_call = on_call or (lambda call: None)  # every call and void, as published
        self._lock = threading.RLock()
        self.occasion: Occasion | None = None
        self.game: Game | None = None
        self.last_game_number = 0
        self.last_occasion_id = 0
        self.last_seq = 0
        self.attempts = 0
        self.awaiting_confirm: dict[str, Any] | None = None
        self.faults: dict[str, dict[str, Any]] = {}
        for event in record.events():
            self._apply(event)

    # -- the event log ---------------------------------------------------------------------
    def _emit(self, kind: str, data: dict[str, Any], frame_jpeg: bytes | None = None) -> Event:
        event = self.record.append(kind, data, frame_jpeg)
        self._apply(event)
        if kind in ("call", "void"):
            self.on_call(event.data)
        return event

    def _apply(self, e: Event) -> None:
        d = e.data
        match e.kind:
            case "occasion_started":
                self.occasion = Occasion(d["occasion"], e.ts)
                self.last_occasion_id = d["occasion"]
            case "occasion_ended":
                self.occasion = None
            case "game_announced":
                self.game = Game(d["game"], d["pattern"], d.get("prize", ""), d.get("kind", "regular"))
                self.last_game_number = d["game"]
                if self.occasion:
                    self.occasion.games += 1
            case "game_started":
                self.game.status = "running"
            case "game_ended":
                self.game.status = "closed"
                self.awaiting_confirm = None
            case "call":
                self.game.calls.append(d)
                self.last_seq = d["seq"]
                self.awaiting_confirm = None
            case "void":
                self.game.voided.add(d["voids_seq"])
                self.last_seq = d["seq"]
            case "read":
                self.attempts = d["attempt"]
                if d["decision"] == "confirm":
                    self.awaiting_confirm = {"attempt": d["attempt"], "ball": d["ball"], "number": d["number"],
                                             "confidence": d["confidence"], "read_event": e.id}
            case "fault_raised":
                self.faults[d["code"]] = {**d, "since": e.ts}
            case "fault_cleared":
                self.faults.pop(d["code"], None)

    def _refuse(self, command: str, reason: str) -> None:
        self.record.append("refused", {"command": command, "reason": reason})
        raise Refused(reason)

    def _changed(self) -> None:
        self.on_change()

    # -- occasions and games ---------------------------------------------------------------
    def new_occasion(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            if self.occasion:
                self._refuse("new_occasion", f"occasion {self.occasion.id} is still open: end it first")
            self._emit("occasion_started", {"occasion": self.last_occasion_id + 1, "by": by})
        self._changed()
        return {"occasion": self.occasion.id}

    def new_game(self, pattern: dict[str, Any], prize: str = "", kind: str = "regular",
                 all_balls_in_blower: bool = False, by: str = "console") -> dict[str, Any]:
        with self._lock:
            if not self.occasion:
                self._refuse("new_game", "no occasion is open: start one with new_occasion")
            if self.game and self.game.status != "closed":
                self._refuse("new_game", f"game {self.game.number} is still {self.game.status}: "
                                         "only one game at a time")
            if not all_balls_in_blower:
                self._refuse("new_game", "confirm that all 75 balls are in the blower (all_balls_in_blower)")
            self._blocking_fault("new_game")
            number = self.last_game_number + 1
            self._emit("game_announced", {"game": number, "pattern": pattern, "prize": prize, "kind": kind,
                                          "by": by})
            self._emit("game_started", {"game": number, "all_balls_in_blower": True, "by": by})
        self._changed()
        return {"game": number}

    def end_game(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            game = self._running_game("end_game")
            self._emit("game_ended", {"game": game.number, "calls": len(game.live_calls()), "by": by})
        self._changed()
        return {"game": game.number}

    def end_occasion(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            if not self.occasion:
                self._refuse("end_occasion", "no occasion is open")
            if self.game and self.game.status != "closed":
                self._refuse("end_occasion", f"game {self.game.number} is still running: end it first")
            occasion = self.occasion.id
            self._emit("occasion_ended", {"occasion": occasion, "by": by})
        self._changed()
        return {"occasion": occasion}

    def _running_game(self, command: str) -> Game:
        if not self.game or self.game.status != "running":
            self._refuse(command, "no game is running")
        return self.game

    def _blocking_fault(self, command: str) -> None:
        blocking = [f for f in self.faults.values() if f.get("affects_calls")]
        if blocking:
            self._refuse(command, f"fault {blocking[0]['code']}: {blocking[0]['message']}")

    # -- calls -----------------------------------------------------------------------------
    def _call(self, number: int, confidence: float, source: str, frame_jpeg: bytes | None,
              command: str) -> dict[str, Any]:
        game = self._running_game(command)
        self._blocking_fault(command)
        if number in game.called_numbers():
            self._refuse(command, f"{ball_name(number)} was already called in game {game.number}")
        call = {"seq": self.last_seq + 1, "game": game.number, "index": len(game.calls) + 1,
                "ball": ball_name(number), "letter": letter_for(number), "number": number,
                "confidence": round(float(confidence), 4), "source": source, "ts": utc_now(),
                "event_type": "called"}
        self._emit("call", call, frame_jpeg)
        return call

    def on_reading(self, number: int | None, confidence: float, decision: str, frames: int,
                   reason: str | None = None, frame_jpeg: bytes | None = None) -> Outcome:
        """A fused camera reading: decision is commit, confirm or represent."""
        with self._lock:
            attempt = self.attempts + 1
            ball = ball_name(number) if number else None
            read = {"attempt": attempt, "ball": ball, "number": number, "confidence": round(confidence, 4),
                    "decision": decision, "reason": reason, "frames": frames}
            game = self.game if self.game and self.game.status == "running" else None
            if decision == "commit" and game is None:
                read.update(decision="refused", reason="no game is running")
            elif decision == "commit" and number in game.called_numbers():
                # A number already called means a misread or a ball not returned: raise it, never publish.
                read.update(decision="duplicate", reason=f"{ball} was already called in game {game.number}")
            self._emit("read", read, frame_jpeg if read["decision"] == "confirm" else None)
            outcome = Outcome(read["decision"], reason=read["reason"])
            if read["decision"] == "commit":
                try:
                    outcome = Outcome("called", self._call(number, confidence, "camera", frame_jpeg, "read"))
                except Refused as e:
                    outcome = Outcome("refused", reason=str(e))
        self._changed()
        return outcome

    def confirm(self, number: int, by: str = "console") -> dict[str, Any]:
        """A person confirms (or corrects) the ball the reader was unsure of."""
        with self._lock:
            if not self.awaiting_confirm:
                self._refuse("confirm", "no reading is waiting for confirmation")
            pending = self.awaiting_confirm
            frame = self.record.frame(pending["read_event"])
            call = self._call(number, 1.0, "console", frame, "confirm")
        self._changed()
        return call

    def manual_call(self, number: int, by: str = "console") -> dict[str, Any]:
        with self._lock:
            call = self._call(number, 1.0, "console", None, "manual_call")
        self._changed()
        return call

    def void(self, seq: int, reason: str = "", by: str = "console") -> dict[str, Any]:
        """A correction is a new event; the voided call stays in the record."""
        with self._lock:
            game = self._running_game("void")
            target = next((c for c in game.calls if c["seq"] == seq), None)
            if target is None:
                self._refuse("void", f"no call with seq {seq} in game {game.number}")
            if seq in game.voided:
                self._refuse("void", f"call {seq} ({target['ball']}) is already voided")
            void = {**target, "seq": self.last_seq + 1, "event_type": "voided", "voids_seq": seq,
                    "ts": utc_now(), "reason": reason, "by": by}
            self._emit("void", void)
        self._changed()
        return void

    # -- faults ----------------------------------------------------------------------------
    def raise_fault(self, code: str, message: str, affects_calls: bool = True) -> None:
        with self._lock:
            if code in self.faults and self.faults[code]["message"] == message:
                return
            self._emit("fault_raised", {"code": code, "message": message, "affects_calls": affects_calls})
        self._changed()

    def clear_fault(self, code: str, by: str = "system") -> None:
        with self._lock:
            if code not in self.faults:
                return
            self._emit("fault_cleared", {"code": code, "by": by})
        self._changed()

    # -- what boards and players see -------------------------------------------------------
    def drawn(self) -> dict[str, Any]:
        """The verification list (DE 4.16): numbers drawn in order, and those still in the blower."""
        with self._lock:
            game = self.game
            if not game:
                self._refuse("drawn", "no game has been played")
            calls = game.live_calls()
            called = {c["number"] for c in calls}
            return {"game": game.number, "status": game.status,
                    "drawn": [{"index": c["index"], "ball": c["ball"], "ts": c["ts"],
                               "confidence": c["confidence"], "source": c["source"], "seq": c["seq"]}
                              for c in calls],
                    "remaining": [ball_name(n) for n in ALL_NUMBERS if n not in called]}

    def state(self) -> dict[str, Any]:
        with self._lock:
            game = None
            if self.game:
                calls = self.game.live_calls()
                game = {"number": self.game.number, "status": self.game.status, "pattern": self.game.pattern,
                        "prize": self.game.prize, "kind": self.game.kind,
                        "called": [c["ball"] for c in calls], "last_call": calls[-1]["ball"] if calls else None,
                        "count": len(calls), "remaining": 75 - len(calls)}
            confirm = None
            if self.awaiting_confirm:
                confirm = {k: self.awaiting_confirm[k] for k in ("attempt", "ball", "number", "confidence")}
            return {"occasion": {"id": self.occasion.id, "started_at": self.occasion.started_at}
                    if self.occasion else None,
                    "game": game, "awaiting_confirm": confirm,
                    "faults": [{k: f[k] for k in ("code", "message", "since", "affects_calls")}
                               for f in self.faults.values()],
                    "seq": self.last_seq, "ts": utc_now()}
