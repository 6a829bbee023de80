"""The two glare lights: lamps at mirror places either side of the camera, each switched by
its own GPIO output (through a transistor or relay board), so the camera can take one
exposure under each and `vision.glare` keeps the darker value of every pixel.

The pin factory (lgpio on a Pi, MockFactory in tests and the simulator) is chosen by the
caller and passed in, as for the ball sensor.
"""
from __future__ import annotations

from gpiozero import DigitalOutputDevice

WHICH = ("a", "b", "both", "off")


class GlareLights:
    """Lamp A and lamp B; both are lit from the start and between readings."""

    def __init__(self, pin_a: int | str, pin_b: int | str, *, active_high: bool = True,
                 pin_factory=None) -> None:
        self._a = DigitalOutputDevice(pin_a, active_high=active_high, initial_value=True,
                                      pin_factory=pin_factory)
        try:
            self._b = DigitalOutputDevice(pin_b, active_high=active_high, initial_value=True,
                                          pin_factory=pin_factory)
        except Exception:
            self._a.close()  # do not leave pin A claimed when pin B cannot be had
            raise

    def light(self, which: str) -> None:
        """Light lamp "a" only, "b" only, "both" or neither ("off")."""
        if which not in WHICH:
            raise ValueError(f"lights: expected one of {', '.join(WHICH)}, got {which!r}")
        self._a.value = which in ("a", "both")
        self._b.value = which in ("b", "both")

    @property
    def lit(self) -> tuple[bool, bool]:
        """(lamp A on, lamp B on), as the outputs are driven now."""
        return bool(self._a.value), bool(self._b.value)

    def close(self) -> None:
        self._a.close()
        self._b.close()
