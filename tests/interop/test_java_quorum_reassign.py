"""Quorum reassignment (KIP-642 through AlterPartitionReassignments on `__cluster_metadata-0`) driven by Kafka's own
Admin (QuorumReassign.java), then Kafka's own parser over every metadata file the nodes wrote: the VotersRecords
that carry pykraft's target tag read as ordinary VotersRecords (Kafka skips the tag)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.records import iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from tests.e2e.helpers import leader_status, observer_ids, wait_for

from .conftest import SNAPSHOT_OFTEN, brokers_of
from .java_programs import failures
from .test_java_client import written_files

CHECKS = ["nothing_listed_before", "unknown_node_refused", "broker_node_refused", "cancel_without_reassignment",
          "reassign_to_target", "quorum_is_the_target", "nothing_listed_after"]


@pytest.fixture(scope="module")
def quorum_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Voters 1, 2, 3; controllers 4 and 5 following as observers; broker 6."""
    cluster = LocalCluster(tmp_path_factory.mktemp("interop-quorum") / "cluster", controllers=3, observers=2,
                           brokers=1, properties={**DATA_PLANE_TIMING, **SNAPSHOT_OFTEN})
    cluster.format_all()
    cluster.start_all()
    try:
        wait_for(lambda: (s := leader_status(cluster, [1, 2, 3])) and observer_ids(s) == [4, 5, 6], "observers")
        for node_id in (4, 5):
            wait_for(lambda n=node_id: "registered with the active controller" in cluster.server_log(n),
                     f"controller {node_id} registered")
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="module")
def reassigned(java, quorum_cluster):
    return java.run("QuorumReassign", brokers_of(quorum_cluster), "3,4,5", "9", "6")


@pytest.mark.parametrize("check", CHECKS)
def test_kafka_admin_reassigns_the_quorum(reassigned, check):
    assert not failures(reassigned, [check])


def test_the_refusals_say_why(reassigned):
    assert "unknown to the leader" in reassigned["unknown_node_refused"].detail
    assert "is a broker, not a controller" in reassigned["broker_node_refused"].detail
    assert reassigned["cancel_without_reassignment"].detail.startswith("NoReassignmentInProgressException")


def test_kafkas_parser_reads_the_target_records(reassigned, java, quorum_cluster):
    quorum_cluster.stop_all(timeout=30)
    metadata, _ = written_files(quorum_cluster.root)
    tagged = 0
    for path in metadata:
        for batch in iter_batches(path.read_bytes()):
            for record in batch.records() if batch.is_control else ():
                control = decode_control_record(record)
                tagged += control.type is ControlRecordType.KRAFT_VOTERS and control.voters_target is not None
    assert tagged >= 2, "the target and its clearing, in the voters' logs"
    results = java.run("ParseLogs", "--metadata", *map(str, metadata))
    assert len(results) == len(metadata)
    assert not failures(results)
    assert sum(r.detail["control"].get("KRAFT_VOTERS", 0) for r in results.values()) >= tagged
