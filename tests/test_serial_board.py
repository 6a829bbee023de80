"""The wired flashboard on a real pty pair: the board end reads exactly the bytes a board would."""
from __future__ import annotations

import os
import select
import termios

import pytest
from pty_pair import read_exactly
from pydantic import ValidationError

from firmware.serial_port import PySerialLink
from services.serial_board import SerialBoard, SerialBoardConfig, render, unescape


@pytest.fixture
def pty_pair():
    """(board_fd, port_path): we read what the appliance writes to port_path from board_fd."""
    board_fd, port_fd = os.openpty()
    path = os.ttyname(port_fd)
    yield board_fd, path, port_fd
    os.close(board_fd)
    os.close(port_fd)


def call(seq, ball, number, game=1, index=1, event_type="called", **extra):
    return {"seq": seq, "game": game, "index": index, "ball": ball, "letter": ball[0], "number": number,
            "confidence": 1.0, "source": "camera", "ts": "2026-12-02T19:00:00Z", "event_type": event_type,
            **extra}


FRAMED = dict(call=r"\x02C{number:02d}\x03", void=r"\x02V{number:02d}\x03", clear=r"\x02X\x03",
              new_game=r"\x02G{game}\x03")


def test_calls_voids_and_a_new_game_come_out_as_framed_bytes(pty_pair):
    board_fd, path, _ = pty_pair
    board = SerialBoard(SerialBoardConfig(enabled=True, port=path, baudrate=19200, **FRAMED))
    try:
        board.on_call(call(1, "B7", 7))
        board.on_call(call(2, "O70", 70, index=2))
        board.on_call(call(2, "O70", 70, index=2))  # a QoS 1 repeat: nothing more on the wire
        board.on_call(call(3, "B7", 7, event_type="voided", voids_seq=1))
        board.on_call(call(4, "N33", 33, game=2))
        board.flush()
        expected = (b"\x02X\x03\x02G1\x03" b"\x02C07\x03" b"\x02C70\x03" b"\x02V07\x03"
                    b"\x02X\x03\x02G2\x03" b"\x02C33\x03")
        assert read_exactly(board_fd, len(expected)) == expected
        # Nothing else was written.
        assert select.select([board_fd], [], [], 0.2)[0] == []
        assert board.last_error is None
    finally:
        board.close()


def test_state_catches_up_missed_calls_and_voids(pty_pair):
    board_fd, path, _ = pty_pair
    board = SerialBoard(SerialBoardConfig(enabled=True, port=path, call="{letter}{number} #{index}\\r\\n",
                                          void="-{ball}\\r\\n", clear="CLS\\r\\n",
                                          new_game="G{game} {pattern} {prize}\\r\\n"))
    game = {"number": 5, "status": "running", "pattern": {"name": "four_corners"}, "prize": "£25",
            "called": ["B12", "I16"]}
    try:
        board.on_state({"game": game, "seq": 9})
        board.on_call(call(10, "I16", 16, game=5, index=2))  # already shown via state
        board.on_state({"game": {**game, "called": ["I16", "G51"]}, "seq": 12})  # B12 voided, G51 missed
        board.flush()
        expected = "CLS\r\nG5 four_corners £25\r\nB12 #1\r\nI16 #2\r\n-B12\r\nG51 #2\r\n".encode("latin-1")
        assert read_exactly(board_fd, len(expected)) == expected
        assert board.shown == ["I16", "G51"]
    finally:
        board.close()


def test_port_framing_from_the_config_is_applied_to_the_port(pty_pair):
    _, path, port_fd = pty_pair
    opened = {}

    def open_link(url, **settings):
        opened.update(settings, url=url)
        return PySerialLink(url, **settings)

    board = SerialBoard(SerialBoardConfig(enabled=True, port=path, baudrate=4800, parity="E", bytesize=7,
                                          stopbits=2), link_factory=open_link)
    try:
        board.clear()  # the port is opened for the first message
        board.flush()
        assert opened == {"url": path, "baudrate": 4800, "parity": "E", "bytesize": 7, "stopbits": 2,
                          "timeout": 1.0}
        # What a Linux pty keeps of it (it forces 8 bits, no parity): speed and stop bits.
        iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(port_fd)
        assert ospeed == termios.B4800
        assert cflag & termios.CSTOPB
        # Raw output: our \n is not turned into \r\n by the tty.
        assert not oflag & termios.OPOST
    finally:
        board.close()


def test_a_missing_board_is_reported_then_repainted_when_it_appears(pty_pair, tmp_path):
    board_fd, path, _ = pty_pair
    port = tmp_path / "ttyBOARD"  # not there yet: the board is unplugged at start
    faults = []
    board = SerialBoard(SerialBoardConfig(enabled=True, port=str(port), call="+{ball}\\n", void="-{ball}\\n",
                                          clear="C\\n", new_game="G{game}\\n"), on_fault=faults.append)
    try:
        board.on_call(call(1, "B7", 7))
        board.on_call(call(2, "B8", 8, index=2))
        board.flush()
        assert board.last_error and "cannot open" in board.last_error
        assert len(faults) == 1  # reported once, not once per message
        port.symlink_to(path)  # plugged in
        board.on_call(call(3, "B7", 7, event_type="voided", voids_seq=1))
        board.flush()
        # Everything it missed, as it should look now: cleared, game 1, B8 lit (B7 was voided).
        expected = b"C\nG1\n+B8\n"
        assert read_exactly(board_fd, len(expected)) == expected
        assert select.select([board_fd], [], [], 0.2)[0] == []
        assert board.last_error is None and faults[-1] is None
    finally:
        board.close()


def test_templates_are_checked_when_the_config_is_loaded():
    with pytest.raises(ValidationError, match="unknown placeholder {colour}"):
        SerialBoardConfig(call="{colour} {number}")
    with pytest.raises(ValidationError, match="call"):
        SerialBoardConfig(call="{number:zz}")
    with pytest.raises(ValidationError):
        SerialBoardConfig(parity="X")
    with pytest.raises(ValidationError):
        SerialBoardConfig(baudrate=9600, speed=1)  # misspelt key


def test_escapes_are_read_in_the_template_only():
    assert unescape(r"\x02A\r\n\t\0\\") == "\x02A\r\n\t\0\\"
    # A value that looks like an escape is sent as written, never as a control byte.
    assert render(r"{prize}\x03", {"prize": r"\x03"}) == b"\\x03\x03"
    assert render("{number:02d}|{ball:>4}", {"number": 5, "ball": "B5"}) == b"05|  B5"


def test_an_unplugged_board_is_reported_and_calls_go_on():
    board_fd, port_fd = os.openpty()
    board = SerialBoard(SerialBoardConfig(enabled=True, port=os.ttyname(port_fd), clear="C"))
    try:
        board.clear()
        board.flush()
        assert read_exactly(board_fd, 1) == b"C"  # the board was there
        os.close(board_fd)  # the far end is gone: writes fail
        board.on_call(call(1, "B7", 7))
        board.flush()
        assert board.last_error and "cannot" in board.last_error
        board.on_call(call(2, "B8", 8, index=2))  # still accepted, still reported
        board.flush()
        assert board.shown == ["B7", "B8"]
    finally:
        board.close()
        os.close(port_fd)


def test_the_config_example_in_the_docs_is_valid():
    import re
    import tomllib
    from pathlib import Path

    from services.speech import SpeechConfig

    doc = (Path(__file__).resolve().parent.parent / "docs" / "mqtt.md").read_text()
    block = re.search(r"```toml\n(\[serial_board\].*?)```", doc, re.S).group(1)
    config = tomllib.loads(block)
    board = SerialBoardConfig(**config["serial_board"])
    SpeechConfig(**config["speech"])
    assert render(board.call, {"number": 7}) == b"\x02C07\x03"


def test_the_board_follows_the_real_engine_through_its_observer_hooks(pty_pair, tmp_path):
    from services.engine import DrawEngine
    from services.record import Record

    board_fd, path, _ = pty_pair
    board = SerialBoard(SerialBoardConfig(enabled=True, port=path, call="+{ball}\\n", void="-{ball}\\n",
                                          clear="C\\n", new_game="G{game}\\n"))
    record = Record(tmp_path / "record.db")
    engine = DrawEngine(record, on_change=lambda: board.observe("state", engine.state()),
                        on_call=lambda call: board.observe("call", call))
    try:
        engine.new_occasion()
        engine.new_game("any_line", all_balls_in_blower=True)
        first = engine.manual_call(12)
        engine.manual_call(75)
        engine.void(first["seq"])
        board.flush()
        expected = b"C\nG1\n+B12\n+O75\n-B12\n"
        assert read_exactly(board_fd, len(expected)) == expected
        assert select.select([board_fd], [], [], 0.2)[0] == []  # state and call did not double anything
    finally:
        board.close()
        record.close()
