"""Quorum reassignment through AlterPartitionReassignments on `__cluster_metadata-0` (KIP-642), with real server
processes: voters {1, 2, 3} and controllers 4 and 5 following as observers.

The failover and cancellation tests stall the reassignment on purpose, without timing: node 3 (a voter outside
the target) is paused beforehand and 4 and 5 just before the request, so the leader can commit the target but not
its first step (adding 4 to {1, 2, 3} needs three of four). The leader is then SIGKILLed; once 3 and 4 resume, the
next leader commits that step from its log, goes on, and waits for 5, which no leader of the new epoch has seen
fetch. Resuming 5 lets it finish; cancelling there leaves the voters as they stand.
"""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from pykraft.admin.client import AdminClient
from pykraft.node.local_cluster import LocalCluster
from pykraft.protocol.errors import ErrorCode

from .helpers import FAST_TIMEOUTS, describe_status, leader_status, observer_ids, values, voter_ids, wait_for, write

# Kafka's default fetch timeout: a controller paused just before the request is still caught up when it arrives.
TIMEOUTS = {**FAST_TIMEOUTS, "controller.quorum.fetch.timeout.ms": "2000"}


@pytest.fixture
def cluster(tmp_path):
    made = LocalCluster(tmp_path / "quorum", controllers=3, observers=2, brokers=1, properties=TIMEOUTS)
    made.format_all()
    made.start_all()
    try:
        wait_for(lambda: (s := leader_status(made, [1, 2, 3])) and observer_ids(s) == [4, 5, 6], "observers 4, 5, 6")
        for node_id in (1, 2, 3, 4, 5):  # the leader knows the controllers' endpoints from their registrations
            wait_for(lambda n=node_id: "registered with the active controller" in made.server_log(n),
                     f"controller {node_id} registered")
        yield made
    finally:
        for node_id, node in made.nodes.items():
            if node.is_running():
                made.signal(node_id, signal.SIGCONT)  # a paused process would not stop
        made.stop_all(timeout=20)


def reassign_cli(cluster: LocalCluster, *args: str, via: list[int]):
    bootstrap = ",".join(f"127.0.0.1:{cluster.nodes[i].port}" for i in via)
    return cluster.cli("metadata-quorum", "--bootstrap-controller", bootstrap, "reassign", *args, check=False,
                       timeout=180)


def alter(cluster: LocalCluster, target: list[int] | None, via: list[int], timeout_ms: int = 0):
    async def main():
        async with AdminClient([cluster.nodes[i].address for i in via], deadline_ms=20_000) as admin:
            return await admin.alter_quorum_reassignment(target, timeout_ms)
    return asyncio.run(main())


def ongoing(cluster: LocalCluster, via: list[int]):
    async def main():
        async with AdminClient([cluster.nodes[i].address for i in via], deadline_ms=20_000) as admin:
            return await admin.list_quorum_reassignment()
    return asyncio.run(main())


def test_reassign_from_1_2_3_to_3_4_5_with_the_cli(cluster):
    result = reassign_cli(cluster, "--target-voters", "3,4,5", via=[1, 2, 3])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Reassigning the quorum to voters [3, 4, 5] (the leader moves it one voter at a time)"
    assert lines[-1] == "Reassignment complete. Voters: [3, 4, 5]"
    status = describe_status(cluster, [3, 4, 5])
    assert voter_ids(status) == [3, 4, 5] and status["LeaderId"] in (3, 4, 5)
    # A removed voter is an observer once it fetched from the new leader: the old leader, resigned, learns who that
    # is only at its election timeout (BeginQuorumEpoch goes to voters), so it shows up a moment later.
    wait_for(lambda: observer_ids(describe_status(cluster, [3, 4, 5])) == [1, 2, 6], "observers 1, 2, 6")
    assert len(write(cluster, values("after", 30))) == 30
    assert reassign_cli(cluster, "--status", via=[3, 4, 5]).stdout.strip() == "No quorum reassignment is in progress."


def _stall_then_kill_the_leader(cluster: LocalCluster) -> tuple[int, int, list[int]]:
    """See the module docstring. Returns (the killed leader, the voter kept, the target)."""
    leader = leader_status(cluster, [1, 2, 3])["LeaderId"]
    kept, paused = [n for n in (1, 2, 3) if n != leader]
    target = sorted([kept, 4, 5])
    cluster.signal(paused, signal.SIGSTOP)
    cluster.signal(4, signal.SIGSTOP)
    cluster.signal(5, signal.SIGSTOP)
    outcome = alter(cluster, target, via=[leader])
    assert outcome.code == ErrorCode.REQUEST_TIMED_OUT, outcome  # accepted: 4 and 5 were caught up a moment ago
    wait_for(lambda: (o := ongoing(cluster, [leader])) and 4 in o.voters, "the first step appended")
    cluster.kill(leader)
    cluster.signal(paused, signal.SIGCONT)
    cluster.signal(4, signal.SIGCONT)
    return leader, kept, target


def test_sigkill_of_the_leader_mid_way_is_resumed_by_the_next_leader(cluster):
    old, kept, target = _stall_then_kill_the_leader(cluster)
    survivors = [n for n in (1, 2, 3, 4) if n != old]
    # The next leader took the target over from its log: it shows it, waiting for the paused 5.
    progress = wait_for(lambda: (o := ongoing(cluster, survivors)) and 5 not in o.voters and o, "the resumed steps")
    assert sorted(progress.target) == target
    cluster.signal(5, signal.SIGCONT)
    wait_for(lambda: ongoing(cluster, survivors + [5]) is None, "the reassignment finished")
    status = describe_status(cluster, [kept, 4, 5])
    assert voter_ids(status) == target and status["LeaderId"] in target
    assert len(write(cluster, values("after-failover", 30))) == 30


def test_cancel_leaves_the_voters_where_the_reassignment_stands(cluster):
    old, kept, target = _stall_then_kill_the_leader(cluster)
    survivors = [n for n in (1, 2, 3, 4) if n != old]
    stalled = wait_for(lambda: (o := ongoing(cluster, survivors)) and 5 not in o.voters and o,
                       "the steps to wait for 5")
    result = reassign_cli(cluster, "--cancel", via=survivors)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Cancelling the quorum reassignment")
    stood = sorted(int(x) for x in lines[-1].split("[")[1].rstrip("]").split(","))
    assert lines[-1].startswith("Reassignment complete. Voters: ") and 5 not in stood
    assert set(stood) <= set(stalled.replicas)
    cluster.signal(5, signal.SIGCONT)
    assert ongoing(cluster, survivors) is None
    assert voter_ids(describe_status(cluster, survivors)) == stood, "no step after the cancellation"
    again = reassign_cli(cluster, "--cancel", via=survivors)
    assert again.returncode == 1 and "no quorum reassignment is in progress" in again.stderr


def test_bad_targets_are_refused_with_their_reason(cluster):
    via = [1, 2, 3]
    unknown = reassign_cli(cluster, "--target-voters", "1,2,9", via=via)
    assert unknown.returncode == 1 and "node 9 is unknown to the leader" in unknown.stderr
    broker = reassign_cli(cluster, "--target-voters", "1,2,6", via=via)
    assert broker.returncode == 1 and "node 6 is a broker, not a controller" in broker.stderr
    cluster.signal(5, signal.SIGSTOP)
    try:
        time.sleep(3.0)  # longer than the fetch timeout (2 s): 5 has not been at the leader's log end since
        lagging = reassign_cli(cluster, "--target-voters", "1,2,5", via=via)
        assert lagging.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in lagging.stderr
        assert "controller 5 is not caught up with the leader" in lagging.stderr
    finally:
        cluster.signal(5, signal.SIGCONT)
    assert voter_ids(describe_status(cluster, via)) == [1, 2, 3], "nothing was changed"
    assert ongoing(cluster, via) is None
