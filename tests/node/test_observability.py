"""Snapshots on Kafka's byte trigger, loaded again at restart; metrics named after raft-metrics; version conversion
of the core's fixed RPC versions. (UpdateFeatures is the controller host's: tests/node/test_controller_features.py.)"""

from __future__ import annotations

import json

import pytest
from prometheus_client import generate_latest

from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.node.runtime.state_machine import CountingStateMachine
from pykraft.protocol.core_versions import convert, to_core_request, to_request_version
from pykraft.protocol.apis import request_class
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ReplicaKey

from .helpers import call, free_ports, leader_of, make_config, produce_request, wait_for


@pytest.mark.asyncio
async def test_snapshot_on_the_byte_trigger_and_loaded_at_restart(tmp_path):
    ports = {1: free_ports(1)[0]}
    extra = "metadata.log.max.record.bytes.between.snapshots=500\nmetadata.log.max.snapshot.interval.ms=0"
    runtime = NodeRuntime(make_config(tmp_path, 1, ports, extra=extra))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        for n in range(10):
            await call(ports[1], produce_request([b"x" * 100]))
        await wait_for(lambda: runtime.snapshots.snapshots_taken >= 1)
        snapshot = runtime.core.log.latest_snapshot_id()
        assert snapshot is not None and snapshot.offset > 0
    finally:
        await runtime.stop()
    events = [json.loads(line) for line in (tmp_path / "node-1" / "pykraft-trace.jsonl").read_text().splitlines()]
    taken = [e for e in events if e["event"] == "snapshot_taken"]
    assert taken and taken[-1]["offset"] == snapshot.offset and taken[-1]["bytes"] > 0
    machine = CountingStateMachine()
    again = NodeRuntime(make_config(tmp_path, 1, ports, extra=extra), state_machine=machine)
    await again.start()
    try:
        await wait_for(lambda: machine.records == 10)
        assert machine.snapshots_loaded == 1  # the count came back through the snapshot, then the log tail
    finally:
        await again.stop()


@pytest.mark.asyncio
async def test_metrics_follow_the_core(tmp_path):
    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        await call(ports[1], produce_request([b"a", b"b"]))
        text = generate_latest(runtime.metrics.registry).decode()
        assert 'kafka_server_raftmetrics_current_state{current_state="leader"} 1.0' in text
        assert 'current_state="follower"' not in text  # one series, the current state (Strimzi's rendering)
        assert f"kafka_server_raftmetrics_current_epoch {float(runtime.core.quorum.epoch)}" in text
        assert "kafka_server_raftmetrics_current_leader 1.0" in text
        assert "kafka_server_raftmetrics_number_of_voters 1.0" in text
        assert f"kafka_server_raftmetrics_high_watermark {float(runtime.core.high_watermark)}" in text
        assert "kafka_server_raftmetrics_append_records_total 2.0" in text
        assert "kafka_server_raftmetrics_commit_latency_seconds_count 1.0" in text
        assert "kafka_server_raftmetrics_election_latency_seconds_count 1.0" in text
        assert "pykraft_fsyncs_total" in text and "kafka_server_raftmetrics_dropped_responses_total 0.0" in text
        assert "kafka_raft_" not in text  # moved to kafka_server_raftmetrics_
        # the core's drop counters, each read from where the core keeps it (a bump shows in the next scrape)
        runtime.core.dropped_responses += 3
        runtime.core.reconfig.failed_probes += 2
        runtime.core.listener.skipped_snapshot_loads += 1
        again = generate_latest(runtime.metrics.registry).decode()
        assert "kafka_server_raftmetrics_dropped_responses_total 3.0" in again
        assert "kafka_server_raftmetrics_failed_probes_total 2.0" in again
        assert "kafka_server_raftmetrics_skipped_snapshot_loads_total 1.0" in again
        assert "pykraft_raft_" not in again  # the drop counters carry their raft-metrics names only
        # the one write: a rate and a latency over Kafka's window, and the Produce counted per request
        assert float(_sample(text, "kafka_server_raftmetrics_append_records_rate")) > 0
        assert float(_sample(text, "kafka_server_raftmetrics_commit_latency_max")) >= 0
        assert 'kafka_network_requestmetrics_requests_total{request="Produce",version="9"} 1.0' in text
        assert 'kafka_network_requestmetrics_errors_total{error="NONE",request="Produce"} 1.0' in text
        assert 'kafka_network_requestmetrics_totaltime_seconds_count{request="Produce"} 1.0' in text
        assert "process_open_fds" in text and "process_resident_memory_bytes" in text
    finally:
        await runtime.stop()


def _sample(text: str, name: str) -> str:
    return next(line.split()[-1] for line in text.splitlines() if line.startswith(name + " "))


def test_requests_are_lifted_to_the_core_version_and_answers_lowered():
    vote = messages.vote_request("c", ReplicaKey(1), 3, ReplicaKey(2), OffsetAndEpoch(5, 2), False)
    old = convert(vote, request_class(52, 0))  # what a pre-KIP-853 peer sends: no directory ids, no pre-vote
    lifted = to_core_request(old)
    assert int(lifted.__version__) == 2 and lifted.cluster_id == "c" and int(lifted.voter_id) == -1
    partition = lifted.topics[0].partitions[0]
    assert (partition.replica_id, partition.replica_epoch, partition.last_offset) == (1, 3, 5)
    assert partition.pre_vote is False and partition.replica_directory_id.int == 0
    answer = messages.vote_response(ErrorCode.NONE, ErrorCode.NONE, 2, 3, True)
    lowered = to_request_version(answer, 0)
    assert int(lowered.__version__) == 0
    partition = lowered.topics[0].partitions[0]
    assert (partition.leader_id, partition.leader_epoch, partition.vote_granted) == (2, 3, True)
    assert not hasattr(lowered, "node_endpoints")
