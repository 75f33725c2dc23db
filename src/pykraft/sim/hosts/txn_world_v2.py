"""The transaction harness (txn_world.py) with transaction.version 2 finalized and producers of transaction version 2
(KIP-890 part 2), over the same real coordinator and producer state:

- a producer sends no AddPartitionsToTxn: its first write to a partition in a transaction makes the partition's
  leader ask the coordinator to add it (AddPartitionsToTxn v5 without VerifyOnly) under a verification guard that a
  marker arriving meanwhile cancels, as Kafka's VerificationGuard; CONCURRENT_TRANSACTIONS (the previous
  transaction's markers still out) is retried, as a Kafka client retries the leader's NOT_ENOUGH_REPLICAS;
- EndTxn v5: the answer names the producer id and epoch to continue with (the epoch bumped by every commit/abort, a
  new producer id once it is exhausted), a lost answer is retried with the old epoch and recognised as a retry;
- "beta" starts near the end of its epochs (a transactional id with a long history), so its producer id rotates;
- the coordinator's own aborts (fencing "alpha"'s first instance, timeouts) bump the epoch the version 2 way.
The invariants are the same four (sim/checks/txn_invariants.py).
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.broker.txn_coordinator import NEED_PRODUCER_ID, MarkerSend, TxnCoordinator, TxnWrite, Written
from pykraft.broker.txn_state import MAX_EPOCH, TxnMetadata, TxnState
from pykraft.protocol.errors import ErrorCode
from pykraft.sim.checks.txn_invariants import (
    atomicity_violations, fencing_violations, offset_violations, visible_violations,
)

from .txn_world import OFFSETS, TIMEOUT_MS, TxnWorld, _Client

TV2 = 2
_STOP = (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.INVALID_PRODUCER_EPOCH)


class TxnWorldV2(TxnWorld):
    version = TV2

    def __init__(self, seed: int, transactions: int = 12) -> None:
        super().__init__(seed, transactions)
        self._guards: dict[tuple[tuple[str, int], int], object] = {}  # (partition, producer id) -> its guard
        # "beta" has used its producer id for a long time: a few commits from exhausting its epochs.
        old = TxnMetadata("beta", next(self._pids), MAX_EPOCH - 6, TIMEOUT_MS, TxnState.COMPLETE_COMMIT,
                          set(), 0, 0, client_txn_version=TV2)
        self.state_log.append(("beta", old.copy()))
        self.coordinator.txns["beta"] = old

    # ---- a transaction: writes that add their partitions, then EndTxn v5 ---------------------------------------
    def begin(self, client: _Client) -> None:
        if client.transactions >= self.transactions:
            return
        parts = self.rng.sample(sorted(self.partitions), self.rng.randint(1, 3))
        client.transactions += 1
        client.in_txn = True
        self.produce(client, parts, 0)

    def produce(self, client: _Client, parts: list[tuple[str, int]], n: int) -> None:
        """Each write is acknowledged before the next (and before EndTxn), as the client's flush orders them."""
        if not client.in_txn:
            return  # fenced meanwhile
        if n == len(parts):
            self.after(self.delay(), lambda: self.end(client, self.rng.random() < 0.6))
            return
        self.write_added(client, parts[n], lambda: self.after(self.delay(), lambda: self.produce(client, parts, n + 1)))

    def write_record(self, client: _Client, tp: tuple[str, int]) -> None:
        """A zombie's write (txn_world.zombie_writes): the same path, nothing waits for it."""
        self.write_added(client, tp, lambda: None)

    def write_added(self, client: _Client, tp: tuple[str, int], acked: Callable[[], None]) -> None:
        partition = self.partitions[tp]
        pid, epoch = client.producer_id, client.epoch
        if partition.producers.open_transactions().get(pid) is not None and partition.producers.epoch_of(pid) == epoch:
            self._append_checked(client, tp, None)
            acked()
            return
        guard = self._guards[(tp, pid)] = object()

        def added(error: ErrorCode) -> None:
            if error is ErrorCode.NONE:
                self._append_checked(client, tp, guard)
                acked()
            elif error is ErrorCode.CONCURRENT_TRANSACTIONS or error not in (*_STOP, ErrorCode.INVALID_TXN_STATE):
                self.after(self.delay() * 2, lambda: self.write_added(client, tp, acked))  # the client retries
            else:
                client.in_txn = False  # fenced: this instance stops writing

        def send() -> None:
            coordinator = self.coordinator
            step = coordinator.add_partitions(client.transactional_id, pid, epoch, [tp], self.now, client_version=TV2)
            if isinstance(step, TxnWrite):
                self.write(coordinator, step, added)
            else:
                self.after(self.delay(), lambda: added(step))
        self.after(self.delay(), send)

    def _append_checked(self, client: _Client, tp: tuple[str, int], guard: object | None) -> None:
        """The leader's append: the guard must still stand (no marker since it was taken), and the sequence check."""
        partition = self.partitions[tp]
        if guard is not None and self._guards.get((tp, client.producer_id)) is not guard:
            return
        seq = client.sequences.get(tp, 0)
        check = partition.producers.check(client.producer_id, client.epoch, seq, seq, transactional=True)
        if check.error is ErrorCode.NONE and check.duplicate_of is None:
            self.append(client, partition, seq)
            client.sequences[tp] = seq + 1

    def deliver_marker(self, coordinator: TxnCoordinator, markers: MarkerSend, tp: tuple[str, int]) -> None:
        before = len(self.partitions[tp].log)
        super().deliver_marker(coordinator, markers, tp)
        if len(self.partitions[tp].log) > before:
            self._guards.pop((tp, markers.producer_id), None)  # a write verified before the marker is refused

    def end(self, client: _Client, commit: bool, pid: int | None = None, epoch: int | None = None) -> None:
        """EndTxn v5 with the id and epoch of the transaction (a retry keeps them: the coordinator tells it apart)."""
        client.in_txn = False
        pid = client.producer_id if pid is None else pid
        epoch = client.epoch if epoch is None else epoch

        def answered(result: Written) -> None:
            if result.answer is ErrorCode.NONE:
                if result.producer_id >= 0:
                    client.producer_id, client.epoch = result.producer_id, result.producer_epoch
                    client.sequences.clear()
                self.after(self.delay(), lambda: self.begin(client))
            elif result.answer in _STOP or result.answer is ErrorCode.INVALID_TXN_STATE:
                return  # fenced (or its transaction was aborted for it): this instance stops
            else:
                self.after(self.delay() * 2, lambda: self.end(client, commit, pid, epoch))

        def send() -> None:
            coordinator = self.coordinator
            step = coordinator.end_txn(client.transactional_id, pid, epoch, commit, self.now, TV2)
            if step is NEED_PRODUCER_ID:
                step = coordinator.end_txn(client.transactional_id, pid, epoch, commit, self.now, TV2,
                                           next(self._pids))
            if isinstance(step, TxnWrite):
                self.write(coordinator, step, lambda _e: None, answered)
            else:
                outcome = step if isinstance(step, Written) else Written(step)  # type: ignore[arg-type]
                self.after(self.delay(), lambda: answered(outcome))
        self.after(self.delay(), send)


def check_v2(seed: int) -> list[str]:
    """One seed of the version 2 world to its end: every invariant violation (empty: all hold)."""
    world = TxnWorldV2(seed)
    world.run()
    visible = world.visible()
    return [*world.early_violations, *visible_violations(visible, world.outcome_of, world.records),
            *atomicity_violations(visible, world.outcome_of, world.records),
            *offset_violations(world.partitions[OFFSETS].committed, world.txn_offsets),
            *fencing_violations(world.outcome_of, world.records)]


__all__ = ["TxnWorldV2", "check_v2"]
