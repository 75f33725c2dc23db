"""A partition replica's idempotent-producer state across restarts: Kafka's ProducerStateManager, I/O side.

The state (broker/producer_state.py) is rebuilt from the latest producer snapshot at or below the log end plus the
batch headers after it, never from the whole log, and it keeps producers whose batches retention deleted:
- `open_producer_state`: on opening a replica. Snapshots outside [log start, log end] are stray (a torn tail was
  cut, retention ran) and go; a snapshot that does not decode (torn by a crash, bad CRC) is deleted with a log line
  and the next older one is tried, down to none (then the whole log is read, as Kafka does);
- `snapshot_producers`: when a segment rolls (`FileLog.on_roll`) and on clean shutdown. The file is written on the
  event loop (it is small) and synced by the log's next flush ticket, in the maintenance worker thread;
- `reload_after_truncation`: a follower's DivergingEpoch truncation already dropped the snapshots above the new end
  (FileLog); the state is reloaded from the latest one left.
Every open is recovery-validated to its end (storage/log_open.py), so the log end is the recovery point.
The aborted-transaction index (`.txnindex`) is rebuilt with the state: entries of transactions ending at or after
the snapshot's offset are cut and the replay writes them again (`observe_batch`, which also opens and closes
transactions from transactional batches and markers). A damaged `.txnindex` file makes the load start from a
snapshot below its segment, so its entries are written again too.
"""

from __future__ import annotations

import bisect
import logging
from typing import TYPE_CHECKING

from pykraft.broker.producer_snapshot import (
    CorruptProducerSnapshotError,
    decode_producer_snapshot,
    encode_producer_snapshot,
)
from pykraft.records import RecordsError, iter_batches
from pykraft.records.batch import RecordBatch
from pykraft.records.txn_markers import decode_txn_marker, is_txn_marker_batch
from pykraft.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from pykraft.node.hosts.partitions import Replica

_log = logging.getLogger("pykraft.node.producers")
_REBUILD_CHUNK = 1 << 20


def open_producer_state(replica: Replica) -> int:
    """Attach the roll hook and load the state. Returns how many batch headers were read (the tail's)."""
    replica.log.on_roll = lambda _offset: snapshot_producers(replica)
    files, log = replica.log.producer_snapshots, replica.log
    files.delete_above(log.end_offset())
    files.delete_below(log.start_offset())
    return load_producers(replica)


def load_producers(replica: Replica) -> int:
    """State from the latest readable snapshot at or below the log end, then the batches after it."""
    log, files = replica.log, replica.log.producer_snapshots
    damaged = log.txn_index.damaged_from
    upper = log.end_offset() if damaged is None else min(log.end_offset(), damaged)
    log.txn_index.damaged_from = None
    while True:
        offset = files.latest_at_or_below(upper)
        if offset is None or offset < log.start_offset():
            replica.producers.clear()
            log.txn_index.truncate_to(log.start_offset())
            return replay_batches(replica, log.start_offset())
        try:
            entries = decode_producer_snapshot(files.read(offset))
        except (CorruptProducerSnapshotError, OSError) as exc:
            _log.warning("%s-%d: producer snapshot %s is unreadable (%s); deleted, the state is rebuilt from the "
                         "log", replica.topic, replica.partition, files.path(offset), exc)
            files.delete(offset)
            continue
        replica.producers.restore(entries)
        log.txn_index.truncate_to(offset)
        return replay_batches(replica, offset)


def reload_after_truncation(replica: Replica) -> int:
    return load_producers(replica)


def snapshot_producers(replica: Replica) -> None:
    """Kafka's takeSnapshot: the state as of the log end, in `<end offset>.snapshot` (kept if one is there)."""
    files, offset = replica.log.producer_snapshots, replica.log.end_offset()
    if offset in files.offsets:
        return
    try:
        files.write(offset, encode_producer_snapshot(replica.producers.entries()))
    except OSError as exc:  # a missing snapshot costs a longer load later, never the append or the shutdown
        files.delete(offset)
        _log.error("%s-%d: could not write the producer snapshot %s: %s", replica.topic, replica.partition,
                   files.path(offset), exc)


def replay_batches(replica: Replica, offset: int) -> int:
    """`observe` every producer batch header from `offset` to the log end. Returns how many batches were read."""
    log = replica.log
    read = 0
    while offset < log.end_offset():
        data = log.read(offset, _REBUILD_CHUNK).records
        before = offset
        try:
            for batch in iter_batches(data, verify_crc=False, allow_truncated_tail=True):
                read += 1
                if batch.producer_id >= 0 and batch.last_offset >= offset:
                    observe_batch(replica, batch)
                offset = max(offset, batch.last_offset + 1)
        except RecordsError:  # recovery validated the log: only a bug lands here
            _log.error("unreadable batch at offset %d of %s-%d", offset, replica.topic, replica.partition)
            return read
        if offset == before:
            return read
    return read


def observe_batch(replica: Replica, batch: RecordBatch) -> None:
    """A producer's batch is in the log (a follower's append, or the replay): its sequences, its transaction,
    and for a marker the completed transaction (an aborted one into the `.txnindex` of its segment)."""
    producers = replica.producers
    if not is_txn_marker_batch(batch):
        producers.observe_batch(batch)
        return
    try:
        marker = decode_txn_marker(batch)
    except RecordsError as exc:  # a control batch we cannot read: say so; it ends no transaction
        _log.error("%s-%d: unreadable transaction marker at offset %d: %s", replica.topic, replica.partition,
                   batch.base_offset, exc)
        return
    record_marker(replica, batch.producer_id, batch.producer_epoch, marker.coordinator_epoch, batch.base_offset,
                  marker.commit, batch.max_timestamp, _segment_of(replica, batch.base_offset))


def record_marker(replica: Replica, producer_id: int, epoch: int, coordinator_epoch: int, offset: int, commit: bool,
                  timestamp: int, segment_base: int) -> None:
    """The producer state and the `.txnindex` after a COMMIT/ABORT marker at `offset`."""
    producers = replica.producers
    replica.verifying.pop(producer_id, None)  # a write verified before this marker belongs to no transaction now
    done = producers.observe_marker(producer_id, epoch, coordinator_epoch, offset, commit, timestamp)
    if done.aborted:
        replica.log.txn_index.append(segment_base, AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                                              producers.stable_offset_after(done)))


def _segment_of(replica: Replica, offset: int) -> int:
    bases = replica.log.segment_base_offsets()
    return bases[max(bisect.bisect_right(bases, offset) - 1, 0)]
