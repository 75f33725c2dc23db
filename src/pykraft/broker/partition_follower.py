"""The follower side of the partition host (broker/partition_host.py's `PartitionCore` inherits it): appending
what the replica fetcher fetched, truncating to where the histories agree, restarting at the leader's log start.
The fetcher decides which (broker/replica_fetch.py); these carry it out on the host's log, keeping the idempotent
state and the log cleaner's checkpoint in step.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykraft.raft.log import OffsetAndEpoch, truncation_offset
from pykraft.records import iter_batches

from . import record_deletion
from .replica_fetch import batches_to_append, follower_high_watermark, restart_for_straddling_batch

if TYPE_CHECKING:
    from .partition_host import Replica

_log = logging.getLogger("pykraft.node.partitions")


class FollowerSide:
    logs: Any
    cleaning: Any
    topic_stats: Any

    def _notify(self) -> None: ...

    def _reload_producers(self, replica: Replica) -> None: ...

    def _observe_batch(self, replica: Replica, batch: Any) -> None: ...

    def append_as_follower(self, replica: Replica, records: Any, leader_hwm: int, leader_log_start: int) -> None:
        """Batches fetched from the leader, with the leader's offsets and epochs (CRCs checked by the log)."""
        log = replica.log
        if records is not None and len(records):
            start, stop, first = batches_to_append(memoryview(records), log.end_offset())
            restart = restart_for_straddling_batch(first, log.start_offset(), log.end_offset())
            if restart is not None and stop > start:
                _log.info("%s-%d: the leader's first batch begins at %d, below our empty log's start %d: the log "
                          "starts there", replica.topic, replica.partition, restart, log.start_offset())
                self._before_truncation(replica)
                log.truncate_fully_and_start_at(restart)
                self._after_truncation(replica, restart)
                replica.producers.clear()
                replica.generation += 1
            if stop > start:
                view = memoryview(records)[start:stop]
                log.append_as_follower(view, replica.leader_epoch)
                self.topic_stats.of(replica.topic).replication_bytes_in += stop - start
                for batch in iter_batches(view, verify_crc=False):
                    if batch.producer_id >= 0:
                        self._observe_batch(replica, batch)
        hwm = follower_high_watermark(leader_hwm, log.end_offset(), log.high_watermark())
        if hwm is not None:
            log.update_high_watermark(hwm)
            replica.producers.last_stable_offset(hwm)  # forgets transactions completed below the new HWM
        record_deletion.adopt_leader_log_start(replica, leader_log_start)
        self._notify()

    def truncate_diverging(self, replica: Replica, end_offset: int, epoch: int) -> int:
        """The leader said our log diverges after (epoch, end_offset): cut it (KIP-101/KIP-279 via epochs)."""
        log = replica.log
        offset = truncation_offset(log, OffsetAndEpoch(end_offset, epoch))
        # Cutting records is worth a line; a check that cuts nothing is not (per-partition noise)
        _log.log(logging.INFO if offset < log.end_offset() else logging.DEBUG,
                 "[UnifiedLog partition=%s-%d] Truncating to offset %d from %d (the leader's epoch %d ends at %d)",
                 replica.topic, replica.partition, offset, log.end_offset(), epoch, end_offset)
        self._before_truncation(replica)
        replica.generation += 1
        if offset < log.start_offset():
            # Below a log start DeleteRecords moved: Kafka's truncateTo empties the log there; the leader's own
            # log start (above it) then answers OFFSET_OUT_OF_RANGE and we restart at that.
            log.truncate_fully_and_start_at(offset)
            self._after_truncation(replica, offset)
            replica.producers.clear()
            return offset
        if offset >= log.end_offset():
            log.forget_epochs_from_end()
            return offset
        log.truncate_to(offset)  # drops the producer snapshots above the new end
        self._after_truncation(replica, log.end_offset())
        self._reload_producers(replica)
        return offset

    def _before_truncation(self, replica: Replica) -> None:
        if self.cleaning is not None:
            self.cleaning.abort(replica.tp_key)  # a pass planned on the old log swaps nothing in

    def _after_truncation(self, replica: Replica, offset: int) -> None:
        """Kafka's maybeTruncateCheckpoint: what follows the new end is dirty again."""
        log_dir = self.logs.dir_of(replica.topic, replica.partition) if self.logs is not None else None
        if self.cleaning is not None and log_dir is not None:
            self.cleaning.truncated(replica.tp_key, log_dir, offset)

    def restart_at_leader_start(self, replica: Replica, leader_log_start: int) -> None:
        """Our log ends below the leader's log start (retention removed what we miss): Kafka's follower empties
        its log and starts again at the leader's log start."""
        log = replica.log
        _log.info("%s-%d: our log ends at %d, below the leader's log start %d: emptied, restarting there",
                  replica.topic, replica.partition, log.end_offset(), leader_log_start)
        self._before_truncation(replica)
        log.truncate_fully_and_start_at(leader_log_start)
        self._after_truncation(replica, leader_log_start)
        replica.generation += 1
        replica.producers.clear()

