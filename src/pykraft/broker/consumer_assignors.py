"""The server-side assignors of KIP-848 consumer groups (`group.consumer.assignors`: `uniform`, `range`), pure.

Both take every member's subscription (topic ids) and its current *target* assignment, and the partition counts
of the subscribed topics, and return the new target assignment of every member. As Kafka's:

- **uniform** (Kafka's UniformAssignor): balanced (member counts differ by at most one where the subscriptions
  allow it) and sticky: a member keeps what it had unless balance requires a move, so a member joining a group of
  three takes partitions from the others and nobody else's partitions change hands. Partitions of a topic only go
  to members subscribed to it (the heterogeneous case is balanced greedily: each move goes from the member with the
  most partitions to an eligible member with at least two fewer).
- **range** (Kafka's RangeAssignor): per topic, contiguous ranges over the subscribed members in member id order
  (the first `partitions % members` get one more), sticky within each member's quota, so members with the same
  subscription get the same partition numbers of co-partitioned topics.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

Partitions = dict[uuid.UUID, frozenset[int]]
TopicPartition = tuple[uuid.UUID, int]

UNIFORM = "uniform"
RANGE = "range"
ASSIGNORS = (UNIFORM, RANGE)


@dataclass(frozen=True, slots=True)
class MemberSpec:
    subscribed: frozenset[uuid.UUID]  # topic ids of the member's subscription that exist
    current: Partitions  # the member's current target assignment


def assign(name: str, members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> dict[str, Partitions]:
    """The new target assignment. `topics` maps every subscribed topic id to its number of partitions."""
    if name == RANGE:
        return _range(members, topics)
    assert name == UNIFORM, name
    return _uniform(members, topics)


def _to_partitions(owned: set[TopicPartition]) -> Partitions:
    result: dict[uuid.UUID, set[int]] = {}
    for topic_id, number in owned:
        result.setdefault(topic_id, set()).add(number)
    return {topic_id: frozenset(numbers) for topic_id, numbers in result.items()}


# ---- uniform -------------------------------------------------------------------------------------------------------
def _uniform(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> dict[str, Partitions]:
    order = sorted(members)
    owned: dict[str, set[TopicPartition]] = {m: set() for m in order}
    taken: set[TopicPartition] = set()
    for member_id in order:  # stickiness: keep what is still valid and not claimed twice
        spec = members[member_id]
        for topic_id, numbers in spec.current.items():
            if topic_id not in spec.subscribed or topic_id not in topics:
                continue
            for number in numbers:
                key = (topic_id, number)
                if number < topics[topic_id] and key not in taken:
                    owned[member_id].add(key)
                    taken.add(key)
    eligible = {t: [m for m in order if t in members[m].subscribed] for t in topics}
    _trim_to_quota(owned, members, topics, eligible)
    taken = {p for parts in owned.values() for p in parts}
    free = [(t, n) for t in sorted(topics, key=str) for n in range(topics[t]) if (t, n) not in taken]
    free.sort(key=lambda p: (len(eligible[p[0]]), str(p[0]), p[1]))
    for key in free:
        candidates = eligible[key[0]]
        if candidates:
            owned[min(candidates, key=lambda m: (len(owned[m]), order.index(m)))].add(key)
    _balance(owned, members, order)
    return {m: _to_partitions(owned[m]) for m in order}


def _trim_to_quota(owned: dict[str, set[TopicPartition]], members: Mapping[str, MemberSpec],
                   topics: Mapping[uuid.UUID, int], eligible: dict[uuid.UUID, list[str]]) -> None:
    """With identical subscriptions the quota is exact: floor(total / members), and `total % members` of them may
    keep one more. Members over it give up their highest partitions, so newcomers get exactly the excess."""
    subscriptions = {members[m].subscribed for m in owned}
    if len(subscriptions) != 1 or not owned:
        return
    total = sum(topics[t] for t in next(iter(subscriptions)) if t in topics)
    base, extra = divmod(total, len(owned))
    for member_id in sorted(owned, key=lambda m: (-len(owned[m]), m)):
        allowed = base + (1 if extra > 0 and len(owned[member_id]) > base else 0)
        if allowed > base:
            extra -= 1
        while len(owned[member_id]) > allowed:
            owned[member_id].remove(max(owned[member_id], key=lambda p: (str(p[0]), p[1])))


def _balance(owned: dict[str, set[TopicPartition]], members: Mapping[str, MemberSpec], order: list[str]) -> None:
    """Move partitions from the fullest members to eligible members with at least two fewer, until none can."""
    for _ in range(sum(len(p) for p in owned.values()) + 1):
        moved = False
        for donor in sorted(order, key=lambda m: (-len(owned[m]), order.index(m))):
            receivers = sorted((m for m in order if len(owned[m]) + 2 <= len(owned[donor])),
                               key=lambda m: (len(owned[m]), order.index(m)))
            for receiver in receivers:
                movable = sorted((p for p in owned[donor] if p[0] in members[receiver].subscribed),
                                 key=lambda p: (str(p[0]), p[1]))
                if movable:
                    owned[donor].remove(movable[-1])
                    owned[receiver].add(movable[-1])
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


# ---- range ---------------------------------------------------------------------------------------------------------
def _range(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> dict[str, Partitions]:
    owned: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for topic_id in sorted(topics, key=str):
        count = topics[topic_id]
        subscribers = sorted(m for m in members if topic_id in members[m].subscribed)
        if not subscribers:
            continue
        base, extra = divmod(count, len(subscribers))
        quotas = {m: base + (1 if i < extra else 0) for i, m in enumerate(subscribers)}
        free = set(range(count))
        mine: dict[str, set[int]] = {m: set() for m in subscribers}
        for member_id in subscribers:  # sticky within the quota
            kept = sorted(n for n in members[member_id].current.get(topic_id, frozenset()) if n in free)
            mine[member_id] = set(kept[:quotas[member_id]])
            free -= mine[member_id]
        remaining = sorted(free)
        for member_id in subscribers:
            need = quotas[member_id] - len(mine[member_id])
            mine[member_id] |= set(remaining[:need])
            remaining = remaining[need:]
        for member_id, numbers in mine.items():
            owned[member_id] |= {(topic_id, n) for n in numbers}
    return {m: _to_partitions(owned[m]) for m in sorted(members)}
