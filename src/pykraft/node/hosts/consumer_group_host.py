"""The KIP-848 side of the group host: `group.consumer.*` settings and what loading a partition needs.

The consumer coordinators themselves are pure (broker/consumer_coordinator.py); GroupHost (group_host.py) loads
them with the classic groups of each `__consumer_offsets` partition it leads, writes their records and runs their
timers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pykraft.broker.consumer_coordinator import ConsumerCoordinator, ConsumerGroupConfig
from pykraft.broker.group_migration import parse_policy
from pykraft.broker.group_state import Group
from pykraft.broker.offset_expiry import Expired, expired_consumer_offsets
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord
from pykraft.records.group_records import OffsetKey, encode_key

_log = logging.getLogger("pykraft.node.groups")

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
    protocols = {n.strip().lower() for n in str(raw.get("group.coordinator.rebalance.protocols", "classic,consumer"))
                 .split(",") if n.strip()}
    if "classic" not in protocols:
        raise ValueError("group.coordinator.rebalance.protocols must contain classic")
    if "share" in protocols:
        raise ValueError("group.coordinator.rebalance.protocols: share groups are not implemented by pykraft")
    values["enabled"] = "consumer" in protocols
    values["migration_policy"] = parse_policy(str(raw.get("group.consumer.migration.policy", "bidirectional")))
    return ConsumerGroupConfig(**values)


def adopt_offsets(groups: dict[str, Group], consumers: ConsumerCoordinator) -> None:
    """Offsets are keyed by group id alone: a consumer group's were read into a member-less classic placeholder (or
    belonged to the classic group it was converted from)."""
    for group_id, group in consumers.groups.items():
        group.offsets.update(consumers.orphan_offsets.get(group_id, {}))
        placeholder = groups.get(group_id)
        if placeholder is not None and not placeholder.members:
            group.offsets.update(groups.pop(group_id).offsets)


def expire_consumer_offsets(host: Any, consumers: ConsumerCoordinator, now_ms: int, retention_ms: int) -> None:
    """offsets.retention.minutes for KIP-848 groups (broker/offset_expiry.py): tombstones for expired offsets and,
    for an empty group whose offsets all expired, for its records too; written by `host` (a GroupHost)."""
    for group in list(consumers.groups.values()):
        expired = expired_consumer_offsets(group, now_ms, retention_ms)
        if expired is not None:
            decided = {key: group.offsets[key] for key in expired.partitions}
            asyncio.get_running_loop().create_task(_write_expiry(host, consumers, expired, decided))


async def _write_expiry(host: Any, consumers: ConsumerCoordinator, expired: Expired, decided: dict) -> None:
    group_id = expired.group_id
    offsets = [SimpleRecord(None, encode_key(OffsetKey(group_id, t, p))) for t, p in expired.partitions]
    group = consumers.groups.get(group_id)
    records = consumers.tombstone_group(group_id) if expired.group_too and group is not None \
        and not group.members and set(group.offsets) <= set(decided) else ()
    if await host.write_records(group_id, records, offsets) is ErrorCode.NONE and group is not None:
        for key, entry in decided.items():
            if group.offsets.get(key) is entry:  # not committed again meanwhile
                del group.offsets[key]
        _log.info("consumer group %s: %d committed offsets expired%s", group_id, len(expired.partitions),
                  ", the group is removed" if records else "")
