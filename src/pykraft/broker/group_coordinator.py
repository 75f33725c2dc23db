"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit checks), sans I/O.

One `GroupCoordinator` holds the groups of the `__consumer_offsets` partitions this broker leads. Every input takes
the time (`now_ms`) and returns what to answer: replies for requests answered now or parked earlier (by token),
and `StoreGroup` when a generation's assignment must be written before SyncGroup is answered. `poll(now_ms)`
expires sessions, ends join phases (all members rejoined, the rebalance timeout, or the initial delay) and sync
phases; `next_deadline()` says when to call it again. The rules follow Kafka's GroupCoordinator for classic
groups. Static membership (KIP-345): a JoinGroup without a member id but with a known group.instance.id takes
over that member (a new member id, same assignment, no rebalance when the group is Stable and the protocols are
unchanged); requests that name the instance with its old member id get FENCED_INSTANCE_ID. Left out:
group.max.size.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Hashable

from pykraft.protocol.errors import ErrorCode
from pykraft.records.group_records import subscribed_topics

from .group_state import Group, GroupState, JoinReply, Member, OffsetEntry, StoreGroup, SyncReply
from .offset_expiry import Expired, expired_offsets

Reply = JoinReply | SyncReply | StoreGroup


@dataclass(frozen=True, slots=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    offsets_retention_ms: int = 10080 * 60_000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool  # JoinGroup v4+: a new member first gets MEMBER_ID_REQUIRED


class GroupCoordinator:
    def __init__(self, config: GroupConfig, new_member_id: Callable[[str], str] | None = None) -> None:
        self.config = config
        self.groups: dict[str, Group] = {}
        self._new_member_id = new_member_id or (lambda client_id: f"{client_id}-{uuid.uuid4()}")

    # ---- JoinGroup ---------------------------------------------------------------------------------------------
    def join(self, request: JoinRequest, token: Hashable, now_ms: int) -> list[Reply]:
        error = self._join_error(request)
        if error is not ErrorCode.NONE:
            return [JoinReply(token, error, member_id=request.member_id)]
        group = self.groups.setdefault(request.group_id, Group(request.group_id))
        if not group.accepts(request.protocol_type, request.protocols):
            return [JoinReply(token, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id)]
        static = self._static_member(group, request.instance_id)
        if static is not None and request.member_id and static.member_id != request.member_id:
            return [JoinReply(token, ErrorCode.FENCED_INSTANCE_ID, member_id=request.member_id)]
        if not request.member_id and static is not None:
            return self._replace_static_member(group, static, request, token, now_ms)
        if not request.member_id:
            member_id = self._new_member_id(request.client_id)
            if request.require_known_member_id and request.instance_id is None:
                group.pending_members.add(member_id)
                return [JoinReply(token, ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)]
            return self._add_member(group, member_id, request, token, now_ms)
        if request.member_id in group.pending_members:
            group.pending_members.discard(request.member_id)
            return self._add_member(group, request.member_id, request, token, now_ms)
        member = group.members.get(request.member_id)
        if member is None:
            return [JoinReply(token, ErrorCode.UNKNOWN_MEMBER_ID, member_id=request.member_id)]
        return self._rejoin(group, member, request, token, now_ms)

    def _join_error(self, request: JoinRequest) -> ErrorCode:
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID
        if not self.config.min_session_timeout_ms <= request.session_timeout_ms <= self.config.max_session_timeout_ms:
            return ErrorCode.INVALID_SESSION_TIMEOUT
        group = self.groups.get(request.group_id)
        if group is not None and group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    def _add_member(self, group: Group, member_id: str, request: JoinRequest, token: Hashable,
                    now_ms: int) -> list[Reply]:
        group.members[member_id] = Member(
            member_id, request.instance_id, request.client_id, request.client_host, request.session_timeout_ms,
            request.rebalance_timeout_ms, request.protocol_type, request.protocols, join_token=token,
            session_deadline_ms=now_ms + request.session_timeout_ms)
        if group.protocol_type is None:
            group.protocol_type = request.protocol_type
        if group.state is not GroupState.PREPARING_REBALANCE:
            return self._prepare_rebalance(group, now_ms)
        return self._maybe_complete_join(group, now_ms)

    @staticmethod
    def _static_member(group: Group, instance_id: str | None) -> Member | None:
        if instance_id is None:
            return None
        return next((m for m in group.members.values() if m.instance_id == instance_id), None)

    def _replace_static_member(self, group: Group, old: Member, request: JoinRequest, token: Hashable,
                               now_ms: int) -> list[Reply]:
        """A restarted static member: it takes the old member's place under a new id; the old id is fenced."""
        replies: list[Reply] = []
        if old.join_token is not None:
            replies.append(JoinReply(old.join_token, ErrorCode.FENCED_INSTANCE_ID, old.member_id))
        if old.sync_token is not None:
            replies.append(SyncReply(old.sync_token, ErrorCode.FENCED_INSTANCE_ID))
        old.join_token = old.sync_token = None
        del group.members[old.member_id]
        new_id = self._new_member_id(request.client_id)
        if group.leader == old.member_id:
            group.leader = new_id
        old.member_id = new_id
        group.members[new_id] = old
        unchanged = old.protocols == request.protocols
        if group.state is GroupState.STABLE and unchanged:
            old.session_deadline_ms = now_ms + old.session_timeout_ms
            return replies + [self._join_reply(group, old, token), StoreGroup(group.group_id, group.generation)]
        return replies + self._rejoin(group, old, request, token, now_ms)

    def fenced(self, group_id: str, member_id: str, instance_id: str | None) -> bool:
        """A request naming a static instance with a member id that is no longer the instance's."""
        group = self.groups.get(group_id)
        static = None if group is None else self._static_member(group, instance_id)
        return static is not None and static.member_id != member_id

    def _rejoin(self, group: Group, member: Member, request: JoinRequest, token: Hashable,
                now_ms: int) -> list[Reply]:
        changed = member.protocols != request.protocols
        member.protocols = request.protocols
        member.session_timeout_ms, member.rebalance_timeout_ms = request.session_timeout_ms, request.rebalance_timeout_ms
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            # A second JoinGroup from one member (the client retried): the older request is not left hanging.
            earlier = [] if member.join_token is None else [
                JoinReply(member.join_token, ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)]
            member.join_token = token
            return earlier + self._maybe_complete_join(group, now_ms)
        if not changed and not (group.state is GroupState.STABLE and group.is_leader(member.member_id)):
            # Nothing new (a join response that got lost): the current generation again.
            return [self._join_reply(group, member, token)]
        member.join_token = token
        return self._prepare_rebalance(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> list[Reply]:
        replies = self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        group.initial_join = group.state is GroupState.EMPTY
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        delay = min(self.config.initial_rebalance_delay_ms, timeout) if group.initial_join else timeout
        group.rebalance_deadline_ms = now_ms + delay
        group.transition(GroupState.PREPARING_REBALANCE, now_ms)
        return replies + self._maybe_complete_join(group, now_ms)

    def _maybe_complete_join(self, group: Group, now_ms: int) -> list[Reply]:
        deadline = group.rebalance_deadline_ms
        expired = deadline is not None and now_ms >= deadline
        if not expired and (group.initial_join or not group.all_joined()):
            return []
        for member_id in [m.member_id for m in group.members.values() if m.join_token is None]:
            del group.members[member_id]  # did not rejoin within the rebalance timeout
        group.generation += 1
        if not group.members:
            group.protocol_name = group.leader = None
            group.rebalance_deadline_ms = None
            group.transition(GroupState.EMPTY, now_ms)
            return [StoreGroup(group.group_id, group.generation)]
        group.protocol_name = group.select_protocol()
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        timeout = max(m.rebalance_timeout_ms for m in group.members.values())
        group.rebalance_deadline_ms = now_ms + timeout
        group.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        replies: list[Reply] = []
        for member in group.members.values():
            token, member.join_token = member.join_token, None
            member.session_deadline_ms = now_ms + member.session_timeout_ms
            replies.append(self._join_reply(group, member, token))
        return replies

    def _join_reply(self, group: Group, member: Member, token: Hashable) -> JoinReply:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if group.is_leader(member.member_id):
            members = tuple((m.member_id, m.instance_id, m.metadata_for(group.protocol_name))
                            for m in group.members.values())
        return JoinReply(token, ErrorCode.NONE, member.member_id, group.generation, group.protocol_type,
                         group.protocol_name, group.leader or "", members)

    # ---- SyncGroup ---------------------------------------------------------------------------------------------
    def sync(self, group_id: str, member_id: str, generation: int, assignments: dict[str, bytes],
             token: Hashable, now_ms: int) -> list[Reply]:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None or group.state in (GroupState.EMPTY, GroupState.DEAD):
            return [SyncReply(token, ErrorCode.UNKNOWN_MEMBER_ID)]
        if generation != group.generation:
            return [SyncReply(token, ErrorCode.ILLEGAL_GENERATION)]
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            return [SyncReply(token, ErrorCode.REBALANCE_IN_PROGRESS)]
        if group.state is GroupState.STABLE:
            return [self._sync_reply(group, member.assignment, token)]
        member.sync_token = token
        if not group.is_leader(member_id):
            return []
        for each in group.members.values():
            each.assignment = assignments.get(each.member_id, b"")
        group.rebalance_deadline_ms = None  # the write's outcome decides now
        return [StoreGroup(group_id, group.generation)]

    def group_stored(self, group_id: str, generation: int, error: ErrorCode, now_ms: int) -> list[Reply]:
        """The outcome of a `StoreGroup` write: Stable and the assignments out, or a new rebalance."""
        group = self.groups.get(group_id)
        if group is None or group.generation != generation or group.state is not GroupState.COMPLETING_REBALANCE:
            return []
        if error is not ErrorCode.NONE:
            for member in group.members.values():
                member.assignment = b""
            replies = self._fail_pending_syncs(group, error)
            return replies + self._prepare_rebalance(group, now_ms)
        group.transition(GroupState.STABLE, now_ms)
        replies = []
        for member in group.members.values():
            if member.sync_token is not None:
                token, member.sync_token = member.sync_token, None
                replies.append(self._sync_reply(group, member.assignment, token))
        return replies

    def _sync_reply(self, group: Group, assignment: bytes, token: Hashable) -> SyncReply:
        return SyncReply(token, ErrorCode.NONE, group.protocol_type, group.protocol_name, assignment)

    def _fail_pending_syncs(self, group: Group, error: ErrorCode) -> list[Reply]:
        replies: list[Reply] = []
        for member in group.members.values():
            if member.sync_token is not None:
                replies.append(SyncReply(member.sync_token, error))
                member.sync_token = None
        return replies

    # ---- Heartbeat, LeaveGroup ---------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, generation: int, now_ms: int) -> ErrorCode:
        group, member, error = self._known_member(group_id, member_id)
        if member is None or group is None:  # (a member is found only in its group)
            return error
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, members: list[tuple[str, str | None]],
              now_ms: int) -> tuple[list[ErrorCode], list[Reply]]:
        """Per (member id, group.instance.id): NONE, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID (a static member
        may leave by its instance id alone); the replies the removals caused (a rebalance)."""
        group = self.groups.get(group_id)
        errors, removed = [], False
        for member_id, instance_id in members:
            static = None if group is None else self._static_member(group, instance_id)
            if static is not None and member_id and static.member_id != member_id:
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
                continue
            member_id = static.member_id if static is not None else member_id
            if group is None or member_id not in group.members:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            del group.members[member_id]
            errors.append(ErrorCode.NONE)
            removed = True
        return errors, (self._after_removal(group, now_ms) if removed and group is not None else [])

    def _after_removal(self, group: Group, now_ms: int) -> list[Reply]:
        if group.state is GroupState.PREPARING_REBALANCE:
            return self._maybe_complete_join(group, now_ms)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            if group.leader not in group.members:
                group.leader = None
            return self._prepare_rebalance(group, now_ms)
        return []

    def _known_member(self, group_id: str, member_id: str) -> tuple[Group | None, Member | None, ErrorCode]:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return group, None, ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members.get(member_id)
        return group, member, ErrorCode.NONE if member is not None else ErrorCode.UNKNOWN_MEMBER_ID

    # ---- offsets -----------------------------------------------------------------------------------------------
    def check_commit(self, group_id: str, member_id: str, generation: int, now_ms: int) -> ErrorCode:
        """May this OffsetCommit be written? Kafka's order of checks (ClassicGroup.validateOffsetCommit): a commit
        without a generation (a consumer that assigns its partitions itself) only to an empty or new group."""
        group = self.groups.get(group_id)
        if group is None or (generation < 0 and group.state is GroupState.EMPTY):
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        return ErrorCode.NONE

    def offsets_committed(self, group_id: str, offsets: dict[tuple[str, int], OffsetEntry]) -> None:
        group = self.groups.setdefault(group_id, Group(group_id))
        group.offsets.update(offsets)

    def load_group(self, group: Group, now_ms: int) -> None:
        """A group read back from its partition (the host rebuilt it from GroupMetadataValue and offsets): members
        come back Stable with a fresh session, as Kafka loads them; a group without members is Empty."""
        for member in group.members.values():
            member.session_deadline_ms = now_ms + member.session_timeout_ms
        stored = group.state_timestamp_ms  # Kafka keeps the stored currentStateTimestamp: offsets expire from it
        group.transition(GroupState.STABLE if group.members else GroupState.EMPTY, now_ms)
        if stored >= 0:
            group.state_timestamp_ms = stored
        self.groups[group.group_id] = group

    def subscribed_topics(self, group_id: str) -> set[str]:
        """Topics the members of a non-empty "consumer" group subscribe to (their offsets may not be deleted)."""
        group = self.groups.get(group_id)
        if group is None or group.protocol_type != "consumer" or group.state is GroupState.EMPTY:
            return set()
        found: set[str] = set()
        for member in group.members.values():
            found |= subscribed_topics(member.metadata_for(group.protocol_name)) or set()
        return found

    def expiration(self, now_ms: int) -> list[Expired]:
        """The offsets (and empty groups) that expired (offset_expiry.py); the host writes their tombstones."""
        found = (expired_offsets(g, now_ms, self.config.offsets_retention_ms) for g in self.groups.values())
        return [e for e in found if e is not None]

    def expiry_written(self, expired: Expired, decided: dict[tuple[str, int], OffsetEntry]) -> None:
        """The tombstones of `expired` are committed: forget those offsets unless committed again since the
        decision (`decided`: the entries then), and the group if it is still empty and has no offsets left."""
        group = self.groups.get(expired.group_id)
        if group is None:
            return
        for key in expired.partitions:
            if key in decided and group.offsets.get(key) is decided[key]:
                del group.offsets[key]
        if expired.group_too and not group.offsets and not group.members and group.state is GroupState.EMPTY:
            del self.groups[expired.group_id]

    def offsets_deleted(self, group_id: str, partitions: list[tuple[str, int]]) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        for key in partitions:
            group.offsets.pop(key, None)

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE

    # ---- online migration (group_migration.py) -------------------------------------------------------------------
    def release(self, group_id: str) -> list[Reply]:
        """The group became a consumer group (Kafka's convertToConsumerGroup): its parked JoinGroup and SyncGroup
        requests are answered REBALANCE_IN_PROGRESS, so that they rejoin the consumer group."""
        group = self.groups.pop(group_id, None)
        if group is None:
            return []
        replies: list[Reply] = [JoinReply(m.join_token, ErrorCode.REBALANCE_IN_PROGRESS, m.member_id)
                                for m in group.members.values() if m.join_token is not None]
        replies += self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        return replies

    def adopt(self, group: Group, now_ms: int, rebalance: bool = True) -> list[Reply]:
        """A consumer group downgraded to this classic group (Kafka's convertToClassicGroup): the members'
        sessions start now and, after a member left (or a replacing static member changed the subscription), a
        rebalance begins."""
        for member in group.members.values():
            member.session_deadline_ms = now_ms + member.session_timeout_ms
        self.groups[group.group_id] = group
        return self._prepare_rebalance(group, now_ms) if rebalance else []

    # ---- time --------------------------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> list[Reply]:
        replies: list[Reply] = []
        for group in list(self.groups.values()):
            replies += self._expire_sessions(group, now_ms)
            deadline = group.rebalance_deadline_ms
            if deadline is None or now_ms < deadline:
                continue
            if group.state is GroupState.PREPARING_REBALANCE:
                replies += self._maybe_complete_join(group, now_ms)
            elif group.state is GroupState.COMPLETING_REBALANCE:
                # The leader's SyncGroup never came: members that did not sync go, the rest rebalance.
                for member_id in [m.member_id for m in group.members.values() if m.sync_token is None]:
                    del group.members[member_id]
                group.leader = group.leader if group.leader in group.members else None
                replies += self._prepare_rebalance(group, now_ms)
        return replies

    def _expire_sessions(self, group: Group, now_ms: int) -> list[Reply]:
        expired = [m.member_id for m in group.members.values()
                   if m.join_token is None and m.sync_token is None and m.session_deadline_ms <= now_ms]
        for member_id in expired:
            del group.members[member_id]
        return self._after_removal(group, now_ms) if expired else []

    def next_deadline(self) -> int | None:
        times = [g.rebalance_deadline_ms for g in self.groups.values() if g.rebalance_deadline_ms is not None]
        times += [m.session_deadline_ms for g in self.groups.values() for m in g.members.values()
                  if m.join_token is None and m.sync_token is None]
        return min(times) if times else None

    def unload(self) -> list[Reply]:
        """Leadership of the partition is gone: every parked request gets NOT_COORDINATOR."""
        replies: list[Reply] = []
        for group in self.groups.values():
            for member in group.members.values():
                if member.join_token is not None:
                    replies.append(JoinReply(member.join_token, ErrorCode.NOT_COORDINATOR, member.member_id))
                if member.sync_token is not None:
                    replies.append(SyncReply(member.sync_token, ErrorCode.NOT_COORDINATOR))
            group.transition(GroupState.DEAD, 0)
        self.groups.clear()
        return replies
