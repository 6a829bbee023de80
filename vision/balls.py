"""Bingo ball names: the 75 balls, their column letters and column colours."""
from __future__ import annotations

import re

LETTERS = "BINGO"
ALL_NUMBERS = tuple(range(1, 76))
# The usual column colours of hall ball sets (O is orange or yellow).
COLUMN_COLOURS = {"B": "blue", "I": "red", "N": "white", "G": "green", "O": "orange"}

_BALL_RE = re.compile(r"^([BINGO])?\s*0*([1-9][0-9]?)$")


def letter_for(number: int) -> str:
    """Column letter of a number: B 1-15, I 16-30, N 31-45, G 46-60, O 61-75."""
    if not 1 <= number <= 75:
        raise ValueError(f"ball number out of range 1-75: {number}")
    return LETTERS[(number - 1) // 15]


def ball_name(number: int) -> str:
    """'B12' for 12."""
    return f"{letter_for(number)}{number}"


def parse_ball(text: str) -> int:
    """Number of a ball written 'B12', 'b12' or '12'; the letter, if given, must match."""
    m = _BALL_RE.match(str(text).strip().upper())
    if not m:
        raise ValueError(f"not a ball: {text!r} (expected e.g. 'B12' or '12')")
    number = int(m.group(2))
    letter = letter_for(number)
    if m.group(1) and m.group(1) != letter:
        raise ValueError(f"not a ball: {text!r} ({number} is in column {letter})")
    return number


ALL_BALLS = tuple(ball_name(n) for n in ALL_NUMBERS)
