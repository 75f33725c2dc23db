"""Consumer-group administration over a `BrokerClient`, the requests of Kafka's Admin consumer-group methods:

- `list_groups`: ListGroups v5 to every live broker (each lists the groups it coordinates), filtered by state and
  type on the brokers; a broker still loading its groups (COORDINATOR_LOAD_IN_PROGRESS) is asked again.
- `describe_groups`: as Kafka's Admin.describeConsumerGroups: ConsumerGroupDescribe v0 first (a KIP-848 consumer
  group: epochs, current and target assignments), then DescribeGroups v5 for a group it does not know (a classic
  group; members' assignments decoded from the "consumer" protocol). An unknown group is described as Dead with no
  members (the classic coordinator's answer).
- `committed_offsets`: OffsetFetch v8 of every committed offset of a group.
- `commit_offsets`: OffsetCommit v8 without a generation (Kafka's alterConsumerGroupOffsets: only an empty group
  accepts it).
- `delete_groups`: DeleteGroups v2; `delete_offsets`: OffsetDelete v0.
Every call goes to the coordinator `BrokerClient.group_call` finds, and a coordinator that moved is retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kio.schema.consumer_group_describe.v0 import request as cgd_req
from kio.schema.delete_groups.v2 import request as dg_req
from kio.schema.describe_groups.v5 import request as dgr_req
from kio.schema.list_groups.v5 import request as lg_req
from kio.schema.offset_commit.v8 import request as oc_req
from kio.schema.offset_delete.v0 import request as od_req
from kio.schema.offset_fetch.v8 import request as of_req
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from pykraft.protocol.errors import ErrorCode

from .brokers import COORDINATOR_MOVED, BrokerClient, BrokerNode, Retry
from .consumer_protocol import decode_assignment
from .errors import AdminError
from .model import error_code_of

__all__ = ["CommittedOffset", "GroupDescription", "GroupListing", "MemberDescription", "commit_offsets",
           "committed_offsets", "delete_groups", "delete_offsets", "describe_groups", "list_groups"]

TopicPartition = tuple[str, int]
CONSUMER_PROTOCOL = "consumer"


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    member_epoch: int | None = None  # consumer groups only, as the next fields
    target_assignment: tuple[TopicPartition, ...] | None = None
    subscribed_topic_regex: str | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: BrokerNode
    group_type: str = "classic"
    group_epoch: int | None = None  # consumer groups only, as the next field
    assignment_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int | None
    metadata: str


async def list_groups(client: BrokerClient, states: Iterable[str] = (), types: Iterable[str] = ()
                      ) -> list[GroupListing]:
    """Every group of every live broker, sorted by id (a "consumer" or empty protocol type, as Kafka's tool)."""
    metadata = await client.metadata([])
    message = lg_req.ListGroupsRequest(states_filter=tuple(states), types_filter=tuple(types))

    async def one(node: BrokerNode) -> list[GroupListing]:
        async def attempt() -> list[GroupListing]:
            response = await client.exchange(node.address, message)
            code = error_code_of(response.error_code)
            if code in COORDINATOR_MOVED:
                raise Retry(f"broker {node.node_id} answered {code.name}")
            if code != ErrorCode.NONE:
                raise AdminError(code)
            return [GroupListing(g.group_id, g.protocol_type, g.group_state, g.group_type or "classic")
                    for g in response.groups]

        return await client.retrying("ListGroups", attempt)

    found = await asyncio.gather(*(one(node) for node in metadata.brokers.values()))
    listed = {g.group_id: g for answer in found for g in answer if g.protocol_type in ("", CONSUMER_PROTOCOL)}
    return sorted(listed.values(), key=lambda g: g.group_id)


async def describe_groups(client: BrokerClient, group_ids: Sequence[str]) -> dict[str, GroupDescription]:
    """Each group's description; a group-level error (other than an unknown group) raises AdminError."""
    async def one(group: str) -> GroupDescription:
        modern = await _describe_consumer_group(client, group)
        if modern is not None:
            return modern
        message = dgr_req.DescribeGroupsRequest(groups=(GroupId(group),), include_authorized_operations=False)
        response = await client.group_call(group, message, lambda r: _first_error(r.groups), "DescribeGroups")
        described = response.groups[0]
        code = error_code_of(described.error_code)
        if code != ErrorCode.NONE:
            raise AdminError(code, f"describing group {group!r}")
        members = tuple(MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                          tuple(_assignment(described.protocol_type, m.member_assignment)))
                        for m in described.members)
        return GroupDescription(group, described.group_state, described.protocol_type, described.protocol_data,
                                members, await client.coordinator(group))

    found = await asyncio.gather(*(one(g) for g in dict.fromkeys(group_ids)))
    return {d.group_id: d for d in found}


async def _describe_consumer_group(client: BrokerClient, group: str) -> GroupDescription | None:
    """ConsumerGroupDescribe; None when the group is not a consumer group (or the broker has no such API)."""
    message = cgd_req.ConsumerGroupDescribeRequest(group_ids=(GroupId(group),), include_authorized_operations=False)
    try:
        response = await client.group_call(group, message, lambda r: _first_error(r.groups), "ConsumerGroupDescribe")
    except AdminError as exc:
        if exc.code in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_REQUEST):
            return None
        raise
    described = response.groups[0]
    code = error_code_of(described.error_code)
    if code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION):
        return None
    if code != ErrorCode.NONE:
        raise AdminError(code, f"describing group {group!r}")

    def partitions(assignment: object) -> tuple[TopicPartition, ...]:
        return tuple(sorted((tp.topic_name, int(p)) for tp in assignment.topic_partitions  # type: ignore[attr-defined]
                            for p in tp.partitions))

    members = tuple(MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host,
                                      partitions(m.assignment), int(m.member_epoch), partitions(m.target_assignment),
                                      m.subscribed_topic_regex)
                    for m in described.members)
    return GroupDescription(group, described.group_state, CONSUMER_PROTOCOL, described.assignor_name, members,
                            await client.coordinator(group), "consumer", int(described.group_epoch),
                            int(described.assignment_epoch))


def _first_error(items: Sequence[object]) -> ErrorCode:
    return error_code_of(getattr(items[0], "error_code", 0)) if items else ErrorCode.UNKNOWN_SERVER_ERROR


def _assignment(protocol_type: str, data: bytes) -> list[TopicPartition]:
    if protocol_type != CONSUMER_PROTOCOL or not data:
        return []
    try:
        return decode_assignment(data)
    except ValueError:
        return []  # a member's bytes we cannot read: shown without partitions, as Kafka's admin client does


async def committed_offsets(client: BrokerClient, group: str) -> dict[TopicPartition, CommittedOffset]:
    """Every committed offset of `group` (none for an unknown group)."""
    message = of_req.OffsetFetchRequest(groups=(of_req.OffsetFetchRequestGroup(group_id=GroupId(group), topics=None),),
                                        require_stable=True)
    response = await client.group_call(group, message, lambda r: _first_error(r.groups), "OffsetFetch")
    answer = response.groups[0]
    code = error_code_of(answer.error_code)
    if code not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
        raise AdminError(code, f"fetching the offsets of group {group!r}")
    found = {}
    for topic in answer.topics:
        for p in topic.partitions:
            if error_code_of(p.error_code) == ErrorCode.NONE and int(p.committed_offset) >= 0:
                epoch = int(p.committed_leader_epoch)
                found[(str(topic.name), int(p.partition_index))] = CommittedOffset(
                    int(p.committed_offset), epoch if epoch >= 0 else None, p.metadata or "")
    return found


async def commit_offsets(client: BrokerClient, group: str,
                         offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, ErrorCode]:
    """OffsetCommit without a member (generation -1): each partition's result."""
    topics: dict[str, list[oc_req.OffsetCommitRequestPartition]] = {}
    for (topic, index), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(oc_req.OffsetCommitRequestPartition(
            partition_index=i32(index), committed_offset=i64(offset), committed_leader_epoch=i32(-1),
            committed_metadata=""))
    message = oc_req.OffsetCommitRequest(group_id=GroupId(group), generation_id_or_member_epoch=i32(-1),
                                         member_id="", group_instance_id=None, topics=tuple(
                                             oc_req.OffsetCommitRequestTopic(name=TopicName(t), partitions=tuple(p))
                                             for t, p in topics.items()))

    def error_of(response: object) -> ErrorCode:
        codes = [error_code_of(p.error_code) for t in response.topics for p in t.partitions]  # type: ignore[attr-defined]
        return next((c for c in codes if c in COORDINATOR_MOVED), ErrorCode.NONE)

    response = await client.group_call(group, message, error_of, "OffsetCommit")
    return {(str(t.name), int(p.partition_index)): error_code_of(p.error_code)
            for t in response.topics for p in t.partitions}


async def delete_groups(client: BrokerClient, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
    async def one(group: str) -> tuple[str, ErrorCode]:
        message = dg_req.DeleteGroupsRequest(groups_names=(GroupId(group),))
        response = await client.group_call(group, message, lambda r: _first_error(r.results), "DeleteGroups")
        return group, _first_error(response.results)

    return dict(await asyncio.gather(*(one(g) for g in dict.fromkeys(group_ids))))


async def delete_offsets(client: BrokerClient, group: str, partitions: Iterable[TopicPartition]
                         ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
    """OffsetDelete: (the group-level error, each partition's error)."""
    topics: dict[str, list[int]] = {}
    for topic, index in sorted(set(partitions)):
        topics.setdefault(topic, []).append(index)
    message = od_req.OffsetDeleteRequest(group_id=GroupId(group), topics=tuple(
        od_req.OffsetDeleteRequestTopic(name=TopicName(t), partitions=tuple(
            od_req.OffsetDeleteRequestPartition(partition_index=i32(i)) for i in p)) for t, p in topics.items()))
    response = await client.group_call(group, message, lambda r: error_code_of(r.error_code), "OffsetDelete")
    top = error_code_of(response.error_code)
    answered = {(str(t.name), int(p.partition_index)): error_code_of(p.error_code)
                for t in response.topics for p in t.partitions}
    return top, {(t, i): answered.get((t, i), top) for t, indexes in topics.items() for i in indexes}
