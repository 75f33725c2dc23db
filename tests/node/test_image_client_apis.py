"""Metadata and DescribeCluster answered from the controller's metadata image, over the wire, at several versions:
one in-process controller, two brokers registered through it (one later fenced), topics with manual placement."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.broker_registration.v4 import request as reg_v4
from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.describe_cluster.v0.request import DescribeClusterRequest as DescribeClusterV0
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as DescribeClusterV1
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest as DescribeClusterV2
from kio.schema.metadata.v0 import request as md_v0
from kio.schema.metadata.v1 import request as md_v1
from kio.schema.metadata.v9 import request as md_v9
from kio.schema.metadata.v12 import request as md_v12
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64, u16

from pykraft.controller.controller import CREATE_TOPICS
from pykraft.controller.features import LATEST_METADATA_VERSION
from pykraft.node.runtime import client_apis
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_TOPIC

from .helpers import CLUSTER_ID, call, free_ports, make_config, wait_for

CONTROLLER = 1
LIVE, FENCED = 7, 8
PORTS = {LIVE: 9192, FENCED: 9193}


def registration(broker_id: int) -> reg_v4.BrokerRegistrationRequest:
    listeners = (reg_v4.Listener(name="PLAINTEXT", host=f"broker-{broker_id}", port=u16(PORTS[broker_id]),
                                 security_protocol=i16(0)),
                 reg_v4.Listener(name="SSL", host=f"broker-{broker_id}", port=u16(PORTS[broker_id] + 100),
                                 security_protocol=i16(1)))
    return reg_v4.BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id), cluster_id=CLUSTER_ID, incarnation_id=uuid.UUID(int=broker_id << 64 | 1),
        listeners=listeners,
        features=(reg_v4.Feature(name="metadata.version", min_supported_version=i16(7),
                                 max_supported_version=i16(LATEST_METADATA_VERSION)),),
        rack="rack-a" if broker_id == LIVE else None, log_dirs=(uuid.UUID(int=(7 << 96) | broker_id),))


def heartbeat(broker_id: int, epoch: int, offset: int, *, fence: bool = False) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=BrokerId(broker_id), broker_epoch=i64(epoch),
                                  current_metadata_offset=i64(offset), want_fence=fence, want_shut_down=False)


def create_manual(name: str, assignment: list[list[int]]) -> ct_req.CreateTopicsRequest:
    topic = ct_req.CreatableTopic(
        name=TopicName(name), num_partitions=i32(-1), replication_factor=i16(-1), configs=(),
        assignments=tuple(ct_req.CreatableReplicaAssignment(partition_index=i32(i),
                                                            broker_ids=tuple(BrokerId(b) for b in replicas))
                          for i, replicas in enumerate(assignment)))
    return ct_req.CreateTopicsRequest(topics=(topic,), timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
                                      validate_only=False)


def host(runtime: NodeRuntime) -> ControllerHost:
    assert isinstance(runtime.state_machine, ControllerHost)
    return runtime.state_machine


def brokers_of(response) -> list[tuple[int, str, int]]:
    return [(int(b.node_id), b.host, int(b.port)) for b in response.brokers]


def partitions_of(topic) -> list[tuple]:
    return [(int(p.partition_index), ErrorCode(p.error_code), int(p.leader_id), [int(r) for r in p.replica_nodes],
             [int(r) for r in p.isr_nodes], [int(r) for r in getattr(p, "offline_replicas", ())])
            for p in topic.partitions]


async def started(tmp_path) -> tuple[int, NodeRuntime]:
    port = free_ports(1)[0]
    runtime = controller_runtime(make_config(tmp_path, CONTROLLER, {CONTROLLER: port}))
    await runtime.start()
    await wait_for(lambda: host(runtime).controller.active and bool(host(runtime).controller.features.finalized))
    return port, runtime


async def populate(port: int, runtime: NodeRuntime) -> dict[str, uuid.UUID]:
    """Brokers 7 and 8 registered and unfenced; topic `orders` on [7,8],[8,7], `solo` on [8]; then 8 fenced."""
    epochs = {}
    for broker in (LIVE, FENCED):
        answer = await call(port, registration(broker))
        assert answer.error_code == ErrorCode.NONE
        epochs[broker] = int(answer.broker_epoch)
    for broker in (LIVE, FENCED):
        beat = await call(port, heartbeat(broker, epochs[broker], runtime.core.high_watermark))
        assert beat.error_code == ErrorCode.NONE
    cluster = host(runtime).controller.cluster
    await wait_for(lambda: not cluster.is_fenced(LIVE) and not cluster.is_fenced(FENCED))
    ids = {}
    for name, assignment in (("orders", [[LIVE, FENCED], [FENCED, LIVE]]), ("solo", [[FENCED]])):
        created = (await host(runtime).request(CREATE_TOPICS, create_manual(name, assignment))).topics[0]
        assert created.error_code == ErrorCode.NONE
        ids[name] = created.topic_id
    fenced = await call(port, heartbeat(FENCED, epochs[FENCED], runtime.core.high_watermark, fence=True))
    assert fenced.error_code == ErrorCode.NONE
    await wait_for(lambda: cluster.is_fenced(FENCED))
    return ids


@pytest.mark.asyncio
async def test_metadata_and_describe_cluster_answer_from_the_image(tmp_path):
    port, runtime = await started(tmp_path)
    try:
        controllers = [(CONTROLLER, "127.0.0.1", port)]
        # No broker registered yet: the controllers stand in for the brokers (stock clients bootstrap this way).
        before = await call(port, md_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                          include_topic_authorized_operations=False))
        assert brokers_of(before) == controllers and before.topics == ()
        dc_before = await call(port, DescribeClusterV1(include_cluster_authorized_operations=False,
                                                       endpoint_type=i8(1)))
        assert [(int(b.broker_id), b.host, int(b.port)) for b in dc_before.brokers] == controllers

        ids = await populate(port, runtime)

        # v12, all topics: every topic of the image by name, never __cluster_metadata; only the unfenced broker,
        # on its first listener, with its rack.
        answer = await call(port, md_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                          include_topic_authorized_operations=False))
        assert brokers_of(answer) == [(LIVE, "broker-7", PORTS[LIVE])]
        assert answer.brokers[0].rack == "rack-a"
        # controller_id names a live broker of the list (Kafka's KRaft answer: clients send CreateTopics there and
        # the broker forwards it), never the controller, which is not in the list.
        assert int(answer.controller_id) == LIVE and answer.cluster_id == CLUSTER_ID
        assert [(t.name, t.topic_id, ErrorCode(t.error_code)) for t in answer.topics] == [
            ("orders", ids["orders"], ErrorCode.NONE), ("solo", ids["solo"], ErrorCode.NONE)]
        orders, solo = answer.topics
        assert partitions_of(orders) == [(0, ErrorCode.NONE, LIVE, [LIVE, FENCED], [LIVE], [FENCED]),
                                         (1, ErrorCode.NONE, LIVE, [FENCED, LIVE], [LIVE], [FENCED])]
        # The fenced broker led `solo` alone: no leader now, Kafka's LEADER_NOT_AVAILABLE, the replica offline.
        (p0,) = partitions_of(solo)
        assert p0[:3] == (0, ErrorCode.LEADER_NOT_AVAILABLE, -1) and p0[3] == [FENCED] and p0[5] == [FENCED]
        assert all(not t.is_internal for t in answer.topics)

        # v12 by id and by name, unknown ones, and the metadata topic by name.
        by_id = md_v12.MetadataRequestTopic(topic_id=ids["solo"], name=None)
        unknown_id = md_v12.MetadataRequestTopic(topic_id=uuid.UUID(int=42), name=None)
        unknown_name = md_v12.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=TopicName("nope"))
        meta = md_v12.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=TopicName(METADATA_TOPIC))
        named = md_v12.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=TopicName("orders"))
        answer = await call(port, md_v12.MetadataRequest(topics=(by_id, unknown_id, unknown_name, meta, named),
                                                          allow_auto_topic_creation=False,
                                                          include_topic_authorized_operations=False))
        assert [(t.name, ErrorCode(t.error_code)) for t in answer.topics] == [
            ("solo", ErrorCode.NONE), (None, ErrorCode.UNKNOWN_TOPIC_ID),
            ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (METADATA_TOPIC, ErrorCode.NONE),
            ("orders", ErrorCode.NONE)]
        assert answer.topics[3].is_internal and int(answer.topics[3].partitions[0].leader_id) == CONTROLLER

        # v9 (names only) and v1 (null = all): same image, lowered; v1 has no offline replicas field.
        v9 = await call(port, md_v9.MetadataRequest(topics=(md_v9.MetadataRequestTopic(name=TopicName("orders")),),
                                                     allow_auto_topic_creation=False,
                                                     include_cluster_authorized_operations=False,
                                                     include_topic_authorized_operations=False))
        assert partitions_of(v9.topics[0]) == partitions_of(orders)
        v1 = await call(port, md_v1.MetadataRequest(topics=None))
        assert [t.name for t in v1.topics] == ["orders", "solo"] and brokers_of(v1) == brokers_of(answer)
        # v0: an empty list means every topic.
        v0 = await call(port, md_v0.MetadataRequest(topics=()))
        assert [t.name for t in v0.topics] == ["orders", "solo"]
        assert partitions_of(v0.topics[1])[0][:3] == (0, ErrorCode.LEADER_NOT_AVAILABLE, -1)

        # Every broker fenced: Metadata falls back to the controllers rather than an empty broker list.
        epoch = host(runtime).controller.cluster.registration(LIVE).epoch
        assert (await call(port, heartbeat(LIVE, epoch, runtime.core.high_watermark, fence=True))).error_code == 0
        await wait_for(lambda: host(runtime).controller.cluster.is_fenced(LIVE))
        fenced = await call(port, md_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                          include_topic_authorized_operations=False))
        assert brokers_of(fenced) == controllers and [t.name for t in fenced.topics] == ["orders", "solo"]
    finally:
        await runtime.stop(graceful=False)


@pytest.mark.asyncio
async def test_describe_cluster_lists_registered_brokers_and_fenced_ones_only_on_request(tmp_path):
    port, runtime = await started(tmp_path)
    try:
        await populate(port, runtime)
        live = [(LIVE, "broker-7", PORTS[LIVE])]

        def listed(response) -> list[tuple[int, str, int]]:
            return [(int(b.broker_id), b.host, int(b.port)) for b in response.brokers]

        v0 = await call(port, DescribeClusterV0(include_cluster_authorized_operations=False))
        assert listed(v0) == live and v0.brokers[0].rack == "rack-a"
        v1 = await call(port, DescribeClusterV1(include_cluster_authorized_operations=False, endpoint_type=i8(1)))
        assert listed(v1) == live and int(v1.controller_id) == LIVE
        without = await call(port, DescribeClusterV2(include_cluster_authorized_operations=False,
                                                     endpoint_type=i8(1), include_fenced_brokers=False))
        assert listed(without) == live and [b.is_fenced for b in without.brokers] == [False]
        with_fenced = await call(port, DescribeClusterV2(include_cluster_authorized_operations=False,
                                                         endpoint_type=i8(1), include_fenced_brokers=True))
        assert listed(with_fenced) == live + [(FENCED, "broker-8", PORTS[FENCED])]
        assert [b.is_fenced for b in with_fenced.brokers] == [False, True]
        controllers = await call(port, DescribeClusterV2(include_cluster_authorized_operations=False,
                                                         endpoint_type=i8(2), include_fenced_brokers=True))
        assert listed(controllers) == [(CONTROLLER, "127.0.0.1", port)]
        assert int(controllers.controller_id) == CONTROLLER  # the active controller, as Kafka's controllers say
        bad = await call(port, DescribeClusterV2(include_cluster_authorized_operations=False,
                                                 endpoint_type=i8(3), include_fenced_brokers=False))
        assert bad.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE and bad.brokers == ()
    finally:
        await runtime.stop(graceful=False)


def test_a_state_machine_without_an_image_has_none():
    from pykraft.node.runtime.state_machine import CountingStateMachine

    assert client_apis.image_of(CountingStateMachine()) is None
