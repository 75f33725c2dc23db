"""ConsumerGroupHeartbeat / ConsumerGroupDescribe and what the classic requests do with consumer groups
(node/apis/consumer_group_api.py, group_api.py), on test_group_api's in-memory coordinator: the group.version
gate, offsets with member epochs, ListGroups' types, DescribeGroups of a consumer group, DeleteGroups, and the
conversions of empty groups between the two protocols (Kafka's online upgrade and downgrade of an empty group).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.node.apis.consumer_group_api import ConsumerGroupApi
from pykraft.node.runtime.served_apis import CONSUMER_GROUP_APIS
from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import FeatureLevelRecordV0

from broker.records import partition, topic
from node.test_group_api import GROUP, api, call, join
from protocol.schema_strategies import message

TOPIC_ID = uuid.UUID(int=5)


def apis(group_version: int = 1):
    from kio.static.primitive import i16
    group_api = api()
    group_api.broker.cache.replay_all(enumerate([FeatureLevelRecordV0(name="group.version",
                                                                      feature_level=i16(group_version))]))
    group_api.groups.host.cache.replay_all(enumerate([topic("t", TOPIC_ID)] + [
        partition(p, [1], [1], 1, TOPIC_ID) for p in range(3)]))
    return group_api, ConsumerGroupApi(group_api.broker, group_api.groups)


def run(consumer_api: ConsumerGroupApi, api_key: ApiKey, version: int, **fields):
    decoded = SimpleNamespace(message=request_class(api_key, version)(**fields), client_id="c", api_key=api_key)
    answer = asyncio.run(asyncio.wait_for(consumer_api.handlers()[api_key](decoded), 5))
    encode_response(1, answer)
    return answer


def heartbeat(consumer_api, member: str, epoch: int, version: int = 1, group: str = GROUP, owned=()):
    ns = __import__(request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, version).__module__, fromlist=["x"])
    joining = epoch == 0
    fields = dict(group_id=group, member_id=member, member_epoch=epoch,
                  rebalance_timeout=datetime.timedelta(seconds=30 if joining else -0.001),
                  subscribed_topic_names=("t",) if joining else None,
                  topic_partitions=tuple(ns.TopicPartitions(topic_id=TOPIC_ID, partitions=tuple(owned)) for _ in [0]
                                         if owned) if joining or owned else None)
    if joining:
        fields["topic_partitions"] = ()
    return run(consumer_api, ApiKey.CONSUMER_GROUP_HEARTBEAT, version, **fields)


def test_heartbeat_describe_and_list_a_consumer_group():
    group_api, consumer_api = apis()
    joined = heartbeat(consumer_api, "member-a", 0)
    assert (joined.error_code, joined.member_id, int(joined.member_epoch)) == (ErrorCode.NONE, "member-a", 1)
    assert [(tp.topic_id, list(tp.partitions)) for tp in joined.assignment.topic_partitions] == [(TOPIC_ID, [0, 1, 2])]
    assert joined.heartbeat_interval == datetime.timedelta(seconds=5)
    assert group_api.groups.written == [GROUP]  # the records were written before the answer
    described = run(consumer_api, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=(GROUP, "absent"),
                    include_authorized_operations=False)
    group, absent = described.groups
    assert (group.group_state, int(group.group_epoch), int(group.assignment_epoch), group.assignor_name) == (
        "Stable", 1, 1, "uniform")
    member = group.members[0]
    assert [(tp.topic_name, list(tp.partitions)) for tp in member.assignment.topic_partitions] == [("t", [0, 1, 2])]
    assert member.target_assignment == member.assignment and int(member.member_type) == 1
    assert (absent.error_code, absent.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group absent not found.")
    consumer_only = call(group_api, ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=("consumer",))
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in consumer_only.groups] == [
        (GROUP, "consumer", "consumer", "Stable")]
    assert call(group_api, ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=("classic",)).groups == ()
    assert call(group_api, ApiKey.LIST_GROUPS, 5, states_filter=("empty",), types_filter=()).groups == ()
    classic = call(group_api, ApiKey.DESCRIBE_GROUPS, 5, groups=(GROUP,), include_authorized_operations=False)
    assert classic.groups[0].group_state == "Dead" and classic.groups[0].members == ()  # Kafka's answer before v6
    v6 = call(group_api, ApiKey.DESCRIBE_GROUPS, 6, groups=(GROUP, "absent"), include_authorized_operations=False)
    assert [(g.error_code, g.error_message, g.group_state) for g in v6.groups] == [
        (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {GROUP} is not a classic group.", "Dead"),
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group absent not found.", "Dead")]


def test_without_group_version_1_or_the_consumer_protocol_both_apis_are_unsupported():
    from pykraft.node.hosts.consumer_group_host import consumer_group_config
    for group_version, protocols in ((0, "classic,consumer"), (1, "classic")):
        group_api, consumer_api = apis(group_version=group_version)
        group_api.groups.consumer_config = consumer_group_config({"group.coordinator.rebalance.protocols": protocols})
        assert heartbeat(consumer_api, "member-a", 0).error_code == ErrorCode.UNSUPPORTED_VERSION
        described = run(consumer_api, ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=(GROUP,),
                        include_authorized_operations=False)
        assert described.groups[0].error_code == ErrorCode.UNSUPPORTED_VERSION


def test_group_consumer_settings_and_kafkas_cross_checks():
    from pykraft.node.hosts.consumer_group_host import consumer_group_config
    config = consumer_group_config({"group.consumer.session.timeout.ms": "50000",
                                    "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
                                    "group.consumer.max.size": "7"})
    assert (config.session_timeout_ms, config.assignors, config.max_size, config.enabled) == (
        50000, ("range", "uniform"), 7, True)
    refused = [({"group.consumer.session.timeout.ms": "70000"}, "between group.consumer.min.session.timeout.ms"),
               ({"group.consumer.heartbeat.interval.ms": "4000"}, "between group.consumer.min.heartbeat.interval.ms"),
               ({"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "5000"},
                "must be less than group.consumer.session.timeout.ms"),
               ({"group.consumer.assignors": "sticky"}, "sticky is not an assignor"),
               ({"group.coordinator.rebalance.protocols": "consumer"}, "must contain classic"),
               ({"group.coordinator.rebalance.protocols": "classic,share"}, "share groups are not implemented")]
    for raw, reason in refused:
        with pytest.raises(ValueError, match=reason):
            consumer_group_config(raw)


def test_offsets_of_a_consumer_group_carry_the_member_epoch():
    group_api, consumer_api = apis()
    heartbeat(consumer_api, "member-a", 0)
    oc = __import__(request_class(ApiKey.OFFSET_COMMIT, 9).__module__, fromlist=["x"])

    def commit(epoch: int, version: int = 9) -> ErrorCode:
        answer = call(group_api, ApiKey.OFFSET_COMMIT, version, group_id=GROUP, generation_id_or_member_epoch=epoch,
                      member_id="member-a", group_instance_id=None, topics=(oc.OffsetCommitRequestTopic(
                          name="t", partitions=(oc.OffsetCommitRequestPartition(
                              partition_index=0, committed_offset=40, committed_leader_epoch=1,
                              committed_metadata=""),)),))
        return answer.topics[0].partitions[0].error_code

    assert commit(0) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(1, version=8) == ErrorCode.UNSUPPORTED_VERSION  # KIP-848 members commit with v9+
    assert commit(1) == ErrorCode.NONE
    of = __import__(request_class(ApiKey.OFFSET_FETCH, 9).__module__, fromlist=["x"])

    def fetch(member_id, epoch):
        return call(group_api, ApiKey.OFFSET_FETCH, 9, require_stable=False, groups=(of.OffsetFetchRequestGroup(
            group_id=GROUP, member_id=member_id, member_epoch=epoch, topics=None),)).groups[0]

    assert fetch("member-a", 7).error_code == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("someone", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    found = fetch("member-a", 1)
    assert found.error_code == ErrorCode.NONE and int(found.topics[0].partitions[0].committed_offset) == 40
    assert int(fetch(None, -1).topics[0].partitions[0].committed_offset) == 40  # the admin's fetch
    assert GROUP not in group_api.groups.coordinators[0].groups  # no classic group on the side
    refused = call(group_api, ApiKey.DELETE_GROUPS, 2, groups_names=(GROUP,))
    assert refused.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    assert heartbeat(consumer_api, "member-a", -1).error_code == ErrorCode.NONE
    deleted = call(group_api, ApiKey.DELETE_GROUPS, 2, groups_names=(GROUP,))
    assert deleted.results[0].error_code == ErrorCode.NONE and GROUP not in group_api.groups.consumers[0].groups


def test_an_empty_classic_group_is_upgraded_and_an_empty_consumer_group_downgraded():
    group_api, consumer_api = apis()
    oc = __import__(request_class(ApiKey.OFFSET_COMMIT, 8).__module__, fromlist=["x"])
    call(group_api, ApiKey.OFFSET_COMMIT, 8, group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
         group_instance_id=None, topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(
             oc.OffsetCommitRequestPartition(partition_index=1, committed_offset=9, committed_leader_epoch=-1,
                                             committed_metadata=None),)),))
    assert GROUP in group_api.groups.coordinators[0].groups  # an empty (simple) classic group with an offset
    upgraded = heartbeat(consumer_api, "member-a", 0)
    assert upgraded.error_code == ErrorCode.NONE
    assert GROUP not in group_api.groups.coordinators[0].groups
    assert group_api.groups.consumers[0].groups[GROUP].offsets[("t", 1)].offset == 9  # the offsets came along
    # a classic member joins the consumer group (online migration): first the member id, as Kafka asks for it
    assert join(group_api, 5).error_code == ErrorCode.MEMBER_ID_REQUIRED
    heartbeat(consumer_api, "member-a", -1)
    downgraded = join(group_api, 3)  # the consumer group is empty now: a classic JoinGroup converts it
    assert downgraded.error_code == ErrorCode.NONE and GROUP not in group_api.groups.consumers[0].groups
    assert group_api.groups.coordinators[0].groups[GROUP].offsets[("t", 1)].offset == 9
    refused = heartbeat(consumer_api, "member-b", 0)  # a member whose subscription is not the consumer protocol's
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {GROUP} to consumer group because the embedded "
                                      f"consumer protocol is malformed.")
    assert GROUP in group_api.groups.coordinators[0].groups and GROUP not in group_api.groups.consumers[0].groups


def _versions():
    return [(key, v) for key, (low, high) in CONSUMER_GROUP_APIS.items() for v in range(low, high + 1)]


@pytest.mark.parametrize("api_key,version", _versions())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_request_gets_an_encodable_answer(api_key, version, data):
    request = data.draw(message(request_class(api_key, version), hints=(("group_id", (GROUP,)),)))
    _, consumer_api = apis()
    decoded = SimpleNamespace(message=request, client_id="client", api_key=api_key)
    answer = asyncio.run(asyncio.wait_for(consumer_api.handlers()[api_key](decoded), 5))
    encode_response(1, answer)


def test_offsets_retention_expires_a_consumer_groups_offsets_and_then_the_empty_group():
    group_api, consumer_api = apis()
    heartbeat(consumer_api, "member-a", 0)
    oc = __import__(request_class(ApiKey.OFFSET_COMMIT, 9).__module__, fromlist=["x"])
    call(group_api, ApiKey.OFFSET_COMMIT, 9, group_id=GROUP, generation_id_or_member_epoch=1, member_id="member-a",
         group_instance_id=None, topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(
             oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=3, committed_leader_epoch=-1,
                                             committed_metadata=""),)),))
    heartbeat(consumer_api, "member-a", -1)
    groups = group_api.groups
    groups.config = type(groups.config)(offsets_retention_ms=0)
    written = len(groups.written)

    async def expire() -> bool:
        groups._expire()
        await asyncio.sleep(0.05)
        gone = GROUP not in groups.consumers[0].groups
        groups.close()
        return gone
    assert asyncio.run(expire()) and len(groups.written) == written + 1
