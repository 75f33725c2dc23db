"""`TxnHost`: the broker's transaction coordinator, hosted on the `__transaction_state` partitions it leads.

The same pattern as the group coordinator (group_host.py):
- the coordinator of a transactional id is the leader of partition `partition_for(id, partitions)` of
  `__transaction_state` (Kafka's abs(hashCode) % partitions), its coordinator epoch the partition's leader epoch;
- on becoming leader the partition is read from its start in slices between event-loop turns
  (COORDINATOR_LOAD_IN_PROGRESS meanwhile), and transactions found in PrepareCommit/PrepareAbort get their markers
  sent again; on losing it the coordinator goes (NOT_COORDINATOR), its marker sends stop;
- every state change is written to the partition (acks=all, Kafka's error mapping) before it is applied;
- timers: transactions open longer than their timeout are aborted every
  transaction.abort.timed.out.transaction.cleanup.interval.ms, idle ids expire every
  transaction.remove.expired.transaction.cleanup.interval.ms.
The rules are pure (broker/txn_coordinator.py); markers go out through txn_marker_sender.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pykraft.broker.txn_coordinator import NEED_PRODUCER_ID, TxnCoordinator, TxnWrite, Written
from pykraft.broker.txn_settings import TRANSACTION_TOPIC, TxnSettings
from pykraft.broker.txn_state import TxnMetadata, TxnState
from pykraft.protocol.errors import ErrorCode
from pykraft.records import RecordsError, SimpleRecord, encode_batch, iter_batches
from pykraft.broker import coordinator_lookup
from pykraft.records.txn_log_records import (
    TxnLogValue, TxnRecordError, decode_txn_key, decode_txn_value, encode_txn_key, encode_txn_value,
)

from pykraft.node.hosts.txn_marker_sender import MarkerSender

if TYPE_CHECKING:
    from pykraft.node.hosts.partitions import PartitionHost

_log = logging.getLogger("pykraft.node.transactions")
WRITE_TIMEOUT_S = 30.0  # request.timeout.ms, as Kafka's appendTransactionToLog waits
RETRY_BACKOFF_S = 0.1
LOAD_SLICE_BYTES = 16 * 1024
# Kafka's TransactionStateManager.appendTransactionToLog: append errors as the coordinator reports them.
_WRITE_ERRORS = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
                 ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
                 ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
                 ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
                 ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
                 ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
                 ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR}


class TxnHost:
    def __init__(self, host: PartitionHost, settings: TxnSettings, clock: Callable[[], int],
                 new_producer_id: Callable[[], Awaitable[tuple[ErrorCode, int]]], markers: MarkerSender,
                 value_version: Callable[[], int], server_version: Callable[[], int] = lambda: 0) -> None:
        self.host = host
        self.settings = settings
        self.clock = clock
        self._new_producer_id = new_producer_id
        self.markers = markers
        self._value_version = value_version  # TransactionLogValue version: 1 once transaction.version >= 1
        self.server_version = server_version  # the finalized transaction.version (the coordinator's own aborts)
        self.coordinators: dict[int, TxnCoordinator] = {}
        self.loading: dict[int, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: list[asyncio.TimerHandle] = []

    # ---- which partition, and is it ours -----------------------------------------------------------------------
    def partition_count(self) -> int | None:
        return coordinator_lookup.partition_count(self.host.cache, TRANSACTION_TOPIC)

    def coordinator_of(self, transactional_id: str) -> TxnCoordinator | ErrorCode:
        return coordinator_lookup.coordinator_for(transactional_id, self.partition_count(), self.loading, self.coordinators)

    def is_current(self, coordinator: TxnCoordinator) -> bool:
        return self.coordinators.get(coordinator.partition) is coordinator

    # ---- leadership --------------------------------------------------------------------------------------------
    def sync_leadership(self) -> None:
        """After the data plane followed the metadata: load the partitions we now lead (again, in a new leader
        epoch: a new coordinator epoch), unload the others."""
        led = {index: replica.leader_epoch for (topic, index), replica in self.host.replicas.items()
               if topic == TRANSACTION_TOPIC and replica.leading is not None}
        for partition, coordinator in list(self.coordinators.items()):
            if led.get(partition) != coordinator.epoch:
                del self.coordinators[partition]
                _log.info("transactions of %s-%d unloaded", TRANSACTION_TOPIC, partition)
        for partition in [p for p in self.loading if p not in led]:
            self.loading.pop(partition).cancel()
        for partition in sorted(set(led) - set(self.coordinators) - set(self.loading)):
            self.loading[partition] = asyncio.get_running_loop().create_task(self._load(partition, led[partition]))
        if not self._timers and led:
            self._schedule_timers()

    async def _load(self, partition: int, epoch: int) -> None:
        try:
            txns = await self._read_transactions(partition, epoch)
            if txns is None:
                return
            coordinator = TxnCoordinator(partition, epoch, max_timeout_ms=self.settings.max_timeout_ms,
                                         id_expiration_ms=self.settings.id_expiration_ms)
            follow = coordinator.load(txns, self.clock())
            self.coordinators[partition] = coordinator
            _log.info("transactions of %s-%d loaded at coordinator epoch %d: %d ids, %d to complete",
                      TRANSACTION_TOPIC, partition, epoch, len(txns), len(follow))
            for item in follow:
                if isinstance(item, TxnWrite):
                    self.spawn(self.write_and_apply(coordinator, item))
                else:
                    self.markers.send(coordinator, item)
        finally:
            if self.loading.get(partition) is asyncio.current_task():
                del self.loading[partition]

    async def _read_transactions(self, partition: int, epoch: int) -> dict[str, TxnMetadata] | None:
        replica = self.host.replicas.get((TRANSACTION_TOPIC, partition))
        if replica is None or replica.leading is None:
            return None
        log = replica.log
        txns: dict[str, TxnMetadata] = {}
        offset = log.start_offset()
        while True:
            if self.host.replicas.get((TRANSACTION_TOPIC, partition)) is not replica or replica.leading is None \
                    or replica.leader_epoch != epoch or offset > log.end_offset():
                return None
            offset = max(offset, log.start_offset())
            if offset >= log.end_offset():
                return txns
            offset = _replay_slice(log, offset, txns)
            await asyncio.sleep(0)

    # ---- writes ------------------------------------------------------------------------------------------------
    async def write_and_apply(self, coordinator: TxnCoordinator, write: TxnWrite) -> Written:
        """Write one state change, apply its outcome, and carry out what follows (markers, the next write)."""
        error = await self._append(coordinator, write)
        if not self.is_current(coordinator):
            return Written(ErrorCode.NOT_COORDINATOR)
        done = coordinator.written(write, error, self.clock())
        if done.markers is not None:
            self.markers.send(coordinator, done.markers)
        if done.then is not None:
            self.spawn(self.write_and_apply(coordinator, done.then))
        if done.retry:
            self.spawn(self._retry_later(coordinator, write))
        return done

    async def _retry_later(self, coordinator: TxnCoordinator, write: TxnWrite) -> None:
        await asyncio.sleep(RETRY_BACKOFF_S)
        if self.is_current(coordinator):
            await self.write_and_apply(coordinator, write)

    async def _append(self, coordinator: TxnCoordinator, write: TxnWrite) -> ErrorCode:
        key = encode_txn_key(write.transactional_id)
        value = None if write.tombstone else encode_txn_value(_log_value(write), self._value_version())
        batch = encode_batch([SimpleRecord(value, key)], base_offset=0, partition_leader_epoch=0,
                             timestamp_ms=self.clock())
        result = self.host.append_as_leader(TRANSACTION_TOPIC, coordinator.partition, batch, -1)
        error = result.error
        if error is ErrorCode.NONE and result.waiter is not None:
            try:
                error = await asyncio.wait_for(asyncio.shield(result.waiter), WRITE_TIMEOUT_S)
            except asyncio.TimeoutError:
                error = ErrorCode.REQUEST_TIMED_OUT
        if error is not ErrorCode.NONE:
            _log.info("writing %s of %s failed: %s", write.transit.state.state_name, write.transactional_id,
                      error.name)
        return _WRITE_ERRORS.get(error, error)

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("a transaction coordinator task failed: %r", task.exception())

    # ---- the requests ------------------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                               server_version: int = 0) -> tuple[ErrorCode, int, int]:
        return await self._with_producer_id(transactional_id, lambda c, now, new_id: c.init_producer_id(
            transactional_id, timeout_ms, expected, now, new_id, server_version))

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                      client_version: int) -> tuple[ErrorCode, int, int]:
        """EndTxn: the error, and for a transaction version 2 client the producer id and epoch to continue with."""
        return await self._with_producer_id(transactional_id, lambda c, now, new_id: c.end_txn(
            transactional_id, producer_id, epoch, commit, now, client_version, new_id))

    async def _with_producer_id(self, transactional_id: str,
                                call: Callable[[TxnCoordinator, int, int | None], Any]) -> tuple[ErrorCode, int, int]:
        """One coordinator step that may need a fresh producer id (asked for, then the step is made again)."""
        coordinator = self.coordinator_of(transactional_id)
        if isinstance(coordinator, ErrorCode):
            return coordinator, -1, -1
        step = call(coordinator, self.clock(), None)
        if step is NEED_PRODUCER_ID:
            error, producer_id = await self._new_producer_id()
            if error is not ErrorCode.NONE:
                return error, -1, -1
            if not self.is_current(coordinator):
                return ErrorCode.NOT_COORDINATOR, -1, -1
            step = call(coordinator, self.clock(), producer_id)
        if isinstance(step, ErrorCode):
            return step, -1, -1
        done = step if isinstance(step, Written) else await self.write_and_apply(coordinator, step)
        return done.answer, done.producer_id, done.producer_epoch

    async def step(self, transactional_id: str, call: Callable[[TxnCoordinator, int], Any]) -> ErrorCode:
        """AddPartitionsToTxn, AddOffsetsToTxn, EndTxn: one coordinator step, written if it changes the state."""
        coordinator = self.coordinator_of(transactional_id)
        if isinstance(coordinator, ErrorCode):
            return coordinator
        step = call(coordinator, self.clock())
        if isinstance(step, ErrorCode):
            return step
        return (await self.write_and_apply(coordinator, step)).answer

    # ---- time --------------------------------------------------------------------------------------------------
    def _schedule_timers(self) -> None:
        loop = asyncio.get_running_loop()
        self._timers = [loop.call_later(self.settings.abort_interval_ms / 1000, self._abort_timed_out),
                        loop.call_later(self.settings.expire_interval_ms / 1000, self._expire_ids)]

    def _abort_timed_out(self) -> None:
        now = self.clock()
        for coordinator in list(self.coordinators.values()):
            for write in coordinator.timed_out(now, self.server_version()):
                _log.info("aborting the transaction of %s: open longer than its timeout %d ms",
                          write.transactional_id, write.transit.timeout_ms)
                self.spawn(self.write_and_apply(coordinator, write))
        self._timers[0] = asyncio.get_running_loop().call_later(self.settings.abort_interval_ms / 1000,
                                                                 self._abort_timed_out)

    def _expire_ids(self) -> None:
        now = self.clock()
        for coordinator in list(self.coordinators.values()):
            for write in coordinator.expired_ids(now):
                self.spawn(self.write_and_apply(coordinator, write))
        self._timers[1] = asyncio.get_running_loop().call_later(self.settings.expire_interval_ms / 1000,
                                                                 self._expire_ids)

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        for task in list(self.loading.values()) + list(self._tasks):
            task.cancel()
        self.loading.clear()
        self.coordinators.clear()
        self.markers.close()


def _log_value(write: TxnWrite) -> TxnLogValue:
    transit = write.transit
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(transit.partitions):
        by_topic.setdefault(topic, []).append(partition)
    partitions = None if transit.state is TxnState.EMPTY else tuple((t, tuple(p)) for t, p in by_topic.items())
    return TxnLogValue(transit.producer_id, transit.producer_epoch, transit.timeout_ms, transit.state.id, partitions,
                       transit.last_update_ms, transit.start_ms, previous_producer_id=transit.last_producer_id,
                       next_producer_id=transit.next_producer_id,
                       client_transaction_version=transit.client_txn_version)


def _replay_slice(log: Any, offset: int, txns: dict[str, TxnMetadata]) -> int:
    info = log.read(offset, LOAD_SLICE_BYTES)
    start = offset
    for batch in iter_batches(info.records, verify_crc=False, allow_truncated_tail=True):
        if batch.is_control or batch.next_offset <= offset:
            offset = max(offset, batch.next_offset)
            continue
        try:
            records = list(batch.records())
        except RecordsError as exc:
            _log.error("skipping an undecodable batch of %s at offset %d: %s", TRANSACTION_TOPIC, batch.base_offset,
                       exc)
            records = []
        for r in records:
            if r.key is not None:
                _apply_record(txns, bytes(r.key), None if r.value is None else bytes(r.value))
        offset = batch.next_offset
    if offset == start:
        raise AssertionError(f"no progress loading {TRANSACTION_TOPIC} at offset {offset}")
    return offset


def _apply_record(txns: dict[str, TxnMetadata], raw_key: bytes, raw_value: bytes | None) -> None:
    """Replay one __transaction_state record (later records win; a tombstone removes the id)."""
    try:
        transactional_id = decode_txn_key(raw_key)
        if raw_value is None:
            txns.pop(transactional_id, None)
            return
        value = decode_txn_value(raw_value)
    except TxnRecordError as exc:
        _log.error("skipping an unreadable %s record: %s", TRANSACTION_TOPIC, exc)
        return
    state = TxnState.of_id(value.state_id)
    if state is None:
        _log.error("skipping %s record of %s: unknown transaction state %d", TRANSACTION_TOPIC, transactional_id,
                   value.state_id)
        return
    partitions = set() if state is TxnState.EMPTY or value.partitions is None else {
        (topic, p) for topic, ids in value.partitions for p in ids}
    txns[transactional_id] = TxnMetadata(transactional_id, value.producer_id, value.producer_epoch, value.timeout_ms,
                                         state, partitions, value.start_ms, value.last_update_ms,
                                         last_producer_id=value.previous_producer_id,
                                         next_producer_id=value.next_producer_id,
                                         client_txn_version=value.client_transaction_version)
