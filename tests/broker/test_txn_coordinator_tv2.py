"""Transaction version 2 (KIP-890 part 2) in the coordinator's state machine, by Kafka 4.0's rules: an epoch bump
on every commit/abort, EndTxn answering the id and epoch to continue with, retries told apart by the previous epoch,
empty aborts, a new producer id when the epoch is exhausted; version 0/1 clients keep the old rules."""

from __future__ import annotations

from pykraft.broker.txn_coordinator import NEED_PRODUCER_ID, Purpose, TxnCoordinator, TxnWrite, Written
from pykraft.broker.txn_state import MAX_EPOCH, TxnState
from pykraft.protocol.errors import ErrorCode as E

from tests.broker.test_txn_coordinator import TP_A, TP_B, init, written

TV2 = 2


def add_v2(c: TxnCoordinator, parts=(TP_A, TP_B), now: int = 10, txn: str = "t"):
    """The partition leader's implicit add (AddPartitionsToTxn v5, not VerifyOnly) for a tv2 client."""
    meta = c.txns[txn]
    step = c.add_partitions(txn, meta.producer_id, meta.producer_epoch, parts, now, client_version=TV2)
    return written(c, step, now)


def finish_markers(c: TxnCoordinator, done: Written, now: int = 30, txn: str = "t") -> None:
    assert done.markers is not None
    last = None
    for tp in sorted(done.markers.partitions):
        last = c.marker_result(txn, tp, E.NONE)
    assert isinstance(last, TxnWrite) and last.purpose is Purpose.COMPLETE
    assert written(c, last, now).answer is E.NONE


def test_commit_bumps_the_epoch_the_markers_carry_it_and_the_answer_names_it():
    c = TxnCoordinator(0, 7)
    init(c)
    assert add_v2(c).answer is E.NONE
    meta = c.txns["t"]
    assert meta.client_txn_version == TV2
    end = c.end_txn("t", 1000, 0, True, 20, client_version=TV2)
    assert isinstance(end, TxnWrite)
    assert (end.transit.state, end.transit.producer_epoch, end.transit.last_producer_epoch) == \
        (TxnState.PREPARE_COMMIT, 1, 0)
    done = written(c, end, 20)
    assert (done.answer, done.producer_id, done.producer_epoch) == (E.NONE, 1000, 1)
    assert done.markers is not None and done.markers.producer_epoch == 1  # the old epoch's late writes are fenced
    assert meta.producer_epoch == 1 and meta.state is TxnState.PREPARE_COMMIT
    # The next transaction's first write arrives before the markers are done: the client retries.
    assert c.add_partitions("t", 1000, 1, [TP_A], 21, client_version=TV2) is E.CONCURRENT_TRANSACTIONS
    assert c.verify_partitions("t", 1000, 0, [TP_A]) == {TP_A: E.PRODUCER_FENCED}
    finish_markers(c, done)
    assert (meta.state, meta.producer_id, meta.producer_epoch) == (TxnState.COMPLETE_COMMIT, 1000, 1)
    # And the next transaction at the new epoch.
    assert add_v2(c, parts=(TP_A,), now=40).answer is E.NONE
    assert meta.state is TxnState.ONGOING and meta.start_ms == 40


def test_a_retried_end_is_told_apart_by_its_previous_epoch():
    c = TxnCoordinator(0, 1)
    init(c)
    add_v2(c)
    done = written(c, c.end_txn("t", 1000, 0, True, 20, client_version=TV2), 20)
    # While the markers are out (the Complete state pending) every end waits, as Kafka checks the pending move first.
    assert c.end_txn("t", 1000, 0, True, 21, client_version=TV2) is E.CONCURRENT_TRANSACTIONS
    assert c.end_txn("t", 1000, 1, True, 21, client_version=TV2) is E.CONCURRENT_TRANSACTIONS
    finish_markers(c, done)
    retried = c.end_txn("t", 1000, 0, True, 31, client_version=TV2)
    assert isinstance(retried, Written) and (retried.answer, retried.producer_id, retried.producer_epoch) == \
        (E.NONE, 1000, 1)
    # Kafka's table: CompleteCommit + retried abort and CompleteCommit + current commit are INVALID_TXN_STATE.
    assert c.end_txn("t", 1000, 0, False, 31, client_version=TV2) is E.INVALID_TXN_STATE
    assert c.end_txn("t", 1000, 1, True, 31, client_version=TV2) is E.INVALID_TXN_STATE
    # An epoch two behind, or ahead, is fenced.
    assert c.end_txn("t", 1000, 2, False, 31, client_version=TV2) is E.PRODUCER_FENCED


def test_an_abort_with_nothing_added_still_bumps_the_epoch():
    """Empty/Complete* + abort at the current epoch: PrepareAbort with no partition, completed at once."""
    c = TxnCoordinator(0, 1)
    init(c)
    end = c.end_txn("t", 1000, 0, False, 50, client_version=TV2)
    assert isinstance(end, TxnWrite) and end.transit.state is TxnState.PREPARE_ABORT
    assert end.transit.start_ms == 50  # no partition was added: the transaction starts now
    done = written(c, end, 50)
    assert (done.answer, done.producer_epoch, done.markers) == (E.NONE, 1, None)
    assert done.then is not None and written(c, done.then, 51).answer is E.NONE
    meta = c.txns["t"]
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (TxnState.COMPLETE_ABORT, 1, 0)
    assert c.end_txn("t", 1000, 0, True, 52, client_version=TV2) is E.INVALID_TXN_STATE  # Empty + commit: ITS
    assert isinstance(c.end_txn("t", 1000, 0, False, 52, client_version=TV2), Written)  # a retry: NONE


def test_an_exhausted_epoch_rotates_the_producer_id_at_the_end():
    c = TxnCoordinator(0, 1)
    init(c)
    meta = c.txns["t"]
    meta.producer_epoch = MAX_EPOCH - 1  # 32766: the last epoch a client may hold
    add_v2(c)
    assert c.end_txn("t", 1000, MAX_EPOCH - 1, True, 20, client_version=TV2) is NEED_PRODUCER_ID
    end = c.end_txn("t", 1000, MAX_EPOCH - 1, True, 20, client_version=TV2, new_producer_id=2000)
    assert isinstance(end, TxnWrite) and end.transit.next_producer_id == 2000
    done = written(c, end, 20)
    assert (done.producer_id, done.producer_epoch) == (2000, 0)  # the client continues with the new id
    assert done.markers is not None and done.markers.producer_id == 1000  # markers close the old id's writes
    # The new id arrives before the Complete state is written: retry, not INVALID_PRODUCER_ID_MAPPING.
    assert c.add_partitions("t", 2000, 0, [TP_A], 21, client_version=TV2) is E.CONCURRENT_TRANSACTIONS
    finish_markers(c, done)
    assert (meta.producer_id, meta.producer_epoch, meta.last_producer_id) == (2000, 0, 1000)
    retried = c.end_txn("t", 1000, MAX_EPOCH - 1, True, 31, client_version=TV2)
    assert isinstance(retried, Written) and (retried.producer_id, retried.producer_epoch) == (2000, 0)
    assert add_v2(c, parts=(TP_A,), now=40).answer is E.NONE


def test_version_1_clients_keep_the_old_rules_on_a_version_2_coordinator():
    c = TxnCoordinator(0, 1)
    init(c)
    meta = c.txns["t"]
    written(c, c.add_partitions("t", 1000, 0, [TP_A], 10), 10)
    done = written(c, c.end_txn("t", 1000, 0, True, 20), 20)
    assert (done.producer_id, done.producer_epoch) == (-1, -1) and done.markers.producer_epoch == 0
    finish_markers(c, done)
    assert meta.producer_epoch == 0 and c.end_txn("t", 1000, 0, True, 31) is E.NONE
    assert c.end_txn("t", 1000, 0, False, 31) is E.INVALID_TXN_STATE  # no empty aborts below version 2


def test_fencing_and_timeouts_follow_the_finalized_version():
    """Kafka 4.0: the fence bumps the epoch, and at version 2 the PrepareAbort bumps it again."""
    for version, abort_epoch in ((1, 1), (2, 2)):
        c = TxnCoordinator(0, 1)
        init(c)
        add_v2(c)
        fence = c.init_producer_id("t", 60000, None, 20, server_version=version)
        assert isinstance(fence, TxnWrite) and fence.transit.producer_epoch == abort_epoch
        done = written(c, fence, 20)
        assert done.answer is E.CONCURRENT_TRANSACTIONS and done.markers.producer_epoch == abort_epoch
        finish_markers(c, done)
        again = init(c, now=40)
        assert (again.answer, again.producer_epoch) == (E.NONE, abort_epoch + 1)
        add_v2(c, now=50)
        [timeout] = c.timed_out(50 + 60001, server_version=version)
        assert timeout.transit.producer_epoch == abort_epoch + 2 + (version == 2)


def test_load_restores_the_version_2_fields():
    """A coordinator that takes over mid-commit completes with the rotation its PrepareCommit named."""
    from pykraft.node.hosts.txn_host import _apply_record, _log_value
    from pykraft.records.txn_log_records import encode_txn_key, encode_txn_value

    c = TxnCoordinator(0, 1)
    init(c)
    c.txns["t"].producer_epoch = MAX_EPOCH - 1
    add_v2(c)
    end = c.end_txn("t", 1000, MAX_EPOCH - 1, True, 20, client_version=TV2, new_producer_id=2000)
    txns: dict = {}
    _apply_record(txns, encode_txn_key("t"), encode_txn_value(_log_value(end), 1))
    loaded = txns["t"]
    assert (loaded.state, loaded.producer_epoch, loaded.next_producer_id, loaded.client_txn_version) == \
        (TxnState.PREPARE_COMMIT, MAX_EPOCH, 2000, TV2)
    other = TxnCoordinator(0, 2)
    [markers] = other.load(txns, 30)
    assert markers.producer_epoch == MAX_EPOCH
    for tp in sorted(markers.partitions):
        last = other.marker_result("t", tp, E.NONE)
    assert isinstance(last, TxnWrite) and (last.transit.producer_id, last.transit.producer_epoch) == (2000, 0)
    written(other, last, 31)
    assert (other.txns["t"].producer_id, other.txns["t"].last_producer_id) == (2000, 1000)


def test_a_fence_at_the_top_of_the_epochs_does_not_overflow():
    """The fence takes Short.MaxValue; the version 2 bump stays there (Kafka 4.0 would overflow), and the next
    InitProducerId rotates to a new producer id."""
    c = TxnCoordinator(0, 1)
    init(c)
    c.txns["t"].producer_epoch = MAX_EPOCH - 1
    add_v2(c)
    fence = c.init_producer_id("t", 60000, None, 20, server_version=TV2)
    assert isinstance(fence, TxnWrite) and fence.transit.producer_epoch == MAX_EPOCH
    done = written(c, fence, 20)
    finish_markers(c, done)
    assert c.init_producer_id("t", 60000, None, 40, server_version=TV2) is NEED_PRODUCER_ID
    again = init(c, pid=3000, now=40)
    assert (again.answer, again.producer_id, again.producer_epoch) == (E.NONE, 3000, 0)
