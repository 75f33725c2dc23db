"""Which committed offsets and groups expire (pure): Kafka's classic-group rules (`ClassicGroup.
offsetExpirationCondition`, `OffsetMetadataManager.cleanupExpiredOffsets`, `GroupMetadataManager.
cleanupGroupMetadata`), run every `offsets.retention.check.interval.ms` by the group host, which writes a tombstone
for each expired offset and, for a group that ends empty, one for the group: `__consumer_offsets` is compacted, so
the log then stays bounded by the live (group, partition) keys.

An offset expires when `offsets.retention.minutes` passed since its base time:
- a group with a protocol type (it has had members) that is Empty: since the group became Empty (its state
  timestamp), or since the commit when that is unknown; every offset is eligible;
- a Stable "consumer" group whose subscriptions parse: since the commit, for topics no member subscribes to;
- a group without a protocol type (offsets committed by a consumer that assigns itself): since the commit;
- any other group: nothing expires.
When every offset of an Empty group expired (or it has none), the group goes too.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.records.group_records import subscribed_topics

from .consumer_group import ConsumerGroup
from .group_state import Group, GroupState


@dataclass(frozen=True, slots=True)
class Expired:
    group_id: str
    partitions: tuple[tuple[str, int], ...]
    group_too: bool  # write the group's tombstone as well


def _subscriptions(group: Group) -> set[str] | None:
    """Topics the members subscribe to; None when a subscription does not parse (then nothing is known)."""
    found: set[str] = set()
    for member in group.members.values():
        topics = subscribed_topics(member.metadata_for(group.protocol_name))
        if topics is None:
            return None
        found |= topics
    return found


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> Expired | None:
    """What expires in `group` now (see the module docstring); None when nothing does."""
    subscribed: set[str] = set()
    if group.protocol_type is not None:
        if group.state is GroupState.EMPTY:
            stamp = group.state_timestamp_ms if group.state_timestamp_ms >= 0 else None
        elif group.protocol_type == "consumer" and group.state is GroupState.STABLE and group.protocol_name:
            topics = _subscriptions(group)
            if topics is None:
                return None
            subscribed, stamp = topics, None
        else:
            return None
    else:
        stamp = None
    gone = []
    every = True
    for (topic, partition), entry in group.offsets.items():
        base = entry.commit_timestamp_ms if stamp is None else stamp
        if topic not in subscribed and now_ms - base >= retention_ms:
            gone.append((topic, partition))
        else:
            every = False
    group_too = every and group.state is GroupState.EMPTY
    if not gone and not group_too:
        return None
    return Expired(group.group_id, tuple(sorted(gone)), group_too)


def expired_consumer_offsets(group: ConsumerGroup, now_ms: int, retention_ms: int) -> Expired | None:
    """A KIP-848 consumer group (Kafka's ConsumerGroup.offsetExpirationCondition): an offset expires
    `retention_ms` after its commit unless a member subscribes to its topic; an empty group whose offsets all
    expired goes too."""
    subscribed = group.subscribed_topic_names()
    gone = sorted(key for key, entry in group.offsets.items()
                  if key[0] not in subscribed and now_ms - entry.commit_timestamp_ms >= retention_ms)
    group_too = not group.members and len(gone) == len(group.offsets)
    if not gone and not group_too:
        return None
    return Expired(group.group_id, tuple(gone), group_too)
