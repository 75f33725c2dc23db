"""`PartitionCore`: the partition replicas a broker hosts, sans-I/O: the one data-plane host that the node
(node/hosts/partitions.py: `PartitionHost`, the storage layer's `FileLog`s in `PartitionLogs`, asyncio futures and
long-poll wake-ups) and the simulator (sim/hosts/data_plane.py: in-memory logs on the simulated disk, scheduler
events) both drive.

The rules it applies live beside it (produce_rules, producer_state, partition_state, the ISR manager); this class
applies leadership from the metadata cache, appends, reads, and turns follower fetches into the ISR manager's
progress:

- `sync_metadata`: every partition with this broker among its replicas gets a log; a new leader epoch makes it
  leader (the epoch starts at its log end, `initialize_leader_epoch`) or follower of the named leader (its
  replica fetcher, replica_fetcher.py, takes it); a replica set changed by a reassignment within an epoch is
  adopted by the leader; logs of deleted topics, or of partitions moved away (a completed reassignment), are
  deleted (renamed `<dir>.<id>-delete`, then removed, as Kafka's broker does).
- `append_as_leader`: validated from headers, sequence-checked, patched in place, appended as it came;
  acks=all waits for the high watermark (`LeaderState` waiters).
- `on_follower_fetch`: a follower's fetch offset is its log end; the progress goes to the ISR manager, whose
  KIP-497 high watermark (maximal ISR) becomes the log's and releases the waiters.
Each replica applies its topic's settings (`TopicSettingsCache`, replica_settings.py; Kafka's precedence: the
topic's ConfigRecords > the broker's dynamic config > the cluster's dynamic default > server.properties), resolved
again on every metadata change, so an altered config takes effect on a live broker: min.insync.replicas and
max.message.bytes at the next Produce, segment.bytes/segment.ms at the next roll, retention at the next maintenance
round.

The follower side (appends of fetched batches, truncations, restarts at the leader's start) is in
partition_follower.py. What the host supplies: `logs` (a container of partition logs: `load`, `get`,
`get_or_create`, `delete`, `topic_ids`, `close`; each log has the raft log interface plus log-start moves,
raft/log.py and storage/file_log.py), and four hooks: `new_waiter`/`finish`/`waiter_done` (a token per acks=all
or DeleteRecords answer that waits in the leadership's purgatory), `_notify` (wake long polls),
`_open_producers`/`_reload_producers` (the idempotent state of a log opened or truncated) and
`_apply_log_config`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import InvalidAppendError

from . import record_deletion, txn_verification
from .isr_rules import LeaderProgress
from .leadership_log import log_role_changes, role_text
from .metadata_cache import MetadataCache, TopicPartition
from .partition_follower import FollowerSide
from .partition_state import LeaderState, admit_produce
from .produce_rules import Rejected, assign_offsets, require_keys, stamp_log_append_time, validate_batch
from .producer_state import ProducerStates, last_sequence
from .replica_settings import DataPlaneSettings, TopicSettingsCache
from .topic_settings import TopicSettings
from .topic_stats import BrokerTopicStats

_log = logging.getLogger("pykraft.node.partitions")


@dataclass(slots=True)
class Replica:
    """One partition replica on this broker."""

    topic: str
    partition: int
    topic_id: uuid.UUID
    log: Any  # the host's partition log (storage's FileLog in the node, an in-memory log in the simulator)
    producers: ProducerStates = field(default_factory=ProducerStates)
    leader_id: int = -1
    leader_epoch: int = -1
    leading: LeaderState[Any] | None = None  # acks=all and DeleteRecords waiters (the host's tokens)
    settings: TopicSettings = TopicSettings()
    last_flush_ms: int = -1  # when the maintenance round last flushed it (-1: not yet seen by one)
    generation: int = 0  # bumped when the log is truncated or reset (a copy of it, replica_move.py, starts again)
    verifying: dict[int, tuple[int, object]] = field(default_factory=dict)  # pid -> (epoch, guard): txn_verification

    @property
    def tp(self) -> TopicPartition:
        return (self.topic_id, self.partition)

    @property
    def tp_key(self) -> tuple[str, int]:
        """(topic, partition): the key of the log and of its cleaner state."""
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    log_append_time_ms: int = -1  # LogAppendTime topics: the time the leader stamped
    message: str | None = None
    waiter: Any = None  # acks=all: the host's token, finished with an ErrorCode when the HWM passes the batch


class PartitionCore(FollowerSide):
    def __init__(self, settings: DataPlaneSettings, cache: MetadataCache, logs: Any, *,
                 report_progress: Callable[[Mapping[TopicPartition, LeaderProgress]], None],
                 high_watermark_of: Callable[[TopicPartition], int | None],
                 now_ms: Callable[[], int]) -> None:
        self.settings = settings
        self._now_ms = now_ms
        self.topic_settings = self._settings_cache(settings, cache)
        self.cache = cache
        self.logs = logs
        self._report_progress = report_progress
        self._high_watermark_of = high_watermark_of
        self.replicas: dict[tuple[str, int], Replica] = {}
        # The log cleaner's state of each partition (the node's node/hosts/log_cleaner.py sets it when the logs
        # open; the simulator has no cleaner): a truncation or a deletion aborts the partition's pass first, as
        # Kafka's LogManager does. Others that change a log under the cleaner (log-directory moves, DeleteRecords)
        # call its `abort_and_pause(key)` before and `resume(key)` after; a move also calls `move_checkpoint`.
        self.cleaning: Any = None
        self.topic_stats = BrokerTopicStats()  # Kafka's BrokerTopicMetrics, counted per batch (topic_stats.py)

    # ---- the host's hooks ------------------------------------------------------------------------------------
    def _settings_cache(self, settings: DataPlaneSettings, cache: MetadataCache) -> TopicSettingsCache:
        return TopicSettingsCache(settings, cache)

    def new_waiter(self) -> Any:
        """A token for an answer that waits (acks=all, DeleteRecords)."""
        raise NotImplementedError

    def finish(self, token: Any, value: Any) -> None:
        """Complete a waiting answer (a token already finished or given up stays as it is)."""
        raise NotImplementedError

    def waiter_done(self, token: Any) -> bool:
        raise NotImplementedError

    def _notify(self) -> None:
        """An append, a high watermark or a log start moved: wake the long polls (none by default)."""

    def _open_producers(self, replica: Replica) -> None:
        """Load the idempotent state of a log just opened or created."""
        raise NotImplementedError

    def _reload_producers(self, replica: Replica) -> None:
        """Reload the idempotent state after a truncation cut the log's end."""
        raise NotImplementedError

    def _observe_batch(self, replica: Replica, batch: Any) -> None:
        """A producer's batch fetched from the leader is in our log: its sequences. The node's host also follows
        transactions (markers, the `.txnindex`: node/hosts/producer_recovery.py), as does the simulated host
        (sim/hosts/txn_markers.py)."""
        replica.producers.observe(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                  last_sequence(batch.base_sequence, batch.last_offset_delta), batch.base_offset,
                                  batch.last_offset, batch.max_timestamp, transactional=batch.is_transactional)

    def _apply_log_config(self, replica: Replica) -> None:
        """The topic's settings changed: what the log itself rolls and retains by (none by default)."""

    # ---- opening and metadata ----------------------------------------------------------------------------------
    def load(self) -> None:
        """Recover every partition log (the host's storage error: refuse to run) and load its producer state."""
        for key, _report in self.logs.load():
            log = self.logs.get(*key)
            assert log is not None
            replica = Replica(key[0], key[1], self.logs.topic_ids[key], log, settings=self.topic_settings.of(key[0]))
            self._open_producers(replica)
            self.replicas[key] = replica

    def sync_metadata(self, now_ms: int) -> dict[int, list[tuple[str, int]]]:
        """Follow the metadata cache. Returns the partitions to fetch, by source broker."""
        me, cache = self.settings.broker_id, self.cache
        self.topic_settings.clear()  # configs may have changed with this metadata
        wanted: set[tuple[str, int]] = set()
        changes: dict[bool, list[str]] = {True: [], False: []}  # leader?: "topic-0 (epoch 5, ...)"
        for topic_id, index in cache.partitions_with_replica(me):
            name = cache.topic_name(topic_id)
            partition = cache.partition(topic_id, index)
            if name is None or partition is None:
                continue
            key = (name, index)
            wanted.add(key)
            replica = self.replicas.get(key)
            if replica is None or replica.topic_id != topic_id:
                log = self.logs.get_or_create(name, index, topic_id)
                replica = self.replicas[key] = Replica(name, index, topic_id, log)
                self._open_producers(replica)
            self._apply_settings(replica)
            if partition.leader_epoch != replica.leader_epoch or partition.leader != replica.leader_id:
                self._change_role(replica, partition.leader, partition.leader_epoch, partition.replicas, now_ms)
                changes[replica.leading is not None].append(role_text(replica))
            elif replica.leading is not None and replica.leading.replicas != partition.replicas:
                # A reassignment changed the replicas without a new leader epoch (Kafka's leader updates its
                # assignment the same way): the adding replicas may fetch, and count, from now on.
                replica.leading.reassigned(partition.replicas)
                _log.info("replicas of %s-%d are now %s", name, index, list(partition.replicas))
                self._after_leader_change(replica)
        removed = [k for k in self.replicas if k not in wanted]
        for key in removed:
            self._remove(key)
        log_role_changes(self.settings.broker_id, changes, removed)
        for topic in [t for t in self.topic_stats.topics if cache.topic_id(t) is None]:
            self.topic_stats.retire(topic)  # deleted: its series go, the totals keep its counts
        sources: dict[int, list[tuple[str, int]]] = {}
        for key, replica in self.replicas.items():
            if replica.leading is None and replica.leader_id >= 0 and replica.leader_id != me:
                sources.setdefault(replica.leader_id, []).append(key)
        return sources

    def _apply_settings(self, replica: Replica) -> None:
        settings = self.topic_settings.of(replica.topic)
        if settings != replica.settings:
            replica.settings = settings
            self._apply_log_config(replica)

    def _change_role(self, replica: Replica, leader: int, epoch: int, replicas: tuple[int, ...], now_ms: int) -> None:
        self._abandon(replica)
        replica.leader_id, replica.leader_epoch = leader, epoch
        replica.leading = None
        if leader == self.settings.broker_id:
            log = replica.log
            entries = log.epoch_entries()
            if not entries or entries[-1][0] < epoch:
                log.initialize_leader_epoch(epoch)
            replica.leading = LeaderState(epoch, log.end_offset(), replicas, leader)
            self._after_leader_change(replica)
        self._notify()

    def _remove(self, key: tuple[str, int]) -> None:
        replica = self.replicas.pop(key)
        self._abandon(replica)
        log_dir = self.logs.dir_of(*key)
        if self.cleaning is not None:
            self.cleaning.abort(key)  # Kafka's abortCleaning before the log goes
        self.logs.delete(*key)
        if self.cleaning is not None and log_dir is not None:
            self.cleaning.forget(key, log_dir)

    # ---- leader: appends ---------------------------------------------------------------------------------------
    def leader_replica(self, topic: str, partition: int) -> Replica | ErrorCode:
        replica = self.replicas.get((topic, partition))
        if replica is None:
            topic_id = self.cache.topic_id(topic)
            if topic_id is None or self.cache.partition(topic_id, partition) is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return replica if replica.leading is not None else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def isr_size(self, replica: Replica) -> int:
        partition = self.cache.partition(*replica.tp)
        return 0 if partition is None else len(partition.isr)

    def append_as_leader(self, topic: str, partition: int, records: Any, acks: int,
                         verified: object | None = None) -> AppendResult:
        """`verified`: the guard of a KIP-890 verification of this transactional write (txn_verification.py)."""
        found = self.leader_replica(topic, partition)
        if isinstance(found, ErrorCode):
            if found is ErrorCode.NOT_LEADER_OR_FOLLOWER:  # a topic this broker knows: Kafka counts the request
                self.topic_stats.of(topic).total_produce_requests += 1
            return AppendResult(found)
        replica, leading = found, found.leading
        assert leading is not None
        counters = self.topic_stats.of(topic)
        counters.total_produce_requests += 1
        result = self._append_checked(replica, records, acks, verified)
        if result.error is not ErrorCode.NONE:
            counters.produce_failed(result.error, len(records))
        return result

    def _append_checked(self, replica: Replica, records: Any, acks: int, verified: object | None) -> AppendResult:
        """`append_as_leader` for a replica this broker leads: validate, admit, check sequences, append."""
        log, leading, topic, partition = replica.log, replica.leading, replica.topic, replica.partition
        assert leading is not None
        settings = replica.settings
        checked = validate_batch(records, settings.max_message_bytes)
        if isinstance(checked, Rejected):
            return AppendResult(checked.error, message=checked.message)
        if settings.compact:
            keyless = require_keys(records, checked.record_count, topic, partition)
            if keyless is not None:
                return AppendResult(keyless.error, message=keyless.message)
        admitted = admit_produce(acks, self.isr_size(replica), settings.min_insync_replicas)
        if admitted is not ErrorCode.NONE:
            return AppendResult(admitted, message=f"the ISR of {topic}-{partition} is below min.insync.replicas")
        if checked.is_idempotent:
            seq = replica.producers.check(checked.producer_id, checked.producer_epoch, checked.base_sequence,
                                          checked.last_sequence, checked.transactional)
            if seq.error is not ErrorCode.NONE:
                return AppendResult(seq.error, log_start_offset=log.start_offset())
            if seq.duplicate_of is not None:
                return self._answer(replica, seq.duplicate_of.base_offset, seq.duplicate_of.last_offset, acks)
        if checked.transactional and not txn_verification.admits(replica, checked, verified):
            return AppendResult(ErrorCode.INVALID_TXN_STATE, log_start_offset=log.start_offset(),
                                message="a transaction marker ended the verified transaction before this write")
        # A writable view is the request frame's own buffer (codec borrow_records, FrameReader): patched in place
        # and kept as it is; anything else is copied first, as it may be shared or read-only.
        buffer = records if isinstance(records, memoryview) and not records.readonly else bytearray(records)
        base = log.end_offset()
        assign_offsets(buffer, base, replica.leader_epoch)
        append_time = -1
        if settings.log_append_time:
            append_time = self._now_ms()
            stamp_log_append_time(buffer, append_time)
        try:
            # Kept in memory for the followers' fetches (released once they all fetched it, on_follower_fetch).
            log.append_as_leader(buffer, replica.leader_epoch, keep=len(leading.replicas) > 1)
        except InvalidAppendError as exc:  # a bug, not client input: validation passed
            _log.error("append to %s-%d failed: %s", topic, partition, exc)
            return AppendResult(ErrorCode.UNKNOWN_SERVER_ERROR, message=str(exc))
        last = base + checked.record_count - 1
        counters = self.topic_stats.of(topic)
        counters.messages_in += checked.record_count
        counters.bytes_in += len(buffer)
        replica.producers.observe(checked.producer_id, checked.producer_epoch, checked.base_sequence,
                                  checked.last_sequence, base, last,
                                  append_time if append_time >= 0 else checked.max_timestamp, checked.transactional)
        return self.appended(replica, base, last, acks, append_time)

    def appended(self, replica: Replica, base: int, last: int, acks: int, append_time: int = -1) -> AppendResult:
        """After a leader's append (a client's batch, or a transaction marker): the answer, the followers woken,
        the high watermark reconsidered."""
        result = self._answer(replica, base, last, acks, append_time)
        self._notify()  # wake the followers' long polls: the HWM cannot move before they fetch this
        self._after_leader_change(replica)
        return result

    def _answer(self, replica: Replica, base: int, last: int, acks: int, append_time: int = -1) -> AppendResult:
        waiter = None
        leading = replica.leading
        assert leading is not None
        if acks == -1:
            waiter = self.new_waiter()
            if replica.log.high_watermark() > last:
                self.finish(waiter, ErrorCode.NONE)
            else:
                leading.add_waiter(last + 1, waiter)
        return AppendResult(ErrorCode.NONE, base, replica.log.start_offset(), append_time, waiter=waiter)

    # ---- leader: follower progress and the high watermark ------------------------------------------------------
    def on_follower_fetch(self, replica: Replica, follower: int, fetch_offset: int, broker_epoch: int,
                          now_ms: int, log_start_offset: int = -1) -> None:
        leading = replica.leading
        if leading is None:
            return
        before = leading.follower_log_end_offset(follower)
        start_before = leading.follower_log_start_offset(follower)
        counted = leading.on_follower_fetch(follower, fetch_offset, broker_epoch, replica.log.end_offset(), now_ms,
                                            log_start_offset)
        if counted and start_before != log_start_offset:
            record_deletion.release_deletions(self, replica)
        if counted and before != fetch_offset:
            followers = (r for r in leading.replicas if r != leading.leader_id)
            replica.log.release_cached_below(min(leading.follower_log_end_offset(r) for r in followers))
            self._after_leader_change(replica)

    def _after_leader_change(self, replica: Replica) -> None:
        """Our log end or a follower's moved: tell the ISR manager, adopt its high watermark, release waiters."""
        leading = replica.leading
        if leading is None:
            return
        self._report_progress({replica.tp: leading.progress(replica.log.end_offset())})
        self.refresh_high_watermark(replica)

    def refresh_high_watermark(self, replica: Replica) -> None:
        leading = replica.leading
        hwm = self._high_watermark_of(replica.tp)
        if leading is None or hwm is None:
            return
        log = replica.log
        if hwm > log.high_watermark():
            log.update_high_watermark(hwm)
            self._notify()
        for waiter, error in leading.release(log.high_watermark(), self.isr_size(replica),
                                             replica.settings.min_insync_replicas):
            self.finish(waiter, error)

    def refresh_all(self) -> None:
        """After the ISR manager's state changed (an AlterPartition answer, new metadata: a broker fenced no longer
        holds back the DeleteRecords waiters)."""
        for replica in self.replicas.values():
            self.refresh_high_watermark(replica)
            record_deletion.release_deletions(self, replica)

    def progress(self, partitions: list[TopicPartition], now_ms: int) -> dict[TopicPartition, LeaderProgress]:
        """`FollowerProgressSource` for the ISR manager (broker/progress.py)."""
        by_tp = {r.tp: r for r in self.replicas.values() if r.leading is not None}
        return {tp: by_tp[tp].leading.progress(by_tp[tp].log.end_offset())  # type: ignore[union-attr]
                for tp in partitions if tp in by_tp}

    # ---- helpers -----------------------------------------------------------------------------------------------
    def changed_partition(self, replica: Replica) -> None:
        """A leader's log start moved (DeleteRecords): wake long polls, release what the move completes."""
        record_deletion.release_deletions(self, replica)
        self._notify()

    def _abandon(self, replica: Replica) -> None:
        """The leadership ends (or the replica goes): its waiters answer NOT_LEADER_OR_FOLLOWER."""
        if replica.leading is not None:
            for waiter in replica.leading.abandon():
                self.finish(waiter, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            record_deletion.abandon_deletions(self, replica)

    def abandon_all(self) -> None:
        """The process stops: every waiting answer ends."""
        for replica in self.replicas.values():
            self._abandon(replica)
