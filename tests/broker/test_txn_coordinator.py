"""The transaction coordinator's state machine (broker/txn_coordinator.py, txn_state.py), by Kafka's rules."""

from __future__ import annotations

import pytest

from pykraft.broker.txn_coordinator import NEED_PRODUCER_ID, Purpose, TxnCoordinator, TxnWrite
from pykraft.broker.txn_state import MAX_EPOCH, TxnMetadata, TxnState
from pykraft.protocol.errors import ErrorCode as E

TP_A, TP_B = ("a", 0), ("b", 1)


def written(coordinator: TxnCoordinator, step, now: int = 0, error: E = E.NONE):
    assert isinstance(step, TxnWrite), step
    return coordinator.written(step, error, now)


def init(coordinator: TxnCoordinator, txn: str = "t", pid: int = 1000, now: int = 0, expected=None):
    step = coordinator.init_producer_id(txn, 60000, expected, now)
    if step is NEED_PRODUCER_ID:
        step = coordinator.init_producer_id(txn, 60000, expected, now, pid)
    return written(coordinator, step, now)


def begin(coordinator: TxnCoordinator, parts=(TP_A, TP_B), now: int = 10, txn: str = "t"):
    meta = coordinator.txns[txn]
    return written(coordinator, coordinator.add_partitions(txn, meta.producer_id, meta.producer_epoch, parts, now), now)


def test_a_new_id_gets_a_fresh_producer_id_at_epoch_0_and_each_init_bumps_the_epoch():
    c = TxnCoordinator(0, 5)
    assert c.init_producer_id("t", 60000, None, 0) is NEED_PRODUCER_ID
    first = init(c)
    assert (first.answer, first.producer_id, first.producer_epoch) == (E.NONE, 1000, 0)
    second = init(c)
    assert (second.producer_id, second.producer_epoch) == (1000, 1)
    assert c.txns["t"].state is TxnState.EMPTY


def test_bad_ids_and_timeouts_are_refused():
    c = TxnCoordinator(0, 5, max_timeout_ms=1000)
    assert c.init_producer_id("", 100, None, 0) is E.INVALID_REQUEST
    assert c.init_producer_id("t", 1001, None, 0) is E.INVALID_TRANSACTION_TIMEOUT
    assert c.init_producer_id("t", 0, None, 0) is E.INVALID_TRANSACTION_TIMEOUT


def test_commit_writes_prepare_then_markers_then_complete():
    c = TxnCoordinator(0, 7)
    init(c)
    assert begin(c).answer is E.NONE
    meta = c.txns["t"]
    assert meta.state is TxnState.ONGOING and meta.partitions == {TP_A, TP_B} and meta.start_ms == 10
    end = c.end_txn("t", 1000, 0, True, 20)
    assert isinstance(end, TxnWrite) and end.transit.state is TxnState.PREPARE_COMMIT
    done = written(c, end, 20)
    assert done.answer is E.NONE and done.markers is not None
    assert done.markers.commit and done.markers.partitions == {TP_A, TP_B} and done.markers.coordinator_epoch == 7
    assert meta.pending is TxnState.COMPLETE_COMMIT  # every other request waits (CONCURRENT_TRANSACTIONS)
    assert c.add_partitions("t", 1000, 0, [TP_A], 21) is E.CONCURRENT_TRANSACTIONS
    assert c.marker_result("t", TP_A, E.NOT_LEADER_OR_FOLLOWER) is True  # retried
    assert c.marker_result("t", TP_A, E.NONE) is False
    assert meta.partitions == {TP_B}  # DescribeTransactions shows what is left
    complete = c.marker_result("t", TP_B, E.NONE)
    assert isinstance(complete, TxnWrite) and complete.purpose is Purpose.COMPLETE
    assert written(c, complete, 30).answer is E.NONE
    assert meta.state is TxnState.COMPLETE_COMMIT and not meta.partitions and meta.pending is None
    # A retried EndTxn is answered by the state it led to.
    assert c.end_txn("t", 1000, 0, True, 31) is E.NONE
    assert c.end_txn("t", 1000, 0, False, 31) is E.INVALID_TXN_STATE


def test_end_txn_errors():
    c = TxnCoordinator(0, 1)
    init(c)
    assert c.end_txn("t", 1000, 0, True, 1) is E.INVALID_TXN_STATE  # Empty: nothing to end
    assert c.end_txn("t", 999, 0, True, 1) is E.INVALID_PRODUCER_ID_MAPPING
    assert c.end_txn("t", 1000, 1, True, 1) is E.PRODUCER_FENCED
    assert c.end_txn("nope", 1000, 0, True, 1) is E.INVALID_PRODUCER_ID_MAPPING


def test_a_second_instance_fences_the_open_transaction_and_retries_into_a_higher_epoch():
    c = TxnCoordinator(0, 1)
    init(c)
    begin(c)
    fence = c.init_producer_id("t", 60000, None, 50)
    assert isinstance(fence, TxnWrite) and fence.purpose is Purpose.FENCE_ABORT
    assert fence.transit.state is TxnState.PREPARE_ABORT and fence.transit.producer_epoch == 1
    assert c.add_partitions("t", 1000, 0, [TP_A], 51) is E.PRODUCER_FENCED  # the zombie, at once
    done = written(c, fence, 50)
    assert done.answer is E.CONCURRENT_TRANSACTIONS and not done.markers.commit and done.markers.producer_epoch == 1
    assert c.init_producer_id("t", 60000, None, 52) is E.CONCURRENT_TRANSACTIONS  # markers still out
    for tp in (TP_A, TP_B):
        complete = c.marker_result("t", tp, E.NONE)
    written(c, complete, 53)
    again = init(c, now=54)
    assert (again.answer, again.producer_id, again.producer_epoch) == (E.NONE, 1000, 2)


def test_a_failed_fence_write_reuses_the_bumped_epoch():
    c = TxnCoordinator(0, 1)
    init(c)
    begin(c)
    fence = c.init_producer_id("t", 60000, None, 50)
    assert written(c, fence, 50, E.COORDINATOR_NOT_AVAILABLE).answer is E.COORDINATOR_NOT_AVAILABLE
    meta = c.txns["t"]
    assert meta.failed_epoch_fence and meta.producer_epoch == 1 and meta.state is TxnState.ONGOING
    again = c.init_producer_id("t", 60000, None, 51)
    assert again.transit.producer_epoch == 1  # not bumped twice


def test_timed_out_transactions_are_aborted_under_a_bumped_epoch():
    c = TxnCoordinator(0, 1)
    init(c)
    begin(c, now=100)
    assert c.next_timeout() == 100 + 60000 + 1
    assert c.timed_out(100 + 60000) == []
    aborts = c.timed_out(100 + 60001)
    assert len(aborts) == 1 and aborts[0].purpose is Purpose.TIMEOUT_ABORT
    assert aborts[0].transit.state is TxnState.PREPARE_ABORT and aborts[0].transit.producer_epoch == 1
    done = written(c, aborts[0], 100 + 60001)
    assert done.markers is not None and not done.markers.commit
    assert c.end_txn("t", 1000, 0, True, 70000) is E.PRODUCER_FENCED  # the late client


def test_add_partitions_is_idempotent_and_verification_reads_the_partitions():
    c = TxnCoordinator(0, 1)
    init(c)
    assert c.verify_partitions("t", 1000, 0, [TP_A]) == {TP_A: E.TRANSACTION_ABORTABLE}
    begin(c, parts=(TP_A,))
    assert c.add_partitions("t", 1000, 0, [TP_A], 11) is E.NONE  # nothing to write
    assert c.verify_partitions("t", 1000, 0, [TP_A, TP_B]) == {TP_A: E.NONE, TP_B: E.TRANSACTION_ABORTABLE}
    assert c.verify_partitions("t", 1000, 1, [TP_A]) == {TP_A: E.PRODUCER_FENCED}
    assert c.verify_partitions("x", 1000, 0, [TP_A]) == {TP_A: E.INVALID_PRODUCER_ID_MAPPING}


def test_kip_360_expected_epoch():
    c = TxnCoordinator(0, 1)
    init(c)
    init(c)  # epoch 1, last epoch -1
    bumped = init(c, expected=(1000, 1))
    assert bumped.producer_epoch == 2 and c.txns["t"].last_producer_epoch == 1
    retry = init(c, expected=(1000, 1))  # the answer was lost: the same epoch again
    assert retry.producer_epoch == 2
    assert c.init_producer_id("t", 60000, (1000, 0), 5) is E.PRODUCER_FENCED
    assert c.init_producer_id("t", 60000, (77, 0), 5) is E.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_the_producer_id():
    c = TxnCoordinator(0, 1)
    c.txns["t"] = TxnMetadata("t", 1000, MAX_EPOCH - 1, 60000, last_update_ms=0)
    assert c.init_producer_id("t", 60000, None, 1) is NEED_PRODUCER_ID
    done = written(c, c.init_producer_id("t", 60000, None, 1, 2000), 1)
    assert (done.producer_id, done.producer_epoch) == (2000, 0)


def test_load_completes_prepared_transactions_and_expiry_tombstones_idle_ids():
    c = TxnCoordinator(3, 9, id_expiration_ms=1000)
    prepared = TxnMetadata("p", 5, 2, 60000, TxnState.PREPARE_ABORT, {TP_A}, 0, 0)
    idle = TxnMetadata("i", 6, 0, 60000, TxnState.COMPLETE_COMMIT, set(), 0, 0)
    empty = TxnMetadata("e", 7, 0, 60000, TxnState.PREPARE_COMMIT, set(), 0, 0)
    follow = c.load({"p": prepared, "i": idle, "e": empty}, 10)
    markers = [f for f in follow if not isinstance(f, TxnWrite)]
    writes = [f for f in follow if isinstance(f, TxnWrite)]
    assert [m.transactional_id for m in markers] == ["p"] and markers[0].coordinator_epoch == 9
    assert [w.transit.state for w in writes] == [TxnState.COMPLETE_COMMIT]  # no partition: completed at once
    expired = c.expired_ids(2000)
    assert [w.transactional_id for w in expired] == ["i"] and expired[0].tombstone
    assert c.describe("i") is E.TRANSACTIONAL_ID_NOT_FOUND  # being expired
    written(c, expired[0], 2000)
    assert "i" not in c.txns


def test_list_filters():
    c = TxnCoordinator(0, 1)
    init(c, "x", 1)
    init(c, "y", 2)
    begin(c, txn="y", now=100)
    assert {m.transactional_id for m in c.listed(set(), set(), -1, 200)} == {"x", "y"}
    assert {m.transactional_id for m in c.listed({TxnState.ONGOING}, set(), -1, 200)} == {"y"}
    assert {m.transactional_id for m in c.listed(set(), {1}, -1, 200)} == {"x"}
    assert {m.transactional_id for m in c.listed({TxnState.ONGOING}, set(), 50, 200)} == {"y"}
    assert {m.transactional_id for m in c.listed({TxnState.ONGOING}, set(), 150, 200)} == set()


def test_an_illegal_move_is_a_bug():
    meta = TxnMetadata("t", 1, 0, 1000)
    with pytest.raises(AssertionError):
        meta.prepare_complete(0)  # Empty cannot complete
