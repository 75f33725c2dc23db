"""Partition reassignment (KIP-455) on real processes: 3 controllers, 4 brokers (ids 4-7), moved with `pykraft
reassign-partitions` and kafka-python's admin client.

The new broker of a move is paused (SIGSTOP) where a test needs the move to stay in progress: it cannot catch up,
so nothing completes until it is resumed. The partition state is read from a running controller's committed
metadata log on disk (metadata_probe). Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.records import iter_batches

from .data_plane_checks import DATA_PLANE_TIMING, QueueCheck, stop_cluster
from .helpers import FAST_TIMEOUTS, describe_status, wait_for
from .metadata_probe import ask, image_of
from .stock_clients import consume, produce

kafka = pytest.importorskip("kafka")
RECORDS = 600


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("reassign"), controllers=3, brokers=4,
                           properties={**FAST_TIMEOUTS, **DATA_PLANE_TIMING})
    cluster.format_all()
    cluster.start_all()
    yield cluster
    stop_cluster(cluster)


def image(cluster: LocalCluster):
    """The committed image of the first running controller."""
    node = next(cluster.nodes[i] for i in cluster.controller_ids if cluster.nodes[i].is_running())
    return image_of(node)


def state(cluster: LocalCluster, topic: str):
    current = image(cluster)
    topic_id = current.topic_id(topic)
    return None if topic_id is None else current.partition(topic_id, 0)


def servers(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids
                    if cluster.nodes[b].is_running())


def controllers(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[c].port}" for c in cluster.controller_ids
                    if cluster.nodes[c].is_running())


def tool(cluster: LocalCluster, *args: str):
    return cluster.cli("reassign-partitions", *args, check=False, timeout=120)


def plan(tmp_path, topic: str, replicas: list[int]) -> str:
    path = tmp_path / f"{topic}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}))
    return str(path)


def create(cluster: LocalCluster, topic: str, replicas: list[int]) -> None:
    assignment = ":".join(map(str, replicas))
    wait_for(lambda: cluster.cli("topics", "create", "--bootstrap-server", servers(cluster), "--topic", topic,
                                 "--replica-assignment", assignment, check=False).returncode == 0,
             f"topic {topic} created (every broker unfenced first)")
    wait_for(lambda: (lambda p: p is not None and len(p.isr) == 3)(state(cluster, topic)), f"{topic}: full ISR")


def records_on(cluster: LocalCluster, broker: int, topic: str) -> list[tuple[int, bytes | None]]:
    data = b"".join(p.read_bytes() for p in sorted((cluster.nodes[broker].data_dir / f"{topic}-0").glob("*.log")))
    return [(r.offset, r.value) for batch in iter_batches(data) for r in batch.records()]


def listed_brokers(cluster: LocalCluster, broker: int) -> set[int]:
    from kio.schema.metadata.v12 import request as md

    answer = ask(cluster.nodes[broker], md.MetadataRequest(topics=(), allow_auto_topic_creation=False,
                                                           include_topic_authorized_operations=False))
    return {int(n.node_id) for n in answer.brokers}


def start_move(cluster: LocalCluster, topic: str, replicas: list[int]) -> None:
    """AlterPartitionReassignments through pykraft's admin client. The tests that pause the new broker use it
    rather than `--execute`: the tool, like Kafka's, refuses a broker that is not alive (`Unknown broker id`),
    and a paused broker is fenced once its session expires."""
    from pykraft.admin.connect import make_client

    async def move() -> dict:
        async with make_client(None, servers(cluster), {}) as admin:
            return await admin.alter_partition_reassignments({(topic, 0): replicas})

    assert asyncio.run(move()) == {(topic, 0): None}


def verified(cluster: LocalCluster, path: str, topic: str) -> bool:
    result = tool(cluster, "--bootstrap-server", servers(cluster), "--verify", "--reassignment-json-file", path)
    return result.returncode == 0 and f"Reassignment of partition {topic}-0 is completed." in result.stdout


def test_a_partition_moves_under_acks_all_load_without_losing_an_acknowledged_record(cluster, tmp_path):
    b = cluster.broker_ids
    create(cluster, "moving", b[:3])
    path = plan(tmp_path, "moving", b[1:])
    executed: list = []

    def on_sent(i: int) -> None:
        if i == RECORDS // 3:  # mid-stream: the move runs while the producer writes
            thread = threading.Thread(target=lambda: executed.append(tool(
                cluster, "--bootstrap-server", servers(cluster), "--execute", "--reassignment-json-file", path)))
            thread.start()
            executed.append(thread)

    acknowledged = produce("kafka-python", servers(cluster), "moving", RECORDS, on_sent)
    executed[0].join(120)
    result = executed[1]
    assert result.returncode == 0, result.stdout + result.stderr
    rollback = json.loads(result.stdout.split("\n\n")[1])
    assert rollback["partitions"] == [{"topic": "moving", "partition": 0, "replicas": b[:3],
                                       "log_dirs": ["any"] * 3}]
    assert result.stdout.rstrip().endswith("Successfully started partition reassignment for moving-0")
    wait_for(lambda: verified(cluster, path, "moving"), "--verify: the move completed", timeout=120)
    final = wait_for(lambda: (lambda p: p if p.replicas == tuple(b[1:]) else None)(state(cluster, "moving")),
                     "the completion in the controller's log on disk")
    assert (set(final.isr), final.adding_replicas, final.removing_replicas) == (set(b[1:]), (), ())
    assert len(acknowledged) > RECORDS // 2
    check = QueueCheck.of(acknowledged, consume("kafka-python", servers(cluster), "moving", acknowledged))
    assert check.lost == () and check.duplicated == () and check.reordered == 0, check
    wait_for(lambda: not (cluster.nodes[b[0]].data_dir / "moving-0").exists(), "broker 4's replica deleted")
    assert not [d for d in cluster.nodes[b[0]].data_dir.iterdir() if d.name.endswith("-delete")]
    leader = final.leader
    wait_for(lambda: records_on(cluster, b[3], "moving") == records_on(cluster, leader, "moving"),
             "the new replica holds the leader's records")
    assert len(records_on(cluster, b[3], "moving")) >= len(acknowledged)


def test_a_move_in_progress_survives_the_active_controller_being_killed(cluster, tmp_path):
    b = cluster.broker_ids
    create(cluster, "failover", b[:3])
    path = plan(tmp_path, "failover", b[1:])
    cluster.signal(b[3], signal.SIGSTOP)  # the new replica cannot catch up: the move stays in progress
    killed = None
    try:
        start_move(cluster, "failover", b[1:])
        listing = f"failover-0: replicas: {b[1]},{b[2]},{b[3]},{b[0]}. adding: {b[3]}. removing: {b[0]}."
        assert listing in tool(cluster, "--bootstrap-controller", controllers(cluster), "--list").stdout
        killed = describe_status(cluster, cluster.controller_ids)["LeaderId"]
        cluster.kill(killed)
        survivors = [c for c in cluster.controller_ids if c != killed]
        wait_for(lambda: describe_status(cluster, survivors)["LeaderId"] not in (killed, -1),
                 "a new active controller")
        assert listing in tool(cluster, "--bootstrap-controller", controllers(cluster), "--list").stdout
        in_progress = tool(cluster, "--bootstrap-server", servers(cluster), "--verify", "--reassignment-json-file",
                           path)
        assert "Reassignment of partition failover-0 is still in progress." in in_progress.stdout
    finally:
        cluster.signal(b[3], signal.SIGCONT)
        if killed is not None:
            cluster.start(killed)
    wait_for(lambda: verified(cluster, path, "failover"), "the move completed under the new controller", timeout=120)
    wait_for(lambda: state(cluster, "failover").replicas == tuple(b[1:]), "the completion in the log on disk")
    wait_for(lambda: not (cluster.nodes[b[0]].data_dir / "failover-0").exists(), "the removed replica deleted")


def test_cancelling_reverts_to_the_original_replicas(cluster, tmp_path):
    b = cluster.broker_ids
    create(cluster, "cancelled", b[:3])
    path = plan(tmp_path, "cancelled", [b[0], b[1], b[3]])
    cluster.signal(b[3], signal.SIGSTOP)
    try:
        start_move(cluster, "cancelled", [b[0], b[1], b[3]])
        cancelled = tool(cluster, "--bootstrap-controller", controllers(cluster), "--cancel",
                         "--reassignment-json-file", path)
        assert cancelled.returncode == 0, cancelled.stdout
        assert cancelled.stdout.startswith("Successfully cancelled partition reassignment for: cancelled-0\n")
        reverted = wait_for(lambda: (lambda p: p if not p.is_reassigning else None)(state(cluster, "cancelled")),
                            "the cancellation in the log on disk")
        assert reverted.replicas == tuple(b[:3])
        assert tool(cluster, "--bootstrap-server", servers(cluster), "--list").stdout.strip() == \
            "No partition reassignments found."
    finally:
        cluster.signal(b[3], signal.SIGCONT)
    again = tool(cluster, "--bootstrap-server", servers(cluster), "--cancel", "--reassignment-json-file", path)
    assert again.stdout.startswith("None of the specified partition reassignments are active.")
    verify = tool(cluster, "--bootstrap-server", servers(cluster), "--verify", "--reassignment-json-file", path)
    assert (f"There is no active reassignment of partition cancelled-0, but replica set is "
            f"{b[0]},{b[1]},{b[2]} rather than {b[0]},{b[1]},{b[3]}.") in verify.stdout
    wait_for(lambda: not image(cluster).cluster.is_fenced(b[3]), "the resumed broker unfenced")
    wait_for(lambda: not (cluster.nodes[b[3]].data_dir / "cancelled-0").exists(), "no replica left on broker 7")


def test_bad_input_gets_kafkas_errors(cluster, tmp_path):
    from kafka.admin import KafkaAdminClient
    from kafka.errors import (InvalidReplicationAssignmentError, NoReassignmentInProgressError,
                              UnknownTopicOrPartitionError)

    b = cluster.broker_ids
    create(cluster, "guarded", b[:3])
    admin = KafkaAdminClient(bootstrap_servers=servers(cluster), request_timeout_ms=30_000)
    tp = kafka.TopicPartition
    try:
        answers = admin.alter_partition_reassignments({
            tp("nope", 0): [b[0]], tp("guarded", 5): [b[0]], tp("guarded", 0): [b[0], 99, b[1]]})
        assert answers == {tp("nope", 0): UnknownTopicOrPartitionError, tp("guarded", 5): UnknownTopicOrPartitionError,
                           tp("guarded", 0): InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({tp("guarded", 0): [b[0], b[0], b[1]]}) == \
            {tp("guarded", 0): InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({tp("guarded", 0): None}) == \
            {tp("guarded", 0): NoReassignmentInProgressError}
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()

    # A fenced broker is registered: Kafka accepts it, and its replica cannot join the ISR while it is fenced.
    cluster.signal(b[3], signal.SIGSTOP)
    try:
        wait_for(lambda: image(cluster).cluster.is_fenced(b[3]), "broker 7 fenced after its session expired")
        # ...and gone from every live broker's Metadata, so the client never picks it for a metadata refresh.
        wait_for(lambda: all(b[3] not in listed_brokers(cluster, broker) for broker in b[:3]),
                 "broker 7 out of the brokers' Metadata answers")
        # A new client: its metadata names an unfenced broker to send controller requests to, not the paused one.
        admin = KafkaAdminClient(bootstrap_servers=servers(cluster).replace(f",127.0.0.1:{cluster.nodes[b[3]].port}",
                                                                            ""), request_timeout_ms=30_000)
        try:
            assert admin.alter_partition_reassignments({tp("guarded", 0): [b[0], b[1], b[3]]}) == \
                {tp("guarded", 0): None}
            assert admin.list_partition_reassignments() == {tp("guarded", 0): {
                "replicas": [b[0], b[1], b[3], b[2]], "adding_replicas": [b[3]], "removing_replicas": [b[2]]}}
            assert b[3] not in state(cluster, "guarded").isr
            assert admin.alter_partition_reassignments({tp("guarded", 0): None}) == {tp("guarded", 0): None}
        finally:
            admin.close()
    finally:
        cluster.signal(b[3], signal.SIGCONT)

    unknown = tool(cluster, "--bootstrap-server", servers(cluster), "--execute", "--reassignment-json-file",
                   plan(tmp_path, "guarded", [b[0], b[1], 99]))
    assert (unknown.returncode, unknown.stdout.strip()) == (1, "Error: Unknown broker id 99")
    missing = tool(cluster, "--bootstrap-server", servers(cluster), "--execute", "--reassignment-json-file",
                   plan(tmp_path, "nope", [b[0]]))
    assert (missing.returncode, missing.stdout.strip()) == (1, "Error: Topic nope not found.")
    repeated = tool(cluster, "--bootstrap-server", servers(cluster), "--execute", "--reassignment-json-file",
                    plan(tmp_path, "guarded", [b[0], b[0]]))
    assert repeated.returncode == 1
    assert repeated.stdout.strip() == (f"Error: Partition replica lists may not contain duplicate entries: "
                                       f"guarded-0 contains multiple entries for {b[0]}")
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "guarded"}]}))
    generated = tool(cluster, "--bootstrap-server", servers(cluster), "--generate", "--topics-to-move-json-file",
                     str(topics), "--broker-list", ",".join(map(str, b[1:])))
    assert generated.returncode == 0, generated.stdout
    heading, current, _, heading2, proposed = generated.stdout.strip().split("\n")
    assert (heading, heading2) == ("Current partition replica assignment",
                                   "Proposed partition reassignment configuration")
    assert json.loads(current)["partitions"][0]["replicas"] == b[:3]
    [move] = json.loads(proposed)["partitions"]
    assert sorted(move["replicas"]) == b[1:] and move["log_dirs"] == ["any"] * 3
