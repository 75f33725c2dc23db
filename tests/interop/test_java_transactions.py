"""Kafka's Java client (kafka-clients 3.9.1) runs transactions against pykraft (Transactions.java): commit and abort
across two topics (read_committed vs read_uncommitted), consume-transform-produce with sendOffsetsToTransaction,
zombie fencing, the transaction timeout, and the transaction Admin calls; then Kafka's own parser reads every
partition log the run wrote, with its COMMIT/ABORT control batches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.node.local_cluster import LocalCluster

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING

from .conftest import brokers_of, running_cluster
from .java_programs import failures

pytestmark = pytest.mark.interop_java

TXN_PROPERTIES = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
                  "group.initial.rebalance.delay.ms": "0"}
CHECKS = ["commit_and_abort_across_two_topics", "consume_transform_produce", "zombie_fenced",
          "transaction_timeout_aborts", "admin_transactions"]


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("interop-txn") / "cluster", controllers=1, brokers=3,
                           properties={**DATA_PLANE_TIMING, **TXN_PROPERTIES})
    with running_cluster(cluster):
        yield cluster


@pytest.fixture(scope="module")
def run(java, txn_cluster):
    return java.run("Transactions", brokers_of(txn_cluster), "txn", timeout=600)


@pytest.mark.parametrize("check", CHECKS)
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
