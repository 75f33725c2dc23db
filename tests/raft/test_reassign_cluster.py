"""Quorum reassignment across in-process cores wired by `reconfig_context.Cluster`: the leader drives the steps, a
failover mid-way is resumed by the next leader from the target in its log, cancellation and replacement hold
through it. Every message goes through the real handlers."""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_change import ReassignVotersRequest, VoterCandidate

from raft_context import endpoints
from reconfig_context import FULL_RANGE, Cluster, build, kraft1_log, response_for

CANDIDATES = {i: VoterCandidate(endpoints(i), FULL_RANGE) for i in range(6)}


def five_nodes() -> Cluster:
    """Voters 0, 1, 2; controllers 3 and 4 follow as observers."""
    nodes = {i: build(i, [0, 1, 2], log=kraft1_log([0, 1, 2]), seed=i + 1) for i in range(3)}
    nodes.update({i: build(i, [0, 1, 2], log=MemoryLog(), seed=i + 1) for i in (3, 4)})
    cluster = Cluster(nodes)
    cluster.run(5000)
    assert len(cluster.leaders()) == 1
    return cluster


def ask(cluster: Cluster, target, ref: str, timeout_ms: int = 60_000, to: int | None = None):
    leader = cluster.nodes[cluster.leaders()[0] if to is None else to]
    request = ReassignVotersRequest(None if target is None else tuple(target), timeout_ms, CANDIDATES)
    leader._run(leader.core.handle_request(ref, request, leader.now))
    return leader


def step_until(cluster: Cluster, done, limit: int = 5000) -> None:
    """Deliver messages one round at a time (time moves 10 ms when none moved) until `done()`."""
    for _ in range(limit):
        if done():
            return
        if not cluster.step():
            for ctx in cluster.nodes.values():
                ctx.advance(10)
    raise AssertionError("not reached")


def committed_voters(cluster: Cluster) -> set[int]:
    leader = next(c.core for c in cluster.nodes.values() if c.role == "Leader" and c.core.high_watermark is not None
                  and c.core.local.node_id not in cluster.dropped)
    return set(leader.history.voter_set_at(leader.high_watermark - 1).ids())


def test_reassignment_to_three_new_voters_completes_and_every_node_agrees() -> None:
    cluster = five_nodes()
    leader = ask(cluster, [2, 3, 4], "move")
    cluster.run(10_000)
    assert response_for(leader, "move") is not None  # NONE, or NOT_LEADER if it removed itself
    assert len(cluster.leaders()) == 1 and cluster.leaders()[0] in (2, 3, 4)
    assert committed_voters(cluster) == {2, 3, 4}
    for node in cluster.nodes.values():
        assert node.core.voters().ids() == {2, 3, 4}
        assert node.core.history.last_target() is None


def test_the_leader_lost_mid_way_is_replaced_and_the_new_leader_finishes() -> None:
    cluster = five_nodes()
    old = cluster.leaders()[0]
    target = [min({0, 1, 2} - {old}), 3, 4]
    leader = ask(cluster, target, "move")
    core = leader.core
    step_until(cluster, lambda: core.reconfig.reassign_steps >= 1 and core.high_watermark > core.history.last_voter_set_offset())
    cluster.dropped = {old}  # as if killed
    cluster.run(15_000)
    assert response_for(leader, "move").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    survivors = [i for i in cluster.leaders() if i != old]
    assert len(survivors) == 1
    new = cluster.nodes[survivors[0]].core
    assert set(new.history.voter_set_at(new.high_watermark - 1).ids()) == set(target)
    assert new.history.last_target() is None


def test_cancel_under_a_new_leader_stops_the_old_target() -> None:
    """The leader is lost after the first step; as soon as its successor has committed its epoch (and taken the
    target over from its log), a cancellation ends the reassignment with the voters it stands at."""
    cluster = five_nodes()
    old = cluster.leaders()[0]
    ask(cluster, sorted(({0, 1, 2} - {old}) | {3, 4}), "move")
    step_until(cluster, lambda: cluster.nodes[old].core.voters().ids() == {0, 1, 2, 3})
    cluster.dropped = {old}

    def successor():
        found = [cluster.nodes[i] for i in cluster.leaders() if i != old]
        return found[0] if found and found[0].core.high_watermark is not None else None

    step_until(cluster, successor)
    new = successor()
    assert new.core.history.last_target() is not None, "the successor holds the target"
    ask(cluster, None, "cancel", to=new.core.local.node_id)
    at_cancel = set(new.core.voters().ids())
    assert at_cancel != {0, 1, 2, 3, 4} - {old}, "cancelled before the target was reached"
    cluster.run(3000)
    answer = response_for(new, "cancel")
    assert answer is not None and answer.error_code == ErrorCode.NONE, answer
    assert new.core.history.last_target() is None
    cluster.dropped = set()
    cluster.run(5000)
    assert committed_voters(cluster) == at_cancel
