"""AddRaftVoter, leader side: one test per numbered step of handlers/add_voter.py, plus the §5.3
KafkaRaftClientReconfigTest AddVoter scenarios (their Kafka names are in the docstrings)."""

from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest
from kio.schema.errors import ErrorCode

from pykraft.raft import messages
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange

from raft_context import CLUSTER, endpoints
from reconfig_context import (
    api_versions_answer,
    build,
    dir_of,
    elect,
    fetch,
    key,
    leader_with_committed_epoch,
    response_for,
)


def add(ctx, node_id=3, *, cluster=CLUSTER, directory_id=None, eps=None, timeout_ms=10_000, ack=True, ref="add"):
    request = rm.add_voter_request(cluster, key(node_id, directory_id), eps or endpoints(node_id), timeout_ms, ack)
    if directory_id is False:  # a request without a directory id
        request = rm.add_voter_request(cluster, ReplicaKey(node_id), eps or endpoints(node_id), timeout_ms, ack)
    ctx._run(ctx.core.handle_request(ref, request, ctx.now))
    return response_for(ctx, ref)


def remove(ctx, node_id, ref="remove"):
    ctx._run(ctx.core.handle_request(ref, rm.remove_voter_request(CLUSTER, key(node_id)), ctx.now))
    return response_for(ctx, ref)


def caught_up_observer(ctx, node_id=3) -> None:
    ctx.advance(10)  # a caught-up timestamp must be positive
    fetch(ctx, node_id)


def error_of(response):
    return None if response is None else response.error_code


# ---- the whole algorithm ---------------------------------------------------------------------------------------
def test_add_voter_answers_once_the_new_voter_set_commits() -> None:
    """testAddVoter: probe, caught-up check, append, and NONE only after a majority of the NEW set has the record."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    assert add(ctx) is None
    api_versions_answer(ctx)
    assert ctx.core.voters().ids() == {0, 1, 2, 3}  # in effect on append, before the commit
    fetch(ctx, 1)
    assert response_for(ctx, "add") is None  # leader + 1 is a majority of the old set only (3 of 4 needed)
    fetch(ctx, 2)
    assert error_of(response_for(ctx, "add")) == ErrorCode.none


def test_add_voter_invalid_cluster_id() -> None:
    """testAddVoterInvalidClusterId."""
    ctx = leader_with_committed_epoch()
    assert error_of(add(ctx, cluster="other")) == ErrorCode.inconsistent_cluster_id


def test_add_voter_to_not_leader() -> None:
    """testAddVoterToNotLeader."""
    ctx = build(1, stored=ElectionState.with_elected_leader(2, 0))
    assert ctx.role == "Follower"
    assert error_of(add(ctx)) == ErrorCode.not_leader_or_follower


def test_add_voter_with_missing_directory_id_is_invalid() -> None:
    """testAddVoterWithMissingDirectoryId."""
    ctx = leader_with_committed_epoch()
    assert error_of(add(ctx, directory_id=False)) == ErrorCode.invalid_request


def test_add_voter_with_missing_default_listener_is_invalid() -> None:
    """testAddVoterWithMissingDefaultListener: the new voter must be reachable on the leader's listener."""
    ctx = leader_with_committed_epoch()
    other_listener = Endpoints.of([Endpoint("PLAINTEXT", "localhost", 9093)])
    assert error_of(add(ctx, eps=other_listener)) == ErrorCode.invalid_request


# ---- steps 1-5 -------------------------------------------------------------------------------------------------
def test_step1_add_voter_with_pending_add_voter_times_out() -> None:
    """testAddVoterWithPendingAddVoter."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    assert add(ctx, ref="first") is None
    assert error_of(add(ctx, 4, ref="second")) == ErrorCode.request_timed_out
    assert response_for(ctx, "first") is None  # the first one is still in progress


def test_step1_add_voter_with_pending_remove_voter_times_out() -> None:
    """testAddVoterWithPendingRemoveVoter."""
    ctx = leader_with_committed_epoch()
    assert remove(ctx, 2) is None
    assert error_of(add(ctx)) == ErrorCode.request_timed_out


def test_step2_add_voter_without_fenced_previous_leaders_times_out() -> None:
    """testAddVoterWithoutFencedPreviousLeaders: no HWM until a record of this epoch commits."""
    ctx = build(0)
    elect(ctx)
    assert ctx.core.high_watermark is None
    assert error_of(add(ctx)) == ErrorCode.request_timed_out
    assert not ctx.take_sent(ApiVersionsRequest)


def test_step3_add_voter_with_kraft_version_0_is_unsupported() -> None:
    """testAddVoterWithKraftVersion0."""
    ctx = build(0, static=True)
    elect(ctx)
    fetch(ctx, 1)
    assert ctx.core.high_watermark is not None
    assert error_of(add(ctx)) == ErrorCode.unsupported_version


def test_step4_add_voter_with_uncommitted_voter_change_times_out() -> None:
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    assert add(ctx, ack=False, ref="first") is None
    api_versions_answer(ctx)
    assert error_of(response_for(ctx, "first")) == ErrorCode.none  # answered on append (AckWhenCommitted=false)
    caught_up_observer(ctx, 4)
    assert error_of(add(ctx, 4, ref="second")) == ErrorCode.request_timed_out  # the first is not committed


def test_step5_add_voter_with_existing_voter_is_duplicate() -> None:
    """testAddVoterWithExistingVoter: ids are unique, whatever the directory id."""
    ctx = leader_with_committed_epoch()
    assert error_of(add(ctx, 2, ref="same")) == ErrorCode.duplicate_voter
    assert error_of(add(ctx, 2, directory_id=dir_of(42), ref="new-disk")) == ErrorCode.duplicate_voter


# ---- step 6: the ApiVersions probe -----------------------------------------------------------------------------
def test_step6_probe_goes_to_the_new_voter_on_the_leader_listener() -> None:
    ctx = leader_with_committed_epoch()
    add(ctx, eps=Endpoints.of([Endpoint("CONTROLLER", "new-host", 7000), Endpoint("OTHER", "x", 1)]))
    sends = ctx.take_sent(ApiVersionsRequest)
    assert [(s.destination.node_id, s.destination.host, s.destination.port) for s in sends] == [(3, "new-host", 7000)]


def test_step6_failed_probe_times_out() -> None:
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx)
    api_versions_answer(ctx, error=ErrorCode.unsupported_version)
    assert error_of(response_for(ctx, "add")) == ErrorCode.request_timed_out
    assert ctx.core.voters().ids() == {0, 1, 2}


def test_step6_unanswered_probe_times_out_with_the_request_timeout() -> None:
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx, timeout_ms=60_000)
    ctx.take_sent(ApiVersionsRequest)
    ctx.advance(1999)
    assert response_for(ctx, "add") is None
    ctx.advance(1)  # controller.quorum.request.timeout.ms = 2000
    assert error_of(response_for(ctx, "add")) == ErrorCode.request_timed_out


def test_step6_api_versions_from_incorrect_node_is_ignored() -> None:
    """testAddVoterWithApiVersionsFromIncorrectNode: only the probed node's answer counts."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx, timeout_ms=1000)
    api_versions_answer(ctx, source=4)
    assert response_for(ctx, "add") is None and ctx.core.voters().ids() == {0, 1, 2}
    ctx.advance(1000)
    assert error_of(response_for(ctx, "add")) == ErrorCode.request_timed_out


# ---- steps 7-8 -------------------------------------------------------------------------------------------------
def test_step7_add_voter_invalid_feature_version() -> None:
    """testAddVoterInvalidFeatureVersion: the new voter must support the finalized kraft.version (1)."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx)
    api_versions_answer(ctx, kraft=SupportedVersionRange(0, 0))
    assert error_of(response_for(ctx, "add")) == ErrorCode.invalid_request
    add(ctx, ref="again")
    api_versions_answer(ctx, kraft=None)  # no kraft.version feature advertised at all
    assert error_of(response_for(ctx, "again")) == ErrorCode.invalid_request
    assert ctx.core.voters().ids() == {0, 1, 2}


def test_step8_add_voter_with_lagging_new_voter_times_out() -> None:
    """testAddVoterWithLaggingNewVoter: the new voter must have fetched up to the leader's LEO."""
    ctx = leader_with_committed_epoch()
    ctx.advance(10)
    fetch(ctx, 3, offset=0)  # far behind the leader's LEO
    add(ctx)
    api_versions_answer(ctx)
    assert error_of(response_for(ctx, "add")) == ErrorCode.request_timed_out
    assert ctx.core.voters().ids() == {0, 1, 2}


def test_step8_never_fetched_new_voter_times_out() -> None:
    ctx = leader_with_committed_epoch()
    add(ctx)
    api_versions_answer(ctx)
    assert error_of(response_for(ctx, "add")) == ErrorCode.request_timed_out


# ---- steps 9-10 ------------------------------------------------------------------------------------------------
def test_step9_new_voter_takes_effect_on_append_and_gets_begin_quorum_epoch() -> None:
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    before = ctx.log.end_offset()
    add(ctx)
    api_versions_answer(ctx)
    assert ctx.log.end_offset() == before + 1  # one VotersRecord
    assert ctx.core.history.last_voter_set_offset() == before
    assert ctx.core.voters().node(3).supported_kraft == SupportedVersionRange(0, 1)  # as advertised by the probe
    ctx.take_sent()
    ctx.advance(1000)  # the BeginQuorumEpoch heartbeat now covers the new voter
    assert 3 in {s.destination.node_id for s in ctx.take_sent(BeginQuorumEpochRequest)}


def test_step9_ack_when_committed_false_answers_on_append() -> None:
    """AddRaftVoter v1 (KIP-1186): AckWhenCommitted=false answers once the record is appended."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx, ack=False)
    assert response_for(ctx, "add") is None
    api_versions_answer(ctx)
    assert error_of(response_for(ctx, "add")) == ErrorCode.none
    assert ctx.core.high_watermark <= ctx.core.history.last_voter_set_offset()  # not committed yet


def test_step10_add_voter_timeout() -> None:
    """testAddVoterTimeout: the record was appended but did not commit within TimeoutMs."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx, timeout_ms=2000)
    api_versions_answer(ctx)
    ready = ctx.advance(10)
    assert ready.wakeup_ms <= ctx.now + 1990  # the core asks to be polled at the deadline
    ctx.advance(1989)
    assert response_for(ctx, "add") is None
    ctx.advance(1)
    assert error_of(response_for(ctx, "add")) == ErrorCode.request_timed_out
    assert ctx.core.voters().ids() == {0, 1, 2, 3}  # the record stays; it may still commit later


def test_step10_add_voter_fails_when_losing_leadership() -> None:
    """testAddVoterFailsWhenLosingLeadership."""
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx)
    api_versions_answer(ctx)
    vote = messages.vote_request(CLUSTER, key(1), ctx.epoch + 1, key(0), ctx.core.last_offset_and_epoch(), False)
    ctx.request(vote)
    assert ctx.role == "Unattached"
    assert error_of(response_for(ctx, "add")) == ErrorCode.not_leader_or_follower


def test_a_new_add_voter_is_accepted_once_the_previous_change_committed() -> None:
    ctx = leader_with_committed_epoch()
    caught_up_observer(ctx)
    add(ctx, ref="first")
    api_versions_answer(ctx)
    fetch(ctx, 1)
    fetch(ctx, 2)
    assert error_of(response_for(ctx, "first")) == ErrorCode.none
    caught_up_observer(ctx, 4)
    assert add(ctx, 4, ref="second") is None  # no refusal: the probe is out
    assert len(ctx.take_sent(ApiVersionsRequest)) == 1
