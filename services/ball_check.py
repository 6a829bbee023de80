"""The ball check tally (Delaware 4.25, Missouri 45-30.190(1)(2)): every ball passes the reader once.

Pure: fed the sightings of one check in order, it says which balls were seen, which are
missing, which were seen more than once and how many readings could not be read. The engine
records the sightings and the result; this module only counts.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vision.balls import ALL_NUMBERS, ball_name


@dataclass(frozen=True)
class Sighting:
    """One ball shown during a check: a number read (or entered), or None when unreadable."""
    number: int | None
    source: str = "camera"  # camera | console
    guess: int | None = None  # the reader's best guess for an unreadable ball


@dataclass(frozen=True)
class Tally:
    seen: tuple[int, ...]        # each number seen at least once, ascending
    missing: tuple[int, ...]     # never seen
    duplicated: tuple[int, ...]  # seen more than once: shown twice, or two balls with one number
    unreadable: int              # readings that gave no number

    @property
    def passed(self) -> bool:
        # A duplicate is a failure too: it can mean a double ball in the set, and then
        # another number is missing or the draw is not fair (Delaware 4.12).
        return not self.missing and not self.duplicated

    def to_json(self) -> dict[str, Any]:
        names = lambda numbers: [ball_name(n) for n in numbers]  # noqa: E731
        return {"passed": self.passed, "seen": len(self.seen), "missing": names(self.missing),
                "duplicated": names(self.duplicated), "unreadable": self.unreadable}


def tally(sightings: Iterable[Sighting]) -> Tally:
    counts: Counter[int] = Counter()
    unreadable = 0
    for s in sightings:
        if s.number is None:
            unreadable += 1
        elif s.number in ALL_NUMBERS:
            counts[s.number] += 1
        else:
            raise ValueError(f"not a ball number 1-75: {s.number!r}")
    return Tally(seen=tuple(sorted(counts)),
                 missing=tuple(n for n in ALL_NUMBERS if n not in counts),
                 duplicated=tuple(sorted(n for n, k in counts.items() if k > 1)),
                 unreadable=unreadable)
