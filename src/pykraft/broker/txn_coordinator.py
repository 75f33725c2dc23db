"""The transaction coordinator of one `__transaction_state` partition (Kafka's TransactionCoordinator), sans I/O.

The host (node/hosts/txn_host.py) owns the log, the clock, the producer-id blocks and the marker requests; every
input here takes the time and returns what to do:
- an `ErrorCode` to answer at once;
- `NEED_PRODUCER_ID`: call again with a fresh producer id (a new transactional id, or an exhausted epoch);
- a `TxnWrite`: append its transit to the partition (acks=all), then call `written(write, error, now)`, which
  completes the move and says what follows (`Written`: the answer, markers to send, or a write to retry).
Markers: once PrepareCommit/PrepareAbort is written, the partitions' leaders get WriteTxnMarkers; each outcome
goes to `marker_result`, and when no partition is left the CompleteCommit/CompleteAbort write is returned.
`timed_out(now)` aborts transactions open longer than their timeout (fencing the producer's epoch, as Kafka's
abortTimedOutTransactions); `expired_ids(now)` writes tombstones for ids idle for transactional.id.expiration.ms.
The rules are Kafka 4.0's: KIP-98 with KIP-360 epoch bumps, KIP-447 and KIP-890 part 1 verification
(`verify_partitions`) for clients of transaction version 0/1 (EndTxn up to v4); for clients of transaction version 2
(EndTxn v5, partitions added by their Produce v12 / TxnOffsetCommit v5 through the partition leader) KIP-890 part 2:
every commit/abort bumps the producer epoch (a new producer id once the epoch is exhausted) and EndTxn answers the
producer id and epoch to continue with; a retried EndTxn is recognised by its previous epoch (`_end_v2`). Aborts
the coordinator starts itself (a zombie fenced by InitProducerId, a timeout) follow the finalized transaction.version
(`server_version`), as Kafka's use txnManager.transactionVersionLevel().
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pykraft.protocol.errors import ErrorCode

from .txn_state import (
    EXPIRABLE,
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartitionName,
    TxnMetadata,
    TxnState,
    TxnTransit,
    epoch_exhausted,
)

DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
DEFAULT_ID_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms
# Errors of a WriteTxnMarkers partition that end the marker's delivery there (it is written, or never can be);
# any other is retried (Kafka's TransactionMarkerRequestCompletionHandler).
MARKER_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION,
                         ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


class Purpose(enum.Enum):
    INIT = "init"  # InitProducerId: answer the new id and epoch
    ADD_PARTITIONS = "add"  # AddPartitionsToTxn / AddOffsetsToTxn
    END_TXN = "end"  # EndTxn: answer NONE, then markers
    FENCE_ABORT = "fence"  # InitProducerId of a new instance over an open transaction: CONCURRENT_TRANSACTIONS
    TIMEOUT_ABORT = "timeout"  # transaction.timeout.ms passed: no client waits
    COMPLETE = "complete"  # every marker written
    EXPIRE = "expire"  # tombstone of an idle transactional id


class _NeedProducerId:
    def __repr__(self) -> str:
        return "NEED_PRODUCER_ID"


NEED_PRODUCER_ID = _NeedProducerId()


@dataclass(frozen=True, slots=True)
class TxnWrite:
    transactional_id: str
    transit: TxnTransit
    purpose: Purpose
    coordinator_epoch: int

    @property
    def tombstone(self) -> bool:
        return self.purpose is Purpose.EXPIRE


@dataclass(frozen=True, slots=True)
class MarkerSend:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartitionName]


@dataclass(frozen=True, slots=True)
class Written:
    answer: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1
    markers: MarkerSend | None = None
    then: TxnWrite | None = None  # a write to make next (COMPLETE at once when no partition needs a marker)
    retry: bool = False  # the same write must be made again (the partition is briefly unavailable)


class TxnCoordinator:
    def __init__(self, partition: int, coordinator_epoch: int, *, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                 id_expiration_ms: int = DEFAULT_ID_EXPIRATION_MS) -> None:
        self.partition = partition
        self.epoch = coordinator_epoch
        self.max_timeout_ms = max_timeout_ms
        self.id_expiration_ms = id_expiration_ms
        self.txns: dict[str, TxnMetadata] = {}
        self._marking: dict[str, TxnTransit] = {}  # id -> its Complete* transit, while markers are out

    # ---- InitProducerId ----------------------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                         now_ms: int, new_producer_id: int | None = None,
                         server_version: int = 0) -> ErrorCode | _NeedProducerId | TxnWrite:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT
        meta = self.txns.get(transactional_id)
        if meta is None:
            if new_producer_id is None:
                return NEED_PRODUCER_ID
            meta = self.txns[transactional_id] = TxnMetadata(transactional_id, new_producer_id, NO_PRODUCER_EPOCH,
                                                             timeout_ms, last_update_ms=now_ms)
            new_producer_id = None
        if meta.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not _expected_producer_valid(meta, *expected):
            return ErrorCode.PRODUCER_FENCED
        if meta.state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state is TxnState.ONGOING:
            # A new instance while the old one's transaction is open: abort it under a bumped epoch and let the
            # client retry (its retry bumps the epoch once more, or rotates the id if that exhausted it).
            return self._fence_and_abort(meta, Purpose.FENCE_ABORT, now_ms, server_version)
        assert meta.state in EXPIRABLE, f"{transactional_id} is {meta.state} in the cache"
        if epoch_exhausted(meta.producer_epoch) and (expected is None or expected[1] == meta.producer_epoch):
            if new_producer_id is None:
                return NEED_PRODUCER_ID
            transit = meta.prepare_rotate_producer_id(new_producer_id, timeout_ms, now_ms, expected is not None)
        else:
            bumped = meta.prepare_increment_epoch(timeout_ms, None if expected is None else expected[1], now_ms)
            if isinstance(bumped, ErrorCode):
                return bumped
            transit = bumped
        return TxnWrite(transactional_id, transit, Purpose.INIT, self.epoch)

    def _fence_and_abort(self, meta: TxnMetadata, purpose: Purpose, now_ms: int, server_version: int) -> TxnWrite:
        """Kafka 4.0: the fence's bumped epoch is taken, and at transaction version 2 the PrepareAbort bumps it once
        more, as any tv2 end does (no new producer id: a fenced transaction never rotates)."""
        fence = meta.prepare_fence_epoch()
        meta.take_fence_for_abort(fence)
        return TxnWrite(meta.transactional_id, meta.prepare_end(False, now_ms, server_version), purpose, self.epoch)

    # ---- AddPartitionsToTxn, AddOffsetsToTxn and verification --------------------------------------------------
    def _current(self, transactional_id: str, producer_id: int, epoch: int) -> TxnMetadata | ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        return meta

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: Iterable[TopicPartitionName], now_ms: int,
                       client_version: int = 0) -> ErrorCode | TxnWrite:
        meta = self._current(transactional_id, producer_id, epoch)
        if isinstance(meta, ErrorCode):
            return _rotating(self.txns.get(transactional_id), producer_id, epoch, meta)
        wanted = set(partitions)
        if meta.pending is not None or meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state is TxnState.ONGOING and wanted <= meta.partitions:
            return ErrorCode.NONE  # already in the transaction: nothing to write
        return TxnWrite(transactional_id, meta.prepare_add_partitions(wanted, now_ms, client_version),
                        Purpose.ADD_PARTITIONS, self.epoch)

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[TopicPartitionName]) -> dict[TopicPartitionName, ErrorCode]:
        """KIP-890 part 1: may this producer write transactionally to these partitions now? (A partition leader
        asks before it appends a transaction's first batch.) Pending moves are not checked: the leader's append
        is checked once more against its producer state."""
        wanted = list(partitions)
        meta = self._current(transactional_id, producer_id, epoch)
        if isinstance(meta, ErrorCode):
            error = _rotating(self.txns.get(transactional_id), producer_id, epoch, meta)
            return {tp: error for tp in wanted}
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return {tp: ErrorCode.CONCURRENT_TRANSACTIONS for tp in wanted}
        return {tp: ErrorCode.NONE if tp in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in wanted}

    # ---- EndTxn ------------------------------------------------------------------------------------------------
    def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool, now_ms: int,
                client_version: int = 0, new_producer_id: int | None = None,
                ) -> ErrorCode | TxnWrite | Written | _NeedProducerId:
        """EndTxn. A client of transaction version 2 (EndTxn v5) may get NEED_PRODUCER_ID (its epoch is exhausted:
        call again with a fresh id) or a `Written` (a retry answered with the producer id and epoch to use)."""
        if client_version >= 2:
            return self._end_v2(transactional_id, producer_id, epoch, commit, now_ms, new_producer_id)
        meta = self._current(transactional_id, producer_id, epoch)
        if isinstance(meta, ErrorCode):
            return meta
        if meta.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = meta.state
        if state is TxnState.ONGOING:
            return TxnWrite(transactional_id, meta.prepare_end(commit, now_ms), Purpose.END_TXN, self.epoch)
        # A retry of an EndTxn whose answer was lost is answered by the state it led to.
        done, underway = ((TxnState.COMPLETE_COMMIT, TxnState.PREPARE_COMMIT) if commit
                          else (TxnState.COMPLETE_ABORT, TxnState.PREPARE_ABORT))
        if state is done:
            return ErrorCode.NONE
        if state is underway:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE

    def _end_v2(self, transactional_id: str, producer_id: int, epoch: int, commit: bool, now_ms: int,
                new_producer_id: int | None) -> ErrorCode | TxnWrite | Written | _NeedProducerId:
        """Kafka 4.0's endTransaction for transaction version 2. A retry (the client's epoch is one below ours, or
        it is the exhausted epoch of the id we rotated from) of a finished end answers NONE with our id and epoch;
        the same epoch after a finished end is the next transaction's end (Empty/Complete* + abort: an empty
        abort, bumping the epoch; + commit: INVALID_TXN_STATE)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        state = meta.state
        retry_on_overflow = (meta.last_producer_id == producer_id and epoch == MAX_EPOCH - 1
                             and meta.producer_epoch == 0)
        retry_on_bump = meta.producer_epoch == epoch + 1
        if meta.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state in (TxnState.ONGOING, TxnState.EMPTY):
            valid = epoch == meta.producer_epoch
        elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid = retry_on_bump
        else:
            valid = retry_on_bump or retry_on_overflow or epoch == meta.producer_epoch
        if not valid:
            return ErrorCode.PRODUCER_FENCED
        retry = retry_on_bump or retry_on_overflow
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if state is TxnState.ONGOING or (not commit and not retry and state in EXPIRABLE):
            next_id = NO_PRODUCER_ID
            if epoch_exhausted(meta.producer_epoch):
                if new_producer_id is None:
                    return NEED_PRODUCER_ID
                next_id = new_producer_id
            return TxnWrite(transactional_id, meta.prepare_end(commit, now_ms, 2, next_id), Purpose.END_TXN,
                            self.epoch)
        if state is done and retry:
            return Written(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
        underway = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return ErrorCode.CONCURRENT_TRANSACTIONS if state is underway else ErrorCode.INVALID_TXN_STATE

    # ---- writes done -------------------------------------------------------------------------------------------
    def written(self, write: TxnWrite, error: ErrorCode, now_ms: int) -> Written:
        meta = self.txns.get(write.transactional_id)
        if meta is None or write.coordinator_epoch != self.epoch:
            return Written(ErrorCode.NOT_COORDINATOR)
        if error is not ErrorCode.NONE:
            return self._write_failed(meta, write, error)
        if write.purpose is Purpose.EXPIRE:
            if meta.pending is TxnState.DEAD:
                del self.txns[write.transactional_id]
            return Written(ErrorCode.NONE)
        meta.complete(write.transit)
        if write.purpose is Purpose.INIT:
            return Written(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
        if write.purpose in (Purpose.ADD_PARTITIONS, Purpose.COMPLETE):
            return Written(ErrorCode.NONE)
        answer = ErrorCode.CONCURRENT_TRANSACTIONS if write.purpose is Purpose.FENCE_ABORT else ErrorCode.NONE
        started = self._start_markers(meta, answer, now_ms)
        complete = self._marking.get(meta.transactional_id) or (started.then.transit if started.then else None)
        if write.purpose is Purpose.END_TXN and meta.client_txn_version >= 2 and complete is not None:
            # KIP-890 part 2: the client continues with the id and epoch the Complete state will have.
            return replace(started, producer_id=complete.producer_id, producer_epoch=complete.producer_epoch)
        return started

    def _write_failed(self, meta: TxnMetadata, write: TxnWrite, error: ErrorCode) -> Written:
        if write.purpose is Purpose.COMPLETE and error is ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return Written(error, retry=True)  # keep the pending Complete*: the write is made again
        if write.purpose in (Purpose.FENCE_ABORT, Purpose.TIMEOUT_ABORT):
            meta.failed_epoch_fence = True  # the epoch is bumped in memory already: the next fence reuses it
        meta.abort_pending()
        return Written(error)

    def _start_markers(self, meta: TxnMetadata, answer: ErrorCode, now_ms: int) -> Written:
        commit = meta.state is TxnState.PREPARE_COMMIT
        complete = meta.prepare_complete(now_ms)
        if not meta.partitions:
            return Written(answer, then=TxnWrite(meta.transactional_id, complete, Purpose.COMPLETE, self.epoch))
        self._marking[meta.transactional_id] = complete
        return Written(answer, markers=MarkerSend(meta.transactional_id, meta.producer_id, meta.producer_epoch,
                                                  commit, self.epoch, frozenset(meta.partitions)))

    # ---- markers -----------------------------------------------------------------------------------------------
    def marker_result(self, transactional_id: str, partition: TopicPartitionName, error: ErrorCode) -> TxnWrite | bool:
        """One partition's WriteTxnMarkers outcome. True: send it again later; False: nothing more to do for it;
        a TxnWrite: that was the last marker, write the Complete state."""
        complete = self._marking.get(transactional_id)
        meta = self.txns.get(transactional_id)
        if complete is None or meta is None:
            return False
        if error not in MARKER_DONE:
            return True
        meta.partitions.discard(partition)
        if meta.partitions:
            return False
        del self._marking[transactional_id]
        return TxnWrite(transactional_id, complete, Purpose.COMPLETE, self.epoch)

    # ---- loading, time -----------------------------------------------------------------------------------------
    def load(self, txns: dict[str, TxnMetadata], now_ms: int) -> list[MarkerSend | TxnWrite]:
        """The partition was read back: transactions left in PrepareCommit/PrepareAbort are completed (their
        markers sent again, as Kafka does after a coordinator failover)."""
        self.txns = txns
        follow: list[MarkerSend | TxnWrite] = []
        for meta in txns.values():
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                started = self._start_markers(meta, ErrorCode.NONE, now_ms)
                follow.append(started.markers if started.markers is not None else started.then)  # type: ignore[arg-type]
        return follow

    def timed_out(self, now_ms: int, server_version: int = 0) -> list[TxnWrite]:
        """Abort transactions open for longer than their timeout (transaction.timeout.ms), fencing the producer."""
        return [self._fence_and_abort(meta, Purpose.TIMEOUT_ABORT, now_ms, server_version)
                for meta in list(self.txns.values())
                if meta.pending is None and meta.state is TxnState.ONGOING
                and meta.start_ms + meta.timeout_ms < now_ms]

    def next_timeout(self) -> int | None:
        """When the earliest open transaction times out (ms), if any."""
        times = [m.start_ms + m.timeout_ms + 1 for m in self.txns.values()
                 if m.pending is None and m.state is TxnState.ONGOING]
        return min(times) if times else None

    def expired_ids(self, now_ms: int) -> list[TxnWrite]:
        return [TxnWrite(m.transactional_id, m.prepare_dead(), Purpose.EXPIRE, self.epoch)
                for m in list(self.txns.values())
                if m.pending is None and m.state in EXPIRABLE and m.last_update_ms <= now_ms - self.id_expiration_ms]

    # ---- DescribeTransactions, ListTransactions ----------------------------------------------------------------
    def describe(self, transactional_id: str) -> TxnMetadata | ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state is TxnState.DEAD or meta.pending is TxnState.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return meta

    def listed(self, states: set[TxnState], producer_ids: set[int], min_duration_ms: int, now_ms: int,
               pattern: re.Pattern[str] | None = None) -> list[TxnMetadata]:
        """ListTransactions' filters: states, producer ids, open for longer than `min_duration_ms` (-1: any), a
        transactional id regular expression (v2)."""
        found = []
        for meta in self.txns.values():
            if meta.state is TxnState.DEAD or (states and meta.state not in states):
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and now_ms - meta.start_ms <= min_duration_ms:
                continue
            if pattern is not None and pattern.fullmatch(meta.transactional_id) is None:
                continue
            found.append(meta)
        return found


def _rotating(meta: TxnMetadata | None, producer_id: int, epoch: int, error: ErrorCode) -> ErrorCode:
    """tv2: the client already has the id its EndTxn rotated to while the Complete state is still being written
    (the answer precedes the markers): it retries (CONCURRENT_TRANSACTIONS) rather than being refused."""
    if meta is not None and producer_id == meta.next_producer_id != NO_PRODUCER_ID and epoch == 0:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    return error


def _expected_producer_valid(meta: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: an InitProducerId naming its current id and epoch is fenced unless the metadata was just created,
    the id is the current one (the epoch is checked when bumped), or it is the previous id with an exhausted epoch
    (a retry of a rotation whose answer was lost)."""
    return (meta.producer_epoch == NO_PRODUCER_EPOCH or producer_id == meta.producer_id
            or (producer_id == meta.last_producer_id and epoch_exhausted(epoch)))
