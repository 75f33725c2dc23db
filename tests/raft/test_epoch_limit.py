"""A peer cannot move the quorum to an epoch with no room for the elections after it (issue 12, found while
fuzzing: one Vote with epoch 2**31 - 1 from any candidate made a single controller elect itself at 2**31, which no
int32 field can carry, and its core task failed). Epochs above MAX_PEER_EPOCH are refused from requests
(INVALID_REQUEST) and ignored in responses; the node keeps its epoch and goes on electing normally."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.config import MAX_PEER_EPOCH
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import Endpoints, ReplicaKey

from raft_context import CLUSTER, build, endpoints

INT32_MAX = 2**31 - 1


def partition_error(respond) -> ErrorCode:
    return respond.response.topics[0].partitions[0].error_code


def test_a_vote_request_beyond_the_limit_is_invalid_and_changes_nothing() -> None:
    ctx = build(0, [0, 1, 2])
    for epoch in (INT32_MAX, MAX_PEER_EPOCH + 1):
        request = messages.vote_request(CLUSTER, ReplicaKey.of(1, None), epoch, ReplicaKey.of(0, None),
                                        OffsetAndEpoch(10, 1), pre_vote=False)
        assert partition_error(ctx.request(request)) == ErrorCode.invalid_request
        assert ctx.epoch == 0 and not ctx.persisted[1:]
    at_limit = messages.vote_request(CLUSTER, ReplicaKey.of(1, None), MAX_PEER_EPOCH, ReplicaKey.of(0, None),
                                     OffsetAndEpoch(10, 1), pre_vote=False)
    assert partition_error(ctx.request(at_limit)) == ErrorCode.none and ctx.epoch == MAX_PEER_EPOCH


def test_begin_and_end_quorum_epoch_beyond_the_limit_are_invalid() -> None:
    ctx = build(0, [0, 1, 2])
    begin = messages.begin_quorum_epoch_request(CLUSTER, 1, INT32_MAX, ReplicaKey.of(0, None), endpoints(1))
    assert partition_error(ctx.request(begin)) == ErrorCode.invalid_request
    assert ctx.epoch == 0 and ctx.core.quorum.leader_id() is None


def test_a_response_naming_a_leader_beyond_the_limit_is_ignored_and_elections_go_on() -> None:
    ctx = build(0, [0, 1, 2])
    ctx.core.transition_on_epoch(INT32_MAX, 1, Endpoints(), ctx.now)
    assert ctx.epoch == 0 and ctx.core.refused_epochs == 1
    ctx.advance(10_000)  # election timeouts pass: the node campaigns (pre-vote first) at its own small epoch
    assert ctx.epoch < 10 and ctx.role in ("Prospective", "Candidate")
    assert any(isinstance(s.request, VoteRequest) for s in ctx.sent)
