"""The classic group protocol's requests on a broker, at Kafka 4.x's version ranges (`GROUP_APIS`, node/runtime/served_apis.py).

FindCoordinator (GROUP keys; v4+ batched), JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch
(v8+ several groups), ListGroups, DescribeGroups, DeleteGroups. The first FindCoordinator creates
`__consumer_offsets` through the active controller (offsets.topic.num.partitions, default 50;
offsets.topic.replication.factor, default 3) and is answered COORDINATOR_NOT_AVAILABLE until its partition has a
leader. Every group request goes to the group's coordinator (group_host.py), which answers NOT_COORDINATOR or
COORDINATOR_LOAD_IN_PROGRESS when it is not (yet) that broker. Answers are built at the request's version (`make`).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import TYPE_CHECKING, Any

from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from pykraft.broker.group_coordinator import JoinRequest
from pykraft.broker.group_state import GroupState, JoinReply, OffsetEntry, SyncReply
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.group_records import partition_for

from pykraft.node.apis import consumer_group_api as consumer_groups
from pykraft.node.runtime.client_apis import registered_brokers
from pykraft.node.runtime.listeners import RequestListener, request_listener
from pykraft.node.hosts.group_host import OFFSETS_TOPIC, GroupHost
from pykraft.node.apis.wire_build import make, response_namespace

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.apis.broker_view import BrokerView

_log = logging.getLogger("pykraft.node.group_api")
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
CREATE_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=10))
MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes


def offsets_topic_settings(raw: Any) -> tuple[int, int]:
    """(offsets.topic.num.partitions, offsets.topic.replication.factor); ValueError on a bad value."""
    numbers = []
    for key, default in (("offsets.topic.num.partitions", "50"), ("offsets.topic.replication.factor", "3"),
                         ("offsets.topic.segment.bytes", "104857600")):
        text = str(raw.get(key, default)).strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{key}: {text!r} is not a positive integer")
        numbers.append(int(text))
    return numbers[0], numbers[1]


def offsets_topic_configs(raw: Any) -> dict[str, str]:
    """Kafka's GroupCoordinator.offsetsTopicConfigs: the topic is compacted (a group's offsets are the latest
    record of each key), with segments of offsets.topic.segment.bytes (100 MiB)."""
    segment = str(raw.get("offsets.topic.segment.bytes", "104857600")).strip()
    return {"cleanup.policy": "compact", "segment.bytes": segment, "compression.type": "producer"}


class GroupApi:
    def __init__(self, broker: BrokerView, groups: GroupHost) -> None:
        self.broker = broker
        self.groups = groups
        self._creating: asyncio.Task[Any] | None = None
        self._last_create_outcome = ""
        # FindCoordinator's TRANSACTION keys go to the transaction coordinator's locator (txn_api.TxnApi.locate).
        self.transaction_locator: Any = None

    def handlers(self) -> dict[int, Any]:
        return {ApiKey.FIND_COORDINATOR: self.find_coordinator, ApiKey.JOIN_GROUP: self.join_group,
                ApiKey.SYNC_GROUP: self.sync_group, ApiKey.HEARTBEAT: self.heartbeat,
                ApiKey.LEAVE_GROUP: self.leave_group, ApiKey.OFFSET_COMMIT: self.offset_commit,
                ApiKey.OFFSET_FETCH: self.offset_fetch, ApiKey.LIST_GROUPS: self.list_groups,
                ApiKey.DESCRIBE_GROUPS: self.describe_groups, ApiKey.DELETE_GROUPS: self.delete_groups,
                ApiKey.OFFSET_DELETE: self.offset_delete}

    # ---- FindCoordinator ---------------------------------------------------------------------------------------
    async def find_coordinator(self, decoded: DecodedRequest) -> Any:
        message = decoded.message
        version = int(message.__version__)
        ns = response_namespace(ApiKey.FIND_COORDINATOR, version)
        key_type = int(getattr(message, "key_type", GROUP_KEY_TYPE))
        keys = list(message.coordinator_keys) if version >= 4 else [message.key]
        listener = request_listener(decoded, self.broker.data_plane.node_config)
        found = [self._locate(key, key_type, listener) for key in keys]
        if any(error is ErrorCode.COORDINATOR_NOT_AVAILABLE for error, _ in found) and key_type == GROUP_KEY_TYPE:
            self._create_offsets_topic()
        if version >= 4:
            return make(ns.FindCoordinatorResponse, coordinators=tuple(
                make(ns.Coordinator, key=key, node_id=i32(node[0] if node else -1), host=node[1] if node else "",
                     port=i32(node[2] if node else -1), error_code=error,
                     error_message=None if error is ErrorCode.NONE else error.name)
                for key, (error, node) in zip(keys, found)))
        error, node = found[0]
        return make(ns.FindCoordinatorResponse, error_code=error, node_id=i32(node[0] if node else -1),
                    host=node[1] if node else "", port=i32(node[2] if node else -1),
                    error_message=None if error is ErrorCode.NONE else error.name)

    def _locate(self, key: str, key_type: int,
                listener: RequestListener) -> tuple[ErrorCode, tuple[int, str, int] | None]:
        if key_type == TRANSACTION_KEY_TYPE and self.transaction_locator is not None:
            return self.transaction_locator(key, listener)
        if key_type != GROUP_KEY_TYPE:
            return (ErrorCode.INVALID_REQUEST if key_type != 1 else ErrorCode.COORDINATOR_NOT_AVAILABLE), None
        if not key:
            return ErrorCode.INVALID_REQUEST, None
        cache = self.broker.cache
        count = self.groups.partition_count()
        topic_id = cache.topic_id(OFFSETS_TOPIC)
        if not count or topic_id is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        partition = cache.partition(topic_id, partition_for(key, count))
        # The leader's endpoint as Metadata lists it on the request's listener (client_apis.registered_brokers):
        # unfenced brokers only; a leader without that listener cannot be reached from there.
        address = None if partition is None else next(
            ((host, port) for r, host, port in registered_brokers(cache, listener) if r.broker_id == partition.leader),
            None)
        if partition is None or address is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return ErrorCode.NONE, (partition.leader, address[0], address[1])

    def _create_offsets_topic(self) -> None:
        if self._creating is not None and not self._creating.done():
            return
        raw = self.broker.data_plane.node_config.raw
        partitions, replication = offsets_topic_settings(raw)
        configs = tuple(ct_req.CreatableTopicConfig(name=name, value=value)
                        for name, value in offsets_topic_configs(raw).items())
        request = ct_req.CreateTopicsRequest(timeout=CREATE_TIMEOUT, validate_only=False, topics=(
            ct_req.CreatableTopic(name=TopicName(OFFSETS_TOPIC), num_partitions=i32(partitions),
                                  replication_factor=i16(replication), assignments=(), configs=configs),))
        self._creating = asyncio.get_running_loop().create_task(self._create(request))

    async def _create(self, request: Any) -> None:
        answer = await self.broker.forward_own(request)
        for topic in getattr(answer, "topics", ()):
            outcome = f"{ErrorCode(int(topic.error_code)).name} {topic.error_message or ''}".strip()
            if outcome != self._last_create_outcome:  # clients retry FindCoordinator often: say each outcome once
                _log.info("creating %s: %s", OFFSETS_TOPIC, outcome)
                self._last_create_outcome = outcome

    # ---- membership --------------------------------------------------------------------------------------------
    async def join_group(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        version = int(m.__version__)
        ns = response_namespace(ApiKey.JOIN_GROUP, version)
        request = JoinRequest(
            group_id=m.group_id, member_id=m.member_id, instance_id=getattr(m, "group_instance_id", None),
            client_id=decoded.client_id, client_host="/127.0.0.1",
            session_timeout_ms=int(m.session_timeout.total_seconds() * 1000),
            rebalance_timeout_ms=int(m.rebalance_timeout.total_seconds() * 1000),
            protocol_type=m.protocol_type, protocols=tuple((p.name, bytes(p.metadata)) for p in m.protocols),
            require_known_member_id=version >= 4)
        refused = None if isinstance(self.groups.coordinator_of(m.group_id), ErrorCode) else \
            await consumer_groups.before_classic_join(self.groups, request, self.broker._now())
        reply = refused if refused is not None else await self._parked(
            m.group_id, lambda c, token, now: c.join(request, token, now))
        if isinstance(reply, ErrorCode):
            reply = JoinReply(None, reply, member_id=m.member_id)
        # ProtocolName is nullable from v7 only: before it an error answer carries "".
        protocol_name = reply.protocol_name if version >= 7 else reply.protocol_name or ""
        return make(ns.JoinGroupResponse, error_code=reply.error, generation_id=i32(reply.generation),
                    protocol_type=reply.protocol_type, protocol_name=protocol_name, leader=reply.leader,
                    member_id=reply.member_id, skip_assignment=False, members=tuple(
                        make(ns.JoinGroupResponseMember, member_id=mid, group_instance_id=iid, metadata=meta)
                        for mid, iid, meta in reply.members))

    async def sync_group(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.SYNC_GROUP, int(m.__version__))
        assignments = {a.member_id: bytes(a.assignment) for a in m.assignments}
        instance_id = getattr(m, "group_instance_id", None)
        reply = None if isinstance(self.groups.coordinator_of(m.group_id), ErrorCode) else \
            consumer_groups.classic_sync(self.groups, m, self.broker._now())
        reply = reply if reply is not None else await self._parked(m.group_id, lambda c, token, now: [SyncReply(token, ErrorCode.FENCED_INSTANCE_ID)]
                                   if c.fenced(m.group_id, m.member_id, instance_id)
                                   else c.sync(m.group_id, m.member_id, int(m.generation_id), assignments, token, now))
        if isinstance(reply, ErrorCode):
            reply = SyncReply(None, reply)
        return make(ns.SyncGroupResponse, error_code=reply.error, protocol_type=reply.protocol_type,
                    protocol_name=reply.protocol_name, assignment=reply.assignment)

    async def _parked(self, group_id: str, call: Any) -> Any:
        """Run a JoinGroup/SyncGroup step on the coordinator and wait for its reply (maybe given at once)."""
        coordinator = self.groups.coordinator_of(group_id)
        if isinstance(coordinator, ErrorCode):
            return coordinator
        token, future = self.groups.park()
        try:
            self.groups.run(coordinator, call(coordinator, token, self.broker._now()))
            return await future
        finally:
            self.groups.forget(token)

    async def heartbeat(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.HEARTBEAT, int(m.__version__))
        coordinator = self.groups.coordinator_of(m.group_id)
        if isinstance(coordinator, ErrorCode):
            error = coordinator
        elif (modern := consumer_groups.classic_heartbeat(self.groups, m, self.broker._now())) is not None:
            error = modern
        elif coordinator.fenced(m.group_id, m.member_id, getattr(m, "group_instance_id", None)):
            error = ErrorCode.FENCED_INSTANCE_ID
        else:
            error = coordinator.heartbeat(m.group_id, m.member_id, int(m.generation_id), self.broker._now())
            self.groups.run(coordinator, [])
        return make(ns.HeartbeatResponse, error_code=error)

    async def leave_group(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        version = int(m.__version__)
        ns = response_namespace(ApiKey.LEAVE_GROUP, version)
        identities: list[tuple[str, str | None]] = (
            [(x.member_id, x.group_instance_id) for x in m.members] if version >= 3 else [(m.member_id, None)])
        coordinator = self.groups.coordinator_of(m.group_id)
        if isinstance(coordinator, ErrorCode):
            return make(ns.LeaveGroupResponse, error_code=coordinator, members=())
        modern = await consumer_groups.classic_leave(self.groups, m.group_id, identities)
        if modern is not None and modern[1] is not ErrorCode.NONE:
            return make(ns.LeaveGroupResponse, error_code=modern[1], members=())
        if modern is not None:
            errors = modern[0]
        else:
            errors, replies = coordinator.leave(m.group_id, identities, self.broker._now())
            self.groups.run(coordinator, replies)
        if version < 3:
            return make(ns.LeaveGroupResponse, error_code=errors[0])
        return make(ns.LeaveGroupResponse, error_code=ErrorCode.NONE, members=tuple(
            make(ns.MemberResponse, member_id=mid, group_instance_id=iid, error_code=error)
            for (mid, iid), error in zip(identities, errors)))

    # ---- offsets -----------------------------------------------------------------------------------------------
    async def offset_commit(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.OFFSET_COMMIT, int(m.__version__))
        coordinator = self.groups.coordinator_of(m.group_id)
        now = self.broker._now()
        modern = consumer_groups.consumer_group(self.groups, m.group_id)
        if isinstance(coordinator, ErrorCode):
            error = coordinator
        elif modern is not None:
            error = modern[0].check_commit(m.group_id, m.member_id, int(m.generation_id_or_member_epoch),
                                           int(m.__version__))
        elif coordinator.fenced(m.group_id, m.member_id, getattr(m, "group_instance_id", None)):
            error = ErrorCode.FENCED_INSTANCE_ID
        else:
            error = coordinator.check_commit(m.group_id, m.member_id, int(m.generation_id_or_member_epoch), now)
        errors: dict[tuple[str, int], ErrorCode] = {}
        offsets: dict[tuple[str, int], OffsetEntry] = {}
        for t in m.topics:
            for p in t.partitions:
                key = (t.name, int(p.partition_index))
                metadata = p.committed_metadata or ""
                if error is ErrorCode.NONE and len(metadata.encode()) > MAX_METADATA_BYTES:
                    errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE  # the others are still committed
                    continue
                offsets[key] = OffsetEntry(int(p.committed_offset), int(getattr(p, "committed_leader_epoch", -1)),
                                           metadata, now)
        if error is ErrorCode.NONE and offsets:
            assert not isinstance(coordinator, ErrorCode)  # (it would be the error)
            error = await self.groups.commit_offsets(coordinator, m.group_id, offsets,
                                                     None if modern is None else modern[1].offsets)
        return make(ns.OffsetCommitResponse, topics=tuple(
            make(ns.OffsetCommitResponseTopic, name=t.name, partitions=tuple(
                make(ns.OffsetCommitResponsePartition, partition_index=p.partition_index,
                     error_code=errors.get((t.name, int(p.partition_index)), error))
                for p in t.partitions)) for t in m.topics))

    async def offset_fetch(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        version = int(m.__version__)
        ns = response_namespace(ApiKey.OFFSET_FETCH, version)
        stable = bool(getattr(m, "require_stable", False))  # v7+: offsets of open transactions are not answered
        if version >= 8:
            groups = tuple(self._fetch_group(ns, g, version, stable) for g in m.groups)
            return make(ns.OffsetFetchResponse, groups=groups)
        error, topics = self._group_offsets(ns, m.group_id, m.topics, version, stable)
        return make(ns.OffsetFetchResponse, topics=topics, error_code=error)

    def _fetch_group(self, ns: Any, requested: Any, version: int, stable: bool) -> Any:
        group_id = requested.group_id
        error, found = self._group_offsets(ns, group_id, requested.topics, version, stable,
                                           (getattr(requested, "member_id", None),
                                            int(getattr(requested, "member_epoch", -1))))
        return make(ns.OffsetFetchResponseGroup, group_id=group_id, topics=found, error_code=error)

    def _group_offsets(self, ns: Any, group_id: str, topics: Any, version: int, stable: bool = False,
                       member: tuple[str | None, int] = (None, -1)) -> tuple[ErrorCode, tuple[Any, ...]]:
        coordinator = self.groups.coordinator_of(group_id)
        if isinstance(coordinator, ErrorCode):
            return coordinator, ()
        modern = consumer_groups.consumer_group(self.groups, group_id)
        if modern is not None:  # KIP-848: a member's fetch carries its member id and epoch (v9)
            error = modern[0].check_fetch(group_id, member[0], member[1])
            if error is not ErrorCode.NONE:
                return error, ()
        group = coordinator.groups.get(group_id)
        offsets = modern[1].offsets if modern is not None else {} if group is None else group.offsets
        if topics is None:  # every committed offset of the group
            wanted: dict[str, list[int]] = {}
            for name, index in sorted(offsets):
                wanted.setdefault(name, []).append(index)
        else:
            wanted = {t.name: [int(i) for i in t.partition_indexes] for t in topics}
        topic_cls = ns.OffsetFetchResponseTopics if version >= 8 else ns.OffsetFetchResponseTopic
        part_cls = ns.OffsetFetchResponsePartitions if version >= 8 else ns.OffsetFetchResponsePartition
        found = []
        for name, indexes in wanted.items():
            parts = []
            for index in indexes:
                entry = offsets.get((name, index))
                if stable and self.groups.txn_offset_pending(group_id, (name, index)):
                    parts.append(make(part_cls, partition_index=i32(index), committed_offset=-1, metadata="",
                                      error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT, committed_leader_epoch=i32(-1)))
                    continue
                parts.append(make(part_cls, partition_index=i32(index), error_code=ErrorCode.NONE,
                                  committed_offset=entry.offset if entry else -1,
                                  committed_leader_epoch=i32(entry.leader_epoch if entry else -1),
                                  metadata=entry.metadata if entry else ""))
            found.append(make(topic_cls, name=name, partitions=tuple(parts)))
        return ErrorCode.NONE, tuple(found)

    # ---- administration ----------------------------------------------------------------------------------------
    async def list_groups(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.LIST_GROUPS, int(m.__version__))
        states = {s.lower() for s in getattr(m, "states_filter", ())}
        types = {t.lower() for t in getattr(m, "types_filter", ())}
        listed = []
        for coordinator in self.groups.coordinators.values():
            for group in coordinator.groups.values():
                if (states and group.state.value.lower() not in states) or (types and "classic" not in types):
                    continue
                listed.append(make(ns.ListedGroup, group_id=group.group_id, protocol_type=group.protocol_type or "",
                                   group_state=group.state.value, group_type="classic"))
        listed += consumer_groups.listed(self.groups, ns, states, types)
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.groups.loading else ErrorCode.NONE
        return make(ns.ListGroupsResponse, error_code=error, groups=tuple(listed))

    async def describe_groups(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.DESCRIBE_GROUPS, int(m.__version__))
        version = int(m.__version__)
        return make(ns.DescribeGroupsResponse, groups=tuple(self._describe(ns, g, version) for g in m.groups))

    def _describe(self, ns: Any, group_id: str, version: int = 5) -> Any:
        coordinator = self.groups.coordinator_of(group_id)
        if isinstance(coordinator, ErrorCode):
            return make(ns.DescribedGroup, error_code=coordinator, group_id=group_id, members=())
        group = coordinator.groups.get(group_id)
        if group is None:  # unknown, or a consumer group: Dead, and from v6 (KIP-1043) GROUP_ID_NOT_FOUND as well
            error, message = ErrorCode.NONE, None
            if version >= 6:
                modern = consumer_groups.consumer_group(self.groups, group_id) is not None
                error = ErrorCode.GROUP_ID_NOT_FOUND
                message = f"Group {group_id} is not a classic group." if modern else f"Group {group_id} not found."
            return make(ns.DescribedGroup, error_code=error, error_message=message, group_id=group_id,
                        group_state=GroupState.DEAD.value, members=(), authorized_operations=i32(-2147483648))
        stable = group.state is GroupState.STABLE
        members = tuple(make(ns.DescribedGroupMember, member_id=x.member_id, group_instance_id=x.instance_id,
                             client_id=x.client_id, client_host=x.client_host,
                             member_metadata=x.metadata_for(group.protocol_name) if stable else b"",
                             member_assignment=x.assignment if stable else b"")
                        for x in group.members.values())
        return make(ns.DescribedGroup, error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state.value,
                    protocol_type=group.protocol_type or "", protocol_data=group.protocol_name or "",
                    members=members, authorized_operations=i32(-2147483648))

    async def delete_groups(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.DELETE_GROUPS, int(m.__version__))
        results = []
        for group_id in m.groups_names:
            coordinator = self.groups.coordinator_of(group_id)
            modern = consumer_groups.consumer_group(self.groups, group_id)
            if isinstance(coordinator, ErrorCode):
                error = coordinator
            elif modern is not None:
                error = await consumer_groups.delete(self.groups, modern[0], group_id)
            else:
                error = await self.groups.delete_group(coordinator, group_id)
            results.append(make(ns.DeletableGroupResult, group_id=group_id, error_code=error))
        return make(ns.DeleteGroupsResponse, results=tuple(results))

    async def offset_delete(self, decoded: DecodedRequest) -> Any:
        """OffsetDelete: GROUP_ID_NOT_FOUND for an unknown group; GROUP_SUBSCRIBED_TO_TOPIC for a partition of a
        topic a member still subscribes to; the other offsets are deleted (tombstones) once committed."""
        m = decoded.message
        ns = response_namespace(ApiKey.OFFSET_DELETE, int(m.__version__))
        coordinator = self.groups.coordinator_of(m.group_id)
        modern = consumer_groups.consumer_group(self.groups, m.group_id)
        error = coordinator if isinstance(coordinator, ErrorCode) else (
            ErrorCode.NONE if m.group_id in coordinator.groups or modern is not None else ErrorCode.GROUP_ID_NOT_FOUND)
        if error is not ErrorCode.NONE:
            return make(ns.OffsetDeleteResponse, error_code=error, topics=())
        assert not isinstance(coordinator, ErrorCode)  # (it would be the error)
        subscribed = (coordinator.subscribed_topics(m.group_id) if modern is None
                      else modern[1].subscribed_topic_names())
        deletable = [(t.name, int(p.partition_index)) for t in m.topics if t.name not in subscribed
                     for p in t.partitions]
        if deletable:
            error = await self.groups.delete_offsets(coordinator, m.group_id, deletable,
                                                     None if modern is None else modern[1].offsets)
        if error is not ErrorCode.NONE:
            return make(ns.OffsetDeleteResponse, error_code=error, topics=())
        return make(ns.OffsetDeleteResponse, error_code=ErrorCode.NONE, topics=tuple(
            make(ns.OffsetDeleteResponseTopic, name=t.name, partitions=tuple(
                make(ns.OffsetDeleteResponsePartition, partition_index=p.partition_index,
                     error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if t.name in subscribed else ErrorCode.NONE)
                for p in t.partitions)) for t in m.topics))
