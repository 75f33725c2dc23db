"""Issue 6's multi-process checks: real server processes on 127.0.0.1, driven through the CLI.

Each test formats and starts its own cluster in a temporary directory and stops every process at the end.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import threading

import pytest

from pykraft.admin.client import AdminClient
from pykraft.node.local_cluster import LocalCluster
from pykraft.records.uuids import uuid_to_kafka_str

from .helpers import (
    FAST_TIMEOUTS, describe_status, leader_status, log_values, observer_ids, values, voter_ids, wait_for, write,
)


@pytest.fixture
def make_cluster(tmp_path):
    clusters: list[LocalCluster] = []

    def make(controllers: int = 3, observers: int = 0, **properties: str) -> LocalCluster:
        cluster = LocalCluster(tmp_path / f"cluster-{len(clusters)}", controllers=controllers, observers=observers,
                               properties={**FAST_TIMEOUTS, **properties})
        clusters.append(cluster)
        return cluster

    yield make
    for cluster in clusters:
        cluster.stop_all(timeout=20)


def _running(cluster: LocalCluster, exclude: int | None = None) -> list[int]:
    return [i for i, n in cluster.nodes.items() if n.is_running() and i != exclude]


def test_initial_controllers_elect_commit_and_keep_every_record_across_a_full_restart(make_cluster):
    cluster = make_cluster()
    cluster.format_all()
    cluster.start_all()
    first = wait_for(lambda: leader_status(cluster), "a leader")
    assert voter_ids(first) == [1, 2, 3] and observer_ids(first) == []
    acked = write(cluster, values("before", 400))
    assert len(acked) == 400

    codes = cluster.stop_all()
    assert codes == {1: 0, 2: 0, 3: 0}, "every node stops cleanly on SIGTERM"
    cluster.start_all()
    second = wait_for(lambda: leader_status(cluster), "a leader after the restart")
    assert second["LeaderEpoch"] > first["LeaderEpoch"]
    acked += write(cluster, values("after", 100))
    assert len(acked) == 500
    wait_for(lambda: _caught_up(cluster, [1, 2, 3]), "every voter to hold the last write")
    assert cluster.stop_all() == {1: 0, 2: 0, 3: 0}
    for node in cluster.nodes.values():
        assert log_values(cluster, node) == acked, f"node {node.node_id} holds exactly the acknowledged records"


def test_sigkill_of_the_leader_under_writes_loses_no_acknowledged_record(make_cluster):
    cluster = make_cluster()
    cluster.format_all()
    cluster.start_all()
    leader = wait_for(lambda: leader_status(cluster), "a leader")["LeaderId"]
    acked: list[bytes] = []
    stop = threading.Event()

    def load() -> None:
        batch = 0
        while not stop.is_set():
            acked.extend(write(cluster, values(f"load{batch}", 20), batch=20, deadline_ms=20_000))
            batch += 1

    writer = threading.Thread(target=load)
    writer.start()
    try:
        wait_for(lambda: len(acked) >= 200, "writes before the crash")
        cluster.kill(leader)
        survivors = _running(cluster, exclude=leader)
        new = wait_for(lambda: (s := leader_status(cluster, survivors)) and s["LeaderId"] != leader and s,
                       "a new leader")
        assert new["LeaderId"] in survivors
        count = len(acked)
        wait_for(lambda: len(acked) >= count + 200, "writes acknowledged by the new leader")
    finally:
        stop.set()
        writer.join(timeout=120)
    cluster.start(leader)
    wait_for(lambda: _caught_up(cluster, survivors), "the restarted node to catch up")
    assert cluster.stop_all() == {1: 0, 2: 0, 3: 0}
    for node in cluster.nodes.values():
        logged = set(log_values(cluster, node))
        missing = [v for v in acked if v not in logged]
        assert not missing, f"node {node.node_id} lost {len(missing)} acknowledged records, e.g. {missing[:3]}"


def _caught_up(cluster: LocalCluster, ids: list[int]) -> bool:
    """Every voter (as the leader reports them) has replicated up to the high watermark."""

    async def main() -> bool:
        async with AdminClient([cluster.nodes[i].address for i in ids], deadline_ms=10_000) as admin:
            info = await admin.describe_quorum()
            return all(v.log_end_offset >= info.high_watermark for v in info.voters)

    return asyncio.run(main())


def test_sigstop_of_the_leader_gets_it_replaced_and_it_rejoins_after_sigcont(make_cluster):
    cluster = make_cluster()
    cluster.format_all()
    cluster.start_all()
    old = wait_for(lambda: leader_status(cluster), "a leader")
    paused = old["LeaderId"]
    cluster.signal(paused, signal.SIGSTOP)
    others = _running(cluster, exclude=paused)
    new = wait_for(lambda: (s := leader_status(cluster, others)) and s["LeaderId"] != paused and s,
                   "a leader other than the paused one")
    assert new["LeaderEpoch"] > old["LeaderEpoch"]
    assert len(write(_subset(cluster, others), values("during-pause", 100))) == 100
    cluster.signal(paused, signal.SIGCONT)
    wait_for(lambda: _caught_up(cluster, others), "the resumed node to catch up as a follower")
    status = describe_status(cluster, others)
    assert status["LeaderId"] != paused or status["LeaderEpoch"] > new["LeaderEpoch"]


def _subset(cluster: LocalCluster, ids: list[int]) -> LocalCluster:
    """A view of `cluster` whose writer bootstraps only from `ids` (a paused node would stall the bootstrap)."""
    view = object.__new__(LocalCluster)
    view.__dict__.update(cluster.__dict__)
    view.nodes = {i: cluster.nodes[i] for i in ids}
    return view


def test_standalone_controller_grows_to_three_voters_by_auto_join(make_cluster):
    cluster = make_cluster(controllers=1, observers=2, **{"controller.quorum.auto.join.enable": "true"})
    cluster.format(cluster.nodes[1], "--standalone")
    cluster.format(cluster.nodes[2])
    cluster.format(cluster.nodes[3])
    cluster.start_all()
    status = wait_for(lambda: (s := leader_status(cluster, [1])) and voter_ids(s) == [1, 2, 3] and s,
                      "nodes 2 and 3 to auto-join", timeout=90)
    assert status["LeaderId"] in (1, 2, 3)
    assert len(write(cluster, values("grown", 50))) == 50


def test_add_controller_and_remove_controller_through_the_cli(make_cluster):
    cluster = make_cluster(controllers=3, observers=1)
    cluster.format_all()
    cluster.start_all()
    wait_for(lambda: (s := leader_status(cluster, [1, 2, 3])) and observer_ids(s) == [4], "node 4 as an observer")
    added = cluster.cli("metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{cluster.nodes[1].port}",
                        "--command-config", str(cluster.nodes[4].config_path), "add-controller")
    directory4 = uuid_to_kafka_str(cluster.nodes[4].directory_id)
    assert f"Added controller 4 with directory id {directory4}" in added.stdout
    wait_for(lambda: voter_ids(describe_status(cluster, [1, 2, 3])) == [1, 2, 3, 4], "node 4 as a voter")

    directory1 = uuid_to_kafka_str(cluster.nodes[1].directory_id)
    removed = cluster.cli("metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{cluster.nodes[2].port}",
                          "remove-controller", "--controller-id", "1", "--controller-directory-id", directory1)
    assert f"Removed KRaft controller 1 with directory id {directory1}" in removed.stdout
    status = wait_for(lambda: (s := describe_status(cluster, [2, 3, 4])) and voter_ids(s) == [2, 3, 4] and s,
                      "node 1 removed")
    assert status["LeaderId"] in (2, 3, 4)
    assert len(write(_subset(cluster, [2, 3, 4]), values("after-remove", 50))) == 50


def test_disk_replacement_reformat_then_swap_the_voter_key(make_cluster):
    """KIP-853's disk-replacement flow: node 3 loses its disk and comes back with a new directory id as an observer.
    Kafka keeps one voter per id (AddVoter of an id already voting is DUPLICATE_VOTER, whatever the directory), so
    the KIP's "add (3, new) then remove (3, old)" order is refused with a clear error; the flow that works, as in
    Kafka, removes (3, old) and then adds (3, new)."""
    cluster = make_cluster()
    cluster.format_all()
    cluster.start_all()
    wait_for(lambda: leader_status(cluster), "a leader")
    node3 = cluster.nodes[3]
    old_directory = node3.directory_id
    cluster.kill(3)
    shutil.rmtree(node3.data_dir)
    cluster.format(node3, "--no-initial-controllers")
    assert node3.directory_id != old_directory
    cluster.start(3)
    wait_for(lambda: 3 in observer_ids(describe_status(cluster, [1, 2])), "node 3 back as an observer")
    bootstrap = f"127.0.0.1:{cluster.nodes[1].port}"
    refused = cluster.cli("metadata-quorum", "--bootstrap-controller", bootstrap, "--command-config",
                          str(node3.config_path), "add-controller", check=False)
    assert refused.returncode == 1 and "DUPLICATE_VOTER" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    cluster.cli("metadata-quorum", "--bootstrap-controller", bootstrap, "remove-controller", "--controller-id", "3",
                "--controller-directory-id", uuid_to_kafka_str(old_directory))
    cluster.cli("metadata-quorum", "--bootstrap-controller", bootstrap, "--command-config", str(node3.config_path),
                "add-controller")
    status = wait_for(lambda: (s := describe_status(cluster, [1, 2])) and len(s["CurrentVoters"]) == 3 and s,
                      "three voters again")
    assert sorted((v["id"], v["directoryId"]) for v in status["CurrentVoters"]) == sorted(
        [(1, uuid_to_kafka_str(cluster.nodes[1].directory_id)), (2, uuid_to_kafka_str(cluster.nodes[2].directory_id)),
         (3, uuid_to_kafka_str(node3.directory_id))])
    assert len(write(cluster, values("after-replacement", 50))) == 50


def test_reassign_the_voters_from_1_2_3_to_3_4_5(make_cluster):
    cluster = make_cluster(controllers=3, observers=2)
    cluster.format_all()
    cluster.start_all()
    wait_for(lambda: (s := leader_status(cluster, [1, 2, 3])) and observer_ids(s) == [4, 5], "observers 4 and 5")
    for node_id in (4, 5):  # the leader makes voters of registered controllers only (ControllerRegistration)
        wait_for(lambda n=node_id: "registered with the active controller" in cluster.server_log(n),
                 f"controller {node_id} registered")
    target = ",".join(cluster.nodes[i].voter_spec for i in (3, 4, 5))
    # The --initial-controllers syntax counts by its ids: the leader knows 4's and 5's endpoints and directories.
    result = cluster.cli("metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{cluster.nodes[3].port}",
                         "reassign", "--target-voters", target, timeout=180)
    assert result.returncode == 0
    status = wait_for(lambda: (s := describe_status(cluster, [3, 4, 5])) and voter_ids(s) == [3, 4, 5] and s,
                      "voters {3, 4, 5}")
    assert status["LeaderId"] in (3, 4, 5)
    assert len(write(_subset(cluster, [3, 4, 5]), values("reassigned", 50))) == 50


def test_kafka_python_admin_client_describes_the_running_quorum(make_cluster):
    from kafka.admin import KafkaAdminClient

    cluster = make_cluster(controllers=3, observers=1)
    cluster.format_all()
    cluster.start_all()
    status = wait_for(lambda: (s := leader_status(cluster, [1, 2, 3])) and observer_ids(s) == [4] and s,
                      "a leader and observer 4")
    write(cluster, values("interop", 20))
    leader = cluster.nodes[status["LeaderId"]]
    # kafka-python sends DescribeQuorum to any node it knows; only the leader answers it (as in Kafka), so it is
    # bootstrapped from the leader and a NOT_LEADER answer from another node is retried.
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{leader.port}", request_timeout_ms=10_000)
    try:
        quorum = wait_for(lambda: (q := admin.describe_metadata_quorum())["topics"][0]["partitions"][0]["error"]
                          is None and q, "kafka-python's DescribeQuorum answered by the leader", timeout=30)
        described = admin.describe_cluster()
    finally:
        admin.close()
    partition = quorum["topics"][0]["partitions"][0]
    assert partition["leader_id"] == status["LeaderId"]
    assert partition["leader_epoch"] == status["LeaderEpoch"]
    assert partition["high_watermark"] >= status["HighWatermark"]
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == [1, 2, 3]
    assert [o["replica_id"] for o in partition["observers"]] == [4]
    assert described["cluster_id"] == cluster.cluster_id
    assert described["controller_id"] == status["LeaderId"]
