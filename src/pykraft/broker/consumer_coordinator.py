"""The KIP-848 consumer group protocol (ConsumerGroupHeartbeat), sans I/O: Kafka 4.x's GroupMetadataManager rules.

One `ConsumerCoordinator` holds the consumer groups of the `__consumer_offsets` partitions this broker leads, beside
the classic `GroupCoordinator`. A heartbeat goes through Kafka's three steps:

1. the member is created or updated; a changed subscription (names, or a regex whose resolution changed) or a
   change of the subscribed topics' metadata bumps the **group epoch**;
2. when the group epoch is ahead of the assignment epoch, the server-side assignor (consumer_assignors.py; the
   members' most wanted `serverAssignor`, else the first of `group.consumer.assignors`) computes a new **target
   assignment** for every member;
3. the member **reconciles** toward its target (consumer_group.reconcile): partitions the target takes away are
   first revoked (the member keeps its epoch until it stops reporting them), then it gets the new epoch and the
   partitions nobody else still owns.

Every change is a record, replayed into the group as it is made (consumer_group.py); the host writes the records
and answers once they are committed. Timers: a member whose heartbeats stop for `group.consumer.session.timeout.ms`
is fenced (removed, group epoch bumped); one that does not revoke within its rebalance timeout too. Regular
expressions (`SubscribedTopicRegex`, v1) are resolved over the metadata's topic names (full match), when a regex is
first seen and again when a member heartbeats with one at least `REGEX_REFRESH_MS` after the last resolution and
the metadata changed since (Kafka resolves them off-thread at the same moments; here the resolution is immediate),
over the topics the resolving heartbeat's principal may describe when the node has an authorizer (KAFKA-18813).
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pykraft.broker import consumer_assignors as assignors
from pykraft.broker.consumer_group import (
    LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerGroupState, ConsumerMember, FencedMember, MemberState,
    reconcile,
)
from pykraft.broker.consumer_migration import MigrationSteps
from pykraft.broker.group_migration import MigrationPolicy, downgrade_allowed
from pykraft.broker.group_state import Group
from pykraft.broker.consumer_requests import (
    HeartbeatError, HeartbeatRequest, HeartbeatResult, Record, check_epoch, validate,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as rec

__all__ = ["REGEX_REFRESH_MS", "ConsumerCoordinator", "ConsumerGroupConfig", "HeartbeatRequest", "HeartbeatResult",
           "Record", "TopicImage", "subscription_metadata"]
REGEX_REFRESH_MS = 10_000  # Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS


@dataclass(frozen=True, slots=True)
class TopicImage:
    """The metadata the coordinator reads: topic name -> (id, partition count), and the metadata offset."""

    topics: Mapping[str, tuple[uuid.UUID, int]]
    version: int = 0

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((name for name, (tid, _) in self.topics.items() if tid == topic_id), None)


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1  # group.consumer.max.size
    assignors: tuple[str, ...] = assignors.ASSIGNORS  # group.consumer.assignors, the first is the default
    enabled: bool = True  # "consumer" in group.coordinator.rebalance.protocols
    migration_policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL  # group.consumer.migration.policy


class ConsumerCoordinator(MigrationSteps):
    def __init__(self, config: ConsumerGroupConfig, new_member_id: Callable[[], str] | None = None) -> None:
        self.config = config
        self.groups: dict[str, ConsumerGroup] = {}
        self.session_deadlines: dict[tuple[str, str], int] = {}
        self.rebalance_deadlines: dict[tuple[str, str], tuple[int, int]] = {}  # -> (deadline, member epoch)
        # Classic members (consumer_classic.py): told to rejoin / answered their JoinGroup, by then they must act.
        self.join_deadlines: dict[tuple[str, str], int] = {}
        self.sync_deadlines: dict[tuple[str, str], int] = {}
        self.downgraded: list[tuple[Group, bool]] = []  # classic groups for the host, rebalance or not
        self._new_member_id = new_member_id or (lambda: str(uuid.uuid4()))
        self._pending: list[Record] = []
        self.orphan_offsets: dict[str, dict[tuple[str, int], Any]] = {}  # while loading: see group_host

    # ---- records ----------------------------------------------------------------------------------------------
    def replay(self, key: rec.ConsumerGroupKey, value: rec.ConsumerGroupValue | None) -> None:
        """Apply one record (written now, or read back while loading)."""
        group = self.groups.get(key.group)
        if group is None:
            if value is None:
                return
            group = self.groups[key.group] = ConsumerGroup(key.group)
        group.replay(key, value)
        if key.type == rec.METADATA and value is None:
            del self.groups[key.group]

    def _emit(self, key: rec.ConsumerGroupKey, value: rec.ConsumerGroupValue | None) -> None:
        self._pending.append((key, value))
        self.replay(key, value)

    def _take(self) -> tuple[Record, ...]:
        taken, self._pending = tuple(self._pending), []
        return taken

    # ---- ConsumerGroupHeartbeat -------------------------------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest, image: TopicImage, now_ms: int) -> HeartbeatResult:
        try:
            validate(request, self.config.assignors)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request, now_ms)
            return self._heartbeat(request, image, now_ms)
        except HeartbeatError as exc:
            return HeartbeatResult(exc.error, exc.message, records=self._take())
        except FencedMember as exc:
            return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH, str(exc), records=self._take())

    def _group_for(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id)  # registered by its first record's replay
        return group

    def _heartbeat(self, r: HeartbeatRequest, image: TopicImage, now_ms: int) -> HeartbeatResult:
        group = self._group_for(r.group_id, create=r.member_epoch == 0)
        member_id = r.member_id or self._new_member_id()
        if len(group.members) >= self.config.max_size and member_id not in group.members \
                and group.static_member(r.instance_id) is None:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of {self.config.max_size} "
                                 f"members.")
        member = self._member_for(group, member_id, r)
        updated = replace(
            member, client_id=r.client_id, client_host=r.client_host,
            instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
            rack_id=r.rack_id if r.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=r.rebalance_timeout_ms if r.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor=r.server_assignor if r.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(tuple(r.subscribed_topic_names) if r.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=(r.subscribed_topic_regex or None if r.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex))
        bump = False
        if updated.metadata_value() != member.metadata_value() or member_id not in group.members:
            bump = updated.subscribed_topic_names != member.subscribed_topic_names or member_id not in group.members
            self._emit(rec.ConsumerGroupKey(rec.MEMBER_METADATA, group.group_id, member_id), updated.metadata_value())
        group = self.groups[group.group_id]
        bump = self._update_regexes(group, member, updated, image, now_ms, r.topic_visible) or bump
        self._maybe_bump(group, image, bump)
        if group.group_epoch > group.assignment_epoch:
            self._update_target(group)
        current = group.members[member_id]
        reconciled = reconcile(current, group.assignment_epoch, group.target.get(member_id, {}), group, r.owned)
        self._record_assignment(group, current, reconciled, now_ms)
        self.session_deadlines[(group.group_id, member_id)] = now_ms + self.config.session_timeout_ms
        # A full request (a join, or a member resending everything after an error or a timeout) gets the
        # whole assignment again; otherwise only a changed one is sent.
        subscribed = r.subscribed_topic_names is not None or r.subscribed_topic_regex is not None
        full = r.member_epoch == 0 or (r.rebalance_timeout_ms != -1 and subscribed and r.owned is not None)
        changed = reconciled.assigned != member.assigned or member_id != r.member_id
        return HeartbeatResult(ErrorCode.NONE, None, member_id, reconciled.member_epoch,
                               self.config.heartbeat_interval_ms,
                               dict(reconciled.assigned) if full or changed else None, self._take())

    def _member_for(self, group: ConsumerGroup, member_id: str, r: HeartbeatRequest) -> ConsumerMember:
        if r.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if r.member_epoch != 0:
                    raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group {group.group_id}.")
                return ConsumerMember(member_id)
            check_epoch(member, r.member_epoch, r.owned)
            return member
        static = group.static_member(r.instance_id)
        if r.member_epoch == 0:
            if static is None:
                return group.members.get(member_id) or ConsumerMember(member_id)
            if static.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id {r.instance_id} cannot join the "
                                     f"group because the instance id is owned by {static.member_id} member.")
            return self._replace_static(group, static, member_id)
        if static is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
        if static.member_id != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {r.instance_id} was fenced by member "
                                 f"{static.member_id}.")
        check_epoch(static, r.member_epoch, r.owned)
        return static

    def _replace_static(self, group: ConsumerGroup, old: ConsumerMember, member_id: str) -> ConsumerMember:
        """A static member back under its instance id: a new member id takes over the old one's target and
        partitions (Kafka's replaceMember), starting again from epoch 0."""
        target = group.target.get(old.member_id, {})
        new = replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        self._remove_records(group, old.member_id)
        self._emit(rec.ConsumerGroupKey(rec.MEMBER_METADATA, group.group_id, member_id), new.metadata_value())
        self._emit(rec.ConsumerGroupKey(rec.TARGET_MEMBER, group.group_id, member_id), rec.TargetMemberValue(target))
        self._emit(rec.ConsumerGroupKey(rec.CURRENT_ASSIGNMENT, group.group_id, member_id), new.assignment_value())
        self._cancel_timers(group.group_id, old.member_id)
        return self.groups[group.group_id].members[member_id]

    def _remove_records(self, group: ConsumerGroup, member_id: str) -> None:
        for kind in (rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA):  # Kafka's order
            self._emit(rec.ConsumerGroupKey(kind, group.group_id, member_id), None)

    # ---- regular expressions, subscription metadata, group epoch --------------------------------------------
    def _update_regexes(self, group: ConsumerGroup, old: ConsumerMember, new: ConsumerMember, image: TopicImage,
                        now_ms: int, visible: Callable[[str], bool] | None = None) -> bool:
        """Tombstone a regex nobody uses any more, resolve a new one, refresh stale ones (over the topics `visible`
        to the heartbeat's principal, as Kafka's coordinator authorizes them). True: the group's subscribed topics
        changed."""
        changed = False
        if old.subscribed_topic_regex and old.subscribed_topic_regex not in group.regexes():
            self._emit(rec.ConsumerGroupKey(rec.REGULAR_EXPRESSION, group.group_id, old.subscribed_topic_regex), None)
            changed = True
        regex = new.subscribed_topic_regex
        if not regex:
            return changed
        stale = now_ms - group.regex_refresh_ms >= REGEX_REFRESH_MS and image.version > group.regex_version
        if regex in group.resolved_regexes and not stale:
            return changed or old.subscribed_topic_regex != regex
        for each in sorted(group.regexes()):
            topics = tuple(sorted(n for n in image.topics if re.fullmatch(each, n) and (visible is None or visible(n))))
            known = group.resolved_regexes.get(each)
            if known is None or known.topics != topics:
                self._emit(rec.ConsumerGroupKey(rec.REGULAR_EXPRESSION, group.group_id, each),
                           rec.RegexValue(topics, image.version, now_ms))
                changed = True
        group.regex_refresh_ms, group.regex_version = now_ms, image.version
        return changed or old.subscribed_topic_regex != regex

    def _maybe_bump(self, group: ConsumerGroup, image: TopicImage, bump: bool) -> None:
        if bump or group.metadata_refresh:
            metadata = subscription_metadata(group, image)
            if metadata != group.subscription_metadata:
                self._emit(rec.ConsumerGroupKey(rec.PARTITION_METADATA, group.group_id), rec.PartitionMetadataValue(
                    tuple(rec.TopicMetadataValue(tid, name, count) for name, (tid, count) in sorted(metadata.items()))))
                bump = True
            group.metadata_refresh = False
        if bump:
            self._emit(rec.ConsumerGroupKey(rec.METADATA, group.group_id), rec.GroupEpochValue(group.group_epoch + 1))

    def _update_target(self, group: ConsumerGroup) -> None:
        topics = {tid: count for tid, count in group.subscription_metadata.values()}
        specs = {}
        for member_id, member in group.members.items():
            subscribed = frozenset(group.subscription_metadata[n][0] for n in group.member_topics(member)
                                   if n in group.subscription_metadata)
            specs[member_id] = assignors.MemberSpec(subscribed, group.target.get(member_id, {}))
        new_target = assignors.assign(self.preferred_assignor(group), specs, topics)
        for member_id in sorted(new_target):
            if group.target.get(member_id) != new_target[member_id] or member_id not in group.target:
                self._emit(rec.ConsumerGroupKey(rec.TARGET_MEMBER, group.group_id, member_id),
                           rec.TargetMemberValue(new_target[member_id]))
        self._emit(rec.ConsumerGroupKey(rec.TARGET_METADATA, group.group_id), rec.AssignmentEpochValue(group.group_epoch))

    def preferred_assignor(self, group: ConsumerGroup) -> str:
        """The server assignor most members ask for (ties: the configured order), else the default."""
        wanted = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        if not wanted:
            return self.config.assignors[0]
        return max(wanted, key=lambda name: (wanted[name], -self.config.assignors.index(name)))

    def _record_assignment(self, group: ConsumerGroup, before: ConsumerMember, after: ConsumerMember,
                           now_ms: int) -> None:
        if after != before:
            self._emit(rec.ConsumerGroupKey(rec.CURRENT_ASSIGNMENT, group.group_id, after.member_id),
                       after.assignment_value())
        key = (group.group_id, after.member_id)
        if after.state is MemberState.UNREVOKED_PARTITIONS and not after.uses_classic:
            if self.rebalance_deadlines.get(key, (0, None))[1] != after.member_epoch:
                self.rebalance_deadlines[key] = (now_ms + max(after.rebalance_timeout_ms, 0), after.member_epoch)
        else:
            self.rebalance_deadlines.pop(key, None)

    # ---- leaving and fencing -----------------------------------------------------------------------------------
    def _leave(self, r: HeartbeatRequest, now_ms: int) -> HeartbeatResult:
        group = self._group_for(r.group_id, create=False)
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {r.member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(r.instance_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
            if member.member_id != r.member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                     f"Static member {r.member_id} with instance id {r.instance_id} was fenced by "
                                     f"member {member.member_id}.")
            if r.member_epoch == STATIC_LEAVE_EPOCH:
                # It keeps its partitions (nobody else gets them) until it comes back or its session expires.
                left = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
                self._emit(rec.ConsumerGroupKey(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                           left.assignment_value())
                self.rebalance_deadlines.pop((group.group_id, member.member_id), None)
                return HeartbeatResult(ErrorCode.NONE, None, member.member_id, STATIC_LEAVE_EPOCH,
                                       records=self._take())
        self.fence(group, member.member_id, now_ms)
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, r.member_epoch, records=self._take())

    def fence(self, group: ConsumerGroup, member_id: str, now_ms: int = 0) -> None:
        """Remove a member (left, or its session or rebalance timeout expired) and bump the group epoch."""
        if downgrade_allowed(group, {member_id}, self.config.migration_policy):
            self._downgrade(group, {member_id}, now_ms)
            return
        old = group.members.get(member_id)
        self._remove_records(group, member_id)
        self._cancel_timers(group.group_id, member_id)
        group = self.groups[group.group_id]
        regex = None if old is None else old.subscribed_topic_regex
        if regex and regex not in group.regexes():
            self._emit(rec.ConsumerGroupKey(rec.REGULAR_EXPRESSION, group.group_id, regex), None)
        self.bump_without_members(group)

    def bump_without_members(self, group: ConsumerGroup) -> None:
        """Members left: the subscription metadata without them, and a new group epoch."""
        # Without the member, the subscribed topics are a subset of those known: the known metadata serves as
        # the image (a pending refresh from a real metadata change stays pending for the next heartbeat).
        pending, group.metadata_refresh = group.metadata_refresh, True
        self._maybe_bump(group, TopicImage(dict(group.subscription_metadata)), True)
        group.metadata_refresh = pending

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        for timers in (self.session_deadlines, self.rebalance_deadlines, self.join_deadlines, self.sync_deadlines):
            timers.pop((group_id, member_id), None)

    # ---- time -------------------------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> tuple[Record, ...]:
        """Fence members whose session or rebalance timeout expired; the records to write."""
        for (group_id, member_id), deadline in sorted(self.session_deadlines.items()):
            group = self.groups.get(group_id)
            if deadline <= now_ms and group is not None and member_id in group.members:
                self.fence(group, member_id, now_ms)
        for (group_id, member_id), (deadline, epoch) in sorted(self.rebalance_deadlines.items()):
            group = self.groups.get(group_id)
            member = None if group is None else group.members.get(member_id)
            if deadline <= now_ms and member is not None and member.member_epoch == epoch \
                    and member.state is MemberState.UNREVOKED_PARTITIONS:
                self.fence(group, member_id, now_ms)  # type: ignore[arg-type]
        for timers in (self.join_deadlines, self.sync_deadlines):
            for (group_id, member_id), deadline in sorted(timers.items()):
                group = self.groups.get(group_id)
                if deadline <= now_ms and group is not None and member_id in group.members:
                    self.fence(group, member_id, now_ms)
        return self._take()

    def next_deadline(self) -> int | None:
        times = list(self.session_deadlines.values()) + [d for d, _ in self.rebalance_deadlines.values()]
        times += [*self.join_deadlines.values(), *self.sync_deadlines.values()]
        return min(times) if times else None

    def loaded(self, now_ms: int) -> None:
        """After a load: every member gets a fresh session, a revoking member a fresh rebalance timeout (Kafka
        schedules both when it loads a group)."""
        for group in self.groups.values():
            for member in group.members.values():
                session = member.classic.session_timeout_ms if member.classic else self.config.session_timeout_ms
                self.session_deadlines[(group.group_id, member.member_id)] = now_ms + session
                if member.state is MemberState.UNREVOKED_PARTITIONS and not member.uses_classic:
                    self.rebalance_deadlines[(group.group_id, member.member_id)] = (
                        now_ms + max(member.rebalance_timeout_ms, 0), member.member_epoch)

    # ---- metadata ---------------------------------------------------------------------------------------------
    def metadata_changed(self, image: TopicImage) -> None:
        """New topics, partitions or deletions: a group whose subscribed topics look different recomputes its
        subscription metadata (and bumps its epoch) at its next heartbeat, as Kafka's onNewMetadataImage."""
        for group in self.groups.values():
            if group.members and subscription_metadata(group, image) != group.subscription_metadata:
                group.metadata_refresh = True

    # ---- offsets and administration ---------------------------------------------------------------------------
    def check_commit(self, group_id: str, member_id: str, epoch: int, api_version: int) -> ErrorCode:
        group = self.groups[group_id]
        if epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if api_version < 9 and not member.uses_classic:
            return ErrorCode.UNSUPPORTED_VERSION
        return _epoch_check(member, epoch)

    def check_fetch(self, group_id: str, member_id: str | None, epoch: int) -> ErrorCode:
        group = self.groups[group_id]
        if member_id is None and epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return _epoch_check(member, epoch)

    def delete_group(self, group_id: str) -> tuple[ErrorCode, tuple[Record, ...]]:
        """DeleteGroups: only an empty group; the tombstones of every record it has (Kafka's order)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, ()
        if group.state() is not ConsumerGroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP, ()
        return ErrorCode.NONE, self.tombstone_group(group_id)

    def tombstone_group(self, group_id: str) -> tuple[Record, ...]:
        group = self.groups[group_id]
        for member_id in sorted(group.members):
            self._remove_records(group, member_id)
        for regex in sorted(group.resolved_regexes):
            self._emit(rec.ConsumerGroupKey(rec.REGULAR_EXPRESSION, group_id, regex), None)
        for kind in (rec.TARGET_METADATA, rec.PARTITION_METADATA, rec.METADATA):
            self._emit(rec.ConsumerGroupKey(kind, group_id), None)
        self.groups.pop(group_id, None)
        return self._take()

    def unload(self) -> None:
        self.groups.clear()
        for timers in (self.session_deadlines, self.rebalance_deadlines, self.join_deadlines, self.sync_deadlines):
            timers.clear()
        self.downgraded.clear()


def _epoch_check(member: ConsumerMember, epoch: int) -> ErrorCode:
    """Kafka's validateMemberEpoch: a classic member's generation is its member epoch."""
    if epoch == member.member_epoch:
        return ErrorCode.NONE
    return ErrorCode.ILLEGAL_GENERATION if member.uses_classic else ErrorCode.STALE_MEMBER_EPOCH


def subscription_metadata(group: ConsumerGroup, image: TopicImage) -> dict[str, tuple[uuid.UUID, int]]:
    """The subscribed topics that exist, with their ids and partition counts."""
    return {name: image.topics[name] for name in sorted(group.subscribed_topic_names()) if name in image.topics}
