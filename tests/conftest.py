"""Shared fixtures: a real mosquitto per test (see mqtt_broker.py) and a test output folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from mqtt_broker import mosquitto  # noqa: F401  (fixture)

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """Screenshots and other artefacts a person may want to look at after the run."""
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT
