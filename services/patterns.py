"""Bingo patterns: which cells of a 5x5 card must be covered to win (Delaware 4.14).

Cells are (row, col), both 0-based: row 0 is the top row, col 0 is column B.
A pattern is a list of arrangements; a card wins when any one arrangement is
fully covered. The free centre (2, 2) is always covered.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

from vision.balls import LETTERS

Cell = tuple[int, int]
Arrangement = frozenset[Cell]

SIZE = 5
FREE: Cell = (2, 2)
ALL_CELLS: Arrangement = frozenset((r, c) for r in range(SIZE) for c in range(SIZE))
MAX_NAME_LENGTH = 40


def _row(r: int) -> Arrangement:
    return frozenset((r, c) for c in range(SIZE))


def _column(c: int) -> Arrangement:
    return frozenset((r, c) for r in range(SIZE))


# The twelve lines of a card, in a fixed order, with the names a caller uses.
ROWS: dict[str, Arrangement] = {f"row {r + 1}": _row(r) for r in range(SIZE)}
COLUMNS: dict[str, Arrangement] = {f"column {LETTERS[c]}": _column(c) for c in range(SIZE)}
DIAGONALS: dict[str, Arrangement] = {
    "diagonal top-left to bottom-right": frozenset((i, i) for i in range(SIZE)),
    "diagonal top-right to bottom-left": frozenset((i, SIZE - 1 - i) for i in range(SIZE)),
}
LINES: dict[str, Arrangement] = {**ROWS, **COLUMNS, **DIAGONALS}

FOUR_CORNERS: Arrangement = frozenset({(0, 0), (0, 4), (4, 0), (4, 4)})
AROUND_FREE: Arrangement = frozenset(
    (r, c) for r in (1, 2, 3) for c in (1, 2, 3) if (r, c) != FREE
)


@dataclass(frozen=True)
class Pattern:
    """A named winning pattern: a card wins when any one arrangement is covered.

    `labels[i]` names `arrangements[i]` for the caller ("row 3", "four corners").
    `spec` is what `pattern_from_spec` needs to build the same pattern again, so the
    record can hold the spec and the engine can rebuild the pattern from it.
    """

    name: str
    description: str
    arrangements: tuple[Arrangement, ...]
    labels: tuple[str, ...]
    spec: Any

    def __post_init__(self) -> None:
        if not self.arrangements:
            raise ValueError(f"pattern {self.name!r} has no arrangement")
        if len(self.labels) != len(self.arrangements):
            raise ValueError(f"pattern {self.name!r}: one label is needed per arrangement")

    def named_arrangements(self) -> list[tuple[str, Arrangement]]:
        return list(zip(self.labels, self.arrangements))

    def picture(self) -> list[list[int]]:
        """5x5 rows of 0/1 for a board or page.

        With one arrangement this is exactly it; with several ("any row") it is the
        first one as an example, since the union of all rows is the whole card and
        would show the wrong thing.
        """
        return cells_to_picture(self.arrangements[0])

    def to_json(self) -> dict[str, Any]:
        """The pattern as it goes into MQTT `state` and the announced game."""
        return {
            "name": self.name,
            "description": self.description,
            "picture": self.picture(),
            "arrangements": len(self.arrangements),
            "spec": self.spec,
        }


def cells_to_picture(cells: Arrangement) -> list[list[int]]:
    return [[1 if (r, c) in cells else 0 for c in range(SIZE)] for r in range(SIZE)]


def _pattern(name: str, description: str, named: dict[str, Arrangement]) -> Pattern:
    return Pattern(
        name=name,
        description=description,
        arrangements=tuple(named.values()),
        labels=tuple(named.keys()),
        spec=name,
    )


def _union_of_lines(line_names: list[str]) -> Arrangement:
    cells: set[Cell] = set()
    for line in line_names:
        cells |= LINES[line]
    return frozenset(cells)


def _any_n_lines(n: int) -> dict[str, Arrangement]:
    return {
        " + ".join(combo): _union_of_lines(list(combo))
        for combo in combinations(LINES, n)
    }


# Named combinations of lines (Delaware 4.14.5): each is one fixed arrangement.
COMBINATIONS: dict[str, tuple[str, list[str]]] = {
    "letter_x": ("both full diagonals (letter X)", list(DIAGONALS)),
    "letter_t": ("top row and column N (letter T)", ["row 1", "column N"]),
    "letter_l": ("column B and bottom row (letter L)", ["column B", "row 5"]),
    "letter_h": ("columns B and O and the middle row (letter H)", ["column B", "column O", "row 3"]),
    "plus_sign": ("the middle row and column N (plus sign)", ["row 3", "column N"]),
    "outside_edge": ("top and bottom rows and columns B and O (outside edge)",
                     ["row 1", "row 5", "column B", "column O"]),
}


def _builtins() -> dict[str, Pattern]:
    found = {
        "any_row": _pattern("any_row", "any one horizontal row", ROWS),
        "any_column": _pattern("any_column", "any one vertical row", COLUMNS),
        "any_diagonal": _pattern("any_diagonal", "any one full diagonal", DIAGONALS),
        "any_line": _pattern("any_line", "any one row: horizontal, vertical or diagonal", LINES),
        "two_lines": _pattern("two_lines", "any two rows: horizontal, vertical or diagonal",
                              _any_n_lines(2)),
        "four_corners": _pattern("four_corners", "the four corners",
                                 {"four corners": FOUR_CORNERS}),
        "around_free": _pattern("around_free", "the eight spaces around the free space",
                                {"eight around the free space": AROUND_FREE}),
        "full_card": _pattern("full_card", "the entire card", {"full card": ALL_CELLS}),
    }
    for name, (description, lines) in COMBINATIONS.items():
        label = name.replace("_", " ")
        found[name] = _pattern(name, description, {label: _union_of_lines(lines)})
    return found


BUILTIN_PATTERNS: dict[str, Pattern] = _builtins()


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a custom pattern needs a non-empty 'name'")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"pattern name longer than {MAX_NAME_LENGTH} characters: {name!r}")
    if not name.isprintable():
        raise ValueError(f"pattern name has control characters: {name!r}")
    if name in BUILTIN_PATTERNS:
        raise ValueError(f"custom pattern name {name!r} is a built-in pattern; choose another")
    return name


def _shape_cells(shape: Any) -> Arrangement:
    """Cells marked X in 5 strings of 5 characters, X = must cover, . = not needed."""
    if not isinstance(shape, list) or len(shape) != SIZE:
        raise ValueError("'shape' must be a list of 5 strings of 5 characters, e.g. 'X...X'")
    cells: set[Cell] = set()
    for r, line in enumerate(shape):
        if not isinstance(line, str) or len(line) != SIZE:
            raise ValueError(f"shape row {r + 1} must be a string of 5 characters: {line!r}")
        for c, mark in enumerate(line):
            if mark in "Xx":
                cells.add((r, c))
            elif mark != ".":
                raise ValueError(
                    f"shape row {r + 1} has {mark!r}; use 'X' for a needed space and '.' otherwise"
                )
    return frozenset(cells)


def _lines_cells(lines: Any) -> Arrangement:
    if not isinstance(lines, list) or len(lines) < 2:
        raise ValueError("'lines' must list two or more lines, e.g. ['row 1', 'column N']")
    for line in lines:
        if not isinstance(line, str) or line not in LINES:
            raise ValueError(f"unknown line {line!r}; lines are: {', '.join(LINES)}")
    if len(set(lines)) != len(lines):
        raise ValueError("'lines' names the same line twice")
    return _union_of_lines(lines)


def pattern_from_spec(spec: Any) -> Pattern:
    """Build a pattern from a built-in name or a custom definition.

    Accepted:
      "any_row"                                           a built-in name
      {"name": "kite", "shape": ["XX...", ...5 rows]}     a custom shape (DE 4.14.9)
      {"name": "big T", "lines": ["row 1", "column N"]}   a named combination (DE 4.14.5)
    """
    if isinstance(spec, str):
        if spec in BUILTIN_PATTERNS:
            return BUILTIN_PATTERNS[spec]
        raise ValueError(
            f"unknown pattern {spec!r}; built-in patterns are: {', '.join(BUILTIN_PATTERNS)}"
        )
    if not isinstance(spec, dict):
        raise ValueError("a pattern is a built-in name or an object with 'name' and 'shape' or 'lines'")
    unknown = set(spec) - {"name", "shape", "lines"}
    if unknown:
        raise ValueError(f"unknown pattern field(s): {', '.join(sorted(unknown))}")
    name = _check_name(spec.get("name"))
    if ("shape" in spec) == ("lines" in spec):
        raise ValueError(f"pattern {name!r} needs exactly one of 'shape' or 'lines'")
    if "shape" in spec:
        cells = _shape_cells(spec["shape"])
        if not cells - {FREE}:
            raise ValueError(f"pattern {name!r} needs at least one space besides the free space")
        description = f"custom shape {name!r}"
        shape = ["".join("X" if (r, c) in cells else "." for c in range(SIZE)) for r in range(SIZE)]
        clean_spec = {"name": name, "shape": shape}
    else:
        cells = _lines_cells(spec["lines"])
        description = f"{name!r}: " + " and ".join(spec["lines"])
        clean_spec = {"name": name, "lines": list(spec["lines"])}
    return Pattern(name=name, description=description, arrangements=(cells,),
                   labels=(name,), spec=clean_spec)
