"""A serial link behind a small interface, for the legacy flashboards.

`PySerialLink` opens its port with pyserial's `serial_for_url`, so a device
path (`/dev/ttyUSB0`, a pty's `/dev/pts/N`) and pyserial's URLs
(`loop://`, `socket://host:port`) all work. Every pyserial failure comes
out as `SerialPortError`, so a caller catches one thing. Reads and writes
both have time limits: a silent or unplugged board is an error, not a hang.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import serial


class SerialPortError(Exception):
    """The serial port could not be opened, read or written."""


@runtime_checkable
class SerialLink(Protocol):
    def write(self, data: bytes) -> None: ...

    def read(self, n: int, timeout: float | None = None) -> bytes: ...

    def close(self) -> None: ...


class PySerialLink:
    def __init__(
        self,
        url: str,
        baudrate: int = 9600,
        parity: str = "N",
        bytesize: int = 8,
        stopbits: float = 1,
        timeout: float = 1.0,
    ):
        self.url = url
        self.timeout = timeout
        try:
            self._port = serial.serial_for_url(
                url,
                baudrate=baudrate,
                parity=parity,
                bytesize=bytesize,
                stopbits=stopbits,
                timeout=timeout,
                write_timeout=timeout,
            )
        except (serial.SerialException, ValueError, OSError) as e:
            raise SerialPortError(f"cannot open serial port {url!r}: {e}") from e

    @property
    def is_open(self) -> bool:
        return self._port.is_open

    def write(self, data: bytes) -> None:
        """Write all of `data`, or raise SerialPortError (also when the port stays blocked past the timeout)."""
        try:
            self._port.write(data)
            self._port.flush()
        except (serial.SerialException, OSError) as e:
            raise SerialPortError(f"cannot write to serial port {self.url!r}: {e}") from e

    def read(self, n: int, timeout: float | None = None) -> bytes:
        """Up to `n` bytes: returns once `n` have arrived or `timeout` seconds (default: the link's) have passed."""
        wait = self.timeout if timeout is None else timeout
        try:
            if self._port.timeout != wait:
                self._port.timeout = wait
            return self._port.read(n)
        except (serial.SerialException, OSError, ValueError) as e:
            raise SerialPortError(f"cannot read from serial port {self.url!r}: {e}") from e

    def close(self) -> None:
        self._port.close()

    def __enter__(self) -> PySerialLink:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
