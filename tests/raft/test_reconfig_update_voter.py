"""UpdateRaftVoter: the leader side (one test per numbered step of handlers/update_voter.py) and the follower side
(when a voter sends it, follower_membership.py), with the §5.3 KafkaRaftClientReconfigTest UpdateVoter scenarios."""

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.update_raft_voter.v0.request import UpdateRaftVoterRequest

from pykraft.raft import messages
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange

from raft_context import CLUSTER, endpoints
from reconfig_context import (
    FULL_RANGE,
    build,
    dir_of,
    elect,
    fetch,
    key,
    kraft1_log,
    leader_with_committed_epoch,
    other_endpoints,
    response_for,
)


def update(ctx, node_id=1, *, epoch=None, eps=None, supported=FULL_RANGE, directory_id=None, cluster=CLUSTER,
           ref="update"):
    voter = ReplicaKey(node_id) if directory_id is False else key(node_id, directory_id)
    request = rm.update_voter_request(cluster, ctx.epoch if epoch is None else epoch, voter,
                                      eps or other_endpoints(node_id), supported)
    ctx._run(ctx.core.handle_request(ref, request, ctx.now))
    return response_for(ctx, ref)


# ---- leader side -----------------------------------------------------------------------------------------------
def test_steps8_9_update_voter_appends_the_new_endpoints_and_answers_at_once() -> None:
    """testUpdateVoter: NONE without waiting for the commit, naming the current leader and its endpoint."""
    ctx = leader_with_committed_epoch()
    before = ctx.log.end_offset()
    response = update(ctx, supported=SupportedVersionRange(0, 3))
    assert response.error_code == ErrorCode.none
    leader = response.current_leader
    assert (leader.leader_id, leader.leader_epoch, leader.host, leader.port) == (0, ctx.epoch, "localhost", 9990)
    assert ctx.log.end_offset() == before + 1 and ctx.core.history.last_voter_set_offset() == before
    node = ctx.core.voters().node(1)
    assert node.endpoints == other_endpoints(1) and node.supported_kraft == SupportedVersionRange(0, 3)
    assert ctx.core.high_watermark == before  # answered before the commit


def test_update_voter_invalid_cluster_id() -> None:
    ctx = leader_with_committed_epoch()
    assert update(ctx, cluster="other").error_code == ErrorCode.inconsistent_cluster_id


def test_update_voter_old_epoch_is_fenced() -> None:
    """testUpdateVoterOldEpoch."""
    ctx = leader_with_committed_epoch()
    assert update(ctx, epoch=ctx.epoch - 1).error_code == ErrorCode.fenced_leader_epoch


def test_update_voter_new_epoch_is_unknown() -> None:
    """testUpdateVoterNewEpoch."""
    ctx = leader_with_committed_epoch()
    assert update(ctx, epoch=ctx.epoch + 1).error_code == ErrorCode.unknown_leader_epoch


def test_update_voter_to_not_leader() -> None:
    ctx = build(2, stored=ElectionState.with_elected_leader(2, 0))
    response = update(ctx, 1)
    assert response.error_code == ErrorCode.not_leader_or_follower
    assert (response.current_leader.leader_id, response.current_leader.port) == (0, 9990)  # whom to ask instead


def test_update_voter_without_directory_id_or_with_inverted_range_is_invalid() -> None:
    ctx = leader_with_committed_epoch()
    assert update(ctx, directory_id=False, ref="a").error_code == ErrorCode.invalid_request
    assert update(ctx, supported=SupportedVersionRange(1, 0), ref="b").error_code == ErrorCode.invalid_request


def test_step1_update_voter_with_pending_change_times_out() -> None:
    ctx = leader_with_committed_epoch()
    ctx._run(ctx.core.handle_request("remove", rm.remove_voter_request(CLUSTER, key(2)), ctx.now))
    assert update(ctx).error_code == ErrorCode.request_timed_out


def test_step2_update_voter_before_the_epoch_commits_times_out() -> None:
    ctx = build(0)
    elect(ctx)
    assert update(ctx).error_code == ErrorCode.request_timed_out


def test_step3_update_voter_with_uncommitted_voter_change_times_out() -> None:
    ctx = leader_with_committed_epoch()
    assert update(ctx, 1, ref="first").error_code == ErrorCode.none  # appended, not committed
    assert update(ctx, 2, ref="second").error_code == ErrorCode.request_timed_out
    fetch(ctx, 1)  # the first change commits
    assert update(ctx, 2, ref="third").error_code == ErrorCode.none


def test_step4_update_voter_must_support_the_finalized_kraft_version() -> None:
    ctx = leader_with_committed_epoch()
    assert update(ctx, supported=SupportedVersionRange(0, 0)).error_code == ErrorCode.invalid_request


def test_step5_update_voter_without_the_default_listener_is_invalid() -> None:
    ctx = leader_with_committed_epoch()
    eps = Endpoints.of([Endpoint("PLAINTEXT", "h", 1)])
    assert update(ctx, eps=eps).error_code == ErrorCode.invalid_request


def test_step6_update_of_unknown_voter_is_not_found() -> None:
    ctx = leader_with_committed_epoch()
    assert update(ctx, 5, ref="id").error_code == ErrorCode.voter_not_found
    assert update(ctx, 1, directory_id=dir_of(42), ref="dir").error_code == ErrorCode.voter_not_found


def test_step7_update_voter_with_kraft_version_0_is_remembered_not_written() -> None:
    """testUpdateVoterWithKraftVersion0 (Kafka 4.1+ rule): no VotersRecord at kraft.version 0; the leader keeps
    the report for the kraft.version upgrade. (Kafka 3.9 answered UNSUPPORTED_VERSION.)"""
    ctx = build(0, static=True)
    elect(ctx)
    fetch(ctx, 1)
    before = ctx.log.end_offset()
    response = update(ctx, 1, supported=SupportedVersionRange(0, 1))
    assert response.error_code == ErrorCode.none
    assert ctx.log.end_offset() == before and ctx.core.kraft_version() == 0
    reported = ctx.core.reconfig.volatile_voters[1]
    assert reported.key == key(1) and reported.endpoints == other_endpoints(1)


def test_step8_unchanged_voter_appends_nothing() -> None:
    ctx = leader_with_committed_epoch()
    before = ctx.log.end_offset()
    assert update(ctx, 1, eps=endpoints(1)).error_code == ErrorCode.none
    assert ctx.log.end_offset() == before


def test_leader_updates_its_own_entry_at_the_start_of_its_epoch() -> None:
    """testLeaderUpdatesVoter: a leader whose endpoints changed writes a new VotersRecord with its epoch start."""
    ctx = build(0, local_endpoints=other_endpoints(0))
    elect(ctx)
    assert ctx.core.voters().node(0).endpoints == other_endpoints(0)
    assert ctx.core.history.last_voter_set_offset() >= 3  # written in this epoch, after the bootstrap records


# ---- follower side ---------------------------------------------------------------------------------------------
def follower(local_endpoints=None, supported=FULL_RANGE, **kwargs):
    ctx = build(1, stored=ElectionState.with_elected_leader(2, 0), local_endpoints=local_endpoints,
                supported=supported, **kwargs)
    assert ctx.role == "Follower"
    return ctx


def test_follower_sends_update_voter_when_its_endpoints_changed() -> None:
    """testFollowerSendsUpdateVoter: before fetching; fetching resumes once it is answered."""
    ctx = follower(local_endpoints=other_endpoints(1))
    ctx.poll()
    sends = ctx.take_sent()
    assert [type(s.request) for s in sends] == [UpdateRaftVoterRequest]
    request = sends[0].request
    assert (request.voter_id, request.voter_directory_id, request.current_leader_epoch) == (1, dir_of(1), 2)
    assert rm.listeners_to_endpoints(request.listeners) == other_endpoints(1)
    assert sends[0].destination.node_id == 0
    ctx.respond(sends[0], rm.update_voter_response(ErrorCode.none, 0, 2, endpoints(0).items[0]))
    assert [type(s.request) for s in ctx.take_sent()] == [FetchRequest]


def test_follower_sends_update_voter_only_when_different() -> None:
    """testFollowerSendsUpdateVoterWhenDifferent: same endpoints and range -> just fetch; another range -> update."""
    same = follower()
    same.poll()
    assert [type(s.request) for s in same.take_sent()] == [FetchRequest]
    other_range = follower(supported=SupportedVersionRange(0, 2))
    other_range.poll()
    assert [type(s.request) for s in other_range.take_sent()] == [UpdateRaftVoterRequest]


def test_follower_resends_update_voter_only_after_three_fetch_timeouts() -> None:
    ctx = follower(local_endpoints=other_endpoints(1))
    ctx.poll()
    send = ctx.take_sent()[0]
    ctx.respond(send, rm.update_voter_response(ErrorCode.request_timed_out, 0, 2, endpoints(0).items[0]))
    for _ in range(5):  # keep fetching (and keep the fetch timer alive) for 5.9 s
        fetch_send = ctx.take_sent(FetchRequest)[-1]
        ctx.now += 1180
        ctx.respond(fetch_send, messages.fetch_response(ErrorCode.none, high_watermark=3, leader_id=0, epoch=2))
    assert not ctx.take_sent(UpdateRaftVoterRequest) and ctx.now == 5900
    fetch_send = ctx.take_sent(FetchRequest)[-1]
    ctx.now += 100  # 6 s = 3 x fetch.timeout.ms after the first send
    ctx.respond(fetch_send, messages.fetch_response(ErrorCode.none, high_watermark=3, leader_id=0, epoch=2))
    assert len(ctx.take_sent(UpdateRaftVoterRequest)) == 1


def test_update_voter_response_causes_epoch_change() -> None:
    """testUpdateVoterResponseCausesEpochChange: an answer naming a newer leader makes us follow it."""
    ctx = follower(local_endpoints=other_endpoints(1))
    ctx.poll()
    send = ctx.take_sent()[0]
    ctx.respond(send, rm.update_voter_response(ErrorCode.fenced_leader_epoch, 2, 3, endpoints(2).items[0]))
    assert ctx.role == "Follower" and ctx.epoch == 3 and ctx.core.quorum.leader_id() == 2
    assert [s.destination.node_id for s in ctx.take_sent()] == [2]  # and sends its next request to it


def test_follower_at_kraft_version_0_reports_once_per_leader_epoch() -> None:
    ctx = build(1, static=True, stored=ElectionState.with_elected_leader(2, 0))
    ctx.poll()
    send = ctx.take_sent()[0]
    assert isinstance(send.request, UpdateRaftVoterRequest)
    ctx.respond(send, rm.update_voter_response(ErrorCode.none, 0, 2, endpoints(0).items[0]))
    ctx.now += 7000  # past the period: still nothing to report to this leader
    fetch_send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(fetch_send, messages.fetch_response(ErrorCode.none, high_watermark=0, leader_id=0, epoch=2))
    assert [type(s.request) for s in ctx.take_sent()] == [FetchRequest]


def test_observer_never_sends_update_voter() -> None:
    ctx = build(5, stored=ElectionState.with_elected_leader(2, 0), local_endpoints=other_endpoints(5),
                log=kraft1_log([0, 1, 2]))
    ctx.poll()
    assert [type(s.request) for s in ctx.take_sent()] == [FetchRequest]
