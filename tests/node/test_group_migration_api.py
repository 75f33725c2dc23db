"""The online migration through a broker's handlers (node/apis/consumer_group_api.py, group_api.py) on
test_group_api's in-memory coordinator: a classic member's JoinGroup/SyncGroup, a ConsumerGroupHeartbeat that
upgrades the group, the classic member's Heartbeat/JoinGroup/SyncGroup answered by the consumer coordinator,
ConsumerGroupDescribe's member types, and the downgrade when the consumer-protocol member leaves: what is written to
`__consumer_offsets`, in Kafka's order.
"""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as cg
from pykraft.records.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from pykraft.records.group_records import GroupKey, decode_group_value, decode_key

from node.test_consumer_group_api import apis, heartbeat, run
from node.test_group_api import GROUP, call
from protocol.schema_strategies import message


def _capture(group_api) -> list[tuple[Any, Any]]:
    """Every record the host writes, decoded: (key, value or None)."""
    written: list[tuple[Any, Any]] = []

    async def write(group_id: str, records: Any) -> ErrorCode:
        for record in records:
            key = bytes(record.key)
            kind = cg.key_type(key)
            if kind in cg.CONSUMER_GROUP_KEY_TYPES:
                decoded = cg.decode_key(key)
                written.append((decoded, None if record.value is None else cg.decode_value(kind, bytes(record.value))))
            else:
                decoded = decode_key(key)
                written.append((decoded, None if record.value is None or not isinstance(decoded, GroupKey)
                                else decode_group_value(bytes(record.value))))
        return ErrorCode.NONE
    group_api.groups.write = write
    return written


def _join(group_api, member_id: str, version: int = 3) -> Any:
    cls = request_class(ApiKey.JOIN_GROUP, version)
    module = __import__(cls.__module__, fromlist=["JoinGroupRequestProtocol"])
    return call(group_api, ApiKey.JOIN_GROUP, version, group_id=GROUP, session_timeout=datetime.timedelta(seconds=10),
                rebalance_timeout=datetime.timedelta(seconds=30), member_id=member_id, protocol_type="consumer",
                protocols=(module.JoinGroupRequestProtocol(name="range", metadata=encode_subscription(["t"])),))


def _sync(group_api, member_id: str, generation: int, assignments=()) -> Any:
    cls = request_class(ApiKey.SYNC_GROUP, 3)
    module = __import__(cls.__module__, fromlist=["SyncGroupRequestAssignment"])
    return call(group_api, ApiKey.SYNC_GROUP, 3, group_id=GROUP, generation_id=generation, member_id=member_id,
                group_instance_id=None, assignments=tuple(
                    module.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments))


def _beat(group_api, member_id: str, generation: int) -> ErrorCode:
    return call(group_api, ApiKey.HEARTBEAT, 3, group_id=GROUP, generation_id=generation, member_id=member_id,
                group_instance_id=None).error_code


def test_a_classic_group_with_a_member_is_upgraded_served_and_downgraded_through_the_handlers():
    group_api, consumer_api = apis()
    written = _capture(group_api)
    joined = _join(group_api, "")
    classic_id = joined.member_id
    assert (joined.error_code, int(joined.generation_id), joined.leader) == (ErrorCode.NONE, 1, classic_id)
    everything = encode_assignment([("t", 0), ("t", 1), ("t", 2)])
    assert _sync(group_api, classic_id, 1, [(classic_id, everything)]).error_code == ErrorCode.NONE
    written.clear()

    upgraded = heartbeat(consumer_api, "java", 0)
    assert (upgraded.error_code, int(upgraded.member_epoch)) == (ErrorCode.NONE, 2)
    assert GROUP not in group_api.groups.coordinators[0].groups
    assert written[0] == (GroupKey(GROUP), None)  # the classic group's tombstone first
    assert [key.type for key, _ in written[1:6]] == [cg.MEMBER_METADATA, cg.METADATA, cg.TARGET_MEMBER,
                                                     cg.TARGET_METADATA, cg.CURRENT_ASSIGNMENT]
    assert written[1][1].classic is not None and written[2][1] == cg.GroupEpochValue(1)
    described = run(consumer_api, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=(GROUP,),
                    include_authorized_operations=False).groups[0]
    assert {m.member_id: int(m.member_type) for m in described.members} == {classic_id: 0, "java": 1}

    assert _beat(group_api, classic_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = _join(group_api, classic_id)
    assert (rejoined.error_code, int(rejoined.generation_id), rejoined.leader, rejoined.protocol_name) == (
        ErrorCode.NONE, 2, "", "range")
    synced = _sync(group_api, classic_id, 2)
    target = group_api.groups.consumers[0].groups[GROUP].target[classic_id]
    assert decode_assignment(synced.assignment) == sorted(("t", n) for numbers in target.values() for n in numbers)
    assert _beat(group_api, classic_id, 2) == ErrorCode.NONE

    written.clear()
    assert heartbeat(consumer_api, "java", -1).error_code == ErrorCode.NONE
    assert GROUP not in group_api.groups.consumers[0].groups
    key, value = written[-1]
    assert key == GroupKey(GROUP) and value.generation == 2 and [m.member_id for m in value.members] == [classic_id]
    assert all(v is None for _, v in written[:-1]) and written[-2][0].type == cg.METADATA
    classic = group_api.groups.coordinators[0].groups[GROUP]
    assert classic.state.value == "PreparingRebalance"
    assert _beat(group_api, classic_id, 2) == ErrorCode.REBALANCE_IN_PROGRESS  # the classic coordinator now


def test_the_migration_policy_is_read_from_the_broker_settings_and_a_disabled_upgrade_refuses():
    from pykraft.broker.group_migration import MigrationPolicy
    from pykraft.node.hosts.consumer_group_host import consumer_group_config
    assert consumer_group_config({}).migration_policy is MigrationPolicy.BIDIRECTIONAL  # Kafka 4.0's default
    assert consumer_group_config({"group.consumer.migration.policy": "Downgrade"}).migration_policy \
        is MigrationPolicy.DOWNGRADE
    with pytest.raises(ValueError, match="group.consumer.migration.policy"):
        consumer_group_config({"group.consumer.migration.policy": "both"})
    group_api, consumer_api = apis()
    group_api.groups.consumer_config = consumer_group_config({"group.consumer.migration.policy": "downgrade"})
    classic_id = _join(group_api, "").member_id
    _sync(group_api, classic_id, 1, [(classic_id, encode_assignment([("t", 0)]))])
    refused = heartbeat(consumer_api, "java", 0)
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {GROUP} to consumer group because online upgrade "
                                      f"is disabled.")
    assert group_api.groups.coordinators[0].groups[GROUP].members  # untouched
    assert _beat(group_api, classic_id, 1) == ErrorCode.NONE


def _classic_requests():
    from pykraft.node.runtime.served_apis import GROUP_APIS
    keys = (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT)
    return [(key, v) for key in keys for v in range(GROUP_APIS[key][0], GROUP_APIS[key][1] + 1)]


@pytest.mark.parametrize("api_key,version", _classic_requests())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_classic_request_to_a_migrated_group_gets_an_encodable_answer(api_key, version, data):
    """Fuzzed classic requests to a consumer group holding a classic member: an answer at the request's version
    (Kafka's error codes), never a crash."""
    group_api, consumer_api = apis()
    classic_id = _join(group_api, "").member_id
    _sync(group_api, classic_id, 1, [(classic_id, encode_assignment([("t", 0)]))])
    heartbeat(consumer_api, "java", 0)
    request = data.draw(message(request_class(api_key, version), hints=(("group_id", (GROUP,)),
                                                                         ("member_id", (classic_id, "java", "")))))
    decoded = SimpleNamespace(message=request, client_id="client", api_key=api_key,
                              context=SimpleNamespace(listener_name=None))
    answer = asyncio.run(asyncio.wait_for(group_api.handlers()[api_key](decoded), 5))
    encode_response(1, answer)
