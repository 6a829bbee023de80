"""The serial link over pyserial's loop:// and over a real pseudo-terminal pair."""

import os

import pytest
from pty_pair import read_exactly

from firmware.serial_port import PySerialLink, SerialLink, SerialPortError

ALL_BYTES = bytes(range(256))


@pytest.fixture
def pty_pair():
    """The far end (master fd) and the device path our link opens (the slave)."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    try:
        yield master, path
    finally:
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:  # a test may have closed the far end already
                pass


def test_loop_url_echoes_what_is_written():
    with PySerialLink("loop://", timeout=1.0) as link:
        assert isinstance(link, SerialLink)
        link.write(b"B12\r\n")
        assert link.read(5) == b"B12\r\n"


def test_read_returns_what_came_when_the_timeout_passes():
    with PySerialLink("loop://") as link:
        assert link.read(10, timeout=0.05) == b""
        link.write(b"N31")
        assert link.read(10, timeout=0.05) == b"N31"


def test_pty_carries_every_byte_both_ways(pty_pair):
    master, path = pty_pair
    # Parity stays "N": a Linux pty drops the parity bit from its settings.
    with PySerialLink(path, baudrate=19200, parity="N", bytesize=8, stopbits=1, timeout=2.0) as link:
        # Raw mode: no echo, no CR/LF translation, no control characters eaten.
        link.write(ALL_BYTES)
        assert read_exactly(master, len(ALL_BYTES)) == ALL_BYTES
        os.write(master, ALL_BYTES)
        assert link.read(len(ALL_BYTES)) == ALL_BYTES
        assert link.read(1, timeout=0.05) == b""


def test_open_failures_say_which_port(tmp_path):
    missing = str(tmp_path / "ttyUSB9")
    with pytest.raises(SerialPortError, match="ttyUSB9"):
        PySerialLink(missing)
    with pytest.raises(SerialPortError, match="nosuch://"):
        PySerialLink("nosuch://x")
    with pytest.raises(SerialPortError, match="loop://"):
        PySerialLink("loop://", parity="X")


def test_using_a_closed_link_is_a_serial_port_error():
    link = PySerialLink("loop://")
    link.close()
    assert not link.is_open
    with pytest.raises(SerialPortError):
        link.write(b"x")
    with pytest.raises(SerialPortError):
        link.read(1, timeout=0.01)
    link.close()  # twice is fine


def test_far_end_gone_is_a_serial_port_error_not_a_hang(pty_pair):
    master, path = pty_pair
    link = PySerialLink(path, timeout=2.0)
    try:
        os.close(master)  # the board is unplugged
        with pytest.raises(SerialPortError):
            link.read(1)
    finally:
        link.close()


def test_a_board_that_stops_reading_is_a_serial_port_error_not_a_hang(pty_pair):
    master, path = pty_pair
    with PySerialLink(path, timeout=0.2) as link:
        # Nobody reads the far end: the pty buffer fills and the write cannot finish.
        with pytest.raises(SerialPortError, match="write"):
            link.write(b"\x55" * 1_000_000)
