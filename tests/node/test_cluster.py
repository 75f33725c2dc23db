"""Three runtimes in one event loop on 127.0.0.1: election, committed writes, leader stop, restart and catch-up."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode

from .helpers import call, free_ports, leader_of, make_config, produce_request, wait_for

IDS = (1, 2, 3)


async def start_cluster(tmp_path) -> tuple[dict[int, int], dict[int, NodeRuntime]]:
    ports = dict(zip(IDS, free_ports(len(IDS))))
    runtimes = {i: NodeRuntime(make_config(tmp_path, i, ports)) for i in IDS}
    for runtime in runtimes.values():
        await runtime.start()
    return ports, runtimes


async def stop_all(running: dict[int, NodeRuntime]) -> None:
    # No hand-over wait at teardown: with a minority left it could only time out.
    await asyncio.gather(*(runtime.stop(graceful=False) for runtime in running.values()))


async def produce(port: int, values: list[bytes]):
    response = await call(port, produce_request(values))
    return response.responses[0].partition_responses[0]


@pytest.mark.asyncio
async def test_three_nodes_elect_commit_fail_over_and_catch_up(tmp_path):
    ports, runtimes = await start_cluster(tmp_path)
    running = dict(runtimes)
    try:
        await wait_for(lambda: leader_of(list(running.values())) is not None)
        leader = leader_of(list(running.values()))
        leader_id = leader.config.node_id
        follower_id = next(i for i in IDS if i != leader_id)
        refused = await produce(ports[follower_id], [b"x"])
        assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        for n in range(5):
            answer = await produce(ports[leader_id], [f"v{n}".encode()] * 10)
            assert answer.error_code == ErrorCode.NONE
        await wait_for(lambda: all(r.state_machine.records == 50 for r in running.values()))
        first_epoch = leader.core.quorum.epoch

        await leader.stop()  # graceful: resigns, a follower takes over
        del running[leader_id]
        await wait_for(lambda: leader_of(list(running.values())) is not None)
        new_leader = leader_of(list(running.values()))
        assert new_leader.config.node_id != leader_id and new_leader.core.quorum.epoch > first_epoch
        answer = await produce(ports[new_leader.config.node_id], [b"after"] * 7)
        assert answer.error_code == ErrorCode.NONE

        restarted = NodeRuntime(make_config(tmp_path, leader_id, ports))
        await restarted.start()
        running[leader_id] = restarted
        await wait_for(lambda: restarted.state_machine.records == 57
                       and restarted.core.quorum.leader_id() == new_leader.config.node_id)
        logs = [r.core.log for r in running.values()]
        hwm = new_leader.core.high_watermark
        await wait_for(lambda: all(log.end_offset() >= hwm for log in logs))
        committed = [bytes(log.read(0, 1 << 30).records) for log in logs]
        shortest = min(len(c) for c in committed)
        assert len({c[:shortest] for c in committed}) == 1  # every replica holds the same log prefix
    finally:
        await stop_all(running)


@pytest.mark.asyncio
async def test_a_write_in_flight_when_the_leader_stops_fails_or_commits_never_both(tmp_path):
    ports, runtimes = await start_cluster(tmp_path)
    running = dict(runtimes)
    try:
        await wait_for(lambda: leader_of(list(running.values())) is not None)
        leader = leader_of(list(running.values()))
        acked = []
        for n in range(3):
            answer = await produce(ports[leader.config.node_id], [f"w{n}".encode()])
            if answer.error_code == ErrorCode.NONE:
                acked.append(answer.base_offset)
        await leader.stop()
        del running[leader.config.node_id]
        await wait_for(lambda: leader_of(list(running.values())) is not None)
        survivor = leader_of(list(running.values()))
        await wait_for(lambda: survivor.core.high_watermark is not None
                       and survivor.core.high_watermark > max(acked))
        assert survivor.state_machine.records >= len(acked)  # every acknowledged write survived the fail-over
    finally:
        await stop_all(running)


@pytest.mark.asyncio
async def test_describe_quorum_sent_to_a_follower_is_answered_by_the_leader(tmp_path):
    """Stock clients send DescribeQuorum to any node they know; a follower forwards it to the leader (as a Kafka
    broker forwards it to the active controller) instead of answering NOT_LEADER_OR_FOLLOWER."""
    from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest, PartitionData, TopicData
    from kio.schema.types import TopicName
    from kio.static.primitive import i32

    ports, runtimes = await start_cluster(tmp_path)
    try:
        await wait_for(lambda: leader_of(list(runtimes.values())) is not None
                       and all(r.core.quorum.leader_id() is not None for r in runtimes.values()))
        leader = leader_of(list(runtimes.values()))
        follower_id = next(i for i in IDS if i != leader.config.node_id)
        request = DescribeQuorumRequest(topics=(TopicData(topic_name=TopicName("__cluster_metadata"),
                                                          partitions=(PartitionData(partition_index=i32(0)),)),))
        answer = (await call(ports[follower_id], request)).topics[0].partitions[0]
        assert answer.error_code == ErrorCode.NONE
        assert answer.leader_id == leader.config.node_id
        assert sorted(v.replica_id for v in answer.current_voters) == list(IDS)
    finally:
        await stop_all(runtimes)
