# One-command set-up, demo and tests. Works on Debian and Raspberry Pi OS (as root or with sudo).
VENV    ?= .venv
PY      := $(VENV)/bin/python
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian packages the appliance and its tests use (chromium for the browser tests,
# the fonts the renderer draws balls with, tesseract-ocr for the side-by-side benchmark, systemd for `systemd-analyze verify`).
APT_PACKAGES := mosquitto mosquitto-clients sqlite3 chromium fonts-dejavu-core fonts-dejavu-extra fonts-liberation \
                fonts-freefont-ttf fonts-urw-base35 fonts-noto-mono tesseract-ocr espeak-ng systemd python3-venv iproute2 openssl
DEMO_PORT ?= 1883
PYTEST_ARGS ?=

.PHONY: setup system-deps venv test demo bench-vision bench-wrong bench-calls bench-speed train-vision check-train-vision bench-footprint bench-sim install uninstall clean

setup: system-deps venv

system-deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]' -c constraints.txt
	touch $@

test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The simulated appliance on a local mosquitto: watch it with
#   mosquitto_sub -h 127.0.0.1 -p $(DEMO_PORT) -t 'bingo/#' -v
demo: setup
	@(mosquitto_sub -h 127.0.0.1 -p $(DEMO_PORT) -t '$$SYS/broker/version' -C 1 -W 1 >/dev/null 2>&1) || \
	  (mosquitto -p $(DEMO_PORT) -d && sleep 0.5)
	$(VENV)/bin/ballreader run --sim --mqtt mqtt://127.0.0.1:$(DEMO_PORT) --record ballreader-sim.db

bench-vision: setup
	$(PY) -m vision.bench

# Wrong readings are about one frame in a thousand: count them on many fresh frames.
bench-wrong: setup
	$(PY) -m vision.bench_wrong --frames 6000 --fonts train
	$(PY) -m vision.bench_wrong --frames 3000 --seed 950000 --fonts unseen

# The working tree's reader against revision BASE, frame by frame in one process
# (this VM's speed drifts too much between runs to compare two bench-vision medians).
BASE ?= HEAD
bench-speed: setup
	$(PY) -m vision.bench_speed --base $(BASE)

# Calls as the appliance makes them (five frames fused), one lamp and two glare lamps.
bench-calls: setup
	$(PY) -m vision.bench_calls --balls 3000
	$(PY) -m vision.bench_calls --balls 3000 --two-lamps

# Reproduces vision/data/*.npz from a seed (about 18 minutes on 2 cores; no torch).
train-vision: setup
	$(PY) -m vision.train --seed 1 --calib 16000

# Trains into a scratch directory and compares with the committed files byte for byte.
check-train-vision: setup
	out=$$(mktemp -d) && $(PY) -m vision.train --seed 1 --calib 16000 --out $$out \
	  && cmp $$out/glyphs.npz vision/data/glyphs.npz && cmp $$out/glyphs_second.npz vision/data/glyphs_second.npz \
	  && cmp $$out/calibration.npz vision/data/calibration.npz \
	  && echo "training reproduced vision/data/glyphs.npz, glyphs_second.npz and calibration.npz byte for byte"

bench-footprint: setup
	$(PY) -m services.bench_footprint

SEEDS ?= 11 12
bench-sim: setup
	$(PY) -m services.bench_sim $(SEEDS)

# On the Raspberry Pi: the appliance under systemd (see docs/install.md).
install:
	$(SUDO) ./install.sh

uninstall:
	$(SUDO) ./uninstall.sh

clean:
	rm -rf $(VENV) build *.egg-info test-output
