"""Scenario tests of the raft core, named after the Kafka tests (§5.3) whose rule they check."""

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.vote.v2.request import VoteRequest
from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest
from kio.schema.end_quorum_epoch.v1.request import EndQuorumEpochRequest
from kio.schema.describe_quorum.v2 import request as dq_req

from pykraft.raft import messages
from pykraft.raft.effects import CommitBatches, LeaderChanged, ShutdownComplete
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import ReplicaKey

from raft_context import CLUSTER, append_batch, build, endpoints


def vote(candidate: int, epoch: int, last_epoch: int = 0, last_offset: int = 0, pre_vote: bool = False,
         voter: int = 0, cluster: str | None = CLUSTER) -> VoteRequest:
    return messages.vote_request(cluster, ReplicaKey(candidate), epoch, ReplicaKey(voter),
                                 OffsetAndEpoch(last_offset, last_epoch), pre_vote)


def vote_result(respond) -> tuple:
    p = respond.response.topics[0].partitions[0]
    return respond.response.error_code, p.error_code, p.vote_granted


def fetch(replica: int, epoch: int, offset: int, last_epoch: int, max_wait: int = 0, cluster: str | None = CLUSTER) -> FetchRequest:
    return messages.fetch_request(cluster, ReplicaKey(replica), epoch, offset, last_epoch, 0, max_wait, 1 << 20)


def fetch_part(respond):
    return respond.response.responses[0].partitions[0]


def elect_leader(ctx) -> None:
    """Drive a 3-voter node 0 through pre-vote and vote to leadership."""
    ctx.advance(2000)
    assert ctx.role == "Prospective"
    for send in ctx.take_sent(VoteRequest):
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, ctx.epoch, True))
    assert ctx.role in ("Candidate", "Leader")
    for send in ctx.take_sent(VoteRequest):
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, ctx.epoch, True))
    assert ctx.role == "Leader"
    for send in ctx.take_sent(BeginQuorumEpochRequest):
        ctx.respond(send, messages.begin_quorum_epoch_response(ErrorCode.none, ErrorCode.none, 0, ctx.epoch))


# ---- startup and restore -------------------------------------------------------------------------------------
def test_initialize_single_member_quorum() -> None:
    ctx = build(0, [0])
    assert ctx.role == "Leader" and ctx.epoch == 1
    assert ctx.persisted[-1] == ElectionState.with_elected_leader(1, 0, ReplicaKey(0))
    assert ctx.core.high_watermark == 1  # the LeaderChange batch committed alone


def test_initialize_as_leader_from_state_store_single_member_quorum() -> None:
    ctx = build(0, [0], stored=ElectionState.with_elected_leader(5, 0))
    assert ctx.role == "Resigned" and ctx.epoch == 5
    ctx.advance(2000)
    assert ctx.role == "Leader" and ctx.epoch == 7  # epoch + 1 unattached, then a new candidacy


def test_initialize_as_resigned_leader_from_state_store() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(3, 0))
    assert ctx.role == "Resigned" and ctx.epoch == 3
    # Resigned cannot vote in its own epoch.
    assert vote_result(ctx.request(vote(1, 3, 0, 0))) == (ErrorCode.none, ErrorCode.none, False)


def test_initialize_as_candidate_from_state_store() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_voted_candidate(2, ReplicaKey(0)))
    assert ctx.role == "Candidate" and ctx.epoch == 2


def test_initialize_as_follower_non_empty_log() -> None:
    log = MemoryLog()
    append_batch(log, 1, 2)
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1), log=log)
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1


def test_initialize_primordial_epoch() -> None:
    ctx = build(0, [0, 1, 2])
    assert ctx.role == "Unattached" and ctx.epoch == 0


def test_initialize_stored_epoch_below_log_epoch_becomes_unattached_at_log_epoch() -> None:
    log = MemoryLog()
    append_batch(log, 4)
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1), log=log)
    assert ctx.role == "Unattached" and ctx.epoch == 4


def test_initialize_observer_no_previous_state() -> None:
    ctx = build(7, [0, 1, 2])
    assert ctx.role == "Unattached"
    ctx.advance(10_000)
    assert ctx.role == "Unattached"  # observers never campaign


# ---- elections -------------------------------------------------------------------------------------------------
def test_election_timeout_starts_prevote_not_vote() -> None:
    ctx = build(0, [0, 1, 2])
    ctx.advance(1999)
    assert ctx.role == "Prospective" and ctx.epoch == 0
    requests = [s.request for s in ctx.take_sent(VoteRequest)]
    assert {r.voter_id for r in requests} == {1, 2}
    assert all(r.topics[0].partitions[0].pre_vote for r in requests)
    assert not ctx.persisted[-1].voted_key  # a pre-vote is not persisted


def test_initialize_as_candidate_and_become_leader_quorum_of_three() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    assert ctx.epoch == 1
    assert ctx.persisted[-2] == ElectionState.with_voted_candidate(1, ReplicaKey(0))
    begins = [e for e in ctx.effects if getattr(e, "request", None).__class__ is BeginQuorumEpochRequest]
    assert {s.destination.node_id for s in begins} == {1, 2}  # first BeginQuorumEpoch is immediate


def test_pre_vote_not_supported_by_remote() -> None:
    ctx = build(0, [0, 1, 2])
    ctx.advance(2000)
    send = ctx.take_sent(VoteRequest)[0]
    ctx.respond(send, messages.vote_response(ErrorCode.unsupported_version, ErrorCode.none, None, 0, False))
    assert ctx.role == "Candidate" and ctx.epoch == 1


def test_prospective_transitions_to_unattached_on_election_failure() -> None:
    ctx = build(0, [0, 1, 2])
    ctx.advance(2000)
    for send in ctx.take_sent(VoteRequest):
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, 0, False))
    assert ctx.role == "Unattached" and ctx.epoch == 0


def test_retry_election_with_backoff() -> None:
    ctx = build(0, [0, 1, 2])
    ctx.advance(2000)
    for send in ctx.take_sent(VoteRequest):
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, 0, True))
    assert ctx.role == "Candidate"
    for send in ctx.take_sent(VoteRequest)[:1]:  # one rejection: the majority is still reachable
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, 1, False))
    ctx.advance(2000)  # election timeout without a majority: back off
    state = ctx.core.quorum.state
    assert state.role.value == "Candidate" and state.backoff_until_ms is not None
    assert state.backoff_until_ms - ctx.now <= 1000
    ctx.advance(1000)
    assert ctx.role == "Prospective" and ctx.epoch == 1


def test_handle_valid_vote_request_as_unattached_persists_vote() -> None:
    ctx = build(0, [0, 1, 2])
    assert vote_result(ctx.request(vote(1, 1))) == (ErrorCode.none, ErrorCode.none, True)
    assert ctx.persisted[-1] == ElectionState.with_voted_candidate(1, ReplicaKey(1))
    # the same epoch: never two votes
    assert vote_result(ctx.request(vote(2, 1)))[2] is False
    assert vote_result(ctx.request(vote(1, 1)))[2] is True


def test_handle_vote_request_as_follower_with_elected_leader() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    assert vote_result(ctx.request(vote(2, 2, 0, 0))) == (ErrorCode.none, ErrorCode.none, False)


def test_handle_invalid_vote_request_with_older_epoch() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_unknown_leader(5))
    assert vote_result(ctx.request(vote(1, 4))) == (ErrorCode.none, ErrorCode.fenced_leader_epoch, False)


def test_invalid_vote_request() -> None:
    ctx = build(0, [0, 1, 2])
    assert vote_result(ctx.request(vote(1, 1, last_epoch=1)))[1] == ErrorCode.invalid_request  # lastEpoch >= epoch
    assert vote_result(ctx.request(vote(1, 1, last_offset=-1)))[1] == ErrorCode.invalid_request


def test_invalid_voter_replica_vote_request() -> None:
    ctx = build(0, [0, 1, 2])
    assert vote_result(ctx.request(vote(1, 1, voter=2)))[1] == ErrorCode.invalid_voter_key


def test_vote_request_cluster_id_validation() -> None:
    ctx = build(0, [0, 1, 2])
    assert vote_result(ctx.request(vote(1, 1, cluster="other")))[0] == ErrorCode.inconsistent_cluster_id
    assert vote_result(ctx.request(vote(1, 1, cluster=None)))[2] is True


def test_reject_vote_if_remote_log_not_up_to_date() -> None:
    log = MemoryLog()
    append_batch(log, 2, 3)
    ctx = build(0, [0, 1, 2], log=log, stored=ElectionState.with_unknown_leader(2))
    assert vote_result(ctx.request(vote(1, 3, last_epoch=2, last_offset=2)))[2] is False
    assert vote_result(ctx.request(vote(2, 3, last_epoch=2, last_offset=3)))[2] is True  # as long as ours


def test_handle_vote_request_higher_epoch_moves_to_unattached() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    assert vote_result(ctx.request(vote(2, 5, 0, 0)))[2] is True
    assert ctx.epoch == 5 and ctx.role == "Unattached"


def test_leader_ignore_vote_request_on_same_epoch() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    assert vote_result(ctx.request(vote(1, 1, 0, 0)))[2] is False and ctx.role == "Leader"


def test_leader_reject_pre_vote_request_on_same_epoch() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    assert vote_result(ctx.request(vote(1, 1, 0, 0, pre_vote=True)))[2] is False


def test_handle_pre_vote_request_as_follower_depends_on_has_fetched() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    assert vote_result(ctx.request(vote(2, 2, 0, 0, pre_vote=True)))[2] is True  # not fetched yet
    ctx.core.quorum.state.has_fetched_from_leader = True
    assert vote_result(ctx.request(vote(2, 2, 0, 0, pre_vote=True)))[2] is False
    assert ctx.persisted[-1].voted_key is None  # pre-votes are never persisted


def test_handle_pre_vote_request_as_unattached_observer() -> None:
    ctx = build(7, [0, 1, 2])
    assert vote_result(ctx.request(vote(1, 1, 0, 0, pre_vote=True, voter=7)))[2] is True


def test_observer_follower_vetoes_pre_votes_only_while_the_leader_answers() -> None:
    # Node 7 follows leader 1 as an observer, but the candidates may count it as a voter (it has not read the
    # VotersRecord yet): once the leader has been silent for a fetch timeout its veto ends.
    ctx = build(7, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    ctx.core.quorum.state.has_fetched_from_leader = True
    assert vote_result(ctx.request(vote(2, 2, 0, 0, pre_vote=True, voter=7)))[2] is False
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    assert ctx.role == "Follower"  # observers never campaign
    assert vote_result(ctx.request(vote(2, 2, 0, 0, pre_vote=True, voter=7)))[2] is True
    assert vote_result(ctx.request(vote(2, 3, 0, 0, voter=7)))[2] is True  # and the binding vote follows


# ---- leadership ------------------------------------------------------------------------------------------------
def test_leader_writes_leader_change_and_hwm_needs_majority() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    assert ctx.log.end_offset() == 1 and ctx.core.high_watermark is None
    ctx.request(fetch(1, 1, 1, 1))
    assert ctx.core.high_watermark == 1


def test_high_watermark_requires_record_of_current_epoch() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx.request(fetch(1, 1, 0, 0))  # follower at the epoch start offset: nothing of this epoch
    assert ctx.core.high_watermark is None


def test_append_and_commit_deliver_batches_in_order() -> None:
    ctx = build(0, [0])
    offset, ready = ctx.core.append([b"a", b"b"], ctx.now)
    ctx._run(ready)
    assert offset == 2 and ctx.core.high_watermark == 3
    commits = [e for e in ctx.effects if isinstance(e, CommitBatches)]
    assert [(c.base_offset, c.last_offset) for c in commits] == [(0, 0), (1, 2)]
    changes = [e for e in ctx.effects if isinstance(e, LeaderChanged)]
    assert changes[-1] == LeaderChanged(0, 1)


def test_append_failed_with_not_leader_exception() -> None:
    ctx = build(0, [0, 1, 2])
    from pykraft.raft.client import NotLeaderError
    import pytest

    with pytest.raises(NotLeaderError):
        ctx.core.append([b"x"], ctx.now)


def test_leader_immediately_sends_diverging_epoch() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    p = fetch_part(ctx.request(fetch(1, 1, 5, 0)))
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, 0)


def test_purgatory_fetch_timeout() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx.request(fetch(1, 1, 1, 1))
    ctx.request_no_response(fetch(1, 1, 1, 1, max_wait=500), ref="parked")
    ctx.advance(499)
    assert not [r for r in ctx.responses if r.ref == "parked"]
    ctx.advance(1)
    assert [r for r in ctx.responses if r.ref == "parked"]


def test_purgatory_fetch_satisfied_by_write() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx.request(fetch(1, 1, 1, 1))
    ctx.request_no_response(fetch(1, 1, 1, 1, max_wait=500), ref="parked")
    _, ready = ctx.core.append([b"x"], ctx.now)
    ctx._run(ready)
    parked = [r for r in ctx.responses if r.ref == "parked"]
    assert parked and fetch_part(parked[0]).records
    # the records go out before the leader's own flush (its HWM counts only its flushed end, as in Kafka)
    assert parked[0].after_log_flush is False


def test_a_replica_not_told_the_new_high_watermark_is_answered_without_waiting() -> None:
    """The records reach an observer before the sole voter's flush commits them: its next Fetch, with nothing new
    to read, is answered at once with the new high watermark (parked, the broker would have replayed a created topic
    only after max wait); once told, the following Fetch waits again."""
    ctx = build(0, [0])
    end = ctx.core.log.end_offset()
    assert fetch_part(ctx.request(fetch(7, 1, end, 1, max_wait=500), ref="first")).high_watermark == end
    ctx.request_no_response(fetch(7, 1, end, 1, max_wait=500), ref="parked")
    _, ready = ctx.core.append([b"x"], ctx.now)
    ctx._run(ready)
    (with_records,) = [r for r in ctx.responses if r.ref == "parked"]
    assert fetch_part(with_records).records and fetch_part(with_records).high_watermark == end
    assert ctx.core.high_watermark == end + 1  # the leader's own flush committed it since
    told = ctx.request(fetch(7, 1, end + 1, 1, max_wait=500), ref="next")
    assert fetch_part(told).high_watermark == end + 1 and not fetch_part(told).records
    ctx.request_no_response(fetch(7, 1, end + 1, 1, max_wait=500), ref="waits")


def test_fetch_request_cluster_id_validation() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    assert ctx.request(fetch(1, 1, 0, 0, cluster="bad")).response.error_code == ErrorCode.inconsistent_cluster_id


def test_fetch_request_epoch_validation() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    assert fetch_part(ctx.request(fetch(1, 0, 0, 0))).error_code == ErrorCode.fenced_leader_epoch
    assert fetch_part(ctx.request(fetch(1, 2, 0, 0))).error_code == ErrorCode.unknown_leader_epoch


def test_fetch_to_non_leader_is_not_leader_or_follower() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    assert fetch_part(ctx.request(fetch(2, 2, 0, 0))).error_code == ErrorCode.not_leader_or_follower


def test_leader_should_resign_leadership_if_not_get_fetch_request_from_majority_voters() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx.advance(2999)
    assert ctx.role == "Leader"
    ctx.advance(1)
    assert ctx.role == "Resigned"


def test_leader_should_not_resign_leadership_if_only_one_voter() -> None:
    ctx = build(0, [0])
    ctx.advance(100_000)
    assert ctx.role == "Leader"


def test_sole_voter_leader_wakeup_after_the_check_quorum_period_is_in_the_future() -> None:
    # Found by the simulator (initial_election seed 23): past its check-quorum deadline a sole voter kept that
    # deadline as its next wake-up, so every poll answered "now" and a runtime busy-looped.
    ctx = build(0, [0])
    timeout = ctx.core.config.check_quorum_timeout_ms
    assert ctx.role == "Leader" and ctx.epoch == 1
    ready = ctx.advance(timeout + 1)
    assert ctx.now < ready.wakeup_ms <= ctx.now + timeout  # the timer was reset, not dropped
    # A runtime that sleeps until each wake-up gets through ten periods without spinning: the leader's timers
    # (BeginQuorumEpoch resend, check-quorum) each fire once per period at most.
    polls = 0
    while ctx.now < 10 * timeout and polls < 1_000:
        ctx.now = ready.wakeup_ms
        ready = ctx.poll()
        polls += 1
        assert ready.wakeup_ms > ctx.now
    assert polls <= 10 * timeout // ctx.core.config.begin_quorum_resend_ms + 1
    assert ctx.role == "Leader" and ctx.epoch == 1


def test_begin_quorum_epoch_heartbeat() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx.request(fetch(1, 1, 1, 1))
    ctx.advance(1000)
    sends = ctx.take_sent(BeginQuorumEpochRequest)
    assert {s.destination.node_id for s in sends} == {2}  # 1 is fetching; 2 is not


def test_describe_quorum_with_followers() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx.request(fetch(1, 1, 1, 1))
    ctx.request(fetch(5, 1, 1, 1))  # an observer
    req = dq_req.DescribeQuorumRequest(topics=(dq_req.TopicData(topic_name="__cluster_metadata", partitions=(
        dq_req.PartitionData(partition_index=0),)),))
    p = ctx.request(req).response.topics[0].partitions[0]
    assert p.leader_id == 0 and p.high_watermark == 1
    assert [(v.replica_id, v.log_end_offset) for v in p.current_voters] == [(0, 1), (1, 1), (2, -1)]
    assert [o.replica_id for o in p.observers] == [5]


def test_describe_quorum_non_leader() -> None:
    ctx = build(0, [0, 1, 2])
    req = dq_req.DescribeQuorumRequest(topics=(dq_req.TopicData(topic_name="__cluster_metadata", partitions=(
        dq_req.PartitionData(partition_index=0),)),))
    assert ctx.request(req).response.topics[0].partitions[0].error_code == ErrorCode.not_leader_or_follower


# ---- following -------------------------------------------------------------------------------------------------
def test_handle_begin_quorum_request() -> None:
    ctx = build(0, [0, 1, 2])
    req = messages.begin_quorum_epoch_request(CLUSTER, 1, 3, ReplicaKey(0), endpoints(1))
    ctx.request(req)
    assert ctx.role == "Follower" and ctx.epoch == 3 and ctx.persisted[-1] == ElectionState.with_elected_leader(3, 1)


def test_follower_replication_and_hwm_adoption() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1))
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[0]
    leader_log = MemoryLog()
    append_batch(leader_log, 1, 3)
    ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=2, leader_id=1, epoch=1,
                                              records=leader_log.read(0, 1 << 20).records))
    assert ctx.log.end_offset() == 3 and ctx.core.high_watermark == 2
    assert ctx.take_sent(FetchRequest)[0].request.topics[0].partitions[0].fetch_offset == 3


def test_follower_log_reconciliation_truncates_on_diverging_epoch() -> None:
    log = MemoryLog()
    append_batch(log, 1, 2)
    append_batch(log, 2, 2)
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(3, 1), log=log)
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[0]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=1, epoch=3, diverging=OffsetAndEpoch(2, 1)))
    assert ctx.log.end_offset() == 2


def test_follower_keeps_its_hwm_on_a_diverging_answer() -> None:
    # Ours: epoch 1 at 0-4, epoch 3 at 5. The leader (epoch 4): epoch 1 at 0-2, epoch 2 at 3, epoch 4 from 4, HWM 5.
    # Its answer to fetch(6, last epoch 3) is DivergingEpoch(epoch 2, end 4): we keep 0-3, but our 3 is epoch 1
    # and the leader's is epoch 2, so its HWM must not commit our 3 before the next Fetch validates it.
    log = MemoryLog()
    for _ in range(5):
        append_batch(log, 1)  # one record a batch: truncation cuts whole batches
    append_batch(log, 3)
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(4, 1), log=log)
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[0]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=5, leader_id=1, epoch=4,
                                              diverging=OffsetAndEpoch(4, 2)))
    assert ctx.log.end_offset() == 4 and ctx.core.high_watermark is None
    retry = ctx.take_sent(FetchRequest)[0].request.topics[0].partitions[0]
    assert (retry.fetch_offset, retry.last_fetched_epoch) == (4, 1)


def test_voter_become_prospective_after_fetch_timeout() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1))
    ctx.advance(2000)
    assert ctx.role == "Prospective"


def test_follower_as_observer_does_not_become_candidate_after_fetch_timeout() -> None:
    ctx = build(7, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1))
    ctx.advance(2000)
    assert ctx.role == "Follower" and ctx.epoch == 1


def test_handle_end_quorum_request_with_lower_priority_to_become_leader() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1))
    req = messages.end_quorum_epoch_request(CLUSTER, 1, 1, (ReplicaKey(2), ReplicaKey(0)), endpoints(1))
    ctx.request(req)
    ctx.advance(499)
    assert ctx.role == "Follower"
    ctx.advance(1)
    assert ctx.role == "Prospective"  # (1000 >> 1) << 0 = 500 ms


def test_leader_graceful_shutdown_sends_end_quorum_epoch() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx._run(ctx.core.shutdown(ctx.now, 5000))
    assert ctx.role == "Resigned"
    ctx.poll()
    assert {s.destination.node_id for s in ctx.take_sent(EndQuorumEpochRequest)} == {1, 2}
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 1, 2, ReplicaKey(0), endpoints(1)))
    assert any(isinstance(e, ShutdownComplete) and e.graceful for e in ctx.effects)


def test_resigned_leader_shutting_down_never_campaigns() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    epoch = ctx.epoch
    ctx._run(ctx.core.shutdown(ctx.now, 60_000))
    ctx.take_sent(VoteRequest)
    ctx.advance(10 * ctx.core.config.election_timeout_ms)  # long past the resigned state's election deadline
    assert ctx.role == "Resigned" and ctx.epoch == epoch and not ctx.take_sent(VoteRequest)
    assert ctx.take_sent(EndQuorumEpochRequest)  # it keeps asking the others to elect a leader
    assert not any(isinstance(e, ShutdownComplete) for e in ctx.effects)


def test_graceful_shutdown_single_member_quorum() -> None:
    ctx = build(0, [0])
    ctx._run(ctx.core.shutdown(ctx.now, 5000))
    assert any(isinstance(e, ShutdownComplete) and e.graceful for e in ctx.effects)


def test_leader_graceful_shutdown_timeout() -> None:
    ctx = build(0, [0, 1, 2])
    elect_leader(ctx)
    ctx._run(ctx.core.shutdown(ctx.now, 500))
    ctx.advance(500)
    assert any(isinstance(e, ShutdownComplete) and not e.graceful for e in ctx.effects)


def test_vote_response_ignored_after_becoming_follower() -> None:
    ctx = build(0, [0, 1, 2])
    ctx.advance(2000)
    sends = ctx.take_sent(VoteRequest)
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 1, 1, ReplicaKey(0), endpoints(1)))
    for send in sends:
        ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, 0, True))
    assert ctx.role == "Follower"
