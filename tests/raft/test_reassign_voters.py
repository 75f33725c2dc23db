"""Quorum reassignment driven by the leader (KIP-642 on KIP-853's one-voter changes): one test per rule of
handlers/reassign_voters.py (the request's numbered checks and the leader's steps), on a single leader core whose
followers and observers are played by hand-made Fetch requests."""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.handlers import reassign_voters
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_change import ReassignVotersRequest, VoterCandidate
from pykraft.raft.voter_set import Endpoint, Endpoints
from pykraft.records import iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from raft_context import endpoints
from reconfig_context import FULL_RANGE, SupportedVersionRange, _epoch_at, build, commit, dir_of, elect, fetch_request, \
    key, leader_with_committed_epoch, response_for

CANDIDATES = {i: VoterCandidate(endpoints(i), FULL_RANGE) for i in range(10)}


def fetch(ctx, node_id, directory_id=None) -> None:
    """`node_id` fetches at the leader's log end (reconfig_context.fetch takes the last answer as the Fetch's, but
    a reassignment request may be answered by the same input)."""
    offset = ctx.log.end_offset()
    request = fetch_request(key(node_id, directory_id), ctx.epoch, offset, _epoch_at(ctx.log, offset))
    ctx._run(ctx.core.handle_request(object(), request, ctx.now))


def copy_of(log, epoch: int) -> MemoryLog:
    copy = MemoryLog()
    copy.append_as_follower(log.read(0, 1 << 30).records, epoch)
    copy.flush()
    return copy


def reassign(ctx, ids, ref="reassign", *, timeout_ms=60_000, candidates=None, brokers=frozenset()):
    request = ReassignVotersRequest(None if ids is None else tuple(ids), timeout_ms,
                                    CANDIDATES if candidates is None else candidates, frozenset(brokers))
    ctx._run(ctx.core.handle_request(ref, request, ctx.now))
    return response_for(ctx, ref)


def voters(ctx) -> set[int]:
    return set(ctx.core.voters().ids())


def voter_sets(ctx) -> list[set[int]]:
    """Every voter set the log's VotersRecords name, in log order, each once: the reassignment's steps follow the
    first (the target records repeat the voters as they are)."""
    found: list[set[int]] = []
    for batch in iter_batches(ctx.log.read(0, 1 << 30).records):
        if batch.is_control:
            for record in batch.records():
                control = decode_control_record(record)
                voters = {int(v.voter_id) for v in control.message.voters} \
                    if control.type is ControlRecordType.KRAFT_VOTERS else None
                if voters is not None and (not found or found[-1] != voters):
                    found.append(voters)
    return found


def target_ids(ctx) -> set[int] | None:
    """The target the leader works towards (written, or waiting for the uncommitted step to commit)."""
    target = reassign_voters.current_target(ctx.core)
    return None if target is None else set(target.ids())


def leader_with_observers(*observers: int, voter_ids=(0, 1, 2)):
    """Node 0 leads `voter_ids`; each observer fetched at the leader's log end (caught up)."""
    ctx = leader_with_committed_epoch(list(voter_ids))
    for node_id in observers:
        fetch(ctx, node_id)
    return ctx


def settle(ctx, nodes, rounds: int = 3) -> None:
    """Every node in `nodes` fetches at the leader's log end `rounds` times (commits, then learns the HWM)."""
    for _ in range(rounds):
        for node_id in nodes:
            if ctx.role != "Leader":
                return  # resigned (its own removal committed): nobody fetches from it any more
            if node_id != ctx.core.local.node_id:
                fetch(ctx, node_id)


# ---- the request ------------------------------------------------------------------------------------------------
def test_the_target_is_recorded_in_the_log_before_any_step() -> None:
    ctx = leader_with_observers(3)
    before = voters(ctx)
    assert reassign(ctx, [1, 2, 3]) is None  # waits for the target
    assert target_ids(ctx) == {1, 2, 3}
    assert voters(ctx) == before, "no step before the target record commits"
    offset = ctx.core.history.last_target()[0]
    assert offset >= ctx.core.high_watermark


def test_a_follower_reads_the_target_from_the_log() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [1, 2, 3])
    follower = build(1, [0, 1, 2], log=copy_of(ctx.log, ctx.epoch))
    assert set(follower.core.history.last_target()[1].ids()) == {1, 2, 3}


def test_not_the_leader_answers_not_leader() -> None:
    ctx = build(1, [0, 1, 2])
    assert reassign(ctx, [0, 1]).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_kraft_version_0_is_unsupported() -> None:
    ctx = build(0, [0, 1, 2], static=True)
    elect(ctx)
    commit(ctx, 1, 2)
    assert reassign(ctx, [0, 1]).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_bad_targets_get_invalid_replica_assignment_with_the_reason() -> None:
    ctx = leader_with_observers(3, 4)
    fetch(ctx, 5)  # a broker: fetches the metadata log, registered as a broker only
    no_listener = {**CANDIDATES, 4: VoterCandidate(Endpoints.of([Endpoint("OTHER", "h", 1)]), FULL_RANGE)}
    old_kraft = {**CANDIDATES, 4: VoterCandidate(endpoints(4), SupportedVersionRange(0, 0))}
    registered = {i: c for i, c in CANDIDATES.items() if i != 5}
    cases = [
        ([], {}, "empty"),
        ([1, 1, 2], {}, "more than once"),
        ([1, 2, 7], {"candidates": registered, "brokers": {5}}, "observer"),  # registered, never fetched
        ([1, 2, 8], {"candidates": {}}, "unknown to the leader"),
        ([1, 2, 5], {"candidates": registered, "brokers": {5}}, "is a broker, not a controller"),
        ([1, 2, 5], {"candidates": registered}, "has not registered as a controller"),
        ([1, 2, 4], {"candidates": no_listener}, "no endpoint for the listener"),
        ([1, 2, 4], {"candidates": old_kraft}, "does not support kraft.version 1"),
    ]
    for index, (ids, extra, reason) in enumerate(cases):
        answer = reassign(ctx, ids, f"bad{index}", **extra)
        assert answer is not None and answer.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT, (ids, answer)
        assert reason in answer.message, (reason, answer.message)
    assert ctx.core.history.last_target() is None, "a refused request writes nothing"


def test_a_lagging_observer_is_refused() -> None:
    ctx = leader_with_observers(3)
    ctx.now += ctx.core.config.fetch_timeout_ms + 1  # 3 has not been at the log end for a fetch timeout
    settle(ctx, [1, 2], rounds=1)
    answer = reassign(ctx, [0, 1, 3])
    assert answer.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and "not caught up" in answer.message


def test_the_committed_voters_as_target_without_a_reassignment_is_done_at_once() -> None:
    ctx = leader_with_observers()
    assert reassign(ctx, [2, 1, 0]).error_code == ErrorCode.NONE
    assert ctx.core.history.last_target_offset() is None


def test_cancel_without_a_reassignment_answers_no_reassignment_in_progress() -> None:
    ctx = leader_with_observers()
    assert reassign(ctx, None).error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def test_the_request_times_out_while_the_reassignment_goes_on() -> None:
    ctx = leader_with_observers(3)
    assert reassign(ctx, [0, 1, 2, 3], timeout_ms=500) is None
    ctx.advance(600)
    assert response_for(ctx, "reassign").error_code == ErrorCode.REQUEST_TIMED_OUT
    settle(ctx, [1, 2, 3])
    assert voters(ctx) == {0, 1, 2, 3}


# ---- the steps ----------------------------------------------------------------------------------------------------
def test_add_first_when_new_voters_are_not_fewer_than_removing_ones() -> None:
    """{0,1,2} -> {1,2,3}: one new, one removing: add 3 first (size(New) >= size(Removing))."""
    ctx = leader_with_observers(3)
    reassign(ctx, [1, 2, 3])
    settle(ctx, [1, 2, 3], rounds=4)
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3}]


def test_remove_first_when_removing_voters_outnumber_new_ones_non_leader_first() -> None:
    """{0,1,2} -> {0,3}: one new, two removing: remove one (a non-leader: 1, the lowest) first."""
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 3])
    settle(ctx, [1, 2, 3], rounds=4)
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 2}, {0, 2, 3}, {0, 3}]


def test_a_move_to_disjoint_voters_removes_the_leader_last() -> None:
    """{0,1,2} -> {3}: remove 1 and 2 (non-leaders), add 3 (sizes even), then the leader removes itself."""
    ctx = leader_with_observers(3)
    reassign(ctx, [3])
    settle(ctx, [1, 2, 3], rounds=6)
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 2}, {0}, {0, 3}, {3}]


def test_each_step_waits_for_the_previous_voter_change_to_commit() -> None:
    ctx = leader_with_observers(3, 4)
    reassign(ctx, [0, 1, 2, 3, 4])
    fetch(ctx, 1)  # the target record commits (0 and 1 of 3): the first step is appended at once
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 1, 2, 3}]
    fetch(ctx, 4)  # an observer: commits nothing
    fetch(ctx, 1)
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 1, 2, 3}], "the first step (3 of 4 needed) has not committed"
    fetch(ctx, 3)  # now 0, 1 and 3 hold it: committed, the next step follows
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}]
    settle(ctx, [1, 2, 3, 4])
    assert response_for(ctx, "reassign").error_code == ErrorCode.NONE


def test_an_addition_waits_until_the_new_voter_is_caught_up() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 1, 2, 3])
    ctx.now += ctx.core.config.fetch_timeout_ms + 1
    settle(ctx, [1, 2], rounds=2)  # the target commits; 3 has not fetched for a fetch timeout
    assert voters(ctx) == {0, 1, 2}
    assert "catch up" in ctx.core.reconfig.reassign_waiting_for
    fetch(ctx, 3)
    assert voters(ctx) == {0, 1, 2, 3}


def test_a_caught_up_new_voter_is_added_before_a_lagging_one() -> None:
    ctx = leader_with_observers(3, 4)
    reassign(ctx, [0, 1, 2, 3, 4])
    ctx.now += ctx.core.config.fetch_timeout_ms + 1
    fetch(ctx, 4)  # only 4 is at the log end now
    settle(ctx, [1, 2], rounds=1)
    assert voters(ctx) == {0, 1, 2, 4}


def test_the_leader_removes_itself_last_and_resigns_once_that_commits() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [1, 2, 3])
    fetch(ctx, 1)  # target committed: add 3
    fetch(ctx, 1)
    fetch(ctx, 3)  # {0,1,2,3} committed: the leader is the only voter left to remove
    assert voter_sets(ctx)[-1] == {1, 2, 3} and ctx.role == "Leader", "it leads until its removal commits"
    assert not ctx.core.leader_state().is_local_voter()
    fetch(ctx, 1)
    fetch(ctx, 2)  # {1,2,3} commits it (2 of 3)
    assert ctx.role == "Resigned"
    assert response_for(ctx, "reassign").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert target_ids(ctx) == {1, 2, 3}, "the target stays in the log for the successor, which clears it"


def test_reaching_the_target_clears_it_and_answers() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 1, 2, 3])
    settle(ctx, [1, 2, 3], rounds=4)
    assert voters(ctx) == {0, 1, 2, 3}
    assert response_for(ctx, "reassign").error_code == ErrorCode.NONE
    assert ctx.core.history.last_target() is None and ctx.core.history.last_target_offset() is not None


def test_a_new_target_replaces_the_old_one() -> None:
    ctx = leader_with_observers(3, 4)
    reassign(ctx, [0, 1, 2, 3, 4], "first")
    settle(ctx, [1, 2, 3, 4], rounds=1)  # first step under way
    assert reassign(ctx, [0, 1, 2], "second") is None
    assert response_for(ctx, "first").error_code == ErrorCode.REASSIGNMENT_IN_PROGRESS
    assert target_ids(ctx) == {0, 1, 2}
    written = ctx.core.history.last_target()
    if ctx.core.history.last_voter_set_offset() >= ctx.core.high_watermark:  # a step is uncommitted: it waits
        assert set(written[1].ids()) == {0, 1, 2, 3, 4} and ctx.core.reconfig.pending_target is not None
    settle(ctx, [1, 2, 3, 4], rounds=6)
    assert voters(ctx) == {0, 1, 2}
    assert response_for(ctx, "second").error_code == ErrorCode.NONE


def test_the_target_in_progress_sent_again_is_accepted_while_a_target_voter_lags() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 1, 2, 3], "first")
    ctx.now += ctx.core.config.fetch_timeout_ms + 1  # 3 lags from here on
    fetch(ctx, 1)
    fetch(ctx, 1)
    assert "catch up" in ctx.core.reconfig.reassign_waiting_for
    assert reassign(ctx, [3, 2, 1, 0], "again") is None, "waiting, not refused"
    assert reassign(ctx, [0, 1, 3], "other").error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT, "a new target is"


def test_a_target_record_is_a_voters_record_that_changes_no_voter_and_waits_its_turn() -> None:
    """The target tag rides on a VotersRecord naming the voters as they are; like every VotersRecord it is written
    only while no other one is uncommitted."""
    ctx = leader_with_observers(3, 4)
    reassign(ctx, [0, 1, 2, 3, 4], "first")
    fetch(ctx, 1)  # the target commits, the first step is appended
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 1, 2, 3}]
    offset = ctx.core.history.last_voter_set_offset()
    reassign(ctx, [0, 1, 2], "second")
    assert ctx.core.history.last_voter_set_offset() == offset, "not while the step is uncommitted"
    assert ctx.core.reconfig.pending_target is not None
    fetch(ctx, 2)
    fetch(ctx, 3)  # the step commits: the new target is written, with the voters {0, 1, 2, 3} unchanged
    assert ctx.core.history.last_voter_set_offset() > offset and ctx.core.reconfig.pending_target is None
    assert set(ctx.core.voters().ids()) == {0, 1, 2, 3} and target_ids(ctx) == {0, 1, 2}


def test_the_same_target_again_is_not_recorded_twice() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 1, 2, 3], "a")
    offset = ctx.core.history.last_target_offset()
    reassign(ctx, [3, 2, 1, 0], "b")
    assert ctx.core.history.last_target_offset() == offset
    settle(ctx, [1, 2, 3], rounds=4)
    assert response_for(ctx, "a").error_code == response_for(ctx, "b").error_code == ErrorCode.NONE


def test_cancel_makes_the_current_voters_the_target_and_stops_the_steps() -> None:
    ctx = leader_with_observers(3, 4)
    reassign(ctx, [3, 4], "move", timeout_ms=100_000)
    fetch(ctx, 1)  # the target commits; the first step (remove 1) is appended
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 2}]
    assert reassign(ctx, None, "cancel") is None
    assert response_for(ctx, "move").error_code == ErrorCode.REASSIGNMENT_IN_PROGRESS
    assert target_ids(ctx) == {0, 2}, "the current (latest) voters"
    settle(ctx, [1, 2, 3, 4], rounds=4)
    assert voter_sets(ctx) == [{0, 1, 2}, {0, 2}], "no step after the cancellation"
    assert response_for(ctx, "cancel").error_code == ErrorCode.NONE
    assert ctx.core.history.last_target() is None


def test_cancel_is_answered_only_once_the_cancellation_commits() -> None:
    """The committed voters are the new target at once, but a leader lost before the cancellation record commits
    would leave a successor with the old target: the answer waits for the record."""
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 1, 2, 3], "move")
    ctx.now += ctx.core.config.fetch_timeout_ms + 1  # 3 lags: no step is taken
    fetch(ctx, 1)
    fetch(ctx, 1)
    assert voter_sets(ctx) == [{0, 1, 2}]
    assert reassign(ctx, None, "cancel") is None
    fetch(ctx, 1)  # the cancellation commits; the leader writes the cleared target at once
    assert response_for(ctx, "cancel") is None, "answered once no VotersRecord is uncommitted"
    fetch(ctx, 1)
    assert response_for(ctx, "cancel").error_code == ErrorCode.NONE


def test_a_new_leader_resumes_from_the_target_in_its_log() -> None:
    """Failover: node 1 inherits a log holding a committed target and two steps; elected, it goes on."""
    old = leader_with_observers(3, 4)
    reassign(old, [1, 3, 4])
    fetch(old, 1)  # the target commits: add 3 (two new, two removing)
    fetch(old, 2)
    fetch(old, 3)  # add 3 commits: then one new, two removing: remove 2; then the old leader is lost
    assert voter_sets(old) == [{0, 1, 2}, {0, 1, 2, 3}, {0, 1, 3}]
    new = build(1, [0, 1, 2], log=copy_of(old.log, old.epoch), seed=5)
    assert set(new.core.history.last_target()[1].ids()) == {1, 3, 4}
    elect(new)  # its voter set is the last one in its log
    for _ in range(8):
        for node_id in set(new.core.voters().ids()) | {3, 4, 0, 2}:
            if node_id != 1:
                fetch(new, node_id)
    assert voters(new) == {1, 3, 4}
    assert new.core.history.last_target() is None


def test_the_target_is_in_a_snapshot_taken_during_the_reassignment() -> None:
    ctx = leader_with_observers(3)
    reassign(ctx, [0, 1, 2, 3])
    fetch(ctx, 1)
    fetch(ctx, 1)  # the target commits
    from pykraft.raft.log import SnapshotId
    hwm = ctx.core.high_watermark
    writer = ctx.core.create_snapshot(SnapshotId(hwm, ctx.epoch), 0, ctx.now)
    writer.freeze()
    ctx.core.reload_history()
    assert ctx.log.latest_snapshot_id() == SnapshotId(hwm, ctx.epoch)
    from pykraft.raft.voter_history import VoterHistory
    history = VoterHistory(None)
    history.apply_snapshot(ctx.log.read_snapshot(SnapshotId(hwm, ctx.epoch)).records(), SnapshotId(hwm, ctx.epoch))
    assert set(history.last_target()[1].ids()) == {0, 1, 2, 3}


def test_truncation_reverts_an_uncommitted_target() -> None:
    from pykraft.raft.voter_history import VoterHistory
    ctx = leader_with_observers(3)
    start = ctx.log.end_offset()
    reassign(ctx, [0, 1, 2, 3])
    history = VoterHistory(None)
    history.apply_batches(ctx.log.read(0, 1 << 30).records)
    assert set(history.last_target()[1].ids()) == {0, 1, 2, 3}
    history.truncate_new_entries(start)
    assert history.last_target() is None and history.last_target_offset() is None


def test_the_new_voter_keeps_the_directory_id_it_fetches_with() -> None:
    ctx = leader_with_observers()
    fetch(ctx, 3, directory_id=dir_of(33))
    reassign(ctx, [0, 1, 2, 3])
    assert ctx.core.history.last_target()[1].voters[3].key == key(3, dir_of(33))
