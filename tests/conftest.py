"""Shared fixtures: a real mosquitto per test (see mqtt_broker.py), a headless Debian Chromium
for the page tests, gpiozero's mock pins, and a test output folder."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["mqtt_broker"]  # the `mosquitto` fixture

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """Screenshots and other artefacts a person may want to look at after the run."""
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT


@pytest.fixture
def factory():
    """gpiozero's mock pins, as in gpiozero's own tests: fresh, reset afterwards, never set globally."""
    from gpiozero.pins.mock import MockFactory

    f = MockFactory()
    try:
        yield f
    finally:
        f.reset()


# Debian's Chromium (apt package chromium): Playwright's own browser download does not work here.
# Without the background-networking flags Chromium keeps trying hosts a closed network refuses.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()
