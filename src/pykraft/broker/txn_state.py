"""One transactional id's state at its coordinator (Kafka's TransactionMetadata), pure.

A change is made in two steps, as Kafka does: `prepare_*` checks the move against the table below and returns the
target (`TxnTransit`) while the metadata remembers it as `pending`; once the target is written to
`__transaction_state` (acks=all) `complete(transit)` applies it, and `abort_pending()` forgets it when the write
failed. While a move is pending every other request for the id gets CONCURRENT_TRANSACTIONS. A `prepare_*` that
breaks the table is a bug in the coordinator, not bad input: it raises AssertionError.

States (ids as in the log): Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3, CompleteCommit 4,
CompleteAbort 5, Dead 6 (being expired), PrepareEpochFence 7 (a zombie being fenced: never written as such).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from pykraft.protocol.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MaxValue


class TxnState(enum.Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @classmethod
    def of_id(cls, state_id: int) -> TxnState | None:
        return _BY_ID.get(state_id)

    @classmethod
    def of_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_BY_ID = {s.id: s for s in TxnState}
_BY_NAME = {s.state_name: s for s in TxnState}
S = TxnState
# The states each state may be entered from (Kafka's validPreviousStates).
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
EXPIRABLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})  # transactional.id.expiration.ms applies
IN_FLIGHT = frozenset({S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT})

TopicPartitionName = tuple[str, int]


def epoch_exhausted(epoch: int) -> bool:
    """No more epochs for this producer id: the next InitProducerId rotates to a new id."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The target of a pending move: what is written to the log, and applied once written."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartitionName]
    start_ms: int
    last_update_ms: int


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartitionName] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    pending: TxnState | None = None
    failed_epoch_fence: bool = False  # a fence's write failed: the next fence reuses the bumped epoch

    # ---- preparing moves ---------------------------------------------------------------------------------------
    def _prepare(self, state: TxnState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartitionName], start_ms: int, now_ms: int) -> TxnTransit:
        assert self.pending is None, f"{self.transactional_id}: {state} while {self.pending} is pending"
        assert producer_id >= 0, f"{self.transactional_id}: producer id {producer_id}"
        assert state is TxnState.DEAD or epoch >= 0, f"{self.transactional_id}: epoch {epoch}"
        assert self.state in VALID_PREVIOUS[state], f"{self.transactional_id}: {self.state} -> {state} is illegal"
        self.pending = state
        return TxnTransit(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state, partitions, start_ms,
                          now_ms)

    def prepare_fence_epoch(self) -> TxnTransit:
        """A zombie's transaction is aborted under the next epoch (InitProducerId of a new instance, or a
        transaction that timed out)."""
        assert self.producer_epoch < MAX_EPOCH, "fencing would overflow the epoch"
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(TxnState.PREPARE_EPOCH_FENCE, self.producer_id, epoch, NO_PRODUCER_EPOCH,
                             self.timeout_ms, frozenset(self.partitions), self.start_ms, self.last_update_ms)

    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                now_ms: int) -> TxnTransit | ErrorCode:
        """InitProducerId for a known id: the next epoch (or, for a retry whose answer was lost, the same one)."""
        assert not epoch_exhausted(self.producer_epoch), "epochs of this producer id are exhausted"
        bumped = self.producer_epoch + 1
        if expected_epoch is None or self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, (NO_PRODUCER_EPOCH if expected_epoch is None else self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(TxnState.EMPTY, self.producer_id, epoch, last, timeout_ms, frozenset(), -1, now_ms)

    def prepare_rotate_producer_id(self, producer_id: int, timeout_ms: int, now_ms: int,
                                   record_last_epoch: bool) -> TxnTransit:
        assert self.state not in IN_FLIGHT, "cannot rotate the producer id of a transaction in flight"
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(TxnState.EMPTY, producer_id, 0, last, timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, partitions: set[TopicPartitionName], now_ms: int) -> TxnTransit:
        fresh = self.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT)
        return self._prepare(TxnState.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(self.partitions | partitions),
                             now_ms if fresh else self.start_ms, now_ms)

    def prepare_end(self, commit: bool, now_ms: int) -> TxnTransit:
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return self._prepare(state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(self.partitions), self.start_ms, now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        state = TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        self.failed_epoch_fence = False
        return self._prepare(state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(), self.start_ms, now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(TxnState.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(), self.start_ms, self.last_update_ms)

    def take_fence_for_abort(self, fence: TxnTransit) -> None:
        """Kafka's endTransaction on a pending PrepareEpochFence: the bumped epoch is adopted now (before the
        PrepareAbort is written), so the zombie's requests are fenced at once."""
        assert self.pending is TxnState.PREPARE_EPOCH_FENCE
        self.pending = None
        self.producer_epoch = fence.producer_epoch
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    # ---- completing moves --------------------------------------------------------------------------------------
    def complete(self, transit: TxnTransit) -> None:
        """The transit is in the log: apply it (Kafka's completeTransitionTo, with its consistency checks)."""
        assert self.pending is transit.state, f"{self.transactional_id}: completing {transit.state}, " \
                                              f"pending {self.pending}"
        state = transit.state
        assert state not in (TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD), f"{state} is never completed"
        if state is TxnState.EMPTY:
            assert not transit.partitions and transit.start_ms == -1
            self.producer_id, self.last_producer_id = transit.producer_id, transit.last_producer_id
            self.producer_epoch, self.last_producer_epoch = transit.producer_epoch, transit.last_producer_epoch
            self.timeout_ms = transit.timeout_ms
        else:
            assert transit.producer_id == self.producer_id and transit.producer_epoch == self.producer_epoch, \
                f"{self.transactional_id}: a {state} transit of another producer epoch"
            if state is TxnState.ONGOING:
                self.start_ms = transit.start_ms
                self.partitions |= transit.partitions
            elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
                self.start_ms = transit.start_ms
                self.partitions.clear()
        self.last_update_ms = transit.last_update_ms
        self.pending = None
        self.state = state

    def abort_pending(self) -> None:
        self.pending = None

    def copy(self) -> TxnMetadata:
        return replace(self, partitions=set(self.partitions))
