"""Votes, restarts and appends of the raft core, named after Kafka's KafkaRaftClientTest scenarios (§5.3)."""

from __future__ import annotations

import pytest
from kio.schema.end_quorum_epoch.v1.request import EndQuorumEpochRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.accumulator import RecordBatchTooLargeError
from pykraft.raft.client import NotLeaderError
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import ReplicaKey

from raft_context import build
from scenario_helpers import (answer_votes, become_leader, fetch, request_partition, vote, vote_answer,
                              vote_response)

NONE = ErrorCode.none


# ---- startup and restore -------------------------------------------------------------------------------------
def test_initialize_as_resigned_and_become_candidate() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(3, 0))
    assert ctx.role == "Resigned" and ctx.epoch == 3
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    # 4.0+: the election timeout moves it to epoch 4 (Unattached) and it campaigns from there.
    assert ctx.role == "Prospective" and ctx.epoch == 4
    assert ctx.persisted[-1] == ElectionState.with_unknown_leader(4)
    answer_votes(ctx)
    assert ctx.role == "Candidate" and ctx.persisted[-1] == ElectionState.with_voted_candidate(5, ReplicaKey(0))


def test_initialize_as_follower_empty_log_fetches_from_the_start() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    assert ctx.role == "Follower"
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    p = request_partition(send)
    assert send.destination.node_id == 1 and (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 0, 0)


# ---- votes ---------------------------------------------------------------------------------------------------
def test_reject_votes_from_same_epoch_after_resigning_leadership() -> None:
    ctx = build(0, [0, 1, 2])
    become_leader(ctx)
    epoch = ctx.epoch
    ctx._run(ctx.core.resign(ctx.now))
    assert ctx.role == "Resigned"
    assert vote_answer(ctx.request(vote(1, epoch, epoch - 1, ctx.log.end_offset())))[:2] == (NONE, False)
    assert ctx.role == "Resigned"


def test_grant_votes_from_higher_epoch_after_resigning_candidacy() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_voted_candidate(2, ReplicaKey(0)))
    assert ctx.role == "Candidate"
    assert vote_answer(ctx.request(vote(1, 3, 0, 0)))[:2] == (NONE, True)
    assert ctx.role == "Unattached" and ctx.persisted[-1] == ElectionState.with_voted_candidate(3, ReplicaKey(1))


def test_grant_votes_when_shutting_down_and_do_not_campaign() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_unknown_leader(2))
    ctx._run(ctx.core.shutdown(ctx.now, 60_000))
    assert vote_answer(ctx.request(vote(1, 3, 0, 0)))[:2] == (NONE, True)
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Unattached" and not ctx.take_sent(VoteRequest)  # it waits for a leader instead


def test_handle_vote_request_as_follower_with_voted_candidate() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1, ReplicaKey(2)))
    assert ctx.role == "Follower"
    for candidate in (1, 2):  # even the candidate it voted for: a follower knows the leader of this epoch
        assert vote_answer(ctx.request(vote(candidate, 2, 1, 0)))[:2] == (NONE, False)
    assert ctx.persisted[-1] == ElectionState.with_elected_leader(2, 1, ReplicaKey(2))


def test_handle_vote_request_as_observer() -> None:
    ctx = build(7, [0, 1, 2], stored=ElectionState.with_unknown_leader(2))
    assert vote_answer(ctx.request(vote(1, 3, 0, 0, voter=7)))[:2] == (NONE, True)
    assert ctx.persisted[-1] == ElectionState.with_voted_candidate(3, ReplicaKey(1))


def test_candidate_ignore_vote_request_on_same_epoch() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_voted_candidate(2, ReplicaKey(0)))
    assert vote_answer(ctx.request(vote(1, 2, 0, 0)))[:2] == (NONE, False)
    assert ctx.role == "Candidate" and ctx.persisted[-1] == ElectionState.with_voted_candidate(2, ReplicaKey(0))


def test_leader_accept_vote_from_observer() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_unknown_leader(4))
    become_leader(ctx)
    epoch = ctx.epoch
    assert vote_answer(ctx.request(vote(2, epoch - 1))) == (ErrorCode.fenced_leader_epoch, False, 0, epoch)
    assert vote_answer(ctx.request(vote(2, epoch))) == (NONE, False, 0, epoch)
    assert ctx.role == "Leader"


def test_vote_request_timeout_is_retried_and_late_answer_ignored() -> None:
    config = QuorumConfig(append_linger_ms=0, election_timeout_ms=10_000)
    ctx = build(0, [0, 1], stored=ElectionState.with_unknown_leader(1), config=config)
    ctx.advance(2 * config.election_timeout_ms)
    answer_votes(ctx)  # pre-votes
    assert ctx.role == "Candidate"
    first = ctx.take_sent(VoteRequest)[-1]
    ctx.advance(config.request_timeout_ms)
    ctx.advance(config.retry_backoff_ms)
    retry = ctx.take_sent(VoteRequest)[-1]
    assert retry.destination.node_id == 1 and retry.correlation_id != first.correlation_id
    ctx.respond(first, vote_response(2, True))
    assert ctx.role == "Candidate"
    ctx.respond(retry, vote_response(2, True))
    assert ctx.role == "Leader" and ctx.epoch == 2


def test_wakeup_is_not_pinned_to_now_by_an_expired_backoff() -> None:
    config = QuorumConfig(append_linger_ms=0, election_timeout_ms=10_000)
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_unknown_leader(1), config=config)
    ctx.advance(2 * config.election_timeout_ms)
    for send in ctx.take_sent(VoteRequest)[:1]:  # 2 never answers: its request times out and backs off
        ctx.respond(send, vote_response(1, True))
    assert ctx.role == "Candidate"
    ctx.respond(ctx.take_sent(VoteRequest)[0], vote_response(2, True))
    assert ctx.role == "Leader"
    ctx.advance(config.request_timeout_ms + config.retry_backoff_ms + 1)
    ready = ctx.poll()
    assert ready.wakeup_ms > ctx.now


# ---- appends -------------------------------------------------------------------------------------------------
def test_append_failed_with_fenced_epoch() -> None:
    ctx = build(0, [0])
    with pytest.raises(NotLeaderError):
        ctx.core.append([b"x"], ctx.now, epoch=ctx.epoch - 1)
    offset, _ = ctx.core.append([b"x"], ctx.now, epoch=ctx.epoch)
    assert offset == 1


def test_append_failed_with_record_batch_too_large() -> None:
    ctx = build(0, [0], config=QuorumConfig(append_linger_ms=0, max_batch_size_bytes=1024))
    with pytest.raises(RecordBatchTooLargeError):
        ctx.core.append([b"x" * 2000], ctx.now)
    assert ctx.log.end_offset() == 1  # nothing but the LeaderChange batch


def test_end_quorum_epoch_retries_while_resigned_until_acknowledged() -> None:
    config = QuorumConfig(append_linger_ms=0, election_timeout_ms=10_000)
    ctx = build(0, [0, 1, 2], config=config)
    become_leader(ctx)
    ctx._run(ctx.core.resign(ctx.now))
    sends = {s.destination.node_id: s for s in ctx.take_sent(EndQuorumEpochRequest)}
    assert set(sends) == {1, 2}
    ctx.respond(sends[1], messages.end_quorum_epoch_response(NONE, NONE, None, ctx.epoch))
    ctx.advance(config.request_timeout_ms)
    ctx.advance(config.retry_backoff_ms)
    assert [s.destination.node_id for s in ctx.take_sent(EndQuorumEpochRequest)] == [2]  # 1 acknowledged
    assert ctx.role == "Resigned"


def test_end_quorum_epoch_sent_based_on_fetch_offset() -> None:
    ctx = build(0, [0, 1, 2])
    become_leader(ctx)
    _, ready = ctx.core.append([b"a", b"b"], ctx.now)
    ctx._run(ready)
    end, epoch = ctx.log.end_offset(), ctx.epoch
    ctx.request(fetch(1, epoch, end - 2, epoch))
    ctx.request(fetch(2, epoch, end, epoch))
    ctx._run(ctx.core.resign(ctx.now))
    request = ctx.take_sent(EndQuorumEpochRequest)[0].request
    candidates = [c.candidate_id for c in request.topics[0].partitions[0].preferred_candidates]
    assert candidates == [2, 1]  # the most caught-up voter first


def test_restarted_leader_no_longer_a_voter_leaves_resigned_and_finds_the_leader() -> None:
    ctx = build(0, [1, 2], stored=ElectionState.with_elected_leader(3, 0))  # it led epoch 3, then was removed
    assert ctx.role == "Resigned"
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Unattached" and ctx.epoch == 4  # observers never campaign, they discover the leader
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, partition_error=ErrorCode.not_leader_or_follower
                                              if send.destination.node_id != 1 else ErrorCode.none,
                                              leader_id=1, epoch=4))
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1
