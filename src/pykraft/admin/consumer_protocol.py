"""The "consumer" embedded protocol of classic groups, for the admin tools: the codec (records/consumer_protocol.py)
and Kafka's RangeAssignor as a classic leader runs it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykraft.records.consumer_protocol import (  # the admin tools' names for them
    decode_assignment, decode_message, decode_subscription, encode_assignment, encode_subscription,
)

__all__ = ["decode_assignment", "decode_message", "decode_subscription", "encode_assignment", "encode_subscription",
           "range_assign"]


def range_assign(subscriptions: Mapping[str, Sequence[str]], partition_counts: Mapping[str, int],
                 instance_ids: Mapping[str, str | None] | None = None) -> dict[str, list[tuple[str, int]]]:
    """Kafka's RangeAssignor: per topic, its partitions in order split into contiguous ranges over the members
    subscribed to it, the first `count % members` members getting one more. Members are ordered as Kafka's
    MemberInfo orders them: static members (a group instance id) first, by instance id, then the others by member
    id."""
    instances = instance_ids or {}

    def order(member: str) -> tuple[int, str]:
        instance = instances.get(member)
        return (0, instance) if instance is not None else (1, member)

    assignment: dict[str, list[tuple[str, int]]] = {member: [] for member in subscriptions}
    for topic in sorted({t for wanted in subscriptions.values() for t in wanted}):
        members = sorted((m for m, wanted in subscriptions.items() if topic in wanted), key=order)
        count = partition_counts.get(topic, 0)
        if not members or count <= 0:
            continue
        share, extra = divmod(count, len(members))
        start = 0
        for position, member in enumerate(members):
            size = share + (1 if position < extra else 0)
            assignment[member].extend((topic, p) for p in range(start, start + size))
            start += size
    return assignment
