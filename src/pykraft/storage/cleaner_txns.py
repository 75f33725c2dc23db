"""What the log cleaner does with transactions (Kafka's `CleanedTransactionMetadata` and the transaction part of
`Cleaner.cleanInto`'s batch filter), as pure decisions over the batches of one cleaning pass, in log order.

The log cleaner (storage/cleaner.py) builds `CleanedTransactions` with the aborted transactions of the range it
cleans (`TxnIndexFiles.collect`, captured with its task) and feeds it every batch through compaction_rules'
`TransactionSeam` (`on_batch_read`, `on_control_batch_read` with the marker's type from `marker_type`):
- a data batch of an aborted transaction is dropped whole (`on_batch` returns True), whatever the offset map says;
  a committed transaction's batches are compacted like any other;
- a COMMIT or ABORT marker may go (`on_marker` True) only once no batch of its transaction is left before it in
  this pass (an ABORT whose transaction still had batches here is kept, and its entry goes into the cleaned
  segment's `.txnindex`: `kept_aborted`); a marker that may go is still kept until its delete horizon passed
  (`marker_removable`: the horizon is set by the first pass that found it removable, delete.retention.ms later,
  as tombstones are, so a consumer reading the range meanwhile still sees where the transaction ended);
- a control batch without records (emptied by an older cleaner) may always go.
The last batch of each producer is kept (empty if need be) by the cleaner's own rule, so that the producer's
sequence state survives: that is not decided here.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from pykraft.records import RecordBatch, RecordsError
from pykraft.records.control import ControlRecordType
from pykraft.records.rebuild import delete_horizon

from .txn_index import AbortedTxn


@dataclass(slots=True)
class _OngoingAbort:
    aborted: AbortedTxn
    last_batch_offset: int = -1  # last offset of a batch of it seen in this pass (-1: none)


class CleanedTransactions:
    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._pending = [(a.first_offset, a.producer_id, a) for a in aborted]
        heapq.heapify(self._pending)
        self._aborting: dict[int, _OngoingAbort] = {}  # producer id -> its aborted transaction under way
        self._committing: set[int] = set()  # producers with a batch of a non-aborted transaction in this pass
        self.kept_aborted: list[AbortedTxn] = []  # entries of the cleaned segments' .txnindex

    def _reach(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, producer_id, aborted = heapq.heappop(self._pending)
            self._aborting.setdefault(producer_id, _OngoingAbort(aborted))

    def on_batch(self, producer_id: int, transactional: bool, last_offset: int) -> bool:
        """A data batch: whether it belongs to an aborted transaction (and is dropped)."""
        self._reach(last_offset)
        if not transactional:
            return False
        ongoing = self._aborting.get(producer_id)
        if ongoing is not None:
            ongoing.last_batch_offset = last_offset
            return True
        self._committing.add(producer_id)
        return False

    def on_marker(self, producer_id: int, last_offset: int, abort: bool | None) -> bool:
        """A control batch (`abort`: True ABORT, False COMMIT, None: no record left in it): whether it may go once
        its delete horizon passed."""
        self._reach(last_offset)
        if abort is None:
            return True
        if abort:
            ongoing = self._aborting.pop(producer_id, None)
            if ongoing is not None and ongoing.last_batch_offset >= 0:
                self.kept_aborted.append(ongoing.aborted)  # its batches were dropped in this pass: keep the marker
                return False
            return True
        had_batches = producer_id in self._committing
        self._committing.discard(producer_id)
        return not had_batches  # a committed transaction's marker stays while any of its batches is before it

    # ---- compaction_rules.TransactionSeam ----------------------------------------------------------------------
    def on_batch_read(self, producer_id: int, is_transactional: bool, last_offset: int) -> bool:
        return self.on_batch(producer_id, is_transactional, last_offset)

    def on_control_batch_read(self, producer_id: int, last_offset: int, control_type: int | None) -> bool:
        if control_type not in (None, ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return False  # another control record: never discarded here
        return self.on_marker(producer_id, last_offset, None if control_type is None
                              else control_type == ControlRecordType.ABORT)


def transaction_seam(aborted: tuple[AbortedTxn, ...] | list[AbortedTxn] = ()) -> CleanedTransactions:
    """The cleaner's seam factory: one per pass, over the aborted transactions of its range."""
    return CleanedTransactions(list(aborted))


def marker_type(batch: RecordBatch) -> int | None:
    """The control type of a control batch's record (None: an emptied control batch, or one we cannot read)."""
    if batch.record_count == 0:
        return None
    try:
        record = next(iter(batch.records()), None)
    except RecordsError:
        return None
    if record is None or record.key is None or len(record.key) < 4:
        return None
    return int.from_bytes(bytes(record.key[2:4]), "big", signed=True)


def marker_removable(can_discard: bool, delete_horizon_ms: int | None, now_ms: int) -> bool:
    """A removable marker goes only past its delete horizon (None: not yet set; the pass sets it to now +
    delete.retention.ms when it rewrites the batch, and a later pass removes it)."""
    return can_discard and delete_horizon_ms is not None and delete_horizon_ms <= now_ms


Item = tuple[int, RecordBatch]  # a batch and its position in the chunk the cleaner read


@dataclass(frozen=True, slots=True)
class Verdict:
    """The transaction seam's answer for one batch (Kafka's `CleanedTransactionMetadata`), asked in log order."""

    can_discard: bool
    discard_records: bool
    horizon: int | None  # the batch's delete horizon (KIP-534), if set


def verdict_of(batch: RecordBatch, seam, now_ms: int) -> Verdict:
    """Ask the seam about `batch` (see Cleaner.filter_batch): whether its records may all go."""
    horizon = delete_horizon(batch)
    if batch.is_control:
        can_discard = seam.on_control_batch_read(batch.producer_id, batch.last_offset, marker_type(batch))
        return Verdict(can_discard, can_discard and horizon is not None and horizon <= now_ms, horizon)
    can_discard = seam.on_batch_read(batch.producer_id, batch.is_transactional, batch.last_offset)
    return Verdict(can_discard, can_discard, horizon)
