"""Classic members of a KIP-848 consumer group (Kafka 4.x's classicGroupJoinToConsumerGroup,
classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup), pure.

After an online upgrade (group_migration.py), or when a classic consumer joins a consumer group, the member keeps
speaking JoinGroup/SyncGroup/Heartbeat/LeaveGroup while the coordinator assigns its partitions:

- JoinGroup updates the member from its subscription (topics, owned partitions, rack) and its ClassicMemberMetadata,
  bumps the group epoch when its subscription changed, computes the target, reconciles the member (an eager member
  owns nothing when it rejoins, so what the target takes away is revoked at once) and answers at once: generation
  = the member epoch, no leader (every classic member is a follower), protocol = its first protocol.
- SyncGroup answers the member's current assignment in the consumer protocol's bytes.
- Heartbeat answers REBALANCE_IN_PROGRESS when the member should rejoin: the group epoch moved past its epoch, it
  has partitions to revoke, or the partitions it waited for are free now.
- Timers, as Kafka's: the classic session timeout; a join timeout (the rebalance timeout) from the moment it is
  told to rejoin; a sync timeout (the rebalance timeout) from its JoinGroup answer. Expiry fences the member.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pykraft.broker.consumer_group import ConsumerGroup, ConsumerMember, MemberState, reconcile
from pykraft.broker.group_coordinator import JoinRequest
from pykraft.broker.group_migration import CONSUMER_PROTOCOL_TYPE, downgrade_replacing, to_ids, to_names
from pykraft.broker.group_state import JoinReply, SyncReply
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as rec
from pykraft.records.consumer_protocol import encode_assignment, read_subscription, version_of

if TYPE_CHECKING:
    from pykraft.broker.consumer_coordinator import ConsumerCoordinator, Record, TopicImage


class ClassicError(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


def supports(group: ConsumerGroup, protocol_type: str, names: set[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the "consumer" type, and a name every classic member has."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    for member in group.members.values():
        if member.classic is not None:
            names = names & {name for name, _ in member.classic.protocols}
    return bool(names)


def known_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """Kafka's validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
    else:
        member = group.static_member(instance_id)
        if member is not None and member.member_id != member_id:
            raise ClassicError(ErrorCode.FENCED_INSTANCE_ID)
    if member is None or not member.uses_classic:
        raise ClassicError(ErrorCode.UNKNOWN_MEMBER_ID)
    return member


# ---- JoinGroup ---------------------------------------------------------------------------------------------------
def join(coord: ConsumerCoordinator, group: ConsumerGroup, r: JoinRequest, image: TopicImage,
         now_ms: int) -> tuple[JoinReply, tuple[Record, ...]]:
    try:
        return _join(coord, group, r, image, now_ms), coord._take()
    except ClassicError as exc:
        coord._take()  # nothing was emitted before the checks
        return JoinReply(None, exc.error, member_id=r.member_id), ()


def _join(coord: ConsumerCoordinator, group: ConsumerGroup, r: JoinRequest, image: TopicImage,
          now_ms: int) -> JoinReply:
    member_id = r.member_id or coord._new_member_id()
    if len(group.members) >= coord.config.max_size and member_id not in group.members \
            and group.static_member(r.instance_id) is None:
        raise ClassicError(ErrorCode.GROUP_MAX_SIZE_REACHED)
    if not supports(group, r.protocol_type, {name for name, _ in r.protocols}):
        raise ClassicError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if r.require_known_member_id and not r.member_id and r.instance_id is None:
        return JoinReply(None, ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
    try:
        subscription = read_subscription(r.protocols[0][1])
    except ValueError:
        raise ClassicError(ErrorCode.UNKNOWN_SERVER_ERROR) from None  # Kafka: IllegalStateException
    # A static member replacing the last one on the consumer protocol turns the group classic (decided on the
    # group as it was, Kafka's validateOnlineDowngradeWithReplacedMember).
    replaced = group.static_member(r.instance_id) if r.instance_id is not None and not r.member_id else None
    downgrade = replaced is not None and downgrade_replacing(group, replaced.member_id, coord.config.migration_policy)
    member = _member_for(coord, group, member_id, r)
    group = coord.groups.get(group.group_id, group)
    updated = replace(member, instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
                      rack_id=subscription.rack if subscription.rack is not None else member.rack_id,
                      rebalance_timeout_ms=r.rebalance_timeout_ms, subscribed_topic_names=subscription.topics,
                      client_id=r.client_id, client_host=r.client_host,
                      classic=rec.ClassicProtocols(r.session_timeout_ms, r.protocols))
    new = member.member_id not in group.members
    bump = new or updated.subscribed_topic_names != member.subscribed_topic_names
    if new or updated.metadata_value() != member.metadata_value():
        coord._emit(rec.ConsumerGroupKey(rec.MEMBER_METADATA, group.group_id, member.member_id),
                    updated.metadata_value())
    group = coord.groups[group.group_id]
    coord._maybe_bump(group, image, bump)
    if group.group_epoch > group.assignment_epoch:
        coord._update_target(group)
    current = group.members[member.member_id]
    owned = to_ids(subscription.owned, image.topics)
    reconciled = reconcile(current, group.assignment_epoch, group.target.get(member.member_id, {}), group, owned)
    if reconciled != current:
        coord._emit(rec.ConsumerGroupKey(rec.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                    reconciled.assignment_value())
    key = (group.group_id, member.member_id)
    coord.join_deadlines.pop(key, None)
    if downgrade:
        coord._downgrade(coord.groups[group.group_id], set(), now_ms, rebalance=bump)
    else:
        coord.session_deadlines[key] = now_ms + r.session_timeout_ms
        coord.sync_deadlines[key] = now_ms + r.rebalance_timeout_ms
    return JoinReply(None, ErrorCode.NONE, member.member_id, reconciled.member_epoch, CONSUMER_PROTOCOL_TYPE,
                     r.protocols[0][0], "", ())


def _member_for(coord: ConsumerCoordinator, group: ConsumerGroup, member_id: str, r: JoinRequest) -> ConsumerMember:
    """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic member: a static member
    joining without its member id replaces the one holding its instance id (whatever protocol that one spoke)."""
    if r.instance_id is None:
        return group.members.get(member_id) or ConsumerMember(member_id)
    static = group.static_member(r.instance_id)
    if static is None:
        return group.members.get(member_id) or ConsumerMember(member_id)
    if r.member_id:
        if static.member_id != r.member_id:
            raise ClassicError(ErrorCode.FENCED_INSTANCE_ID)
        return static
    return coord._replace_static(group, static, member_id)


# ---- SyncGroup, Heartbeat ---------------------------------------------------------------------------------------
def sync(coord: ConsumerCoordinator, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int,
         protocol_type: str | None, protocol_name: str | None, image: TopicImage, now_ms: int) -> SyncReply:
    try:
        member = known_member(group, member_id, instance_id)
        if member.member_epoch != generation:
            raise ClassicError(ErrorCode.ILLEGAL_GENERATION)
        own_name = member.classic.protocols[0][0]  # type: ignore[union-attr]
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                (protocol_name is not None and protocol_name != own_name):
            raise ClassicError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            _schedule_join(coord, group, member, now_ms)
            raise ClassicError(ErrorCode.REBALANCE_IN_PROGRESS)
    except ClassicError as exc:
        return SyncReply(None, exc.error)
    key = (group.group_id, member.member_id)
    coord.sync_deadlines.pop(key, None)
    coord.session_deadlines[key] = now_ms + member.classic.session_timeout_ms  # type: ignore[union-attr]
    try:
        version = version_of(member.classic.protocols[0][1])  # type: ignore[union-attr]
    except ValueError:
        version = 0
    assignment = encode_assignment(to_names(member.assigned, image.topics), version)
    return SyncReply(None, ErrorCode.NONE, protocol_type, protocol_name, assignment)


def heartbeat(coord: ConsumerCoordinator, group: ConsumerGroup, member_id: str, instance_id: str | None,
              generation: int, now_ms: int) -> ErrorCode:
    try:
        member = known_member(group, member_id, instance_id)
    except ClassicError as exc:
        return exc.error
    if member.member_epoch != generation:
        return ErrorCode.ILLEGAL_GENERATION
    coord.session_deadlines[(group.group_id, member.member_id)] = \
        now_ms + member.classic.session_timeout_ms  # type: ignore[union-attr]
    if member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS or (
            member.state is MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased(group, member)):
        _schedule_join(coord, group, member, now_ms)
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's waitingOnUnreleasedPartition: a partition of its target is still owned by another member."""
    for topic_id, numbers in group.target.get(member.member_id, {}).items():
        held = member.assigned.get(topic_id, frozenset())
        if any(n not in held and group.owner_epoch(topic_id, n) != -1 for n in numbers):
            return True
    return False


def _schedule_join(coord: ConsumerCoordinator, group: ConsumerGroup, member: ConsumerMember, now_ms: int) -> None:
    coord.join_deadlines.setdefault((group.group_id, member.member_id), now_ms + max(member.rebalance_timeout_ms, 0))


# ---- LeaveGroup --------------------------------------------------------------------------------------------------
def leave(coord: ConsumerCoordinator, group: ConsumerGroup,
          identities: list[tuple[str, str | None]]) -> tuple[list[ErrorCode], tuple[Record, ...]]:
    """Per member: NONE, UNKNOWN_MEMBER_ID (unknown, or not a classic member) or FENCED_INSTANCE_ID; the removals
    bump the group epoch once (Kafka's classicGroupLeaveToConsumerGroup)."""
    errors, removed = [], False
    for member_id, instance_id in identities:
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member_id and member.member_id != member_id:
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
                continue
        if member is None or not member.uses_classic:
            errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
            continue
        coord._remove_records(group, member.member_id)
        coord._cancel_timers(group.group_id, member.member_id)
        group = coord.groups[group.group_id]
        errors.append(ErrorCode.NONE)
        removed = True
    if removed:
        coord.bump_without_members(group)
    return errors, coord._take()
