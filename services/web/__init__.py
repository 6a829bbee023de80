"""The appliance's web pages: the technician's calibration pages (and, from board.py, the
flashboard and the caller's console). `start_web(appliance)` serves them in the background."""
from __future__ import annotations


def start_web(appliance):
    from services.web.server import start_web as _start

    return _start(appliance)
