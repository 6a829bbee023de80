"""Home Assistant MQTT device discovery for one ballreader.

One retained message on `homeassistant/device/bingo_<id>/config` describes the whole
device: the last call, how many balls are called, a call event, the game status and a
new-game button. All of them read the appliance's own topics (docs/mqtt.md), so nothing
extra is published for Home Assistant; they share the appliance's `availability`.

Wiring (services.mqtt_link.MqttLink has the two hooks this needs):
    HomeAssistantDiscovery(prefix, device_id, version, enabled).attach(link)
publishes the discovery on every connect (before availability goes online), again when
`homeassistant/status` says `online` (Home Assistant restarted), and, when disabled in
the config, an empty retained message instead, which removes the device.
"""
from __future__ import annotations

import json
from typing import Any

DISCOVERY_PREFIX = "homeassistant"
STATUS_TOPIC = f"{DISCOVERY_PREFIX}/status"
GAME_STATUSES = ["none", "announced", "running", "claims", "closed"]
# What the New game button sends: the pattern and prize are the appliance's defaults.
# Pressing it is the caller saying all balls are back in the blower, as on the console.
NEW_GAME_REQUEST = {"transaction": "home-assistant", "by": "home-assistant", "all_balls_in_blower": True}


def node_id(device_id: str) -> str:
    return f"bingo_{device_id.replace('-', '_')}"


def discovery_topic(device_id: str, discovery_prefix: str = DISCOVERY_PREFIX) -> str:
    return f"{discovery_prefix}/device/{node_id(device_id)}/config"


def discovery_message(prefix: str, device_id: str, version: str,
                      discovery_prefix: str = DISCOVERY_PREFIX) -> tuple[str, dict[str, Any]]:
    """(topic, payload) of the retained device discovery message."""
    base = f"{prefix}/{device_id}"
    uid = node_id(device_id)
    game = "value_json.game"
    components = {
        "last_call": {
            "p": "sensor",
            "name": "Last call",
            "icon": "mdi:numeric",
            "value_template": f"{{{{ {game}.last_call if {game} and {game}.last_call else 'none' }}}}",
        },
        "called_count": {
            "p": "sensor",
            "name": "Balls called",
            "icon": "mdi:counter",
            "state_class": "measurement",
            "value_template": f"{{{{ {game}.count if {game} else 0 }}}}",
        },
        "call": {
            # The call payload already carries event_type (called/voided), as HA wants;
            # its other keys (ball, seq, game...) become the event's attributes.
            "p": "event",
            "name": "Call",
            "icon": "mdi:bullhorn",
            "state_topic": f"{base}/call",
            "event_types": ["called", "voided"],
        },
        "game_status": {
            "p": "sensor",
            "name": "Game",
            "icon": "mdi:grid",
            "device_class": "enum",
            "options": GAME_STATUSES,
            "value_template": f"{{{{ {game}.status if {game} else 'none' }}}}",
            "json_attributes_topic": f"{base}/state",
            "json_attributes_template": (
                f"{{{{ {{'number': {game}.number, 'pattern': {game}.pattern.name, 'prize': {game}.prize}}"
                f" | tojson if {game} else '{{}}' }}}}"
            ),
        },
        "new_game": {
            "p": "button",
            "name": "New game",
            "icon": "mdi:play",
            "command_topic": f"{base}/request/new_game",
            "payload_press": json.dumps(NEW_GAME_REQUEST),
            "retain": False,
        },
    }
    for key, component in components.items():
        component["unique_id"] = f"{uid}_{key}"
    payload = {
        "dev": {
            "ids": [uid],
            "name": f"Bingo ball reader {device_id}",
            "mf": "ballreader",
            "mdl": "ballreader",
            "sw": version,
        },
        "o": {"name": "ballreader", "sw": version},
        # Shared by every component unless it names its own.
        "availability_topic": f"{base}/availability",
        "payload_available": "online",
        "payload_not_available": "offline",
        "state_topic": f"{base}/state",
        "qos": 1,
        "cmps": components,
    }
    return discovery_topic(device_id, discovery_prefix), payload


def removal_message(prefix: str, device_id: str,
                    discovery_prefix: str = DISCOVERY_PREFIX) -> tuple[str, bytes]:
    """(topic, b""): an empty retained message removes the device from Home Assistant."""
    return discovery_topic(device_id, discovery_prefix), b""


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def messages_on_connect(prefix: str, device_id: str, version: str, enabled: bool,
                        discovery_prefix: str = DISCOVERY_PREFIX) -> list[tuple[str, bytes]]:
    """What to publish retained on every connect: the discovery when enabled, else its removal
    (so a device switched off in the config leaves Home Assistant rather than going stale)."""
    if enabled:
        topic, payload = discovery_message(prefix, device_id, version, discovery_prefix)
        return [(topic, encode(payload))]
    return [removal_message(prefix, device_id, discovery_prefix)]


class HomeAssistantDiscovery:
    """Publishes the discovery (or its removal) through a connected paho client."""

    def __init__(self, prefix: str, device_id: str, version: str, enabled: bool = True,
                 discovery_prefix: str = DISCOVERY_PREFIX) -> None:
        self.messages = messages_on_connect(prefix, device_id, version, enabled, discovery_prefix)
        self.enabled = enabled
        self.status_topic = f"{discovery_prefix}/status"
        self._client = None

    def publish(self, client) -> None:
        """On connect: retained, QoS 1, so Home Assistant finds it whenever it starts."""
        self._client = client
        for topic, payload in self.messages:
            client.publish(topic, payload, qos=1, retain=True)

    def on_status(self, msg) -> None:
        """Home Assistant announces itself `online` after a restart: send the discovery again."""
        if self.enabled and self._client is not None and msg.payload.strip() == b"online":
            self.publish(self._client)

    def attach(self, link) -> None:
        """Hook into an MqttLink: its `on_connected` list and `subscriptions` table."""
        link.on_connected.append(self.publish)
        if self.enabled:
            link.subscriptions[self.status_topic] = self.on_status
