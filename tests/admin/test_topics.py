"""AdminClient topic and broker operations: against a real in-process controller (create, describe, delete,
list brokers, every per-topic refusal as TopicError), and against a fake transport for the routing to the active
controller (NOT_CONTROLLER -> rediscovery, per-topic retries of DeleteTopics)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.create_topics.v7 import response as ct_resp
from kio.schema.delete_topics.v6 import response as dt_resp
from kio.schema.types import TopicName

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import TopicError
from pykraft.admin.model import BrokerInfo
from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey
from pykraft.protocol.errors import ErrorCode

from . import fakes
from .fakes import ZERO_MS, FakeClock, FakeTransport, describe_cluster
from .topic_cluster import broker_port, controller_with_brokers

A, B, C = ("127.0.0.1", 9093), ("127.0.0.1", 9094), ("127.0.0.1", 9095)


def client_for(port: int, kind: str = "controller") -> AdminClient:
    return AdminClient([("127.0.0.1", port)], bootstrap_kind=kind, deadline_ms=10_000, retry_backoff_ms=20)


@pytest.mark.asyncio
async def test_topics_and_brokers_against_a_real_controller(tmp_path):
    async with controller_with_brokers(tmp_path, brokers=(1, 2, 3), fenced=(3,), racks={1: "r1"}) as (port, _):
        async with client_for(port) as admin:
            assert await admin.list_brokers() == [
                BrokerInfo(1, "broker-1", broker_port(1), "r1", False),
                BrokerInfo(2, "broker-2", broker_port(2), None, False),
                BrokerInfo(3, "broker-3", broker_port(3), None, True)]

            created = await admin.create_topics("orders", partitions=3, replication_factor=2)
            assert (created.name, created.partitions, created.replication_factor) == ("orders", 3, 2)
            manual = await admin.create_topics("manual", replica_assignment=[[2, 1], [1, 2]],
                                               configs={"cleanup.policy": "compact"})
            assert (manual.partitions, manual.replication_factor) == (2, 2)
            dry = await admin.create_topics("dry", partitions=1, replication_factor=1, validate_only=True)
            assert dry.partitions == 1

            described = await admin.describe_topics()
            assert [t.name for t in described] == ["manual", "orders"]  # validate_only created nothing
            manual_d, orders_d = described
            assert orders_d.topic_id == created.topic_id and orders_d.replication_factor == 2
            assert [p.partition for p in orders_d.partitions] == [0, 1, 2]
            for partition in orders_d.partitions:  # placed on the two unfenced brokers only
                assert sorted(partition.replicas) == [1, 2] and partition.isr == partition.replicas
                assert partition.leader == partition.replicas[0] and partition.offline == ()
            assert [p.replicas for p in manual_d.partitions] == [(2, 1), (1, 2)]
            assert [t.name for t in await admin.describe_topics(["orders"])] == ["orders"]

            with pytest.raises(TopicError) as exists:
                await admin.create_topics("orders", partitions=1, replication_factor=1)
            assert exists.value.code == ErrorCode.TOPIC_ALREADY_EXISTS and exists.value.topic == "orders"
            assert exists.value.message == "Topic 'orders' already exists."
            with pytest.raises(TopicError) as too_many:
                await admin.create_topics("wide", partitions=1, replication_factor=3)
            assert too_many.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
            with pytest.raises(TopicError) as bad_name:
                await admin.create_topics("bad name", partitions=1, replication_factor=1)
            assert bad_name.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
            with pytest.raises(TopicError) as unknown:
                await admin.describe_topics(["nope"])
            assert unknown.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and unknown.value.topic == "nope"

            await admin.delete_topics(["orders", manual.topic_id])
            assert await admin.describe_topics() == []
            with pytest.raises(TopicError) as gone:
                await admin.delete_topics(["orders"])
            assert gone.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            with pytest.raises(TopicError) as gone_id:
                await admin.delete_topics([uuid.UUID(int=5)])
            assert gone_id.value.code == ErrorCode.UNKNOWN_TOPIC_ID

        # --bootstrap-server against the same node (it is the active controller): same results.
        async with client_for(port, kind="server") as admin:
            await admin.create_topics("via-server", partitions=1, replication_factor=1)
            assert [t.name for t in await admin.describe_topics()] == ["via-server"]


def _created(name: str, code: ErrorCode = ErrorCode.NONE):
    return ct_resp.CreateTopicsResponse(throttle_time=ZERO_MS, topics=(ct_resp.CreatableTopicResult(
        name=TopicName(name), topic_id=uuid.UUID(int=9) if code == ErrorCode.NONE else None, error_code=code,
        error_message=None, num_partitions=1, replication_factor=1, configs=()),))


def _deleted(*results: tuple[str, ErrorCode]):
    return dt_resp.DeleteTopicsResponse(throttle_time=ZERO_MS, responses=tuple(
        dt_resp.DeletableTopicResult(name=TopicName(n), topic_id=uuid.UUID(int=0), error_code=c, error_message=None)
        for n, c in results))


@pytest.fixture
def controller_apis(monkeypatch):
    """The fake transport decodes with the registry a controller host advertises (CreateTopics, DeleteTopics)."""
    monkeypatch.setattr(fakes, "KRAFT_NODE_APIS", KRAFT_NODE_APIS.with_range(ApiKey.CREATE_TOPICS, 2, 7)
                        .with_range(ApiKey.DELETE_TOPICS, 1, 6))


def _client(transport: FakeTransport, clock: FakeClock, kind: str) -> AdminClient:
    return AdminClient([A], transport=transport, clock=clock, sleep=clock.sleep, bootstrap_kind=kind,
                       deadline_ms=5000)


def test_bootstrap_server_not_controller_rediscovers_the_active_controller(controller_apis):
    transport, clock = FakeTransport(), FakeClock()

    def bootstrap(request):
        if request.api_key == ApiKey.DESCRIBE_CLUSTER:
            assert request.message.endpoint_type == 2
            return describe_cluster(3, {1: A, 2: B, 3: C})
        return _created("t", ErrorCode.NOT_CONTROLLER)

    transport.handlers = {A: bootstrap, C: lambda request: _created("t")}
    created = asyncio.run(_client(transport, clock, "server").create_topics("t", 1, 1))
    assert created.topic_id == uuid.UUID(int=9)
    assert transport.apis_sent() == [(A, "CREATE_TOPICS"), (A, "DESCRIBE_CLUSTER"), (C, "CREATE_TOPICS")]


def test_bootstrap_controller_follows_a_moved_leader(controller_apis):
    transport, clock = FakeTransport(), FakeClock()
    leaders = iter([2, 3])
    transport.handlers = {
        A: lambda request: describe_cluster(next(leaders), {1: A, 2: B, 3: C}),
        B: lambda request: _created("t", ErrorCode.NOT_CONTROLLER),
        C: lambda request: _created("t"),
    }
    asyncio.run(_client(transport, clock, "controller").create_topics("t", 1, 1))
    assert transport.apis_sent() == [(A, "DESCRIBE_CLUSTER"), (B, "CREATE_TOPICS"), (A, "DESCRIBE_CLUSTER"),
                                     (C, "CREATE_TOPICS")]
    assert len(clock.sleeps) == 1  # one backoff between the attempts


def test_delete_resends_only_the_topics_that_got_a_retriable_error(controller_apis):
    transport, clock = FakeTransport(), FakeClock()
    asked: list[list[str]] = []

    def controller(request):
        if request.api_key == ApiKey.DESCRIBE_CLUSTER:
            return describe_cluster(1, {1: A})
        names = [t.name for t in request.message.topics]
        asked.append(names)
        if len(asked) == 1:
            return _deleted(("a", ErrorCode.NONE), ("b", ErrorCode.REQUEST_TIMED_OUT),
                            ("c", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        return _deleted(("b", ErrorCode.NONE))

    transport.handlers = {A: controller}
    with pytest.raises(TopicError) as refused:
        asyncio.run(_client(transport, clock, "controller").delete_topics(["a", "b", "c"]))
    assert asked == [["a", "b", "c"], ["b"]]
    assert refused.value.topic == "c" and refused.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_non_retriable_top_level_answer_becomes_a_topic_error(controller_apis):
    transport, clock = FakeTransport(), FakeClock()
    transport.handlers = {A: lambda request: _created("t", ErrorCode.POLICY_VIOLATION)}
    with pytest.raises(TopicError) as refused:
        asyncio.run(_client(transport, clock, "server").create_topics("t", 1, 1))
    assert refused.value.code == ErrorCode.POLICY_VIOLATION and str(refused.value) == "POLICY_VIOLATION"
