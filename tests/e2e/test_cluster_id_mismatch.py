"""Issue 12 item 6: a node formatted with another cluster id is kept out of the quorum, and both sides say why at
the default log level, once per peer, with both cluster ids. Real server processes on 127.0.0.1."""

from __future__ import annotations

import time
import uuid

import pytest

from pykraft.node.logs import TEXT_LINE
from pykraft.node.local_cluster import LocalCluster
from pykraft.records.uuids import uuid_to_kafka_str

from .helpers import FAST_TIMEOUTS, leader_status, voter_ids, wait_for


@pytest.fixture
def cluster(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=3, properties=FAST_TIMEOUTS)
    yield cluster
    cluster.stop_all(timeout=20)


def log_events(cluster: LocalCluster, node_id: int) -> list[str]:
    """The messages of a node's log lines (Kafka's layout, node/logs.py)."""
    return [match["message"] for line in cluster.server_log(node_id).splitlines()
            if (match := TEXT_LINE.match(line)) is not None]


def mentions(events: list[str], *parts: str) -> list[str]:
    return [e for e in events if all(p in e for p in parts)]


def test_a_voter_formatted_for_another_cluster_is_named_on_both_sides_once(cluster):
    stranger, other_id = 3, uuid_to_kafka_str(uuid.uuid4())
    initial = ",".join(n.voter_spec for n in cluster.nodes.values())
    for node in cluster.nodes.values():
        cluster_id = other_id if node.node_id == stranger else cluster.cluster_id
        cluster.write_config(node)
        cluster.cli("storage", "format", "--config", str(node.config_path), "--cluster-id", cluster_id,
                    "--initial-controllers", initial)
    cluster.start_all()
    status = wait_for(lambda: leader_status(cluster, [1, 2]), "a leader among the two voters of the cluster")
    assert status["LeaderId"] in (1, 2) and voter_ids(status) == [1, 2, 3]

    # The refused node names the refusing peer, its id and ours; the refusing voters name the stranger and both ids.
    wait_for(lambda: mentions(log_events(cluster, stranger), "INCONSISTENT_CLUSTER_ID", cluster.cluster_id, other_id),
             "the refused node to say why")
    for voter in (1, 2):
        wait_for(lambda: mentions(log_events(cluster, voter), "from node 3", other_id, cluster.cluster_id),
                 f"voter {voter} to say whom it refuses and why")
    time.sleep(3)  # refusals go on several times a second: still one line per peer
    refused_by = mentions(log_events(cluster, stranger), "refused our", "INCONSISTENT_CLUSTER_ID")
    assert 1 <= len(refused_by) <= 2 and len({e.split(" at ")[0] for e in refused_by}) == len(refused_by)
    for voter in (1, 2):
        assert len(mentions(log_events(cluster, voter), "from node 3", "INCONSISTENT_CLUSTER_ID")) == 1
    assert cluster.nodes[stranger].is_running(), "as in Kafka, the refused node keeps running (and retrying)"
