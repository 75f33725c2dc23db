"""Kafka's Java client (kafka-clients 3.9.1) runs transactions against pykraft (Transactions.java): commit and abort
across two topics (read_committed vs read_uncommitted), consume-transform-produce with sendOffsetsToTransaction,
zombie fencing, the transaction timeout, and the transaction Admin calls, on a cluster finalized at
transaction.version 1 and on one at 2 (describeFeatures shows the level); then Kafka's own parser reads every
partition log the run wrote, with its COMMIT/ABORT control batches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.node.local_cluster import LocalCluster

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from tests.e2e.helpers import wait_for

from .conftest import brokers_of, unfenced_brokers
from .java_programs import failures

pytestmark = pytest.mark.interop_java

TXN_PROPERTIES = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
                  "group.initial.rebalance.delay.ms": "0"}
CHECKS = ["commit_and_abort_across_two_topics", "consume_transform_produce", "zombie_fenced",
          "transaction_timeout_aborts", "admin_transactions"]


# transaction.version 1 and 2 (a new 4.0-IV2+ cluster's default, KIP-890 part 2): kafka-clients 3.9.1 knows no
# EndTxn v5 / Produce v12 / TxnOffsetCommit v5, so it keeps the version 1 protocol on both, which must work there.
TXN_LEVELS = ["1", "2"]
LEVEL_OF: dict[int, str] = {}  # id(cluster) -> its transaction.version


def format_at(cluster: LocalCluster, level: str) -> None:
    initial = ",".join(n.voter_spec for n in cluster.nodes.values() if n.initial_voter)
    for node in cluster.nodes.values():
        quorum = () if node.is_broker else ("--initial-controllers", initial)
        cluster.format(node, *quorum, "--feature", f"transaction.version={level}")


@pytest.fixture(scope="module", params=TXN_LEVELS)
def txn_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("interop-txn") / "cluster", controllers=1, brokers=3,
                           properties={**DATA_PLANE_TIMING, **TXN_PROPERTIES})
    LEVEL_OF[id(cluster)] = request.param
    format_at(cluster, request.param)  # running_cluster's formatting would take the default level
    cluster.start_all()
    try:
        wait_for(lambda: len(unfenced_brokers(cluster)) == 3, "three unfenced brokers", timeout=120)
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="module")
def run(java, txn_cluster):
    return java.run("Transactions", brokers_of(txn_cluster), "txn", LEVEL_OF[id(txn_cluster)], timeout=600)


@pytest.mark.parametrize("check", [*CHECKS, "transaction_version_feature"])
def test_java_transactions(run, check):
    assert not failures(run, [check])


def test_kafkas_parser_reads_the_markers(run, java, txn_cluster):
    txn_cluster.stop_all(timeout=30)
    logs = sorted(p for p in txn_cluster.root.rglob("*.log")
                  if p.name != "server.log" and p.parent.name != "__cluster_metadata-0")
    results = java.run("ParseLogs", *map(str, logs))
    assert len(results) == len(logs)
    assert not failures(results)
    control = {}
    for result in results.values():
        for kind, count in result.detail["control"].items():
            control[kind] = control.get(kind, 0) + count
    assert control.get("COMMIT", 0) > 0 and control.get("ABORT", 0) > 0, control
