"""The cleaner's transaction rules (storage/cleaner_txns.py), after Kafka's LogCleaner transaction tests."""

from pykraft.storage.cleaner_txns import CleanedTransactions, marker_removable
from pykraft.storage.txn_index import AbortedTxn


def test_an_aborted_transactions_batches_go_and_its_marker_stays_until_they_are_gone():
    aborted = AbortedTxn(1, 0, 4, 5)
    first = CleanedTransactions([aborted])
    assert first.on_batch(1, True, 1) is True  # aborted data: dropped
    assert first.on_batch(2, False, 2) is False  # plain data: the offset map decides
    assert first.on_batch(1, True, 3) is True
    assert first.on_marker(1, 4, abort=True) is False  # batches of it were in this pass: keep the marker
    assert first.kept_aborted == [aborted]  # and its .txnindex entry
    second = CleanedTransactions([aborted])  # a later pass: the batches are gone
    assert second.on_marker(1, 4, abort=True) is True
    assert second.kept_aborted == []


def test_a_committed_transactions_marker_stays_while_its_batches_remain():
    pass_ = CleanedTransactions([])
    assert pass_.on_batch(3, True, 0) is False  # committed data is compacted like any other
    assert pass_.on_marker(3, 1, abort=False) is False
    later = CleanedTransactions([])
    assert later.on_marker(3, 1, abort=False) is True


def test_interleaved_producers_and_empty_control_batches():
    pass_ = CleanedTransactions([AbortedTxn(1, 2, 6, 3)])
    assert pass_.on_batch(2, True, 0) is False  # producer 2 commits
    assert pass_.on_batch(1, True, 2) is True
    assert pass_.on_batch(2, True, 3) is False
    assert pass_.on_marker(2, 5, abort=False) is False
    assert pass_.on_marker(1, 6, abort=True) is False
    assert pass_.on_marker(9, 7, abort=None) is True  # emptied by an older pass


def test_markers_go_only_past_their_delete_horizon():
    assert not marker_removable(True, None, 1000)  # the first pass sets the horizon
    assert not marker_removable(True, 2000, 1000)
    assert marker_removable(True, 1000, 1000)
    assert not marker_removable(False, 0, 1000)
