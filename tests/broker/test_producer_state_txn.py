"""Transactions in a partition's producer state: open transactions, markers, the last stable offset."""

from __future__ import annotations

from pykraft.broker.producer_snapshot import decode_producer_snapshot, encode_producer_snapshot
from pykraft.broker.producer_state import CompletedTxn, ProducerStates
from pykraft.protocol.errors import ErrorCode as E


def test_the_lso_is_the_first_offset_of_the_earliest_open_transaction():
    s = ProducerStates()
    s.observe(1, 0, 0, 4, 0, 4, transactional=False)
    assert s.last_stable_offset(5) == 5
    s.observe(2, 0, 0, 2, 5, 7, transactional=True)
    s.observe(3, 0, 0, 1, 8, 9, transactional=True)
    s.observe(2, 0, 3, 3, 10, 10, transactional=True)  # the same transaction goes on
    assert s.open_transactions() == {2: 5, 3: 8}
    assert s.last_stable_offset(11) == 5
    done = s.observe_marker(2, 0, 4, 11, commit=False)
    assert done == CompletedTxn(2, 5, 11, True)
    assert s.stable_offset_after(done) == 8  # producer 3 is still open
    assert s.last_stable_offset(11) == 5  # the marker is not below the high watermark yet
    assert s.last_stable_offset(12) == 8
    s.observe_marker(3, 0, 4, 12, commit=True)
    assert s.last_stable_offset(13) == 13


def test_marker_checks_and_epoch_bumps():
    s = ProducerStates()
    s.observe(1, 2, 0, 0, 0, 0, transactional=True)
    assert s.check_marker(1, 1, 0) is E.INVALID_PRODUCER_EPOCH
    s.observe_marker(1, 3, 5, 1, commit=False)  # an abort under the fenced epoch
    assert s.check_marker(1, 3, 4) is E.TRANSACTION_COORDINATOR_FENCED
    assert s.check(1, 2, 1, 1, transactional=True).error is E.INVALID_PRODUCER_EPOCH  # the zombie
    assert s.check(1, 3, 0, 0, transactional=True).error is E.NONE


def test_a_plain_batch_inside_an_open_transaction_is_refused():
    s = ProducerStates()
    s.observe(1, 0, 0, 0, 0, 0, transactional=True)
    assert s.check(1, 0, 1, 1, transactional=False).error is E.INVALID_TXN_STATE
    assert s.check(1, 0, 1, 1, transactional=True).error is E.NONE


def test_open_transactions_survive_a_snapshot_and_never_expire():
    s = ProducerStates()
    s.observe(1, 0, 0, 0, 7, 7, timestamp=100, transactional=True)
    s.observe(2, 0, 0, 0, 8, 8, timestamp=100)
    restored = ProducerStates()
    restored.restore(decode_producer_snapshot(encode_producer_snapshot(s.entries())))
    assert restored.open_transactions() == {1: 7}
    assert restored.expire(10_000_000, 1000) == 1  # producer 2 only
    assert restored.open_transactions() == {1: 7}
    assert [row[0] for row in restored.active()] == [1] and restored.active()[0][5] == 7
