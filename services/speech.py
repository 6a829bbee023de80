"""Spoken calls through espeak-ng: "B, twelve" for every call, so every player hears it.

The words are ours (espeak-ng would read "B12" as "bee twelve" or worse): the letter, a
pause, then the number written out. Speaking takes a second or two, so calls wait in a
queue and a worker thread speaks them in order; the caller of `on_call` never waits.
A QoS 1 repeat (a seq already spoken) is not spoken again.
"""
from __future__ import annotations

import logging
import queue
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen"]
TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy"}


def number_words(n: int) -> str:
    """12 -> 'twelve', 75 -> 'seventy-five' (1-79)."""
    if not 0 <= n < 80:
        raise ValueError(f"no words for {n}")
    if n < 20:
        return ONES[n]
    tens, ones = divmod(n, 10)
    return TENS[tens] + (f"-{ONES[ones]}" if ones else "")


def call_text(call: dict[str, Any]) -> str:
    """What is said for a call message."""
    words = f"{call['letter']}, {number_words(call['number'])}"
    if call.get("event_type") == "voided":
        return f"Correction. {words}, is void."
    return words


class SpeechConfig(BaseModel):
    """[speech] in the config."""
    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    command: str = Field("espeak-ng", description="The espeak-ng program")
    voice: str = Field("en-gb", description="espeak-ng voice (espeak-ng --voices)")
    words_per_minute: int = Field(140, ge=80, le=450)
    amplitude: int = Field(100, ge=0, le=200)
    repeat: int = Field(1, ge=1, le=3, description="Times each call is spoken")
    wav_dir: Path | None = Field(None, description="Write each call to a WAV file here instead of the speakers")
    timeout_s: float = Field(20, gt=0, le=120)


class Speaker:
    def __init__(self, config: SpeechConfig,
                 run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
                 on_fault: Callable[[str | None], None] | None = None) -> None:
        """`on_fault(message)` when a call could not be spoken, `on_fault(None)` once one is again."""
        self.config = config
        self._run = run
        self.on_fault = on_fault or (lambda message: None)
        self.last_seq = 0
        self.spoken = 0
        self.last_error: str | None = None
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._speak_loop, name="speech", daemon=True)
        self._worker.start()

    def on_call(self, call: dict[str, Any]) -> None:
        if call["seq"] <= self.last_seq:
            return
        self.last_seq = call["seq"]
        self.say(call_text(call), label=f"{call['seq']}-{call['ball']}")

    def observe(self, kind: str, payload: dict[str, Any]) -> None:
        """For the appliance's in-process observers, called with (kind, payload): calls are
        spoken even while the broker is away."""
        if kind == "call":
            self.on_call(payload)

    def say(self, text: str, label: str = "speech") -> None:
        """Queue `text`; returns at once."""
        self._queue.put((text, label))

    def command_for(self, text: str, label: str) -> list[str]:
        c = self.config
        args = [c.command, "-v", c.voice, "-s", str(c.words_per_minute), "-a", str(c.amplitude)]
        if c.wav_dir is not None:
            args += ["-w", str(c.wav_dir / f"{label}.wav")]
        # "--" so a text starting with "-" is never taken for an option.
        return [*args, "--", text]

    def _speak_loop(self) -> None:
        while (item := self._queue.get()) is not None:
            text, label = item
            try:
                for _ in range(self.config.repeat):
                    self._run(self.command_for(text, label), check=True, capture_output=True,
                              timeout=self.config.timeout_s)
                self.spoken += 1
                if self.last_error is not None:
                    self.last_error = None
                    self.on_fault(None)
            except (OSError, subprocess.SubprocessError) as e:
                # No sound is a fault to report, never a reason to stop calling.
                first = self.last_error is None
                self.last_error = f"cannot speak {text!r}: {e}"
                log.warning("speech: %s", self.last_error)
                if first:
                    self.on_fault(self.last_error)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def flush(self) -> None:
        """Wait until everything queued has been spoken (or failed)."""
        self._queue.join()

    def close(self) -> None:
        self._queue.put(None)
        self._worker.join(timeout=self.config.timeout_s + 1)
