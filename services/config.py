"""The appliance's configuration: one TOML file, validated at start.

Every model forbids unknown keys, so a typo stops the start with a message naming the key
instead of silently falling back to a default.
"""
from __future__ import annotations

import os
import re
import tomllib

import tomli_w
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from services.serial_board import SerialBoardConfig
from services.speech import SpeechConfig


class ConfigError(Exception):
    """A config file that cannot be used; the message is one line naming the key."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class MqttConfig(Section):
    url: str = Field("mqtt://127.0.0.1:1883", description="Broker address, mqtt://HOST:PORT")
    prefix: str = Field("bingo", pattern=r"^[a-z0-9_-]+$", description="First level of every topic")
    username: str | None = Field(None, description="Broker user name")
    password_file: Path | None = Field(
        None, description="File holding the broker password (default: systemd credential mqtt-password)")
    keepalive: int = Field(15, ge=5, le=600, description="Seconds between keep-alive pings")
    home_assistant: bool = Field(True, description="Publish Home Assistant device discovery")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("mqtt", "tcp") or not parts.hostname:
            raise ValueError("must look like mqtt://HOST:PORT")
        parts.port  # raises ValueError on a bad port
        return v

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 1883

    def password(self) -> str | None:
        path = self.password_file
        if path is None and os.environ.get("CREDENTIALS_DIRECTORY"):
            path = Path(os.environ["CREDENTIALS_DIRECTORY"]) / "mqtt-password"
        if path is None or not path.exists():
            return None
        return path.read_text().strip()


class SensorConfig(Section):
    pin: int | str = Field(17, description="GPIO pin of the ball sensor (BCM number or gpiozero name)")
    active_high: bool = Field(True, description="True when the input reads high with a ball present")
    pull_up: bool | None = Field(None, description="Internal pull resistor: True up, False down, None none")
    debounce_ms: float = Field(30, ge=1, le=1000, description="Input must be stable this long to count")
    settle_ms: float = Field(250, ge=0, le=5000, description="Further wait before the ball is read")
    stuck_s: float = Field(120, ge=1, le=3600, description="Active longer than this is a stuck-sensor fault")

    @model_validator(mode="after")
    def _stuck_after_settle(self) -> "SensorConfig":
        if self.stuck_s <= (self.debounce_ms + self.settle_ms) / 1000:
            raise ValueError("sensor.stuck_s must be longer than debounce_ms + settle_ms")
        return self


class Region(Section):
    x: float = Field(ge=0, description="Centre x, pixels")
    y: float = Field(ge=0, description="Centre y, pixels")
    r: float = Field(gt=5, description="Radius, pixels")


class GlareLightsConfig(Section):
    pin_a: int | str = Field(description="GPIO output switching lamp A (BCM number or gpiozero name)")
    pin_b: int | str = Field(description="GPIO output switching lamp B, at the mirror place across the camera")
    active_high: bool = Field(True, description="True when a high output lights a lamp")
    settle_frames: int = Field(2, ge=0, le=10,
                               description="Frames dropped after switching lamps: exposed partly under the other")

    @model_validator(mode="after")
    def _two_pins(self) -> "GlareLightsConfig":
        if str(self.pin_a) == str(self.pin_b):
            raise ValueError("camera.lights: pin_a and pin_b must be different pins")
        return self


class CameraConfig(Section):
    kind: Literal["sim", "picamera2", "opencv"] = Field("sim", description="Frame source")
    device: int | str = Field(0, description="OpenCV device index, or a video file / URL")
    width: int = Field(640, ge=160, le=4056)
    height: int = Field(480, ge=120, le=3040)
    fps: float = Field(30, gt=0, le=120)
    frame_timeout_s: float = Field(2.0, gt=0, le=60, description="No frame for this long is a camera fault")
    exposure_us: int | None = Field(None, ge=10, le=1_000_000)
    gain: float | None = Field(None, ge=0, le=64)
    awb: Literal["auto", "daylight", "tungsten", "fluorescent", "indoor"] = "auto"
    lights: GlareLightsConfig | None = Field(
        None, description="Two switched lamps: each frame read is the per-pixel minimum of one exposure under each")


class ReaderConfig(Section):
    region: Region | None = Field(None, description="Where the ball sits; none = search the whole frame")
    frames: int = Field(5, ge=1, le=30, description="Frames read and fused for each ball")
    commit_at: float = Field(0.999, gt=0.5, le=1, description="Fused confidence needed to call")
    confirm_at: float = Field(0.9, gt=0, le=1, description="Below commit but at least this: ask a person")
    max_presentations: int = Field(3, ge=1, le=10, description="Times a ball is presented again before asking")

    @model_validator(mode="after")
    def _order(self) -> "ReaderConfig":
        if self.confirm_at > self.commit_at:
            raise ValueError("reader.confirm_at must not exceed reader.commit_at")
        return self


class RecordConfig(Section):
    path: Path = Field(Path("ballreader.db"), description="SQLite journal (the official record)")
    keep_frames: bool = Field(True, description="Keep the frame of every called ball with its call")
    min_free_mb: int = Field(50, ge=1, description="Below this much free disk no new game starts")


class RulesConfig(Section):
    profile: Literal["none", "delaware", "missouri"] = "none"
    overrides: dict[str, Any] = Field(default_factory=dict, description="Limits that differ from the profile")
    timezone: str | None = Field(None, description="Hall's local time zone, e.g. America/New_York")


class WebConfig(Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535, description="0 = any free port (it is logged)")
    password_file: Path | None = Field(None, description="Hashed technician password (default beside the record)")


class SimConfig(Section):
    chatter_edges: int = Field(20, ge=0, le=200)
    chatter_ms: float = Field(5, ge=0, le=100)
    hold_s: float = Field(0.6, ge=0, le=30, description="Time a ball stays in the holder after its call")
    gap_s: float = Field(0.3, ge=0, le=86400, description="Time between balls")
    shake_px: float = Field(0, ge=0, le=40, description="The ball shakes in the holder: moves up to this far between frames")


class Config(Section):
    # Integrations keep their own config models beside their code.
    device_id: str = Field("ballreader", description="Device id in topics, [a-z0-9-]+")
    mqtt: MqttConfig = Field(default_factory=MqttConfig)
    sensor: SensorConfig = Field(default_factory=SensorConfig)
    camera: CameraConfig = Field(default_factory=CameraConfig)
    reader: ReaderConfig = Field(default_factory=ReaderConfig)
    record: RecordConfig = Field(default_factory=RecordConfig)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    sim: SimConfig = Field(default_factory=SimConfig)
    serial_board: SerialBoardConfig = Field(default_factory=SerialBoardConfig)
    speech: SpeechConfig = Field(default_factory=SpeechConfig)

    @field_validator("device_id")
    @classmethod
    def _device_id(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9-]+", v):
            raise ValueError("must match [a-z0-9-]+")
        return v

    @model_validator(mode="after")
    def _pins_not_shared(self) -> "Config":
        lights = self.camera.lights
        if lights and str(self.sensor.pin) in (str(lights.pin_a), str(lights.pin_b)):
            raise ValueError(f"camera.lights: pin {self.sensor.pin} is the ball sensor's (sensor.pin)")
        return self


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        problem = "unknown key (misspelt?)"
    else:
        problem = first["msg"].removeprefix("Value error, ")
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{key}: {problem}{more}"


def parse_config(data: dict[str, Any], source: str = "config") -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {_one_line(e)}") from None


def load_config(path: str | os.PathLike | None) -> Config:
    """The config in PATH, or the defaults when PATH is None."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    return parse_config(data, str(p))


def dump_toml(config: Config) -> str:
    """The config as TOML (for saving from the web page); only what differs from the defaults."""
    return tomli_w.dumps(config.model_dump(mode="json", exclude_defaults=True, exclude_none=True))
