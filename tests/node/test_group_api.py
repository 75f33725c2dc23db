"""The group requests' glue (node/apis/group_api.py) on an in-memory coordinator: answers at every served version.

`MemoryGroups` is a GroupHost whose __consumer_offsets has one partition, led and loaded here, and whose writes
succeed at once (the log path is covered by the multi-process tests in tests/e2e/test_consumer_groups.py).
"""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pykraft.broker.group_coordinator import GroupConfig, GroupCoordinator
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.node.apis.group_api import GroupApi
from pykraft.node.runtime.served_apis import GROUP_APIS
from pykraft.node.hosts.group_host import GroupHost
from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode

from protocol.schema_strategies import message

GROUP = "g"


class MemoryGroups(GroupHost):
    def __init__(self, loaded: bool) -> None:
        super().__init__(SimpleNamespace(cache=MetadataCache(), replicas={}),
                         GroupConfig(initial_rebalance_delay_ms=0), clock=lambda: 1000)
        self.loaded = loaded
        if loaded:
            self.coordinators[0] = GroupCoordinator(self.config)
        self.written: list[str] = []

    def partition_count(self) -> int | None:
        return super().partition_count() or (1 if self.loaded else None)  # the cache's topic when it has one

    async def write(self, group_id: str, records: Any) -> ErrorCode:
        self.written.append(group_id)
        return ErrorCode.NONE


def api(loaded: bool = True) -> GroupApi:
    async def forward(api_key: int, request: Any) -> Any:
        return None

    node_config = SimpleNamespace(raw={}, is_broker=True, is_controller=False, controller_listener_names=("CONTROLLER",))
    broker = SimpleNamespace(cache=MetadataCache(), _now=lambda: 1000, forward=forward,
                             data_plane=SimpleNamespace(node_config=node_config, _address_of=lambda broker_id: None))
    return GroupApi(broker, MemoryGroups(loaded))  # type: ignore[arg-type]


def call(group_api: GroupApi, api_key: ApiKey, version: int, listener: str | None = None, **fields: Any) -> Any:
    cls = request_class(api_key, version)
    request = cls(**fields)
    decoded = SimpleNamespace(message=request, client_id="client", api_key=api_key,
                              context=SimpleNamespace(listener_name=listener))
    answer = asyncio.run(asyncio.wait_for(group_api.handlers()[api_key](decoded), 5))
    encode_response(1, answer)  # every answer must be writable at the request's version
    return answer


def join(group_api: GroupApi, version: int, member_id: str = "") -> Any:
    ns = request_class(ApiKey.JOIN_GROUP, version)
    module = __import__(ns.__module__, fromlist=["JoinGroupRequestProtocol"])
    values = dict(group_id=GROUP, session_timeout=datetime.timedelta(seconds=10),
                  rebalance_timeout=datetime.timedelta(seconds=30), member_id=member_id, protocol_type="consumer",
                  protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"sub"),))
    if version >= 5:
        values["group_instance_id"] = None
    if version >= 8:
        values["reason"] = None
    return call(group_api, ApiKey.JOIN_GROUP, version, **values)


@pytest.mark.parametrize("version", range(GROUP_APIS[ApiKey.JOIN_GROUP][0], GROUP_APIS[ApiKey.JOIN_GROUP][1] + 1))
def test_join_sync_commit_fetch_describe_and_leave_at_each_join_version(version):
    group_api = api()
    first = join(group_api, version)
    if version >= 4:
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
        first = join(group_api, version, first.member_id)
    assert first.error_code == ErrorCode.NONE and first.leader == first.member_id and len(first.members) == 1
    member, generation = first.member_id, int(first.generation_id)
    sync_ns = __import__(request_class(ApiKey.SYNC_GROUP, 3).__module__, fromlist=["x"])
    synced = call(group_api, ApiKey.SYNC_GROUP, 3, group_id=GROUP, generation_id=generation, member_id=member,
                  group_instance_id=None, assignments=(sync_ns.SyncGroupRequestAssignment(member_id=member,
                                                                                          assignment=b"A"),))
    assert synced.error_code == ErrorCode.NONE and synced.assignment == b"A"
    assert group_api.groups.written == [GROUP]  # the assignment was written before SyncGroup was answered
    beat = call(group_api, ApiKey.HEARTBEAT, 4, group_id=GROUP, generation_id=generation, member_id=member,
                group_instance_id=None)
    assert beat.error_code == ErrorCode.NONE
    oc = __import__(request_class(ApiKey.OFFSET_COMMIT, 9).__module__, fromlist=["x"])
    committed = call(group_api, ApiKey.OFFSET_COMMIT, 9, group_id=GROUP, generation_id_or_member_epoch=generation,
                     member_id=member, group_instance_id=None, topics=(oc.OffsetCommitRequestTopic(
                         name="t", partitions=(oc.OffsetCommitRequestPartition(
                             partition_index=0, committed_offset=17, committed_leader_epoch=2,
                             committed_metadata="m"),)),))
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE
    of = __import__(request_class(ApiKey.OFFSET_FETCH, 7).__module__, fromlist=["x"])
    fetched = call(group_api, ApiKey.OFFSET_FETCH, 7, group_id=GROUP, require_stable=False,
                   topics=(of.OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1)),))
    parts = fetched.topics[0].partitions
    assert [(int(p.committed_offset), int(p.committed_leader_epoch)) for p in parts] == [(17, 2), (-1, -1)]
    multi = call(group_api, ApiKey.OFFSET_FETCH, 9, require_stable=False, groups=(
        __import__(request_class(ApiKey.OFFSET_FETCH, 9).__module__, fromlist=["x"]).OffsetFetchRequestGroup(
            group_id=GROUP, member_id=None, member_epoch=-1, topics=None),))
    assert int(multi.groups[0].topics[0].partitions[0].committed_offset) == 17  # null topics: every offset
    described = call(group_api, ApiKey.DESCRIBE_GROUPS, 5, groups=(GROUP,), include_authorized_operations=False)
    assert described.groups[0].group_state == "Stable" and described.groups[0].members[0].member_assignment == b"A"
    listed = call(group_api, ApiKey.LIST_GROUPS, 4, states_filter=("Stable",))
    assert [g.group_id for g in listed.groups] == [GROUP]
    lg = __import__(request_class(ApiKey.LEAVE_GROUP, 5).__module__, fromlist=["x"])
    left = call(group_api, ApiKey.LEAVE_GROUP, 5, group_id=GROUP, members=(
        lg.MemberIdentity(member_id=member, group_instance_id=None, reason=None),))
    assert left.members[0].error_code == ErrorCode.NONE
    deleted = call(group_api, ApiKey.DELETE_GROUPS, 2, groups_names=(GROUP, "absent"))
    assert [r.error_code for r in deleted.results] == [ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND]


def test_without_the_offsets_topic_every_request_says_coordinator_not_available():
    group_api = api(loaded=False)
    found = call(group_api, ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("a", "b"))
    assert [c.error_code for c in found.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 2
    old = call(group_api, ApiKey.FIND_COORDINATOR, 0, key="a")
    assert old.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE and int(old.node_id) == -1
    assert join(group_api, 2).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    beat = call(group_api, ApiKey.HEARTBEAT, 0, group_id=GROUP, generation_id=1, member_id="m")
    assert beat.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def _all_versions():
    return [(key, v) for key, (low, high) in GROUP_APIS.items() for v in range(low, high + 1)]


@pytest.mark.parametrize("api_key,version", _all_versions())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=__import__("hypothesis").strategies.data())
def test_any_request_gets_an_encodable_answer(api_key, version, data):
    """Random requests (hypothesis, from the schema) at every served version: an answer, never an exception."""
    request = data.draw(message(request_class(api_key, version), hints=(("group_id", (GROUP,)),)))
    group_api = api()
    decoded = SimpleNamespace(message=request, client_id="client", api_key=api_key)
    answer = asyncio.run(asyncio.wait_for(group_api.handlers()[api_key](decoded), 5))
    encode_response(1, answer)


def test_a_simple_consumer_commits_and_oversized_metadata_is_refused_per_partition():
    group_api = api()
    oc = __import__(request_class(ApiKey.OFFSET_COMMIT, 8).__module__, fromlist=["x"])
    answer = call(group_api, ApiKey.OFFSET_COMMIT, 8, group_id="solo", generation_id_or_member_epoch=-1,
                  member_id="", group_instance_id=None, topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(
                      oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                                                      committed_metadata="x" * 5000),
                      oc.OffsetCommitRequestPartition(partition_index=1, committed_offset=6, committed_leader_epoch=-1,
                                                      committed_metadata=None))),))
    assert [p.error_code for p in answer.topics[0].partitions] == [ErrorCode.OFFSET_METADATA_TOO_LARGE,
                                                                   ErrorCode.NONE]
    offsets = group_api.groups.coordinators[0].groups["solo"].offsets
    assert set(offsets) == {("t", 1)} and offsets[("t", 1)].offset == 6


def test_find_coordinator_names_the_leader_of_the_groups_partition():
    import uuid

    from pykraft.controller.cluster import BrokerRegistration, Endpoint
    from pykraft.records.group_records import partition_for

    from broker.records import partition, topic

    group_api = api(loaded=False)
    cache = group_api.broker.cache
    offsets_id = uuid.UUID(int=77)
    # Broker 2 has a second listener, EXTERNAL; broker 1 has only PLAINTEXT.
    records = [BrokerRegistration(broker_id=b, epoch=b, incarnation_id=uuid.UUID(int=b),
                                  listeners=(Endpoint("PLAINTEXT", "127.0.0.1", 9000 + b, 0),
                                             *((Endpoint("EXTERNAL", "public-2", 9102, 0),) if b == 2 else ())),
                                  features=(), rack=None, fenced=False, in_controlled_shutdown=False).to_record()
               for b in (1, 2)]
    records += [topic("__consumer_offsets", offsets_id), partition(0, [1, 2], [1, 2], 1, offsets_id),
                partition(1, [1, 2], [1, 2], 2, offsets_id)]
    cache.replay_all(enumerate(records))
    group_api.groups.host.cache = cache
    keys = ("a", "b", "c", "d")
    found = call(group_api, ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=keys)
    expected = [1 + partition_for(k, 2) for k in keys]  # partition 0 led by 1, partition 1 by 2
    assert [int(c.node_id) for c in found.coordinators] == expected
    assert [int(c.port) for c in found.coordinators] == [9000 + b for b in expected]
    assert {c.error_code for c in found.coordinators} == {ErrorCode.NONE}
    refused = call(group_api, ApiKey.FIND_COORDINATOR, 4, key_type=5, coordinator_keys=("a",))
    assert refused.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    # On EXTERNAL: broker 2 by its EXTERNAL endpoint; broker 1 has none, so its groups' coordinator cannot be
    # reached from there (Kafka's getAliveBrokerNode on the request's listener): COORDINATOR_NOT_AVAILABLE.
    external = call(group_api, ApiKey.FIND_COORDINATOR, 4, listener="EXTERNAL", key_type=0, coordinator_keys=keys)
    assert [(c.host, int(c.port)) if c.error_code == ErrorCode.NONE else ErrorCode(c.error_code)
            for c in external.coordinators] == [("public-2", 9102) if b == 2 else ErrorCode.COORDINATOR_NOT_AVAILABLE
                                                for b in expected]
    assert 1 in expected and 2 in expected  # both cases are met by these keys


def test_offset_delete_refuses_subscribed_topics_and_deletes_the_others():
    import struct

    from pykraft.broker.group_coordinator import JoinRequest
    from pykraft.broker.group_state import OffsetEntry

    group_api = api()
    coordinator = group_api.groups.coordinators[0]
    subscription = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", 0)  # v0: topics ["t"], no user data
    coordinator.join(JoinRequest(GROUP, "", None, "c", "/h", 10_000, 30_000, "consumer",
                                 (("range", subscription),), False), "j", 0)
    coordinator.poll(10)
    coordinator.offsets_committed(GROUP, {("t", 0): OffsetEntry(1, -1, "", 0), ("u", 0): OffsetEntry(2, -1, "", 0)})
    od = __import__(request_class(ApiKey.OFFSET_DELETE, 0).__module__, fromlist=["x"])
    answer = call(group_api, ApiKey.OFFSET_DELETE, 0, group_id=GROUP, topics=tuple(
        od.OffsetDeleteRequestTopic(name=n, partitions=(od.OffsetDeleteRequestPartition(partition_index=0),))
        for n in ("t", "u")))
    assert answer.error_code == ErrorCode.NONE
    assert [t.partitions[0].error_code for t in answer.topics] == [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.NONE]
    assert set(coordinator.groups[GROUP].offsets) == {("t", 0)}
    missing = call(group_api, ApiKey.OFFSET_DELETE, 0, group_id="nope", topics=())
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
