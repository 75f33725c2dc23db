"""`pykraft reassign-partitions` with "log_dirs" (1 controller + 3 brokers, two log directories each): a partition
moves to other brokers and into their second directory in one --execute, Kafka's texts for the moves started and
for --verify, the logs end in the named directories. Waits poll with deadlines; nothing asserts a duration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykraft.node.local_cluster import LocalCluster

from .data_plane_checks import DATA_PLANE_TIMING, bootstrap, partition, stop_cluster
from .helpers import wait_for

pytest.importorskip("kafka")
TOPIC = "placed"


def second_dir(cluster: LocalCluster, broker: int) -> Path:
    return (cluster.nodes[broker].directory / "data-b").resolve()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("placed") / "cluster", controllers=1, brokers=3,
                           properties=DATA_PLANE_TIMING)
    for broker in cluster.broker_ids:
        node = cluster.nodes[broker]
        node.extra["log.dirs"] = f"{node.data_dir},{second_dir(cluster, broker)}"
    cluster.format_all()
    cluster.start_all()
    a, b, _ = cluster.broker_ids
    wait_for(lambda: cluster.cli("topics", "create", "--bootstrap-server", bootstrap(cluster), "--topic", TOPIC,
                                 "--replica-assignment", f"{a}:{b}", check=False).returncode == 0, "the topic created")
    wait_for(lambda: (p := partition(cluster, TOPIC)) is not None and len(p.isr) == 2, "a full ISR")
    yield cluster
    stop_cluster(cluster)


def test_execute_moves_replicas_into_the_named_log_dirs(cluster, tmp_path):
    a, b, c = cluster.broker_ids
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [b, c],
                                                               "log_dirs": [str(second_dir(cluster, b)), "any"]}]}))
    tool = ("reassign-partitions", "--bootstrap-server", bootstrap(cluster))
    executed = cluster.cli(*tool, "--execute", "--reassignment-json-file", str(plan), check=False)
    assert executed.returncode == 0, executed.stdout + executed.stderr
    assert f"Successfully started moving log directory to {second_dir(cluster, b)} for replica {TOPIC}-0 with broker " \
           f"{b} " in executed.stdout.splitlines()

    def verified() -> str | None:
        out = cluster.cli(*tool, "--verify", "--reassignment-json-file", str(plan), check=False).stdout
        done = f"Reassignment of partition {TOPIC}-0 is completed." in out and \
            f"Reassignment of replica {TOPIC}-0-{b} completed successfully." in out
        return out if done else None

    out = wait_for(verified, "the partition and the log dir moves completed", timeout=120)
    assert out.splitlines()[-2:] == [f"Clearing broker-level throttles on brokers {a},{b},{c}",
                                     f"Clearing topic-level throttles on topic {TOPIC}"]
    assert (second_dir(cluster, b) / f"{TOPIC}-0").is_dir()
    assert not (cluster.nodes[b].data_dir / f"{TOPIC}-0").exists()
    wait_for(lambda: not (cluster.nodes[a].data_dir / f"{TOPIC}-0").exists(), "the removed replica deleted")

    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"partitions": [{"topic": TOPIC, "partition": 0, "replicas": [b, c],
                                                   "log_dirs": ["/no/such/dir", "any"]}]}))
    refused = cluster.cli(*tool, "--execute", "--additional", "--reassignment-json-file", str(missing), check=False)
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[-1].startswith(f"Error: Failed to alter dir for {TOPIC}-0-{b}")
