"""One KIP-848 consumer group's state (Kafka's ConsumerGroup and ConsumerGroupMember), and how records change it.

Three epochs (KIP-848): the **group epoch** is bumped whenever the group's membership, subscriptions or the
metadata of the subscribed topics change; the **assignment epoch** is the group epoch the current *target*
assignment was computed for; each member's **member epoch** is the assignment epoch it has reconciled to. A member
reaches a new epoch only once it no longer owns partitions the target takes from it (revoke before assign), and it
is only given a partition that no other member still owns (`partition_epochs`).

Every change is a record (consumer_group_records.py) and the state only changes by replaying records (`replay`),
so the state built live and the state loaded from `__consumer_offsets` after a failover are the same by
construction, as in Kafka's coordinator.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace

from pykraft.broker.group_state import OffsetEntry
from pykraft.records import consumer_group_records as rec

Partitions = dict[uuid.UUID, frozenset[int]]
EMPTY: Partitions = {}
LEAVE_EPOCH = -1  # ConsumerGroupHeartbeat MemberEpoch: leave the group
STATIC_LEAVE_EPOCH = -2  # a static member leaves, to come back under its instance id


class MemberState(enum.IntEnum):
    """Kafka's MemberState (the State field of ConsumerGroupCurrentMemberAssignmentValue)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    classic: rec.ClassicProtocols | None = None  # a member speaking the classic protocol (online migration)

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def metadata_value(self) -> rec.MemberMetadataValue:
        return rec.MemberMetadataValue(self.instance_id, self.rack_id, self.client_id, self.client_host,
                                       self.subscribed_topic_names, self.subscribed_topic_regex,
                                       self.rebalance_timeout_ms, self.server_assignor, self.classic)

    def assignment_value(self) -> rec.CurrentAssignmentValue:
        return rec.CurrentAssignmentValue(self.member_epoch, self.previous_member_epoch, int(self.state),
                                          self.assigned, self.pending_revocation)

    def with_epoch(self, epoch: int) -> ConsumerMember:
        """Kafka's updateMemberEpoch: the previous epoch remembers where the member came from."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)  # name -> (id, count)
    resolved_regexes: dict[str, rec.RegexValue] = field(default_factory=dict)
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)  # owner's member epoch
    partition_owners: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetEntry] = field(default_factory=dict)
    metadata_refresh: bool = False  # the subscribed topics changed in the metadata: recompute at the next heartbeat
    regex_refresh_ms: int = 0  # when the regexes were last resolved
    regex_version: int = -1  # the metadata offset they were resolved at
    exists: bool = False  # a ConsumerGroupMetadata record was replayed (and not tombstoned)

    # ---- reading --------------------------------------------------------------------------------------------------
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def subscribed_topic_names(self) -> set[str]:
        """Every topic a member subscribes to by name or through a resolved regex."""
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
            resolved = self.resolved_regexes.get(member.subscribed_topic_regex or "")
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def member_topics(self, member: ConsumerMember) -> set[str]:
        names = set(member.subscribed_topic_names)
        resolved = self.resolved_regexes.get(member.subscribed_topic_regex or "")
        return names | set(resolved.topics) if resolved is not None else names

    def regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    def owner_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    # ---- replay: the only way the state changes -------------------------------------------------------------------
    def replay(self, key: rec.ConsumerGroupKey, value: rec.ConsumerGroupValue | None) -> None:
        kind, sub = key.type, key.sub or ""
        if kind == rec.METADATA:
            self.exists = value is not None
            if isinstance(value, rec.GroupEpochValue):
                self.group_epoch = value.epoch
        elif kind == rec.PARTITION_METADATA:
            topics = value.topics if isinstance(value, rec.PartitionMetadataValue) else ()
            self.subscription_metadata = {t.name: (t.topic_id, t.partitions) for t in topics}
        elif kind == rec.MEMBER_METADATA:
            self._replay_member(sub, value)
        elif kind == rec.TARGET_METADATA:
            self.assignment_epoch = value.epoch if isinstance(value, rec.AssignmentEpochValue) else 0
        elif kind == rec.TARGET_MEMBER:
            if isinstance(value, rec.TargetMemberValue):
                self.target[sub] = dict(value.partitions)
            else:
                self.target.pop(sub, None)
        elif kind == rec.CURRENT_ASSIGNMENT:
            self._replay_assignment(sub, value)
        elif kind == rec.REGULAR_EXPRESSION:
            if isinstance(value, rec.RegexValue):
                self.resolved_regexes[sub] = value
            else:
                self.resolved_regexes.pop(sub, None)

    def _replay_member(self, member_id: str, value: rec.ConsumerGroupValue | None) -> None:
        if not isinstance(value, rec.MemberMetadataValue):
            old = self.members.pop(member_id, None)
            if old is not None:
                self._release(old)
            return
        old = self.members.get(member_id) or ConsumerMember(member_id)
        self.members[member_id] = replace(
            old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=value.subscribed_topic_names,
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor, classic=value.classic)

    def _replay_assignment(self, member_id: str, value: rec.ConsumerGroupValue | None) -> None:
        old = self.members.get(member_id)
        if old is None:
            return  # the member's metadata was tombstoned first (Kafka writes assignment tombstones before it)
        self._release(old)
        if isinstance(value, rec.CurrentAssignmentValue):
            new = replace(old, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                          state=_member_state(value.state), assigned=dict(value.assigned),
                          pending_revocation=dict(value.pending_revocation))
        else:
            new = replace(old, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE, assigned={},
                          pending_revocation={})
        self.members[member_id] = new
        self._own(new)

    def _release(self, member: ConsumerMember) -> None:
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, numbers in partitions.items():
                for number in numbers:
                    if self.partition_owners.get((topic_id, number)) == member.member_id:
                        del self.partition_owners[(topic_id, number)]
                        self.partition_epochs.pop((topic_id, number), None)

    def _own(self, member: ConsumerMember) -> None:
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, numbers in partitions.items():
                for number in numbers:
                    self.partition_owners[(topic_id, number)] = member.member_id
                    self.partition_epochs[(topic_id, number)] = member.member_epoch


def _member_state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN


# ---- reconciliation (Kafka's CurrentAssignmentBuilder) -------------------------------------------------------------
def owns_any(owned: Partitions | None, partitions: Partitions) -> bool:
    """Does the member (by what its heartbeat says it owns) still hold one of `partitions`? Unknown (None): yes."""
    if owned is None:
        return True
    return any(number in partitions.get(topic_id, frozenset()) for topic_id, numbers in owned.items()
               for number in numbers)


def reconcile(member: ConsumerMember, target_epoch: int, target: Partitions, group: ConsumerGroup,
              owned: Partitions | None) -> ConsumerMember:
    """The member's next current assignment on its way to `target`. Raises FencedMember for a member in an
    unknown state that still claims partitions."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(member, member.member_epoch, target_epoch, target, group, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member  # still revoking: no progress until it acknowledges
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, group, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, group, owned)
    if owned is None or owned:
        raise FencedMember("The consumer group member is in a unknown state. The member must abandon all its "
                           "partitions and rejoin.")
    return _next_assignment(member, target_epoch, target_epoch, target, group, owned)


class FencedMember(Exception):
    """FENCED_MEMBER_EPOCH, with Kafka's message."""


def _next_assignment(member: ConsumerMember, epoch_if_revoking: int, target_epoch: int, target: Partitions,
                     group: ConsumerGroup, owned: Partitions | None) -> ConsumerMember:
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    add: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept, dropped = current & wanted, current - wanted
        # A partition still owned by another member (it has not revoked it yet) cannot be given yet.
        free = frozenset(n for n in wanted - kept if group.owner_epoch(topic_id, n) == -1
                         or group.partition_owners.get((topic_id, n)) == member.member_id)
        unreleased = unreleased or free != wanted - kept
        for bucket, numbers in ((keep, kept), (revoke, dropped), (add, free)):
            if numbers:
                bucket[topic_id] = numbers
    if revoke and owns_any(owned, revoke):
        return replace(member.with_epoch(epoch_if_revoking), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned=keep, pending_revocation=revoke)
    merged = {t: keep.get(t, frozenset()) | add.get(t, frozenset()) for t in set(keep) | set(add)}
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member.with_epoch(target_epoch), state=state, assigned=merged, pending_revocation={})
