"""One node on 127.0.0.1: client APIs, Produce, bad input, and restart from disk."""

from __future__ import annotations

import asyncio
import struct

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.describe_cluster.v0.request import DescribeClusterRequest as DescribeClusterV0
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as DescribeClusterV1
from kio.schema.describe_quorum.v0.request import DescribeQuorumRequest as DescribeQuorumV0
from kio.schema.describe_quorum.v0.request import PartitionData, TopicData
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.static.primitive import i8, i32

from pykraft.net.client import Connection
from pykraft.net.errors import ConnectionClosedError
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.node.runtime.state_machine import CountingStateMachine
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_TOPIC, METADATA_TOPIC_ID
from pykraft.storage import QuorumStateStore

from .helpers import CLUSTER_ID, call, free_ports, leader_of, make_config, produce_request, wait_for


async def started(tmp_path, extra: str = "") -> tuple[NodeRuntime, int]:
    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports, extra=extra))
    await runtime.start()
    await wait_for(lambda: leader_of([runtime]) is not None)
    return runtime, ports[1]


@pytest.mark.asyncio
async def test_client_apis_describe_the_single_controller(tmp_path):
    runtime, port = await started(tmp_path)
    try:
        versions = await call(port, ApiVersionsV3(client_software_name="test", client_software_version="1"))
        keys = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys}
        assert keys[0] == (9, 12) and keys[3] == (0, 12) and keys[60] == (0, 2) and keys[52] == (0, 2)
        assert 62 not in keys  # BrokerRegistration is not served without a controller state machine
        assert {f.name: (f.min_version, f.max_version) for f in versions.supported_features} == {
            "metadata.version": (7, 27)}  # v3 omits ranges starting at 0 (kraft.version), KAFKA-17492
        metadata = await call(port, MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=METADATA_TOPIC),
                    MetadataRequestTopic(topic_id=None, name="nope")),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [(1, "127.0.0.1", port)]
        assert metadata.cluster_id == CLUSTER_ID and metadata.controller_id == 1
        topic, missing = metadata.topics
        assert topic.topic_id == METADATA_TOPIC_ID and topic.partitions[0].leader_id == 1
        assert topic.partitions[0].leader_epoch == runtime.core.quorum.epoch
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        old = await call(port, MetadataV1(topics=None))  # all topics: the metadata topic stays hidden
        assert old.controller_id == 1 and old.topics == () and len(old.brokers) == 1
        cluster = await call(port, DescribeClusterV1(include_cluster_authorized_operations=False,
                                                     endpoint_type=i8(2)))
        assert (cluster.error_code, cluster.cluster_id, cluster.controller_id) == (ErrorCode.NONE, CLUSTER_ID, 1)
        assert [(b.broker_id, b.port) for b in cluster.brokers] == [(1, port)]
        cluster0 = await call(port, DescribeClusterV0(include_cluster_authorized_operations=False))
        assert cluster0.controller_id == 1
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_produce_commits_and_answers_with_the_base_offset(tmp_path):
    runtime, port = await started(tmp_path)
    try:
        first = await call(port, produce_request([b"a", b"b", b"c"]))
        second = await call(port, produce_request([b"d"]))
        p1, p2 = first.responses[0].partition_responses[0], second.responses[0].partition_responses[0]
        assert p1.error_code == ErrorCode.NONE and p2.error_code == ErrorCode.NONE
        assert p2.base_offset == p1.base_offset + 3
        assert runtime.core.high_watermark > p2.base_offset
        assert runtime.state_machine.records == 4
        refused = await call(port, produce_request([b"x"], acks=1))
        assert refused.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
        other = await call(port, produce_request([b"x"], topic="orders"))
        assert other.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_produce_is_refused_unless_enabled(tmp_path):
    runtime, port = await started(tmp_path, extra="pykraft.produce.enable=false")
    try:
        response = await call(port, produce_request([b"a"]))
        partition = response.responses[0].partition_responses[0]
        assert partition.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert "pykraft.produce.enable" in partition.error_message
        assert runtime.state_machine.records == 0
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_raft_rpcs_at_older_versions_reach_the_core_and_come_back_at_that_version(tmp_path):
    runtime, port = await started(tmp_path)
    try:
        request = DescribeQuorumV0(topics=(TopicData(topic_name=METADATA_TOPIC,
                                                     partitions=(PartitionData(partition_index=i32(0)),)),))
        response = await call(port, request)
        assert int(response.__version__) == 0
        partition = response.topics[0].partitions[0]
        assert partition.leader_id == 1 and partition.leader_epoch == runtime.core.quorum.epoch
        assert [v.replica_id for v in partition.current_voters] == [1]
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_bad_frames_close_the_connection_and_the_node_keeps_serving(tmp_path):
    runtime, port = await started(tmp_path)
    try:
        connection = await Connection.open("127.0.0.1", port)
        unknown_key = struct.pack(">hhih", 9999, 0, 7, -1)  # api key 9999, version 0, correlation 7, no client id
        with pytest.raises(ConnectionClosedError):
            await connection.request(lambda cid: unknown_key, timeout_ms=5000)
        await connection.close()
        connection = await Connection.open("127.0.0.1", port)
        garbage = struct.pack(">hhi", 3, 12, 1) + b"\xff" * 5  # Metadata v12 header, then junk
        with pytest.raises(ConnectionClosedError):
            await connection.request(lambda cid: garbage, timeout_ms=5000)
        await connection.close()
        assert runtime.inbound.bad_frames == 2
        versions = await call(port, ApiVersionsV3(client_software_name="test", client_software_version="1"))
        assert versions.error_code == ErrorCode.NONE
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_restart_from_disk_keeps_the_election_state_and_the_committed_records(tmp_path):
    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports))
    await runtime.start()
    await wait_for(lambda: leader_of([runtime]) is not None)
    await call(ports[1], produce_request([b"a", b"b"]))
    epoch = runtime.core.quorum.epoch
    end = runtime.core.log.end_offset()
    await runtime.stop()
    stored = QuorumStateStore(str(tmp_path / "node-1" / "__cluster_metadata-0")).read()
    assert stored.leader_epoch == epoch
    machine = CountingStateMachine()
    again = NodeRuntime(make_config(tmp_path, 1, ports), state_machine=machine)
    await again.start()
    try:
        assert again.core.quorum.epoch >= epoch and again.core.log.end_offset() >= end
        await wait_for(lambda: leader_of([again]) is not None and machine.records == 2)
        assert again.core.quorum.epoch > epoch  # a new election in a later epoch, never a reused one
        response = await call(ports[1], produce_request([b"c"]))
        assert response.responses[0].partition_responses[0].base_offset >= end
        assert machine.records == 3
    finally:
        await again.stop()
    events = [line for line in (tmp_path / "node-1" / "pykraft-trace.jsonl").read_text().splitlines()]
    assert sum('"event":"recovered"' in e for e in events) == 2
    assert sum('"event":"became_leader"' in e for e in events) == 2


@pytest.mark.asyncio
async def test_a_second_runtime_on_the_same_directory_is_refused(tmp_path):
    runtime, _ = await started(tmp_path)
    try:
        other = NodeRuntime(make_config(tmp_path, 1, {1: free_ports(1)[0]}))
        with pytest.raises(Exception, match="in use"):
            await other.start()
    finally:
        await runtime.stop()
    await asyncio.sleep(0)
