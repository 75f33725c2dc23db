"""Voter changes across several in-process cores wired by `reconfig_context.Cluster`: the whole KIP-853 story
(remove the leader, add a voter, replace a disk) with elections in between, every message through the real
handlers."""

from kio.schema.errors import ErrorCode

from pykraft.raft import reconfig_messages as rm
from pykraft.raft.memory_log import MemoryLog

from raft_context import CLUSTER, endpoints
from reconfig_context import Cluster, build, dir_of, key, kraft1_log, response_for


def three_voters() -> Cluster:
    cluster = Cluster({i: build(i, [0, 1, 2], log=kraft1_log([0, 1, 2]), seed=i + 1) for i in range(3)})
    cluster.run(5000)
    assert len(cluster.leaders()) == 1
    return cluster


def ask(cluster: Cluster, node_id: int, request, ref: str):
    ctx = cluster.nodes[node_id]
    ctx._run(ctx.core.handle_request(ref, request, ctx.now))
    return ctx


def test_removed_leader_hands_over_and_keeps_following_as_an_observer() -> None:
    cluster = three_voters()
    old = cluster.leaders()[0]
    ctx = ask(cluster, old, rm.remove_voter_request(CLUSTER, key(old)), "remove")
    cluster.run(5000)
    assert response_for(ctx, "remove").error_code == ErrorCode.none
    remaining = {0, 1, 2} - {old}
    new_leaders = cluster.leaders()
    assert len(new_leaders) == 1 and new_leaders[0] in remaining
    for node_id, node in cluster.nodes.items():
        assert node.core.voters().ids() == remaining, node_id
    assert not cluster.nodes[old].core.quorum.is_voter()
    assert cluster.nodes[old].role == "Follower" and cluster.nodes[old].core.quorum.leader_id() == new_leaders[0]


def test_disk_replacement_is_remove_then_add_with_the_new_directory() -> None:
    """KIP-853 'Disk failure recovery': node r restarts with an empty disk and a new directory id, as an observer;
    auto-join removes its old key and adds the new one."""
    cluster = three_voters()
    leader = cluster.leaders()[0]
    r = next(i for i in (0, 1, 2) if i != leader)
    cluster.nodes[r] = build(r, [0, 1, 2], log=MemoryLog(), directory_id=dir_of(40 + r), auto_join=True)
    cluster.run(20_000, tick=50)
    for node in cluster.nodes.values():
        assert node.core.voters().keys() == {key(i) for i in (0, 1, 2) if i != r} | {key(r, dir_of(40 + r))}
    assert cluster.nodes[r].core.quorum.is_voter()
    assert len(cluster.leaders()) == 1


def test_quorum_keeps_committing_after_growing_to_four_voters() -> None:
    cluster = three_voters()
    cluster.nodes[3] = build(3, [0, 1, 2], log=MemoryLog(), seed=9)
    cluster.run(1000)  # node 3 catches up as an observer
    leader = cluster.nodes[cluster.leaders()[0]]
    ctx = ask(cluster, cluster.leaders()[0], rm.add_voter_request(CLUSTER, key(3), endpoints(3), 10_000), "add")
    cluster.run(2000)
    assert response_for(ctx, "add").error_code == ErrorCode.none
    cluster.dropped = {next(i for i in (0, 1, 2) if i != cluster.leaders()[0])}  # one voter of four is cut off
    offset, ready = leader.core.append([b"still-available"], leader.now)
    leader._run(ready)
    cluster.run(2000)
    assert leader.role == "Leader" and leader.core.high_watermark > offset  # 3 of 4 is a majority
