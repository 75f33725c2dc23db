"""A follower whose connection to its leader is refused or reset (the leader's process is gone) starts a pre-vote at
once (`RaftCore.on_peer_unreachable`) instead of waiting out fetch.timeout.ms; pre-vote keeps a live leader safe."""

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.election import ElectionState

from raft_context import CLUSTER, build
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ReplicaKey


def vote(candidate: int, epoch: int, pre_vote: bool):
    return messages.vote_request(CLUSTER, ReplicaKey(candidate), epoch, ReplicaKey(2), OffsetAndEpoch(0, 0), pre_vote)


def following_leader_1(node: int = 0):
    ctx = build(node, [0, 1, 2], stored=ElectionState.with_elected_leader(3, 1))
    ctx.poll()
    assert ctx.role == "Follower"
    return ctx


def test_a_voter_whose_leader_is_unreachable_starts_a_pre_vote_at_once() -> None:
    ctx = following_leader_1()
    ctx.take_sent()
    persisted = len(ctx.persisted)
    ctx._run(ctx.core.on_peer_unreachable(1, ctx.now))
    assert ctx.role == "Prospective" and ctx.epoch == 3  # no time passed, no epoch spent
    requests = [s.request for s in ctx.take_sent(VoteRequest)]
    assert {r.voter_id for r in requests} == {1, 2}
    assert all(r.topics[0].partitions[0].pre_vote for r in requests)
    assert len(ctx.persisted) == persisted  # a pre-vote writes nothing
    assert ctx.core.leader_unreachable == 1


def test_a_pre_vote_refused_by_a_live_quorum_falls_back_to_following_the_same_leader() -> None:
    ctx = following_leader_1()
    ctx._run(ctx.core.on_peer_unreachable(1, ctx.now))
    for send in ctx.take_sent(VoteRequest):  # the other voters still hear from leader 1: they refuse
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, 1, 3, False))
    assert ctx.role == "Follower" and ctx.epoch == 3
    assert ctx.core.quorum.leader_id() == 1
    assert ctx.take_sent(FetchRequest)  # and fetches from it again


def test_an_unreachable_peer_that_is_not_the_leader_changes_nothing() -> None:
    ctx = following_leader_1()
    ctx._run(ctx.core.on_peer_unreachable(2, ctx.now))
    assert ctx.role == "Follower" and ctx.core.leader_unreachable == 0


def test_an_observer_never_campaigns_when_its_leader_is_unreachable() -> None:
    ctx = build(7, [0, 1, 2], stored=ElectionState.with_elected_leader(3, 1))
    ctx.poll()
    ctx._run(ctx.core.on_peer_unreachable(1, ctx.now))
    assert ctx.role == "Follower" and ctx.epoch == 3


def test_a_node_shutting_down_does_not_campaign_when_its_leader_is_unreachable() -> None:
    ctx = following_leader_1()
    ctx._run(ctx.core.shutdown(ctx.now, 5000))
    ctx._run(ctx.core.on_peer_unreachable(1, ctx.now))
    assert ctx.role == "Follower"


def test_the_next_ranked_voter_waits_a_quarter_election_timeout_and_grants_pre_votes_meanwhile() -> None:
    ctx = following_leader_1(node=2)  # voters other than leader 1: [0, 2], so node 2 is ranked second
    fetch_send = ctx.take_sent(FetchRequest)[0]
    ctx.respond(fetch_send, messages.fetch_response(ErrorCode.none, leader_id=1, epoch=3, high_watermark=0))
    refused = ctx.request(vote(0, 3, pre_vote=True)).response.topics[0].partitions[0].vote_granted
    assert not refused  # it hears from leader 1: a pre-vote may not depose it
    ctx._run(ctx.core.on_peer_unreachable(1, ctx.now))
    assert ctx.role == "Follower"  # node 0 goes first: the survivors must not split the vote
    granted = ctx.request(vote(0, 3, pre_vote=True)).response.topics[0].partitions[0].vote_granted
    assert granted  # the leader is gone for it too: node 0's pre-vote is granted
    ctx.advance(249)
    assert ctx.role == "Follower"
    ctx.advance(1)
    assert ctx.role == "Prospective" and ctx.epoch == 3
