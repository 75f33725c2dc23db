"""A member of a classic consumer group, as Kafka's consumer joins one (JoinGroup, SyncGroup, Heartbeat,
OffsetCommit, LeaveGroup at the group's coordinator), with Kafka's "range" assignor run by the member the
coordinator elects leader.

`join()` returns the partitions assigned to this member: JoinGroup v7 (a first answer MEMBER_ID_REQUIRED is
answered by joining again with the id it carries), then the leader computes the assignment (`range_assign` over
the members' subscriptions and the topics' partition counts) and every member reads its own from SyncGroup.
`heartbeat()` keeps the session; REBALANCE_IN_PROGRESS (or an unknown member or generation) means `join()`
again. `commit()` commits positions with the member's generation, `committed()` reads the group's offsets, and
`leave()` sends LeaveGroup so the others rebalance at once.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.heartbeat.v4 import request as hb_req
from kio.schema.join_group.v7 import request as jg_req
from kio.schema.leave_group.v4 import request as lg_req
from kio.schema.offset_commit.v8 import request as oc_req
from kio.schema.sync_group.v5 import request as sg_req
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from pykraft.protocol.errors import ErrorCode

from . import groups as group_admin
from .brokers import COORDINATOR_MOVED, BrokerClient, Retry
from .consumer_protocol import decode_assignment, decode_subscription, encode_assignment, encode_subscription, \
    range_assign
from .error_texts import exception_text
from .errors import AdminError
from .model import error_code_of

__all__ = ["GroupMember", "MembershipSettings", "RejoinNeeded"]

TopicPartition = tuple[str, int]
PROTOCOL_TYPE = "consumer"
ASSIGNOR = "range"
REJOIN = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                    ErrorCode.FENCED_INSTANCE_ID})


class RejoinNeeded(Exception):
    """The group is rebalancing (or forgot this member): join again before going on."""


@dataclass(frozen=True, slots=True)
class MembershipSettings:
    group_id: str
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000  # max.poll.interval.ms
    heartbeat_interval_ms: int = 3000
    instance_id: str | None = None


class GroupMember:
    def __init__(self, client: BrokerClient, settings: MembershipSettings, topics: Sequence[str]) -> None:
        self.client, self.settings = client, settings
        self.topics = sorted(set(topics))
        self.member_id = ""
        self.generation = -1
        self.assignment: list[TopicPartition] = []
        self.is_leader = False
        self.assigned_counts: dict[str, int] = {}  # the partition counts the leader assigned from

    async def _group_call(self, message: object, error_of, what: str) -> Any:
        return await self.client.group_call(self.settings.group_id, message, error_of, what)

    async def join(self) -> list[TopicPartition]:
        """Join (or rejoin) the group; the partitions this member now owns."""
        async def attempt() -> list[TopicPartition]:
            answer = await self._join_once()
            code = error_code_of(answer.error_code)
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = answer.member_id
                raise Retry("the coordinator gave this member its id: joining again")
            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS):
                if code == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                raise Retry(f"JoinGroup answered {code.name}")
            if code != ErrorCode.NONE:
                raise AdminError(code, exception_text(code))
            self.member_id, self.generation = answer.member_id, int(answer.generation_id)
            assignments: tuple[sg_req.SyncGroupRequestAssignment, ...] = ()
            self.is_leader = answer.leader == self.member_id
            if self.is_leader:
                assignments = await self._assign(answer.members)
            return await self._sync(assignments)

        return await self.client.retrying("joining the group", attempt, self.settings.rebalance_timeout_ms)

    async def _join_once(self):  # a JoinGroupResponse
        s = self.settings
        message = jg_req.JoinGroupRequest(
            group_id=GroupId(s.group_id), session_timeout=_ms(s.session_timeout_ms),
            rebalance_timeout=_ms(s.rebalance_timeout_ms), member_id=self.member_id,
            group_instance_id=s.instance_id, protocol_type=PROTOCOL_TYPE,
            protocols=(jg_req.JoinGroupRequestProtocol(name=ASSIGNOR, metadata=encode_subscription(self.topics)),))
        return await self._group_call(message, lambda r: error_code_of(r.error_code), "JoinGroup")

    async def _assign(self, members: Sequence[object]) -> tuple[sg_req.SyncGroupRequestAssignment, ...]:
        subscriptions = {m.member_id: decode_subscription(m.metadata) for m in members}  # type: ignore[attr-defined]
        wanted = sorted({t for topics in subscriptions.values() for t in topics})
        metadata = await self.client.metadata(wanted)
        counts = {name: len(t.partitions) for name, t in metadata.topics.items()}
        self.assigned_counts = counts
        instances = {m.member_id: m.group_instance_id for m in members}  # type: ignore[attr-defined]
        plan = range_assign(subscriptions, counts, instances)
        return tuple(sg_req.SyncGroupRequestAssignment(member_id=member, assignment=encode_assignment(parts))
                     for member, parts in plan.items())

    async def _sync(self, assignments: tuple[sg_req.SyncGroupRequestAssignment, ...]) -> list[TopicPartition]:
        message = sg_req.SyncGroupRequest(
            group_id=GroupId(self.settings.group_id), generation_id=i32(self.generation), member_id=self.member_id,
            group_instance_id=self.settings.instance_id, protocol_type=PROTOCOL_TYPE, protocol_name=ASSIGNOR,
            assignments=assignments)
        answer = await self._group_call(message, lambda r: error_code_of(r.error_code), "SyncGroup")
        code = error_code_of(answer.error_code)
        if code in REJOIN:
            raise Retry(f"SyncGroup answered {code.name}")
        if code != ErrorCode.NONE:
            raise AdminError(code, exception_text(code))
        self.assignment = decode_assignment(answer.assignment) if answer.assignment else []
        return self.assignment

    async def heartbeat(self) -> None:
        """One heartbeat; RejoinNeeded when the group rebalances or no longer knows this member."""
        message = hb_req.HeartbeatRequest(group_id=GroupId(self.settings.group_id), generation_id=i32(self.generation),
                                          member_id=self.member_id, group_instance_id=self.settings.instance_id)
        answer = await self._group_call(message, lambda r: error_code_of(r.error_code), "Heartbeat")
        code = error_code_of(answer.error_code)
        if code in REJOIN:
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            raise RejoinNeeded(code.name)
        if code != ErrorCode.NONE and code not in COORDINATOR_MOVED:
            raise AdminError(code, exception_text(code))

    async def commit(self, positions: Mapping[TopicPartition, int]) -> None:
        """Commit `positions` as this member (RejoinNeeded when the generation is over)."""
        if not positions:
            return
        topics: dict[str, list[oc_req.OffsetCommitRequestPartition]] = {}
        for (topic, index), offset in sorted(positions.items()):
            topics.setdefault(topic, []).append(oc_req.OffsetCommitRequestPartition(
                partition_index=i32(index), committed_offset=i64(offset), committed_leader_epoch=i32(-1),
                committed_metadata=""))
        message = oc_req.OffsetCommitRequest(
            group_id=GroupId(self.settings.group_id), generation_id_or_member_epoch=i32(self.generation),
            member_id=self.member_id, group_instance_id=self.settings.instance_id,
            topics=tuple(oc_req.OffsetCommitRequestTopic(name=TopicName(t), partitions=tuple(p))
                         for t, p in topics.items()))

        def error_of(response: object) -> ErrorCode:
            codes = [error_code_of(p.error_code) for t in response.topics for p in t.partitions]  # type: ignore[attr-defined]
            return next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE)

        answer = await self._group_call(message, error_of, "OffsetCommit")
        code = error_of(answer)
        if code in REJOIN:
            raise RejoinNeeded(code.name)
        if code != ErrorCode.NONE:
            raise AdminError(code, exception_text(code))

    async def committed(self) -> dict[TopicPartition, int]:
        found = await group_admin.committed_offsets(self.client, self.settings.group_id)
        return {tp: entry.offset for tp, entry in found.items()}

    async def leave(self) -> None:
        if not self.member_id or self.settings.instance_id is not None:
            return  # a static member keeps its place for session.timeout.ms, as Kafka's does on close
        message = lg_req.LeaveGroupRequest(group_id=GroupId(self.settings.group_id), members=(
            lg_req.MemberIdentity(member_id=self.member_id, group_instance_id=None),))
        try:
            await self._group_call(message, lambda r: error_code_of(r.error_code), "LeaveGroup")
        except Exception:  # leaving is best effort: the session timeout removes the member anyway
            pass
        self.member_id, self.generation = "", -1


def _ms(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)
