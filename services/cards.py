"""Hall card faces and winner checks.

A card face holds 24 numbers in column order: B 5, I 5, N 4 (the free centre is
not a number), G 5, O 5; each column reads top to bottom. A check answers not only
"winner or not" but at which call the card first became a winner, so winners on
the same call (a split prize, Delaware 4.11) can be told from late claims.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from services.patterns import FREE, SIZE, Cell, Pattern
from vision.balls import LETTERS

NUMBERS_PER_CARD = 24
MAX_SERIAL_LENGTH = 64
# Spellings a hall export may use for the free centre when it writes 25 cells.
FREE_MARKS = {"", "free", "*", "0"}
# Cells of the card in the order its 24 numbers are given: column by column.
CELL_ORDER: tuple[Cell, ...] = tuple(
    (r, c) for c in range(SIZE) for r in range(SIZE) if (r, c) != FREE
)


def column_range(col: int) -> range:
    """Numbers allowed in a column: B 1-15, I 16-30, N 31-45, G 46-60, O 61-75."""
    return range(col * 15 + 1, col * 15 + 16)


@dataclass(frozen=True)
class Card:
    serial: str
    numbers: tuple[int, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.serial, str) or not self.serial.strip():
            raise ValueError("a card needs a serial")
        if len(self.serial) > MAX_SERIAL_LENGTH or not self.serial.isprintable():
            raise ValueError(f"card serial is too long or has control characters: {self.serial!r}")
        numbers = tuple(self.numbers)
        object.__setattr__(self, "numbers", numbers)
        if len(numbers) != NUMBERS_PER_CARD:
            raise ValueError(
                f"card {self.serial}: {len(numbers)} numbers, expected {NUMBERS_PER_CARD} "
                "(B 5, I 5, N 4 around the free centre, G 5, O 5)"
            )
        for (r, c), n in zip(CELL_ORDER, numbers):
            if isinstance(n, bool) or not isinstance(n, int):
                raise ValueError(f"card {self.serial}: {n!r} is not a whole number")
            if n not in column_range(c):
                span = column_range(c)
                raise ValueError(
                    f"card {self.serial}: {n} cannot be in column {LETTERS[c]} "
                    f"(row {r + 1}); column {LETTERS[c]} holds {span.start}-{span.stop - 1}"
                )
        # A face with a repeated number is void (Delaware 4.30.1.2).
        repeated = sorted({n for n in numbers if numbers.count(n) > 1})
        if repeated:
            raise ValueError(
                f"card {self.serial}: number(s) {', '.join(map(str, repeated))} appear twice"
            )


def card_grid(card: Card) -> list[list[int | None]]:
    """The face as 5 rows of 5; the free centre is None."""
    grid: list[list[int | None]] = [[None] * SIZE for _ in range(SIZE)]
    for (r, c), n in zip(CELL_ORDER, card.numbers):
        grid[r][c] = n
    return grid


def _parse_number(text: str, line: int, position: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"line {line}: number {position} is {text!r}, not a whole number") from None


def _is_header(fields: list[str]) -> bool:
    """A first row with no whole number after the serial is a header."""
    for text in fields[1:]:
        try:
            int(text)
            return False
        except ValueError:
            continue
    return True


def _row_numbers(fields: list[str], line: int) -> tuple[int, ...]:
    cells = fields[1:]
    if len(cells) == NUMBERS_PER_CARD + 1:
        # 25 cells: the 13th is the free centre and must say so.
        if cells[12].strip().lower() not in FREE_MARKS:
            raise ValueError(
                f"line {line}: 25 cells given but the centre cell is {cells[12]!r}, "
                "not FREE, * , 0 or empty"
            )
        cells = cells[:12] + cells[13:]
    elif len(cells) != NUMBERS_PER_CARD:
        raise ValueError(
            f"line {line}: {len(cells)} numbers after the serial, expected {NUMBERS_PER_CARD} "
            "(or 25 with FREE in the centre)"
        )
    return tuple(_parse_number(t.strip(), line, i + 1) for i, t in enumerate(cells))


def _delimiter(text: str) -> str:
    """Comma, or the semicolon or tab some spreadsheet locales write instead."""
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return max((",", ";", "\t"), key=line.count)
    return ","


def parse_cards_csv(text: str) -> list[Card]:
    """Cards from CSV text: serial then 24 numbers in column order, one card a row.

    A header row is optional; blank rows and rows starting with '#' are skipped.
    Fields may be separated by commas, semicolons or tabs (one kind per file).
    The first bad row raises ValueError naming its line and the problem.
    """
    text = text.removeprefix("\ufeff")  # spreadsheet exports often start with a BOM
    cards: list[Card] = []
    first_line_of: dict[str, int] = {}
    reader = csv.reader(io.StringIO(text), delimiter=_delimiter(text))
    seen_row = False
    for fields in reader:
        line = reader.line_num
        fields = [f.strip() for f in fields]
        if not any(fields) or fields[0].startswith("#"):
            continue
        if not seen_row:
            seen_row = True
            if _is_header(fields):
                continue
        serial = fields[0]
        if not serial:
            raise ValueError(f"line {line}: the serial is empty")
        if serial in first_line_of:
            raise ValueError(
                f"line {line}: serial {serial!r} already used on line {first_line_of[serial]}"
            )
        numbers = _row_numbers(fields, line)
        try:
            cards.append(Card(serial, numbers))
        except ValueError as exc:
            raise ValueError(f"line {line}: {exc}") from None
        first_line_of[serial] = line
    if not cards:
        raise ValueError("no card rows found")
    return cards


@dataclass(frozen=True)
class CardCheck:
    """The answer to "is this card a winner?" for one list of calls."""

    winner: bool
    arrangement: list[Cell] | None
    arrangement_name: str | None
    # 1-based index of the call that completed the card; None if not a winner.
    won_at_index: int | None
    # The number whose call completed the card (for the cookie jar, Delaware 4.31.6).
    won_on_number: int | None
    calls_checked: int

    @property
    def won_on_last_call(self) -> bool:
        """True when the card became a winner on the latest call checked.

        False for a winner that had already covered earlier: such a card was
        claimed late, and a split between winners is only among cards that
        became winners on the same call (Delaware 4.11).
        """
        return self.winner and self.won_at_index == self.calls_checked

    def to_json(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "arrangement": [list(cell) for cell in self.arrangement] if self.arrangement else None,
            "arrangement_name": self.arrangement_name,
            "won_at_index": self.won_at_index,
            "won_on_number": self.won_on_number,
            "calls_checked": self.calls_checked,
        }


def check_card(card: Card, called_numbers: list[int], pattern: Pattern) -> CardCheck:
    """Whether `card` covers `pattern` with these calls, and when it first did."""
    first_call: dict[int, int] = {}
    for index, n in enumerate(called_numbers, start=1):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 75:
            raise ValueError(f"call {index} is not a ball number 1-75: {n!r}")
        # A repeated number cannot cover anything new; the first call counts.
        first_call.setdefault(n, index)
    grid = card_grid(card)

    best: tuple[int, int] | None = None  # (index of completing call, arrangement position)
    for position, cells in enumerate(pattern.arrangements):
        needed = [grid[r][c] for (r, c) in cells if (r, c) != FREE]
        if not all(n in first_call for n in needed):
            continue
        completed_at = max((first_call[n] for n in needed), default=0)
        if best is None or completed_at < best[0]:
            best = (completed_at, position)

    if best is None:
        return CardCheck(False, None, None, None, None, len(called_numbers))
    completed_at, position = best
    return CardCheck(
        winner=True,
        arrangement=sorted(pattern.arrangements[position]),
        arrangement_name=pattern.labels[position],
        won_at_index=completed_at,
        won_on_number=called_numbers[completed_at - 1] if completed_at else None,
        calls_checked=len(called_numbers),
    )


def split_prize(amount_cents: int, winners: int) -> list[int]:
    """Shares of a prize as equal as possible to the cent, summing to the amount.

    The odd cents go one each to the first winners (Delaware 4.11, Missouri (3)).
    """
    for label, value in (("amount_cents", amount_cents), ("winners", winners)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{label} must be a whole number, got {value!r}")
    if amount_cents < 0:
        raise ValueError(f"amount_cents must not be negative, got {amount_cents}")
    if winners < 1:
        raise ValueError(f"winners must be at least 1, got {winners}")
    share, odd_cents = divmod(amount_cents, winners)
    return [share + 1 if i < odd_cents else share for i in range(winners)]
