"""Controller auto-join (controller.quorum.auto.join.enable; §5.3 KafkaRaftClientAutoJoinTest), and a two-node
run where an observer joins a live leader through the real AddVoter path."""

from kio.schema.add_raft_voter.v1.request import AddRaftVoterRequest
from kio.schema.add_raft_voter.v1.response import AddRaftVoterResponse
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.remove_raft_voter.v0.request import RemoveRaftVoterRequest

from pykraft.raft import messages
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.effects import Respond
from pykraft.raft.voter_set import remove_voter
from pykraft.records.control import encode_control_batch

from raft_context import endpoints
from reconfig_context import Cluster, build, dir_of, key, kraft1_log, kraft1_voters


def observer(node_id=3, *, directory_id=None, auto_join=True, can_become_voter=True, static=False):
    ctx = build(node_id, [0, 1, 2], auto_join=auto_join, can_become_voter=can_become_voter, directory_id=directory_id,
                stored=ElectionState.with_elected_leader(2, 0), static=static)
    assert ctx.role == "Follower" and not ctx.core.quorum.is_voter()
    return ctx


def first_fetch_succeeds(ctx) -> list:
    """Poll, answer the first Fetch from the leader, and return what the observer sends next."""
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=ctx.log.end_offset(), leader_id=0,
                                              epoch=2))
    return ctx.take_sent()


def test_auto_add_new_voter() -> None:
    """testAutoAddNewVoter: after fetching from the leader, the observer asks to be added, answered on append."""
    ctx = observer()
    sends = first_fetch_succeeds(ctx)
    assert [type(s.request) for s in sends] == [AddRaftVoterRequest]
    request = sends[0].request
    assert (request.voter_id, request.voter_directory_id) == (3, dir_of(3))
    assert rm.listeners_to_endpoints(request.listeners) == endpoints(3)
    assert request.ack_when_committed is False and request.timeout.total_seconds() == 30
    assert sends[0].destination.node_id == 0
    ctx.respond(sends[0], rm.add_voter_response(ErrorCode.none))
    assert [type(s.request) for s in ctx.take_sent()] == [FetchRequest]  # back to fetching


def test_auto_join_waits_for_a_successful_fetch() -> None:
    ctx = observer()
    ctx.poll()
    assert [type(s.request) for s in ctx.take_sent()] == [FetchRequest]


def test_auto_remove_old_voter() -> None:
    """testAutoRemoveOldVoter: our id is a voter with another directory id (a replaced disk): remove it first."""
    ctx = build(2, [0, 1, 2], auto_join=True, directory_id=dir_of(42), stored=ElectionState.with_elected_leader(2, 0))
    assert not ctx.core.quorum.is_voter()
    sends = first_fetch_succeeds(ctx)
    assert [type(s.request) for s in sends] == [RemoveRaftVoterRequest]
    assert (sends[0].request.voter_id, sends[0].request.voter_directory_id) == (2, dir_of(2))


def test_observer_removes_old_voter_and_auto_joins() -> None:
    """testObserverRemovesOldVoterAndAutoJoins: once the removal is in its log, the next period adds itself."""
    ctx = build(2, [0, 1, 2], auto_join=True, directory_id=dir_of(42), stored=ElectionState.with_elected_leader(2, 0))
    remove_send = first_fetch_succeeds(ctx)[0]
    ctx.respond(remove_send, rm.remove_voter_response(ErrorCode.none))
    # The leader's log now has the VotersRecord without (2, old dir): replicate it.
    smaller = remove_voter(kraft1_voters([0, 1, 2]), key(2))
    batch = encode_control_batch([smaller.to_voters_record()], base_offset=3, partition_leader_epoch=2, timestamp_ms=0)
    fetch_send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(fetch_send, messages.fetch_response(ErrorCode.none, high_watermark=4, leader_id=0, epoch=2,
                                                    records=batch))
    assert ctx.core.voters().ids() == {0, 1}
    assert not ctx.take_sent(AddRaftVoterRequest)  # still within the period of the RemoveVoter
    ctx.now += 6000  # 3 x fetch.timeout.ms later
    fetch_send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(fetch_send, messages.fetch_response(ErrorCode.none, high_watermark=4, leader_id=0, epoch=2))
    adds = ctx.take_sent(AddRaftVoterRequest)
    assert [(s.request.voter_id, s.request.voter_directory_id) for s in adds] == [(2, dir_of(42))]


def test_observers_do_not_auto_join() -> None:
    """testObserversDoNotAutoJoin: brokers (cannot become voters) never ask."""
    ctx = observer(can_become_voter=False)
    assert [type(s.request) for s in first_fetch_succeeds(ctx)] == [FetchRequest]


def test_observer_does_not_add_itself_when_auto_join_disabled() -> None:
    """testObserverDoesNotAddItselfWhenAutoJoinDisabled."""
    ctx = observer(auto_join=False)
    assert [type(s.request) for s in first_fetch_succeeds(ctx)] == [FetchRequest]


def test_observer_does_not_auto_join_with_kraft_version_0() -> None:
    """testObserverDoesNotAutoJoinWithKRaftVersion0."""
    ctx = observer(static=True)
    assert [type(s.request) for s in first_fetch_succeeds(ctx)] == [FetchRequest]


def test_failed_auto_join_is_retried_after_the_period() -> None:
    ctx = observer()
    add = first_fetch_succeeds(ctx)[0]
    ctx.respond(add, rm.add_voter_response(ErrorCode.request_timed_out, "not caught up"))
    for _ in range(3):
        ctx.now += 1900
        ctx.respond(ctx.take_sent(FetchRequest)[-1],
                    messages.fetch_response(ErrorCode.none, high_watermark=3, leader_id=0, epoch=2))
    assert not ctx.take_sent(AddRaftVoterRequest)  # 5.7 s
    ctx.now += 300
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(ErrorCode.none, high_watermark=3, leader_id=0, epoch=2))
    assert len(ctx.take_sent(AddRaftVoterRequest)) == 1


# ---- two cores: an observer joins a live single-voter leader -----------------------------------------------------
def test_observer_auto_joins_a_live_leader_and_becomes_a_voter() -> None:
    leader = build(0, [0], log=kraft1_log([0]))
    joiner = build(3, [0], auto_join=True, log=MemoryLog())
    cluster = Cluster({0: leader, 3: joiner})
    cluster.run(8000, tick=50)
    assert leader.core.voters().keys() == {key(0), key(3)}
    assert joiner.core.voters().keys() == {key(0), key(3)}
    assert joiner.core.quorum.is_voter() and joiner.role == "Follower"
    assert leader.core.high_watermark > leader.core.history.last_voter_set_offset()  # the change committed
    assert leader.core.reconfig.pending is None
    # The first attempt came right after the first fetch and was refused (not caught up); the retry, one
    # UpdateVoter period later, succeeded.
    answers = [e.response.error_code for e in leader.effects
               if isinstance(e, Respond) and isinstance(e.response, AddRaftVoterResponse)]
    assert answers == [ErrorCode.request_timed_out, ErrorCode.none]
