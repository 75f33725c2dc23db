"""AlterPartitionReassignments / ListPartitionReassignments of `__cluster_metadata-0` on in-process controllers
(node/apis/quorum_reassign_api.py): controller 1 formatted --standalone, controller 2 an observer that registers
itself (ControllerRegistration). Every bad request gets Kafka's error code, in the partition's answer or at the
top level; a good one moves the quorum and is answered once the voters are the target."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.alter_partition_reassignments.v1 import request as alter_v1
from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.list_partition_reassignments.v0 import request as list_req
from kio.schema.types import BrokerId, TopicName

from pykraft.node.config.node_config import parse_config
from pykraft.node.roles.controller_host import controller_runtime
from pykraft.node.local_cluster import free_ports
from pykraft.protocol.errors import ErrorCode
from pykraft.storage.format import FormatRequest, format_directories
from pykraft.storage.format_options import QuorumFlag

from .helpers import CLUSTER_ID, call, wait_for

META = "__cluster_metadata"


def config(tmp: Path, node_id: int, port: int, bootstrap_port: int):
    data = tmp / f"node-{node_id}"
    return parse_config("\n".join([
        "process.roles=controller", f"node.id={node_id}", f"listeners=CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers=127.0.0.1:{bootstrap_port}",
        f"metadata.log.dir={data}", f"log.dirs={data}", "controller.quorum.election.timeout.ms=300",
        "controller.quorum.fetch.timeout.ms=2000", "controller.quorum.request.timeout.ms=1000",
        "controller.quorum.append.linger.ms=1"]) + "\n")


def format_node(node_config, flag: QuorumFlag) -> None:
    format_directories(FormatRequest(
        cluster_id=CLUSTER_ID, node_id=node_config.node_id, is_controller=True, log_dirs=node_config.log_dirs,
        metadata_log_dir=node_config.metadata_log_dir, has_static_voters=False, controller_listener_name="CONTROLLER",
        controller_endpoints=node_config.advertised_controller_endpoints(), quorum_flag=flag), out=lambda _: None)


def alter(partitions: list[tuple[int, list[int] | None]], *, topic: str = META, version: int = 0,
          allow_size_change: bool = True, timeout_ms: int = 30_000):
    module = alter_v1 if version == 1 else alter_v0
    extra = {"allow_replication_factor_change": allow_size_change} if version == 1 else {}
    return module.AlterPartitionReassignmentsRequest(
        timeout=datetime.timedelta(milliseconds=timeout_ms), **extra,
        topics=(module.ReassignableTopic(name=TopicName(topic), partitions=tuple(
            module.ReassignablePartition(partition_index=i, replicas=None if r is None else tuple(map(BrokerId, r)))
            for i, r in partitions)),))


def errors(answer) -> list[tuple[int, ErrorCode]]:
    return [(int(p.partition_index), ErrorCode.of(p.error_code)) for t in answer.responses for p in t.partitions]


def listing():
    return list_req.ListPartitionReassignmentsRequest(timeout=datetime.timedelta(seconds=5), topics=None)


async def voters(port: int) -> list[int]:
    answer = await call(port, dq_req.DescribeQuorumRequest(topics=(dq_req.TopicData(
        topic_name=TopicName(META), partitions=(dq_req.PartitionData(partition_index=0),)),)))
    return sorted(int(v.replica_id) for v in answer.topics[0].partitions[0].current_voters)


@pytest.mark.asyncio
async def test_quorum_reassignment_requests_on_real_controllers(tmp_path: Path) -> None:
    port1, port2 = free_ports(2)
    configs = {1: config(tmp_path, 1, port1, port1), 2: config(tmp_path, 2, port2, port1)}
    format_node(configs[1], QuorumFlag.STANDALONE)
    format_node(configs[2], QuorumFlag.NO_INITIAL_CONTROLLERS)
    runtimes = {i: controller_runtime(c) for i, c in configs.items()}
    for runtime in runtimes.values():
        await runtime.start()
    leader = runtimes[1].state_machine
    try:
        await wait_for(lambda: 2 in leader.controller.cluster.controllers, timeout_s=30)  # 2 registered
        assert errors(await call(port1, alter([(1, [1, 2]), (0, []), (0, [1])]))) == [
            (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (0, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
            (0, ErrorCode.INVALID_REQUEST)]
        assert errors(await call(port1, alter([(0, [1, 2])], version=1, allow_size_change=False))) == [
            (0, ErrorCode.INVALID_REPLICATION_FACTOR)]
        assert errors(await call(port1, alter([(0, [1, 7])]))) == [(0, ErrorCode.INVALID_REPLICA_ASSIGNMENT)]
        assert errors(await call(port1, alter([(0, None)]))) == [(0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)]
        assert errors(await call(port1, alter([(0, None)], topic="no-such-topic"))) == [
            (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        follower = await call(port2, alter([(0, [1, 2])]))
        assert ErrorCode.of(follower.error_code) == ErrorCode.NOT_CONTROLLER
        assert ErrorCode.of((await call(port2, listing())).error_code) == ErrorCode.NOT_CONTROLLER

        moved = await call(port1, alter([(0, [1, 2])], timeout_ms=20_000), timeout_ms=25_000)
        assert (ErrorCode.of(moved.error_code), errors(moved)) == (ErrorCode.NONE, [(0, ErrorCode.NONE)])
        assert await voters(port1) == [1, 2]
        listed = await call(port1, listing())
        assert ErrorCode.of(listed.error_code) == ErrorCode.NONE and listed.topics == ()
        back = await call(port1, alter([(0, [1])], version=1, timeout_ms=20_000), timeout_ms=25_000)
        assert errors(back) == [(0, ErrorCode.NONE)] and await voters(port1) == [1]
    finally:
        for runtime in runtimes.values():
            await runtime.stop()
