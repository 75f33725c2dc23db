"""Kafka's Java Admin (kafka-clients 3.9.1) moving partitions on pykraft (ReassignmentChecks.java, KIP-455): a move
that completes with the records still readable, the controller's per-partition errors as Java exceptions, and a move
held in progress (its new broker paused) that is listed, then cancelled."""

from __future__ import annotations

import signal

from .conftest import brokers_of
from .java_programs import failures

EXPECTED_ERRORS = ["UnknownTopicOrPartitionException", "UnknownTopicOrPartitionException",
                   "InvalidReplicaAssignmentException", "InvalidReplicaAssignmentException",
                   "NoReassignmentInProgressException"]


def test_java_admin_moves_a_partition_and_gets_kafkas_errors(java, java_cluster):
    a, b, c = java_cluster.broker_ids
    results = java.run("ReassignmentChecks", brokers_of(java_cluster), "java", str(a), str(b), str(c), "move")
    assert not failures(results)
    assert results["move_completes"].detail == [b, c]
    assert results["errors"].detail == EXPECTED_ERRORS


def test_java_admin_lists_a_move_in_progress_and_cancels_it(java, java_cluster):
    a, b, c = java_cluster.broker_ids
    java_cluster.cli("topics", "create", "--bootstrap-server", brokers_of(java_cluster), "--topic", "java-pending",
                     "--replica-assignment", f"{a}:{b}")
    java_cluster.signal(c, signal.SIGSTOP)  # the new replica cannot catch up: the move stays in progress
    try:
        reachable = ",".join(f"127.0.0.1:{java_cluster.nodes[n].port}" for n in (a, b))
        results = java.run("ReassignmentChecks", reachable, "java", str(a), str(b), str(c), "pending")
    finally:
        java_cluster.signal(c, signal.SIGCONT)
    assert not failures(results)
    assert results["pending_listed"].detail == {"replicas": [a, c, b], "adding": [c], "removing": [b]}
    assert sorted(results["pending_cancelled"].detail) == sorted([a, b])
