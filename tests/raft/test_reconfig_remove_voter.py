"""RemoveRaftVoter, leader side: one test per numbered step of handlers/remove_voter.py, plus the §5.3
KafkaRaftClientReconfigTest RemoveVoter scenarios (their Kafka names are in the docstrings)."""

from kio.schema.end_quorum_epoch.v1.request import EndQuorumEpochRequest
from kio.schema.errors import ErrorCode

from pykraft.raft import messages
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import ReplicaKey

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


def remove(ctx, node_id, *, directory_id=None, cluster=CLUSTER, ref="remove"):
    voter = ReplicaKey(node_id) if directory_id is False else key(node_id, directory_id)
    ctx._run(ctx.core.handle_request(ref, rm.remove_voter_request(cluster, voter), ctx.now))
    return response_for(ctx, ref)


def error_of(response):
    return None if response is None else response.error_code


def test_remove_voter_answers_once_the_new_voter_set_commits() -> None:
    """testRemoveVoter: the removed voter stops counting at once; the remaining majority commits the change."""
    ctx = leader_with_committed_epoch()
    assert remove(ctx, 2) is None
    assert ctx.core.voters().ids() == {0, 1}
    fetch(ctx, 2)
    assert response_for(ctx, "remove") is None  # node 2 is no longer a voter: its fetch does not commit
    fetch(ctx, 1)
    assert error_of(response_for(ctx, "remove")) == ErrorCode.none
    assert ctx.role == "Leader"


def test_remove_voter_invalid_cluster_id() -> None:
    ctx = leader_with_committed_epoch()
    assert error_of(remove(ctx, 2, cluster="other")) == ErrorCode.inconsistent_cluster_id


def test_remove_voter_to_not_leader() -> None:
    ctx = build(1, stored=ElectionState.with_elected_leader(2, 0))
    assert error_of(remove(ctx, 2)) == ErrorCode.not_leader_or_follower


def test_remove_voter_without_directory_id_is_invalid() -> None:
    ctx = leader_with_committed_epoch()
    assert error_of(remove(ctx, 2, directory_id=False)) == ErrorCode.invalid_request


def test_step1_remove_voter_with_pending_change_times_out() -> None:
    ctx = leader_with_committed_epoch()
    remove(ctx, 2, ref="first")
    assert error_of(remove(ctx, 1, ref="second")) == ErrorCode.request_timed_out
    assert response_for(ctx, "first") is None


def test_step2_remove_voter_before_the_epoch_commits_times_out() -> None:
    ctx = build(0)
    elect(ctx)
    assert error_of(remove(ctx, 2)) == ErrorCode.request_timed_out
    assert ctx.core.voters().ids() == {0, 1, 2}


def test_step3_remove_voter_with_kraft_version_0_is_unsupported() -> None:
    ctx = build(0, static=True)
    elect(ctx)
    fetch(ctx, 1)
    assert error_of(remove(ctx, 2)) == ErrorCode.unsupported_version


def test_step4_remove_voter_with_uncommitted_voter_change_times_out() -> None:
    ctx = leader_with_committed_epoch()
    ctx.advance(10)
    fetch(ctx, 3)
    ctx._run(ctx.core.handle_request("add", rm.add_voter_request(CLUSTER, key(3), endpoints(3), 10_000, False),
                                     ctx.now))
    api_versions_answer(ctx)
    assert error_of(response_for(ctx, "add")) == ErrorCode.none  # appended, not committed
    assert error_of(remove(ctx, 2)) == ErrorCode.request_timed_out


def test_step5_remove_voter_with_none_voter() -> None:
    """testRemoveVoterWithNoneVoter: an unknown id, or a known id with another directory id."""
    ctx = leader_with_committed_epoch()
    assert error_of(remove(ctx, 7, ref="unknown")) == ErrorCode.voter_not_found
    assert error_of(remove(ctx, 2, directory_id=dir_of(42), ref="other-disk")) == ErrorCode.voter_not_found


def test_step5_remove_voter_to_empty_voter_set() -> None:
    """testRemoveVoterToEmptyVoterSet: the last voter cannot be removed."""
    ctx = build(0, [0])
    assert ctx.role == "Leader"
    assert ctx.core.high_watermark is not None
    assert error_of(remove(ctx, 0)) == ErrorCode.voter_not_found
    assert ctx.core.voters().ids() == {0}


def test_step6_removed_leader_keeps_serving_fetches_without_counting_itself() -> None:
    """testRemoveVoterIsLeader (first half): the leader's own LEO no longer counts toward the HWM."""
    ctx = leader_with_committed_epoch()
    hwm = ctx.core.high_watermark
    remove(ctx, 0)
    assert ctx.core.voters().ids() == {1, 2}
    p = fetch(ctx, 1)
    assert p.error_code == ErrorCode.none and ctx.role == "Leader"
    assert ctx.core.high_watermark == hwm  # leader + node 1 would be a majority of 3, not of {1, 2}
    assert response_for(ctx, "remove") is None


def test_step7_remove_voter_timed_out() -> None:
    """testRemoveVoterTimedOut: not committed within controller.quorum.request.timeout.ms."""
    ctx = leader_with_committed_epoch()
    remove(ctx, 2)
    ctx.advance(1999)
    assert response_for(ctx, "remove") is None
    ctx.advance(1)
    assert error_of(response_for(ctx, "remove")) == ErrorCode.request_timed_out


def test_step7_remove_voter_fails_when_losing_leadership() -> None:
    """testRemoveVoterFailsWhenLosingLeadership."""
    ctx = leader_with_committed_epoch()
    remove(ctx, 2)
    vote = messages.vote_request(CLUSTER, key(1), ctx.epoch + 1, key(0), ctx.core.last_offset_and_epoch(), False)
    ctx.request(vote)
    assert error_of(response_for(ctx, "remove")) == ErrorCode.not_leader_or_follower


def test_step8_removed_leader_resigns_once_the_removal_commits() -> None:
    """testRemoveVoterIsLeader: answer NONE, then resign and hand over with EndQuorumEpoch to the new voters."""
    ctx = leader_with_committed_epoch()
    remove(ctx, 0)
    fetch(ctx, 1)
    assert ctx.role == "Leader"
    ctx.take_sent()
    p = fetch(ctx, 2)
    assert p.high_watermark == ctx.log.end_offset()  # the answer that commits the removal still goes out
    assert error_of(response_for(ctx, "remove")) == ErrorCode.none
    assert ctx.role == "Resigned"
    assert sorted(s.destination.node_id for s in ctx.take_sent(EndQuorumEpochRequest)) == [1, 2]  # once each


def test_removed_leader_does_not_campaign_again() -> None:
    ctx = leader_with_committed_epoch()
    remove(ctx, 0)
    fetch(ctx, 1)
    fetch(ctx, 2)
    assert ctx.role == "Resigned"
    ctx.advance(5000)
    assert ctx.role == "Unattached" and not ctx.core.quorum.is_voter()
    ctx.advance(5000)
    assert ctx.role in ("Unattached", "Follower")  # an observer: it never becomes Prospective


def test_add_voter_accepted_after_the_removal_commits() -> None:
    ctx = leader_with_committed_epoch()
    remove(ctx, 2)
    fetch(ctx, 1)
    assert error_of(response_for(ctx, "remove")) == ErrorCode.none
    ctx.advance(10)
    fetch(ctx, 2, directory_id=dir_of(42))  # node 2 came back with a new disk, as an observer
    ctx._run(ctx.core.handle_request("add", rm.add_voter_request(CLUSTER, key(2, dir_of(42)), endpoints(2), 10_000),
                                     ctx.now))
    api_versions_answer(ctx)
    assert ctx.core.voters().node(2).key == key(2, dir_of(42))
