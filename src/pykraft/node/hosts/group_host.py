"""`GroupHost`: the broker's group coordinator, hosted on the `__consumer_offsets` partitions it leads.

- Coordinator = leader of partition `partition_for(group_id, partitions)` of `__consumer_offsets` (Kafka's rule).
- On becoming leader of such a partition the host reads the partition from its start and rebuilds the groups and
  committed offsets (COORDINATOR_LOAD_IN_PROGRESS until done); on losing it the groups go (NOT_COORDINATOR, and
  parked JoinGroup/SyncGroup requests are answered so). Failover therefore follows partition leadership.
  The load runs in slices of `LOAD_SLICE_BYTES` between event-loop turns (a task per partition), so a large
  partition does not stall the broker's other requests (Kafka loads on its scheduler thread for the same reason);
  it is abandoned if the leadership moves meanwhile.
- Committed offsets expire after offsets.retention.minutes by Kafka's rules (broker/offset_expiry.py, checked every
  offsets.retention.check.interval.ms): a tombstone per expired offset, and one for a group left empty; with
  deleted groups and offsets they keep the compacted `__consumer_offsets` bounded by its live keys.
- Writes (offsets, a generation's assignment) are appended as leader with acks=all and answered only once the
  high watermark passed them; a write that fails or times out answers COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR
  when the leadership moved meanwhile).
The protocol rules are pure (broker/group_coordinator.py, the records broker/group_log.py); this class adds the
log, the timer and the futures.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from pykraft.broker.consumer_coordinator import ConsumerCoordinator, ConsumerGroupConfig, Record, TopicImage
from pykraft.node.hosts.consumer_group_host import adopt_offsets, expire_consumer_offsets
from pykraft.broker.group_coordinator import GroupConfig, GroupCoordinator, Reply
from pykraft.broker.group_state import Group, OffsetEntry, StoreGroup
from pykraft.broker.txn_offsets import PendingTxnOffsets
from pykraft.broker.group_log import OFFSETS_TOPIC, group_record, offset_records
from pykraft.broker.group_log import apply_record as _apply_record  # noqa: F401 - the tests' name for it
from pykraft.broker.group_log import group_value as _group_value  # noqa: F401
from pykraft.broker.group_log import replay_slice as _replay_slice
from pykraft.broker.group_txn_offsets import encode_txn_batch
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records import consumer_group_records as cg_records
from pykraft.broker import coordinator_lookup
from pykraft.records.group_records import GroupKey, OffsetKey, encode_group_value, encode_key, partition_for

if TYPE_CHECKING:
    from pykraft.node.hosts.partitions import PartitionHost

_log = logging.getLogger("pykraft.node.groups")
WRITE_TIMEOUT_S = 5.0  # offsets.commit.timeout.ms
_WRITE_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.NOT_COORDINATOR}


def group_config(raw: Any) -> GroupConfig:
    """group.* settings from server.properties; ValueError on a value that is not a non-negative integer."""
    values = {}
    for name, key, unit in (("min_session_timeout_ms", "group.min.session.timeout.ms", 1),
                            ("max_session_timeout_ms", "group.max.session.timeout.ms", 1),
                            ("initial_rebalance_delay_ms", "group.initial.rebalance.delay.ms", 1),
                            ("offsets_retention_ms", "offsets.retention.minutes", 60_000),
                            ("offsets_retention_check_interval_ms", "offsets.retention.check.interval.ms", 1)):
        text = str(raw.get(key, "")).strip()
        if text:
            if not text.isdigit():
                raise ValueError(f"{key}: {text!r} is not a non-negative integer")
            values[name] = int(text) * unit
    return GroupConfig(**values)


class GroupHost:
    def __init__(self, host: PartitionHost, config: GroupConfig, clock: Any,
                 consumer_config: ConsumerGroupConfig | None = None) -> None:
        self.host = host
        self.config = config
        self.consumer_config = consumer_config or ConsumerGroupConfig()
        self.clock = clock
        self.coordinators: dict[int, GroupCoordinator] = {}  # loaded partitions
        self.consumers: dict[int, ConsumerCoordinator] = {}  # their KIP-848 consumer groups
        self._image: TopicImage | None = None
        self.txn_offsets: dict[int, PendingTxnOffsets] = {}  # partition -> offsets of open transactions
        self.loading: dict[int, asyncio.Task[None]] = {}  # partition -> its load, until loaded
        self._parked: dict[Hashable, asyncio.Future[Any]] = {}
        self._tokens = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._expiry_timer: asyncio.TimerHandle | None = None

    # ---- which partition, and is it ours -----------------------------------------------------------------------
    def partition_count(self) -> int | None:
        return coordinator_lookup.partition_count(self.host.cache, OFFSETS_TOPIC)

    def coordinator_of(self, group_id: str) -> GroupCoordinator | ErrorCode:
        return coordinator_lookup.coordinator_for(group_id, self.partition_count(), self.loading, self.coordinators)

    def consumer_of(self, group_id: str) -> ConsumerCoordinator | ErrorCode:
        """The KIP-848 coordinator of the group's partition (loaded with the classic one)."""
        found = self.coordinator_of(group_id)
        if isinstance(found, ErrorCode):
            return found
        partition = partition_for(group_id, self.partition_count() or 1)
        return self.consumers.setdefault(partition, ConsumerCoordinator(self.consumer_config))

    def image(self) -> TopicImage:
        """The topics as the consumer coordinators see them (rebuilt after each metadata change)."""
        if self._image is None:
            replication = self.host.cache.replication
            self._image = TopicImage({name: (topic_id, len(replication.topics[topic_id].partitions))
                                      for name, topic_id in replication.topics_by_name.items()
                                      if topic_id in replication.topics},
                                     getattr(self.host.cache, "last_applied_offset", 0))
        return self._image

    # ---- leadership --------------------------------------------------------------------------------------------
    def sync_leadership(self) -> None:
        """After the data plane followed the metadata: load the partitions we now lead, unload the others."""
        led = {index for (topic, index), replica in self.host.replicas.items()
               if topic == OFFSETS_TOPIC and replica.leading is not None}
        self._image = None
        image = self.image()
        for consumer in self.consumers.values():
            consumer.metadata_changed(image)
        for partition in [p for p in self.coordinators if p not in led]:
            self.txn_offsets.pop(partition, None)
            coordinator = self.coordinators.pop(partition)
            count = len(coordinator.groups)
            self._deliver(coordinator.unload())
            consumers = self.consumers.pop(partition, None)
            count += 0 if consumers is None else len(consumers.groups)
            if consumers is not None:
                consumers.unload()
            # a partition without groups is per-partition noise (50 of them by default): DEBUG
            _log.log(logging.INFO if count else logging.DEBUG, "groups of %s-%d unloaded: %d groups", OFFSETS_TOPIC,
                     partition, count)
        for partition in [p for p in self.loading if p not in led]:
            self.loading.pop(partition).cancel()
            _log.info("loading the groups of %s-%d abandoned: no longer its leader", OFFSETS_TOPIC, partition)
        for partition in sorted(led - set(self.coordinators) - set(self.loading)):
            self.loading[partition] = asyncio.get_running_loop().create_task(self._load(partition))

    async def _load(self, partition: int) -> None:
        try:
            consumers = ConsumerCoordinator(self.consumer_config)
            pending = PendingTxnOffsets()
            groups = await self._read_groups(partition, pending, consumers)
            if groups is None:
                return
            now = self.clock()
            adopt_offsets(groups, consumers)
            coordinator = GroupCoordinator(self.config)
            for group in groups.values():
                coordinator.load_group(group, now)
            consumers.loaded(now)
            consumers.orphan_offsets.clear()
            consumers.metadata_changed(self.image())
            self.coordinators[partition] = coordinator
            self.consumers[partition] = consumers
            self.txn_offsets[partition] = pending
            count = len(groups) + len(consumers.groups)
            _log.log(logging.INFO if count else logging.DEBUG, "groups of %s-%d loaded: %d groups", OFFSETS_TOPIC,
                     partition, count)
            self._reschedule()
            self._schedule_expiry()
        finally:
            if self.loading.get(partition) is asyncio.current_task():
                del self.loading[partition]

    async def _read_groups(self, partition: int, pending: PendingTxnOffsets,
                           consumers: ConsumerCoordinator | None = None) -> dict[str, Group] | None:
        """Replay the partition from its start to its end, one slice per loop turn. None when the leadership
        moved meanwhile (the load is then pointless: the new leader loads)."""
        replica = self.host.replicas.get((OFFSETS_TOPIC, partition))
        if replica is None or replica.leading is None:
            return None
        epoch, log = replica.leader_epoch, replica.log
        groups: dict[str, Group] = {}
        offset = log.start_offset()
        while True:
            if self.host.replicas.get((OFFSETS_TOPIC, partition)) is not replica or replica.leading is None \
                    or replica.leader_epoch != epoch or offset > log.end_offset():
                return None
            offset = max(offset, log.start_offset())  # retention may have moved the start between slices
            if offset >= log.end_offset():
                return groups
            offset = _replay_slice(log, offset, groups, pending, consumers)
            await asyncio.sleep(0)  # let the loop serve everything else before the next slice

    # ---- parking requests and delivering replies ---------------------------------------------------------------
    def park(self) -> tuple[Hashable, asyncio.Future[Any]]:
        token = next(self._tokens)
        future = asyncio.get_running_loop().create_future()
        self._parked[token] = future
        return token, future

    def forget(self, token: Hashable) -> None:
        self._parked.pop(token, None)

    def run(self, coordinator: GroupCoordinator, replies: list[Reply]) -> None:
        """Carry out the coordinator's replies: answer parked requests, start group writes."""
        for reply in replies:
            if isinstance(reply, StoreGroup):
                asyncio.get_running_loop().create_task(self._store_group(coordinator, reply))
        self._deliver([r for r in replies if not isinstance(r, StoreGroup)])
        self._reschedule()

    def _deliver(self, replies: list[Any]) -> None:
        for reply in replies:
            future = self._parked.pop(reply.token, None)
            if future is not None and not future.done():
                future.set_result(reply)

    async def _store_group(self, coordinator: GroupCoordinator, store: StoreGroup) -> None:
        group = coordinator.groups.get(store.group_id)
        if group is None:
            return
        error = await self.write(store.group_id, [group_record(group)])
        self.run(coordinator, coordinator.group_stored(store.group_id, store.generation, error, self.clock()))

    async def write(self, group_id: str, records: list[SimpleRecord]) -> ErrorCode:
        """Append to the group's partition with acks=all; NONE once committed."""
        count = self.partition_count()
        if not count:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        batch = encode_batch(records, base_offset=0, partition_leader_epoch=0, timestamp_ms=self.clock())
        return await self._append(group_id, partition_for(group_id, count), batch)

    async def _append(self, group_id: str, partition: int, batch: bytes, verified: object = None) -> ErrorCode:
        result = self.host.append_as_leader(OFFSETS_TOPIC, partition, batch, -1, verified)
        error = result.error
        if error is ErrorCode.NONE and result.waiter is not None:
            try:
                error = await asyncio.wait_for(asyncio.shield(result.waiter), WRITE_TIMEOUT_S)
            except asyncio.TimeoutError:
                error = ErrorCode.REQUEST_TIMED_OUT
        if error is not ErrorCode.NONE:
            _log.info("write for group %s failed: %s", group_id, error.name)
            return _WRITE_ERRORS.get(error, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return ErrorCode.NONE

    async def commit_offsets(self, coordinator: GroupCoordinator, group_id: str,
                             offsets: dict[tuple[str, int], OffsetEntry],
                             into: dict[tuple[str, int], OffsetEntry] | None = None) -> ErrorCode:
        """Write offsets; once committed they are the classic group's, or `into` (a consumer group's)."""
        error = await self.write(group_id, offset_records(group_id, offsets))
        if error is ErrorCode.NONE and into is not None:
            into.update(offsets)
        elif error is ErrorCode.NONE:
            coordinator.offsets_committed(group_id, offsets)
        return error

    async def delete_offsets(self, coordinator: GroupCoordinator, group_id: str, partitions: list[tuple[str, int]],
                             into: dict[tuple[str, int], OffsetEntry] | None = None) -> ErrorCode:
        """Tombstones for these committed offsets; gone from memory once committed."""
        error = await self.write(group_id, [SimpleRecord(None, encode_key(OffsetKey(group_id, t, p)))
                                           for t, p in partitions])
        if error is ErrorCode.NONE and into is not None:
            for key in partitions:
                into.pop(key, None)
        elif error is ErrorCode.NONE:
            coordinator.offsets_deleted(group_id, partitions)
        return error

    async def delete_group(self, coordinator: GroupCoordinator, group_id: str) -> ErrorCode:
        group = coordinator.groups.get(group_id)
        error = coordinator.delete_group(group_id)
        if error is not ErrorCode.NONE or group is None:
            return error
        tombstones = [SimpleRecord(None, encode_key(OffsetKey(group_id, t, p))) for t, p in group.offsets]
        return await self.write(group_id, [*tombstones, SimpleRecord(None, encode_key(GroupKey(group_id)))])

    async def write_records(self, group_id: str, records: list[Record] | tuple[Record, ...],
                            extra: list[SimpleRecord] | None = None) -> ErrorCode:
        """Write consumer group records (after `extra`, e.g. offsets or a classic group's tombstone)."""
        encoded = list(extra or []) + [_encode_record(key, value) for key, value in records]
        if not encoded:
            return ErrorCode.NONE
        error = await self.write(group_id, encoded)
        if error is not ErrorCode.NONE:
            _log.warning("consumer group %s: %d records not written (%s)", group_id, len(encoded), error.name)
        return error

    def adopt_downgrades(self, partition: int, consumers: ConsumerCoordinator, now_ms: int) -> None:
        """Consumer groups that became classic again (their last consumer-protocol member left): the classic
        coordinator takes them and starts their rebalance (group_migration.py)."""
        coordinator = self.coordinators.get(partition)
        for group, rebalance in consumers.take_downgrades():
            if coordinator is not None:
                _log.info("consumer group %s converted to a classic group (%d classic members)", group.group_id,
                          len(group.members))
                self.run(coordinator, coordinator.adopt(group, now_ms, rebalance))

    # ---- offsets committed in transactions (broker/txn_offsets.py) ---------------------------------------------
    async def commit_txn_offsets(self, group_id: str, producer_id: int, epoch: int,
                                 offsets: dict[tuple[str, int], OffsetEntry], verified: object) -> ErrorCode:
        """TxnOffsetCommit: the offsets as a transactional batch of the producer, pending until its marker."""
        count = self.partition_count()
        if not count:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = partition_for(group_id, count)
        replica = self.host.replicas.get((OFFSETS_TOPIC, partition))
        if replica is None or partition not in self.coordinators:
            return ErrorCode.NOT_COORDINATOR
        records = offset_records(group_id, offsets)
        sequence = replica.producers.next_sequence(producer_id, epoch)
        batch = encode_txn_batch(records, producer_id, epoch, sequence, self.clock())
        error = await self._append(group_id, partition, batch, verified)
        if error is ErrorCode.NONE and partition in self.txn_offsets:
            self.txn_offsets[partition].add(producer_id, group_id, offsets)
        return error

    def txn_completed(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker of the producer's transaction was written to our __consumer_offsets partition."""
        pending, coordinator = self.txn_offsets.get(partition), self.coordinators.get(partition)
        if pending is None or coordinator is None:
            return
        consumers = self.consumers.get(partition)
        for group_id, offsets in pending.complete(producer_id, commit).items():
            if consumers is not None and group_id in consumers.groups:  # a KIP-848 group keeps its own offsets
                consumers.groups[group_id].offsets.update(offsets)
            else:
                coordinator.offsets_committed(group_id, offsets)

    def txn_offset_pending(self, group_id: str, tp: tuple[str, int]) -> bool:
        count = self.partition_count()
        pending = None if not count else self.txn_offsets.get(partition_for(group_id, count))
        return pending is not None and pending.is_pending(group_id, tp)

    # ---- offset expiry (offsets.retention.minutes) ---------------------------------------------------------------
    def _schedule_expiry(self) -> None:
        if self._expiry_timer is None:
            delay = self.config.offsets_retention_check_interval_ms / 1000
            self._expiry_timer = asyncio.get_running_loop().call_later(delay, self._expire)

    def _expire(self) -> None:
        """Kafka's cleanupGroupMetadata: tombstones for expired offsets and for groups left empty, so that the
        compacted `__consumer_offsets` drops them (broker/offset_expiry.py)."""
        self._expiry_timer = None
        now = self.clock()
        for coordinator in self.coordinators.values():
            for expired in coordinator.expiration(now):
                group = coordinator.groups[expired.group_id]
                decided = {key: group.offsets[key] for key in expired.partitions}
                asyncio.get_running_loop().create_task(self._write_expiry(coordinator, expired, decided))
        for consumers in self.consumers.values():
            expire_consumer_offsets(self, consumers, now, self.config.offsets_retention_ms)
        if self.coordinators:
            self._schedule_expiry()

    async def _write_expiry(self, coordinator: GroupCoordinator, expired: Any, decided: dict) -> None:
        records = [SimpleRecord(None, encode_key(OffsetKey(expired.group_id, t, p))) for t, p in expired.partitions]
        if expired.group_too:
            records.append(SimpleRecord(None, encode_key(GroupKey(expired.group_id))))
        if await self.write(expired.group_id, records) is ErrorCode.NONE:
            coordinator.expiry_written(expired, decided)
            _log.info("group %s: %d committed offsets expired%s", expired.group_id, len(expired.partitions),
                      ", the group is removed" if expired.group_too else "")

    # ---- time --------------------------------------------------------------------------------------------------
    def _reschedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        owners: list[Any] = [*self.coordinators.values(), *self.consumers.values()]  # classic and consumer groups
        deadlines = [d for d in (c.next_deadline() for c in owners) if d is not None]
        if deadlines:
            delay = max(0.001, (min(deadlines) - self.clock()) / 1000)
            self._timer = asyncio.get_running_loop().call_later(delay, self._poll)

    def _poll(self) -> None:
        self._timer = None
        now = self.clock()
        for coordinator in list(self.coordinators.values()):
            self.run(coordinator, coordinator.poll(now))
        for partition, consumers in list(self.consumers.items()):
            records = consumers.poll(now)
            self.adopt_downgrades(partition, consumers, now)
            if records:  # fenced members: the group's epoch bump and the tombstones
                for group_id in dict.fromkeys(key.group for key, _ in records):
                    asyncio.get_running_loop().create_task(
                        self.write_records(group_id, [r for r in records if r[0].group == group_id]))
        self._reschedule()

    def close(self) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        if self._timer is not None:
            self._timer.cancel()
        for task in self.loading.values():
            task.cancel()
        self.loading.clear()
        for coordinator in self.coordinators.values():
            self._deliver(coordinator.unload())
        self.coordinators.clear()
        for consumers in self.consumers.values():
            consumers.unload()
        self.consumers.clear()


def _encode_record(key: Any, value: Any) -> SimpleRecord:
    """A consumer group record, or the GroupMetadata of a group converted back to classic (group_migration.py)."""
    if isinstance(key, GroupKey):
        return SimpleRecord(None if value is None else encode_group_value(value), encode_key(key))
    return SimpleRecord(None if value is None else cg_records.encode_value(value), cg_records.encode_key(key))
