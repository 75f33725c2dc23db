"""The KIP-848 side of the group host: `group.consumer.*` settings and what loading a partition needs.

The consumer coordinators themselves are pure (broker/consumer_coordinator.py); GroupHost (group_host.py) loads
them with the classic groups of each `__consumer_offsets` partition it leads, writes their records and runs their
timers.
"""

from __future__ import annotations

from typing import Any

from pykraft.broker.consumer_coordinator import ConsumerCoordinator, ConsumerGroupConfig
from pykraft.broker.group_state import Group

_CONSUMER_INTS = (("session_timeout_ms", "group.consumer.session.timeout.ms", 45000),
                  ("heartbeat_interval_ms", "group.consumer.heartbeat.interval.ms", 5000),
                  ("max_size", "group.consumer.max.size", 2**31 - 1))
_CONSUMER_BOUNDS = (("group.consumer.min.session.timeout.ms", 45000, "group.consumer.max.session.timeout.ms", 60000,
                     "group.consumer.session.timeout.ms"),
                    ("group.consumer.min.heartbeat.interval.ms", 5000, "group.consumer.max.heartbeat.interval.ms",
                     15000, "group.consumer.heartbeat.interval.ms"))


_ASSIGNOR_CLASSES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                     "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def consumer_group_config(raw: Any) -> ConsumerGroupConfig:
    """group.consumer.* from server.properties (the config table checked their types and ranges), with Kafka's
    cross-checks (GroupCoordinatorConfig): each value within its min and max, the heartbeat interval below the
    session timeout, known assignor names. ValueError names the key."""
    def number(key: str, default: int) -> int:
        text = str(raw.get(key, default)).strip()
        if not text.lstrip("-").isdigit():
            raise ValueError(f"{key}: {text!r} is not an integer")
        return int(text)
    values: dict[str, Any] = {name: number(key, default) for name, key, default in _CONSUMER_INTS}
    for low_key, low, high_key, high, key in _CONSUMER_BOUNDS:
        value = values["session_timeout_ms" if "session" in key else "heartbeat_interval_ms"]
        minimum, maximum = number(low_key, low), number(high_key, high)
        if not minimum <= value <= maximum:
            raise ValueError(f"{key} must be between {low_key} ({minimum}) and {high_key} ({maximum}), not {value}")
    if values["heartbeat_interval_ms"] >= values["session_timeout_ms"]:
        raise ValueError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    listed = [n.strip() for n in str(raw.get("group.consumer.assignors", "uniform,range")).split(",") if n.strip()]
    names = tuple(_ASSIGNOR_CLASSES.get(n, n) for n in listed)
    unknown = [n for n in names if n not in ("uniform", "range")]
    if unknown or not names:
        raise ValueError(f"group.consumer.assignors: {', '.join(unknown) or 'none'} is not an assignor pykraft has "
                         f"(uniform, range, or Kafka's class names of them)")
    values["assignors"] = names
    return ConsumerGroupConfig(**values)


def adopt_offsets(groups: dict[str, Group], consumers: ConsumerCoordinator) -> None:
    """Offsets are keyed by group id alone: a consumer group's were read into a member-less classic placeholder (or
    belonged to the classic group it was converted from)."""
    for group_id, group in consumers.groups.items():
        group.offsets.update(consumers.orphan_offsets.get(group_id, {}))
        placeholder = groups.get(group_id)
        if placeholder is not None and not placeholder.members:
            group.offsets.update(groups.pop(group_id).offsets)
