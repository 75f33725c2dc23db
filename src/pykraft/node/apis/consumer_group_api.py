"""KIP-848's requests on a broker: ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe v0-1.

Both go to the group's coordinator (the leader of its `__consumer_offsets` partition, group_host.py), like the
classic requests. A heartbeat's records are written (acks=all) before it is answered, as Kafka's runtime does; a
failed write answers the write's error (NOT_COORDINATOR when the leadership moved). Both APIs are advertised, and
answered UNSUPPORTED_VERSION unless the finalized `group.version` is 1 or more (Kafka 4.0's bootstrap default) and
`group.coordinator.rebalance.protocols` has "consumer" (Kafka's isConsumerGroupProtocolEnabled).

Group types are exclusive per group id: a heartbeat (epoch 0) to an *empty* classic group converts it (its
GroupMetadata is tombstoned, its committed offsets stay), and a JoinGroup to an empty consumer group converts it
back (group_api.py). Groups with members migrate online as Kafka 4.x's do (broker/group_migration.py, under
group.consumer.migration.policy): a heartbeat (epoch 0) to a classic group of "consumer" members upgrades it, its
members staying on as classic members of the consumer group (broker/consumer_classic.py answers their JoinGroup,
SyncGroup, Heartbeat and LeaveGroup); when the last consumer-protocol member leaves, the group is classic again.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.primitive import i8, i32

from pykraft.broker.consumer_coordinator import ConsumerCoordinator, HeartbeatRequest, HeartbeatResult, TopicImage
from pykraft.broker import consumer_classic
from pykraft.broker.consumer_group import ConsumerGroup, Partitions
from pykraft.broker.group_coordinator import JoinRequest
from pykraft.broker.group_migration import MigrationRefused
from pykraft.broker.group_coordinator import GroupCoordinator
from pykraft.broker.group_state import Group, GroupState
from pykraft.controller.acl_model import AclOperation, ResourceType
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord
from pykraft.records.group_records import GroupKey, encode_key, partition_for

from pykraft.node.apis.wire_build import make, response_namespace
from pykraft.node.hosts.group_host import GroupHost

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

_log = logging.getLogger("pykraft.node.groups")
GROUP_VERSION = "group.version"
CONSUMER_MEMBER_TYPE = 1  # ConsumerGroupDescribe v1 MemberType: the member uses the consumer protocol
CLASSIC_MEMBER_TYPE = 0  # ... a classic member of a consumer group (online migration)


def classic_conflict(classic: GroupCoordinator, group_id: str) -> Group | None:
    """The classic group of this id that still has members (or is being rebalanced), if any."""
    group = classic.groups.get(group_id)
    return group if group is not None and (group.members or group.state is not GroupState.EMPTY) else None


class ConsumerGroupApi:
    def __init__(self, broker: Any, groups: GroupHost) -> None:
        self.broker = broker
        self.groups = groups

    def handlers(self) -> dict[int, Any]:
        return {ApiKey.CONSUMER_GROUP_HEARTBEAT: self.heartbeat, ApiKey.CONSUMER_GROUP_DESCRIBE: self.describe}

    def enabled(self) -> bool:
        """Kafka's isConsumerGroupProtocolEnabled: "consumer" in group.coordinator.rebalance.protocols and the
        finalized group.version at 1 or more."""
        features = getattr(self.broker.cache, "features", None)
        levels = features.finalized_levels() if features is not None else {}
        return self.groups.consumer_config.enabled and levels.get(GROUP_VERSION, 0) >= 1

    # ---- ConsumerGroupHeartbeat -------------------------------------------------------------------------------
    async def heartbeat(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        version = int(m.__version__)
        ns = response_namespace(ApiKey.CONSUMER_GROUP_HEARTBEAT, version)
        result = await self._heartbeat(m, version, decoded.client_id,
                                       self._describable(getattr(decoded, "context", None)))
        assignment = None
        if result.error is ErrorCode.NONE and result.assignment is not None:
            assignment = make(ns.Assignment, topic_partitions=wire_partitions(ns.TopicPartitions, result.assignment))
        return make(ns.ConsumerGroupHeartbeatResponse, error_code=result.error, error_message=result.message,
                    member_id=result.member_id, member_epoch=i32(result.member_epoch),
                    heartbeat_interval=datetime.timedelta(milliseconds=result.heartbeat_interval_ms), assignment=assignment)

    def _describable(self, context: Any) -> Callable[[str], bool] | None:
        """The topics the heartbeat's principal may DESCRIBE (a regex resolves over those only); None without an
        authorizer."""
        auth = getattr(getattr(self.broker, "runtime", None), "authorizer", None)
        if auth is None or not auth.enabled or context is None:
            return None
        return lambda name: auth.allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name, counted=False)

    async def _heartbeat(self, m: Any, version: int, client_id: str,
                         visible: Callable[[str], bool] | None = None) -> HeartbeatResult:
        if not self.enabled():
            return HeartbeatResult(ErrorCode.UNSUPPORTED_VERSION)
        consumer = self.groups.consumer_of(m.group_id)
        classic = self.groups.coordinator_of(m.group_id)
        if isinstance(consumer, ErrorCode):
            return HeartbeatResult(consumer)
        if isinstance(classic, ErrorCode):
            return HeartbeatResult(classic)
        now = self.broker._now()
        upgraded = classic_conflict(classic, m.group_id)
        if upgraded is not None:
            if int(m.member_epoch) != 0:
                return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {m.group_id} is not a consumer group.")
            try:
                consumer.upgrade(upgraded, self.groups.image(), now)
            except MigrationRefused as exc:
                return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, str(exc))
        owned = None if m.topic_partitions is None else {
            tp.topic_id: frozenset(int(p) for p in tp.partitions) for tp in m.topic_partitions if tp.topic_id}
        request = HeartbeatRequest(
            group_id=m.group_id, member_id=m.member_id, member_epoch=int(m.member_epoch), instance_id=m.instance_id,
            rack_id=m.rack_id, rebalance_timeout_ms=int(m.rebalance_timeout.total_seconds() * 1000),
            subscribed_topic_names=None if m.subscribed_topic_names is None else tuple(m.subscribed_topic_names),
            subscribed_topic_regex=getattr(m, "subscribed_topic_regex", None), server_assignor=m.server_assignor,
            owned=owned, client_id=client_id, client_host="/127.0.0.1", version=version, topic_visible=visible)
        result = consumer.heartbeat(request, self.groups.image(), now)
        if upgraded is not None and result.error is not ErrorCode.NONE:
            consumer.abandon(m.group_id)  # nothing of the conversion is written: the group stays classic
            return HeartbeatResult(result.error, result.message)
        if upgraded is not None:
            _log.info("classic group %s converted to a consumer group (%d classic members) as member %s joins",
                      m.group_id, len(upgraded.members), result.member_id)
            self.groups.run(classic, classic.release(m.group_id))
            extra = [SimpleRecord(None, encode_key(GroupKey(m.group_id)))]
        else:
            extra = self._absorb_empty_classic(classic, consumer, m.group_id, result)
        self.groups.adopt_downgrades(partition_for(m.group_id, self.groups.partition_count() or 1), consumer, now)
        if result.records or extra:
            error = await self.groups.write_records(m.group_id, result.records, extra)
            if error is not ErrorCode.NONE:
                return HeartbeatResult(error)
        self.groups._reschedule()  # the member's session deadline moved
        return result

    @staticmethod
    def _absorb_empty_classic(classic: GroupCoordinator, consumer: ConsumerCoordinator, group_id: str,
                              result: HeartbeatResult) -> list[SimpleRecord]:
        """Upgrade of an empty classic group: its metadata is tombstoned and its offsets kept."""
        old = classic.groups.get(group_id)
        group = consumer.groups.get(group_id)
        if old is None or group is None or result.error is not ErrorCode.NONE:
            return []
        del classic.groups[group_id]
        group.offsets.update(old.offsets)
        return [SimpleRecord(None, encode_key(GroupKey(group_id)))]

    # ---- ConsumerGroupDescribe --------------------------------------------------------------------------------
    async def describe(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.CONSUMER_GROUP_DESCRIBE, int(m.__version__))
        if not self.enabled():  # as Kafka: every group answered UNSUPPORTED_VERSION
            return make(ns.ConsumerGroupDescribeResponse, groups=tuple(
                make(ns.DescribedGroup, group_id=g, error_code=ErrorCode.UNSUPPORTED_VERSION, members=())
                for g in m.group_ids))
        image = self.groups.image()
        return make(ns.ConsumerGroupDescribeResponse, groups=tuple(self._describe(ns, g, image) for g in m.group_ids))

    def _describe(self, ns: Any, group_id: str, image: TopicImage) -> Any:
        consumer = self.groups.consumer_of(group_id)
        if isinstance(consumer, ErrorCode):
            return make(ns.DescribedGroup, group_id=group_id, error_code=consumer, members=())
        group = consumer.groups.get(group_id)
        if group is None:
            classic = self.groups.coordinator_of(group_id)
            known = not isinstance(classic, ErrorCode) and group_id in classic.groups
            message = f"Group {group_id} is not a consumer group." if known else f"Group {group_id} not found."
            return make(ns.DescribedGroup, group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                        error_message=message, group_state="Dead", members=())
        members = tuple(make(
            ns.Member, member_id=x.member_id, instance_id=x.instance_id, rack_id=x.rack_id,
            member_epoch=i32(x.member_epoch), client_id=x.client_id, client_host=x.client_host,
            subscribed_topic_names=x.subscribed_topic_names, subscribed_topic_regex=x.subscribed_topic_regex,
            assignment=make(ns.Assignment, topic_partitions=described_partitions(ns, x.assigned, image)),
            target_assignment=make(ns.Assignment, topic_partitions=described_partitions(
                ns, group.target.get(x.member_id, {}), image)),
            member_type=i8(CLASSIC_MEMBER_TYPE if x.uses_classic else CONSUMER_MEMBER_TYPE))
            for x in group.members.values())
        return make(ns.DescribedGroup, group_id=group_id, error_code=ErrorCode.NONE,
                    group_state=group.state().value, group_epoch=i32(group.group_epoch),
                    assignment_epoch=i32(group.assignment_epoch), assignor_name=consumer.preferred_assignor(group),
                    members=members, authorized_operations=i32(-2147483648))


def consumer_group(groups: GroupHost, group_id: str) -> tuple[ConsumerCoordinator, ConsumerGroup] | None:
    """The consumer group of this id, when this broker coordinates it and it is one."""
    consumer = groups.consumer_of(group_id)
    if isinstance(consumer, ErrorCode) or group_id not in consumer.groups:
        return None
    return consumer, consumer.groups[group_id]


def wire_partitions(cls: type, partitions: Partitions) -> tuple[Any, ...]:
    return tuple(make(cls, topic_id=topic_id, partitions=tuple(i32(n) for n in sorted(numbers)))
                 for topic_id, numbers in sorted(partitions.items(), key=lambda kv: str(kv[0])))


def described_partitions(ns: Any, partitions: Partitions, image: TopicImage) -> tuple[Any, ...]:
    names = {topic_id: name for name, (topic_id, _) in image.topics.items()}
    return tuple(make(ns.TopicPartitions, topic_id=topic_id, topic_name=names.get(topic_id, ""),
                      partitions=tuple(i32(n) for n in sorted(numbers)))
                 for topic_id, numbers in sorted(partitions.items(), key=lambda kv: str(kv[0]))
                 if isinstance(topic_id, uuid.UUID))


# ---- what the classic requests need to know of consumer groups (group_api.py) ---------------------------------------
async def before_classic_join(groups: GroupHost, request: JoinRequest, now_ms: int) -> Any:
    """A JoinGroup for a consumer group id: an empty consumer group is converted (its records tombstoned, its
    offsets handed to the classic group, Kafka's downgrade of an empty group); one with members takes the joining
    member as a classic member (broker/consumer_classic.py) and the answer is returned once its records are
    written. None: go on with the classic join."""
    from pykraft.broker.group_state import JoinReply
    group_id = request.group_id
    found = consumer_group(groups, group_id)
    classic = groups.coordinator_of(group_id)
    if found is None or isinstance(classic, ErrorCode):
        return None
    consumer, group = found
    if group.members:
        reply, records = consumer_classic.join(consumer, group, request, groups.image(), now_ms)
        groups.adopt_downgrades(partition_for(group_id, groups.partition_count() or 1), consumer, now_ms)
        error = await groups.write_records(group_id, records) if records else ErrorCode.NONE
        groups._reschedule()  # the member's session and sync deadlines moved
        return reply if error is ErrorCode.NONE else JoinReply(None, error, member_id=request.member_id)
    offsets = dict(group.offsets)
    error = await groups.write_records(group_id, consumer.tombstone_group(group_id))
    if error is not ErrorCode.NONE:
        return JoinReply(None, error)
    classic.groups.setdefault(group_id, Group(group_id)).offsets.update(offsets)
    return None


def listed(groups: GroupHost, ns: Any, states: set[str], types: set[str]) -> list[Any]:
    """ListGroups' entries for the consumer groups (type "consumer", protocol type "consumer")."""
    found: list[Any] = []
    if types and "consumer" not in types:
        return found
    for consumer in groups.consumers.values():
        for group in consumer.groups.values():
            state = group.state().value
            if states and state.lower() not in states:
                continue
            found.append(make(ns.ListedGroup, group_id=group.group_id, protocol_type="consumer", group_state=state,
                              group_type="consumer"))
    return found


async def delete(groups: GroupHost, consumer: ConsumerCoordinator, group_id: str) -> ErrorCode:
    """DeleteGroups of a consumer group: only when empty; its offsets and records tombstoned."""
    group = consumer.groups[group_id]
    error, records = consumer.delete_group(group_id)
    if error is not ErrorCode.NONE:
        return error
    from pykraft.records.group_records import OffsetKey
    offsets = [SimpleRecord(None, encode_key(OffsetKey(group_id, t, p))) for t, p in sorted(group.offsets)]
    return await groups.write_records(group_id, records, offsets)


# ---- classic members of a consumer group (broker/consumer_classic.py) -----------------------------------------------
def classic_sync(groups: GroupHost, m: Any, now_ms: int) -> Any:
    """SyncGroup to a consumer group, or None when the group is not one."""
    found = consumer_group(groups, m.group_id)
    if found is None:
        return None
    reply = consumer_classic.sync(found[0], found[1], m.member_id, getattr(m, "group_instance_id", None),
                                  int(m.generation_id), getattr(m, "protocol_type", None),
                                  getattr(m, "protocol_name", None), groups.image(), now_ms)
    groups._reschedule()
    return reply


def classic_heartbeat(groups: GroupHost, m: Any, now_ms: int) -> ErrorCode | None:
    found = consumer_group(groups, m.group_id)
    if found is None:
        return None
    error = consumer_classic.heartbeat(found[0], found[1], m.member_id, getattr(m, "group_instance_id", None),
                                       int(m.generation_id), now_ms)
    groups._reschedule()
    return error


async def classic_leave(groups: GroupHost, group_id: str,
                        identities: list[tuple[str, str | None]]) -> tuple[list[ErrorCode], ErrorCode] | None:
    """LeaveGroup to a consumer group: per-member errors, and the write's outcome."""
    found = consumer_group(groups, group_id)
    if found is None:
        return None
    errors, records = consumer_classic.leave(found[0], found[1], identities)
    groups._reschedule()
    error = await groups.write_records(group_id, records) if records else ErrorCode.NONE
    return errors, error
