"""The online migration of a non-empty group between the classic protocol and KIP-848's (Kafka 4.x's
GroupMetadataManager: validateOnlineUpgrade, convertToConsumerGroup, validateOnlineDowngradeWithFencedMembers,
convertToClassicGroup), pure.

`group.consumer.migration.policy` (Kafka 4.0's default `bidirectional`; `upgrade`, `downgrade`, `disabled`) says
which conversions of a group *with members* are allowed; empty groups convert both ways whatever it says.

- **Upgrade**: the first ConsumerGroupHeartbeat (epoch 0) to a classic group whose members use the "consumer"
  embedded protocol turns it into a consumer group. Each classic member becomes a consumer group member that keeps
  speaking the classic protocol (its ClassicMemberMetadata: session timeout and JoinGroup protocols), at the
  classic generation as its member epoch, owning the partitions of its last assignment, which is also its target.
  The records: the classic group's tombstone, then the members' metadata, the group epoch (= the generation), the
  target assignment and its epoch, the members' current assignments; then the joining member's heartbeat bumps the
  epoch and a new target is computed, which the classic members reach by rejoining (consumer_classic.py).
- **Downgrade**: when the last member using the consumer protocol leaves (or is fenced) and classic members
  remain, the group becomes a classic group again: the consumer group's records are tombstoned and a
  GroupMetadata record holds the classic members with their target assignments at generation = the group epoch;
  the classic coordinator then starts a rebalance.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping

from pykraft.broker.consumer_group import ConsumerGroup, ConsumerMember, MemberState, Partitions
from pykraft.broker.group_state import Group, GroupState, Member
from pykraft.records import consumer_group_records as rec
from pykraft.records.consumer_protocol import decode_assignment, encode_assignment, read_subscription, version_of
from pykraft.records.group_records import GroupKey, GroupValue, MemberValue

CONSUMER_PROTOCOL_TYPE = "consumer"
Topics = Mapping[str, tuple[uuid.UUID, int]]  # name -> (id, partition count), as TopicImage.topics


class MigrationPolicy(enum.Enum):
    DISABLED = "disabled"
    DOWNGRADE = "downgrade"
    UPGRADE = "upgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


def parse_policy(text: str) -> MigrationPolicy:
    """group.consumer.migration.policy, case-insensitive as Kafka's validator; ValueError otherwise."""
    try:
        return MigrationPolicy(text.strip().lower())
    except ValueError:
        raise ValueError(f"group.consumer.migration.policy: {text!r} is not one of "
                         f"{', '.join(p.value for p in MigrationPolicy)}") from None


class MigrationRefused(Exception):
    """GROUP_ID_NOT_FOUND with Kafka's message: the group stays as it is."""


# ---- upgrade: classic -> consumer ----------------------------------------------------------------------------------
def check_upgrade(group: Group, policy: MigrationPolicy, max_size: int) -> None:
    """Kafka's validateOnlineUpgrade; raises MigrationRefused."""
    gid = group.group_id
    if not policy.upgrade_enabled:
        raise MigrationRefused(f"Cannot upgrade classic group {gid} to consumer group because online upgrade is "
                               f"disabled.")
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise MigrationRefused(f"Cannot upgrade classic group {gid} to consumer group because the group does not "
                               f"use the consumer embedded protocol.")
    if len(group.members) > max_size:
        raise MigrationRefused(f"Cannot upgrade classic group {gid} to consumer group because the group size "
                               f"exceeds the consumer group maximum size.")


def consumer_members_of(group: Group, topics: Topics) -> list[ConsumerMember]:
    """Kafka's ConsumerGroup.fromClassicGroup: every classic member at the generation, Stable, owning its last
    assignment (topics the metadata no longer has are dropped). MigrationRefused when a member's subscription or
    assignment is not the consumer protocol's."""
    members = []
    for member in group.members.values():
        try:
            subscription = read_subscription(member.metadata_for(group.protocol_name))
            assigned = decode_assignment(member.assignment)
        except ValueError:
            raise MigrationRefused(f"Cannot upgrade classic group {group.group_id} to consumer group because the "
                                   f"embedded consumer protocol is malformed.") from None
        members.append(ConsumerMember(
            member.member_id, member.instance_id, subscription.rack, member.client_id, member.client_host,
            subscription.topics, None, member.rebalance_timeout_ms, None, group.generation, group.generation,
            MemberState.STABLE, to_ids(assigned, topics), {},
            rec.ClassicProtocols(member.session_timeout_ms, member.protocols)))
    return members


def upgrade_records(group_id: str, generation: int, members: list[ConsumerMember]) -> list[tuple[rec.ConsumerGroupKey,
                                                                                                 rec.ConsumerGroupValue]]:
    """Kafka's createConsumerGroupRecords, in its order (the classic tombstone goes before them)."""
    def key(kind: int, sub: str | None = None) -> rec.ConsumerGroupKey:
        return rec.ConsumerGroupKey(kind, group_id, sub)
    records: list[tuple[rec.ConsumerGroupKey, rec.ConsumerGroupValue]] = []
    records += [(key(rec.MEMBER_METADATA, m.member_id), m.metadata_value()) for m in members]
    records.append((key(rec.METADATA), rec.GroupEpochValue(generation)))
    records += [(key(rec.TARGET_MEMBER, m.member_id), rec.TargetMemberValue(dict(m.assigned))) for m in members]
    records.append((key(rec.TARGET_METADATA), rec.AssignmentEpochValue(generation)))
    records += [(key(rec.CURRENT_ASSIGNMENT, m.member_id), m.assignment_value()) for m in members]
    return records


def to_ids(pairs: list[tuple[str, int]] | tuple[tuple[str, int], ...], topics: Topics) -> Partitions:
    found: dict[uuid.UUID, set[int]] = {}
    for name, number in pairs:
        if name in topics:
            found.setdefault(topics[name][0], set()).add(number)
    return {topic_id: frozenset(numbers) for topic_id, numbers in found.items()}


def to_names(partitions: Partitions, topics: Topics) -> list[tuple[str, int]]:
    names = {topic_id: name for name, (topic_id, _) in topics.items()}
    return sorted((names[t], n) for t, numbers in partitions.items() if t in names for n in numbers)


# ---- downgrade: consumer -> classic --------------------------------------------------------------------------------
def downgrade_allowed(group: ConsumerGroup, leaving: set[str], policy: MigrationPolicy,
                      classic_max_size: int = 2**31 - 1) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers: the leaving members are the last ones on the consumer
    protocol, someone (speaking classic) remains, the policy allows it and the rest fits in a classic group."""
    remaining = [m for m in group.members.values() if m.member_id not in leaving]
    gone = [m for m in group.members.values() if m.member_id in leaving]
    if not gone or any(m.uses_classic for m in gone) or not all(m.uses_classic for m in remaining):
        return False
    return bool(remaining) and policy.downgrade_enabled and len(remaining) <= classic_max_size


def downgrade_replacing(group: ConsumerGroup, replaced: str, policy: MigrationPolicy,
                        classic_max_size: int = 2**31 - 1) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMember: a classic static member takes the place of the last
    member on the consumer protocol (checked on the group before the replacement)."""
    member = group.members.get(replaced)
    if member is None or member.uses_classic:
        return False
    others = [m for m in group.members.values() if m.member_id != replaced]
    return all(m.uses_classic for m in others) and policy.downgrade_enabled and len(group.members) <= classic_max_size


def downgrade_tombstones(group: ConsumerGroup) -> list[tuple[rec.ConsumerGroupKey, None]]:
    """Kafka's ConsumerGroup.createGroupTombstoneRecords, in its order (and the resolved regexes)."""
    def key(kind: int, sub: str | None = None) -> tuple[rec.ConsumerGroupKey, None]:
        return rec.ConsumerGroupKey(kind, group.group_id, sub), None
    ids = sorted(group.members)
    return ([key(rec.CURRENT_ASSIGNMENT, m) for m in ids] + [key(rec.TARGET_MEMBER, m) for m in ids]
            + [key(rec.TARGET_METADATA)] + [key(rec.MEMBER_METADATA, m) for m in ids]
            + [key(rec.REGULAR_EXPRESSION, r) for r in sorted(group.resolved_regexes)]
            + [key(rec.PARTITION_METADATA), key(rec.METADATA)])


def classic_group_of(group: ConsumerGroup, leaving: set[str], topics: Topics, now_ms: int) -> Group:
    """Kafka's ClassicGroup.fromConsumerGroup: Stable at generation = the group epoch, the remaining members with
    their classic protocols, each assigned its target (in the version of its subscription); the first member
    leads. Its committed offsets come along."""
    classic = Group(group.group_id, GroupState.STABLE, group.group_epoch, CONSUMER_PROTOCOL_TYPE,
                    state_timestamp_ms=now_ms, offsets=dict(group.offsets))
    for member in group.members.values():
        if member.member_id in leaving or member.classic is None:
            continue
        classic.members[member.member_id] = Member(
            member.member_id, member.instance_id, member.client_id, member.client_host,
            member.classic.session_timeout_ms, member.rebalance_timeout_ms, CONSUMER_PROTOCOL_TYPE,
            member.classic.protocols)
    classic.protocol_name = classic.select_protocol()
    classic.leader = next(iter(classic.members), None)
    for joined in classic.members.values():
        metadata = joined.metadata_for(classic.protocol_name)
        try:
            version = version_of(metadata)
        except ValueError:
            version = 0
        joined.assignment = encode_assignment(to_names(group.target.get(joined.member_id, {}), topics), version)
    return classic


def classic_group_record(group: Group) -> tuple[GroupKey, GroupValue]:
    """The GroupMetadata record of a classic group (as the classic coordinator writes it)."""
    members = tuple(MemberValue(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                m.session_timeout_ms, m.metadata_for(group.protocol_name), m.assignment)
                    for m in group.members.values())
    return GroupKey(group.group_id), GroupValue(group.protocol_type or "", group.generation, group.protocol_name,
                                                group.leader, group.state_timestamp_ms, members)
