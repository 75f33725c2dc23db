"""PreVote handling and Prospective behaviour (KIP-996), named after Kafka's KafkaRaftClientPreVoteTest (§5.3)."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import ReplicaKey

from raft_context import CLUSTER, append_batch, build, endpoints
from scenario_helpers import become_leader, pre_vote, vote_answer, vote_response

NONE = ErrorCode.none


def first_fetch_answered(ctx, epoch: int, leader: int) -> None:
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(NONE, leader_id=leader, epoch=epoch, high_watermark=0))


# ---- handling PreVotes by state ------------------------------------------------------------------------------
@pytest.mark.parametrize("has_fetched", [False, True])
def test_handle_pre_vote_request_as_follower(has_fetched: bool) -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 2))
    if has_fetched:
        first_fetch_answered(ctx, 2, 2)
    # A follower that heard from its leader in this epoch does not help depose it; observers are treated alike.
    assert vote_answer(ctx.request(pre_vote(1, 2, 2, 1))) == (NONE, not has_fetched, 2, 2)
    assert vote_answer(ctx.request(pre_vote(3, 2, 2, 1, voter=0))) == (NONE, not has_fetched, 2, 2)
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 2
    # A higher epoch makes it Unattached there first, then the pre-vote is granted (and not persisted).
    assert vote_answer(ctx.request(pre_vote(1, 3, 3, 1))) == (NONE, True, -1, 3)
    assert ctx.role == "Unattached" and ctx.core.quorum.state.voted_key is None


def test_handle_pre_vote_request_as_follower_with_voted_candidate() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_voted_candidate(2, ReplicaKey(2)))
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 2, 2, ReplicaKey(0), endpoints(2)))
    assert ctx.role == "Follower" and ctx.core.quorum.state.voted_key == ReplicaKey(2)
    assert vote_answer(ctx.request(pre_vote(1, 2, 2, 1)))[1] is True  # not fetched yet
    first_fetch_answered(ctx, 2, 2)
    assert vote_answer(ctx.request(pre_vote(1, 2, 2, 1)))[1] is False


def test_handle_pre_vote_request_as_candidate() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_voted_candidate(2, ReplicaKey(0)))
    assert ctx.role == "Candidate"
    assert vote_answer(ctx.request(pre_vote(1, 2, 2, 1))) == (NONE, True, -1, 2)
    assert vote_answer(ctx.request(pre_vote(5, 2, 2, 2))) == (NONE, True, -1, 2)  # an observer
    assert ctx.role == "Candidate" and ctx.persisted[-1] == ElectionState.with_voted_candidate(2, ReplicaKey(0))
    assert vote_answer(ctx.request(pre_vote(1, 3, 3, 2))) == (NONE, True, -1, 3)
    assert ctx.role == "Unattached" and ctx.epoch == 3


def test_handle_pre_vote_request_as_unattached_voted() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_voted_candidate(2, ReplicaKey(2)))
    for candidate in (1, 1, 2, 5):  # the same voter twice, another voter, an observer: all granted
        assert vote_answer(ctx.request(pre_vote(candidate, 2, 2, 1))) == (NONE, True, -1, 2)
    assert ctx.role == "Unattached" and ctx.core.quorum.state.voted_key == ReplicaKey(2)


def test_handle_pre_vote_request_as_unattached_with_leader() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 7))  # leader without known endpoints
    assert ctx.role == "Unattached" and ctx.core.quorum.leader_id() == 7
    for candidate in (1, 1, 2, 5):
        assert vote_answer(ctx.request(pre_vote(candidate, 2, 2, 1))) == (NONE, True, 7, 2)
    assert ctx.core.quorum.state.voted_key is None


@pytest.mark.parametrize("has_fetched", [False, True])
def test_handle_pre_vote_request_as_follower_observer(has_fetched: bool) -> None:
    ctx = build(7, [1, 2], stored=ElectionState.with_elected_leader(2, 1))
    assert ctx.role == "Follower" and not ctx.core.quorum.is_voter()
    if has_fetched:
        first_fetch_answered(ctx, 2, 1)
    assert vote_answer(ctx.request(pre_vote(2, 2, 2, 1, voter=7))) == (NONE, not has_fetched, 1, 2)
    assert ctx.role == "Follower"


def test_handle_pre_vote_request_as_resigned() -> None:
    ctx = build(0, [0, 1])
    become_leader(ctx)
    epoch = ctx.epoch
    ctx._run(ctx.core.resign(ctx.now))
    assert ctx.role == "Resigned"
    end = ctx.log.end_offset()
    assert vote_answer(ctx.request(pre_vote(1, epoch, epoch, end)))[:2] == (NONE, True)
    assert vote_answer(ctx.request(pre_vote(1, epoch + 1, epoch + 1, end))) == (NONE, True, -1, epoch + 1)
    assert ctx.role == "Unattached"


# ---- validation ----------------------------------------------------------------------------------------------
def test_handle_invalid_pre_vote_request_with_older_epoch() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_unknown_leader(2))
    assert vote_answer(ctx.request(pre_vote(1, 1, 1, 1))) == (ErrorCode.fenced_leader_epoch, False, -1, 2)
    assert ctx.role == "Unattached" and ctx.epoch == 2 and ctx.core.quorum.state.voted_key is None


def test_pre_vote_request_cluster_id_validation() -> None:
    ctx = build(0, [0, 1])
    become_leader(ctx)
    epoch = ctx.epoch
    assert vote_answer(ctx.request(pre_vote(1, epoch, epoch)))[:2] == (NONE, False)
    assert vote_answer(ctx.request(pre_vote(1, epoch, epoch, cluster=None)))[:2] == (NONE, False)
    for cluster in ("", "invalid-uuid"):
        assert ctx.request(pre_vote(1, epoch, epoch, cluster=cluster)).response.error_code \
            == ErrorCode.inconsistent_cluster_id


def test_invalid_voter_replica_pre_vote_request() -> None:
    ctx = build(0, [0, 1], directory_id=uuid.uuid4())
    become_leader(ctx)
    epoch = ctx.epoch
    wrong_id = pre_vote(1, epoch, epoch, 100, voter_key=ReplicaKey(10, uuid.uuid4()))
    assert vote_answer(ctx.request(wrong_id)) == (ErrorCode.invalid_voter_key, False, 0, epoch)
    wrong_dir = pre_vote(1, epoch, epoch, 100, voter_key=ReplicaKey(0, uuid.uuid4()))
    assert vote_answer(ctx.request(wrong_dir)) == (ErrorCode.invalid_voter_key, False, 0, epoch)


def test_leader_accept_pre_vote_from_observer() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_unknown_leader(4))
    become_leader(ctx)
    epoch = ctx.epoch
    assert vote_answer(ctx.request(pre_vote(2, epoch - 1))) == (ErrorCode.fenced_leader_epoch, False, 0, epoch)
    assert vote_answer(ctx.request(pre_vote(2, epoch))) == (NONE, False, 0, epoch)
    assert ctx.role == "Leader"


def test_invalid_pre_vote_request() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(5, 1))
    for last_epoch, last_offset in ((0, -5), (-1, 0), (6, 0)):  # bad offset, bad epoch, last epoch > epoch
        assert vote_answer(ctx.request(pre_vote(1, 5, last_epoch, last_offset))) == (ErrorCode.invalid_request, False,
                                                                                      1, 5)
    assert ctx.role == "Follower" and ctx.epoch == 5


def test_follower_grants_pre_vote_if_has_not_fetched_yet() -> None:
    ctx = build(0, [1, 2], stored=ElectionState.with_elected_leader(2, 1))  # an observer following 1
    assert vote_answer(ctx.request(pre_vote(2, 2, 2, 1))) == (NONE, True, 1, 2)
    first_fetch_answered(ctx, 2, 1)
    assert vote_answer(ctx.request(pre_vote(2, 2, 2, 1))) == (NONE, False, 1, 2)
    assert ctx.role == "Follower"


def test_reject_pre_vote_if_remote_log_is_not_up_to_date() -> None:
    log = MemoryLog()
    append_batch(log, 2, 3)
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_unknown_leader(2), log=log)
    assert vote_answer(ctx.request(pre_vote(1, 1, 1, 0)))[:2] == (ErrorCode.fenced_leader_epoch, False)
    assert vote_answer(ctx.request(pre_vote(1, 2, 1, 2)))[:2] == (NONE, False)  # (1, 2) < (2, 3)
    assert ctx.role == "Unattached"


# ---- Prospective ---------------------------------------------------------------------------------------------
def prospective(voters: list[int], stored: ElectionState, config: QuorumConfig | None = None):
    ctx = build(0, voters, stored=stored, config=config)
    ctx.advance(2 * ctx.core.config.fetch_timeout_ms)
    assert ctx.role == "Prospective"
    return ctx


def test_pre_vote_response_ignored_after_becoming_follower() -> None:
    ctx = prospective([0, 1, 2], ElectionState.with_unknown_leader(5))
    sends = ctx.take_sent(VoteRequest)
    assert len(sends) == 2
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 2, 5, ReplicaKey(0), endpoints(2)))
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 2
    ctx.respond(sends[0], vote_response(5, True))
    ctx.respond(sends[1], vote_response(5, True, leader_id=2))
    assert ctx.role == "Follower" and ctx.epoch == 5 and ctx.core.quorum.leader_id() == 2


def test_pre_vote_not_supported_by_remote_falls_back_then_later_pre_votes_again() -> None:
    ctx = prospective([0, 1, 2], ElectionState.with_unknown_leader(5))
    first, second = ctx.take_sent(VoteRequest)
    ctx.respond(first, messages.vote_response(ErrorCode.unsupported_version, NONE, None, 5, False))
    assert ctx.role == "Candidate" and ctx.epoch == 6
    ctx.respond(second, vote_response(5, True))  # a late pre-vote answer changes nothing
    assert ctx.role == "Candidate" and ctx.epoch == 6
    assert not any(s.request.topics[0].partitions[0].pre_vote for s in ctx.take_sent(VoteRequest))
    ctx.advance(2 * ctx.core.config.election_timeout_ms)  # lost: back off
    ctx.advance(2 * ctx.core.config.election_backoff_max_ms)
    assert ctx.role == "Prospective" and ctx.epoch == 6
    assert all(s.request.topics[0].partitions[0].pre_vote for s in ctx.take_sent(VoteRequest))


def test_prospective_receives_begin_quorum_request() -> None:
    ctx = prospective([0, 1], ElectionState.with_unknown_leader(5))
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 1, 5, ReplicaKey(0), endpoints(1)))
    assert ctx.role == "Follower" and ctx.persisted[-1] == ElectionState.with_elected_leader(5, 1)


def test_prospective_transitions_to_unattached_on_timeout_or_rejection_and_retries() -> None:
    ctx = prospective([0, 1], ElectionState.with_unknown_leader(5))
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Unattached" and ctx.epoch == 5
    ctx.take_sent()
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Prospective"
    ctx.respond(ctx.take_sent(VoteRequest)[-1], vote_response(5, False))
    assert ctx.role == "Unattached"
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Prospective" and ctx.take_sent(VoteRequest)


def test_prospective_with_leader_transitions_to_follower() -> None:
    # Requests left unanswered here must not time out (that would put their destination in backoff).
    config = QuorumConfig(append_linger_ms=0, request_timeout_ms=60_000)
    ctx = prospective([0, 1, 2], ElectionState.with_elected_leader(5, 1), config)
    ctx.take_sent()
    ctx.advance(2 * ctx.core.config.election_timeout_ms)  # pre-election timed out: back to the known leader
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1
    assert ctx.take_sent(FetchRequest)
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    first, second = ctx.take_sent(VoteRequest)
    ctx.respond(first, vote_response(5, False))
    ctx.respond(second, vote_response(5, False))  # rejected by a majority: follower again, fetching
    assert ctx.role == "Follower" and ctx.take_sent(FetchRequest)
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    first, _ = ctx.take_sent(VoteRequest)
    ctx.respond(first, vote_response(6, False, leader_id=2, error=ErrorCode.fenced_leader_epoch))
    assert ctx.role == "Follower" and ctx.epoch == 6 and ctx.core.quorum.leader_id() == 2


def test_prospective_loses_election_has_leader_but_missing_endpoint() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(2, 3))  # 3's endpoints are unknown
    assert ctx.role == "Unattached" and ctx.core.quorum.leader_id() == 3
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Prospective"
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Unattached" and ctx.core.quorum.state.leader_id == 3
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    assert ctx.role == "Prospective" and ctx.core.quorum.state.leader_id == 3


def test_prospective_without_leader_transitions_to_follower_named_in_a_pre_vote_answer() -> None:
    ctx = prospective([0, 1, 2], ElectionState.with_unknown_leader(5))
    ctx.respond(ctx.take_sent(VoteRequest)[0], vote_response(5, True, leader_id=1))
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1 and ctx.epoch == 5


def test_pre_vote_request_timeout_is_retried_and_late_answer_ignored() -> None:
    config = QuorumConfig(append_linger_ms=0, election_timeout_ms=10_000, fetch_timeout_ms=10_000)
    ctx = prospective([0, 1], ElectionState.with_unknown_leader(1), config)
    first = ctx.take_sent(VoteRequest)[-1]
    ctx.advance(config.request_timeout_ms)
    ctx.advance(config.retry_backoff_ms)
    retry = ctx.take_sent(VoteRequest)[-1]
    assert retry.correlation_id != first.correlation_id and retry.request.topics[0].partitions[0].pre_vote
    ctx.respond(first, vote_response(1, True))
    assert ctx.role == "Prospective" and ctx.core.dropped_responses == 1
    ctx.respond(retry, vote_response(1, True))
    assert ctx.role == "Candidate" and ctx.persisted[-1] == ElectionState.with_voted_candidate(2, ReplicaKey(0))
