"""AlterReplicaLogDirs between two log directories of each broker (1 controller + 3 brokers, RF 3), under a
producer's load: nothing acknowledged is lost, the replica ends in the new directory (DescribeLogDirs and the
files), the controller records its directory id, and a restart finds it there. Plus the bad inputs.

Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pykraft.admin.connect import make_client
from pykraft.admin.log_admin import alter_replica_log_dirs, describe_log_dirs
from pykraft.node.local_cluster import LocalCluster
from pykraft.protocol.errors import ErrorCode
from pykraft.storage import read_meta_properties

from .data_plane_checks import DATA_PLANE_TIMING, QueueCheck, bootstrap, partition, stop_cluster
from .helpers import wait_for
from .stock_clients import consume, produce

pytest.importorskip("kafka")
TOPIC = "moving"
RECORDS = 600


def _second_dir(cluster: LocalCluster, broker: int) -> Path:
    return cluster.nodes[broker].directory / "data-b"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("move") / "cluster", controllers=1, brokers=3,
                           properties=DATA_PLANE_TIMING)
    for broker in cluster.broker_ids:
        node = cluster.nodes[broker]
        node.extra["log.dirs"] = f"{node.data_dir},{_second_dir(cluster, broker)}"
    cluster.format_all()
    cluster.start_all()
    port = cluster.nodes[cluster.broker_ids[0]].port

    def created() -> bool:
        return cluster.cli("topics", "create", "--bootstrap-server", f"127.0.0.1:{port}", "--topic", TOPIC,
                           "--partitions", "1", "--replication-factor", "3", check=False).returncode == 0

    wait_for(created, "the topic created")
    wait_for(lambda: (p := partition(cluster, TOPIC)) is not None and len(p.isr) == 3, "a full ISR")
    yield cluster
    stop_cluster(cluster)


def _admin(cluster: LocalCluster, operation):
    async def go():
        async with make_client(None, bootstrap(cluster), {}) as client:
            return await operation(client)
    return asyncio.run(go())


def _where(cluster: LocalCluster, broker: int) -> dict[str, list[tuple[str, bool]]]:
    """Log dir -> [(partition, is_future)] as the broker's DescribeLogDirs answers."""
    found = _admin(cluster, lambda c: describe_log_dirs(c, [broker]))[broker]
    return {d.path: [(f"{r.topic}-{r.partition}", r.is_future) for r in d.replicas if r.topic == TOPIC]
            for d in found}


def _moved(cluster: LocalCluster, broker: int) -> bool:
    where = _where(cluster, broker)
    return where.get(str(_second_dir(cluster, broker).resolve())) == [(f"{TOPIC}-0", False)] and \
        where.get(str(cluster.nodes[broker].data_dir.resolve())) == []


def _placements_recorded(cluster: LocalCluster) -> bool:
    """Every replica's slot in the partition's `directories` names the directory that holds its log."""
    p = partition(cluster, TOPIC)
    for broker, recorded in zip(p.replicas, p.directories):
        node = cluster.nodes[broker]
        holder = next(d for d in (node.data_dir, _second_dir(cluster, broker)) if (d / f"{TOPIC}-0").is_dir())
        if recorded != read_meta_properties(str(holder)).directory_id:
            return False
    return True


def test_brokers_with_several_directories_report_where_replicas_live(cluster):
    # The controller records a new replica as UNASSIGNED; a broker with several log dirs reports its choice.
    wait_for(lambda: _placements_recorded(cluster), "every replica's directory id recorded")


def test_a_replica_moves_under_load_and_loses_nothing(cluster):
    state = partition(cluster, TOPIC)
    leader = state.leader
    follower = next(b for b in state.replicas if b != leader)
    first_dir = {b: str(cluster.nodes[b].data_dir.resolve()) for b in cluster.broker_ids}
    assert all(_where(cluster, b)[first_dir[b]] == [(f"{TOPIC}-0", False)] for b in (leader, follower))
    answers = {}

    def on_sent(i: int) -> None:
        if i == RECORDS // 3:
            for broker in (leader, follower):
                answers[broker] = _admin(cluster, lambda c, b=broker: alter_replica_log_dirs(
                    c, b, {(TOPIC, 0): str(_second_dir(cluster, b))}))

    acknowledged = produce("kafka-python", bootstrap(cluster), TOPIC, RECORDS, on_sent)
    assert answers == {leader: {(TOPIC, 0): ErrorCode.NONE}, follower: {(TOPIC, 0): ErrorCode.NONE}}
    wait_for(lambda: _moved(cluster, leader) and _moved(cluster, follower), "both replicas in data-b", timeout=90)
    check = QueueCheck.of(acknowledged, consume("kafka-python", bootstrap(cluster), TOPIC, acknowledged))
    assert len(acknowledged) == RECORDS and check.lost == () and check.duplicated == () and check.reordered == 0
    for broker in (leader, follower):
        assert not (cluster.nodes[broker].data_dir / f"{TOPIC}-0").exists()
        assert (_second_dir(cluster, broker) / f"{TOPIC}-0").is_dir()
        assert not [p for p in _second_dir(cluster, broker).iterdir() if p.name.endswith(("-future", "-delete"))]

    # The controller records each moved replica's new directory id (AssignReplicasToDirs).
    wait_for(lambda: _placements_recorded(cluster), "the new directory ids in the partition's metadata")

    # A restart finds the replica in its new directory, with every record.
    cluster.stop(follower)
    cluster.start(follower)
    wait_for(lambda: len(partition(cluster, TOPIC).isr) == 3, "the restarted broker back in the ISR", timeout=90)
    assert _moved(cluster, follower)


def test_bad_moves_get_kafkas_errors(cluster):
    broker = cluster.broker_ids[0]
    answers = _admin(cluster, lambda c: alter_replica_log_dirs(c, broker, {
        (TOPIC, 0): "/no/such/dir", ("unknown-topic", 0): str(_second_dir(cluster, broker)),
        (TOPIC, 9): str(_second_dir(cluster, broker))}))
    assert answers == {(TOPIC, 0): ErrorCode.LOG_DIR_NOT_FOUND,
                       ("unknown-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       (TOPIC, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
