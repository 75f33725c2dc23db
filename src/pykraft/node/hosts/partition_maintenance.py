"""The periodic maintenance of a broker's partition logs (split from partitions.py): flush what Kafka's flush
rules make due, apply retention (topics whose cleanup.policy has `delete`), write the checkpoint files.

Kafka never fsyncs a partition by default: flush.ms and flush.messages (log.flush.interval.ms/.messages) are
Long.MAX, durability comes from replication, and acks=all never waits for a flush. A segment roll and a clean
close still flush (storage/), and the recovery-point checkpoint keeps the last flushed offset. When a topic sets
either, the round flushes its partitions once due (flush.messages is checked per round, not per append as Kafka
does). The fsyncs run in a worker thread on the flush tickets' own duplicated descriptors (storage/flush.py), so the
event loop keeps appending and serving meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykraft.storage.retention import delete_expired_segments

if TYPE_CHECKING:
    from pykraft.node.hosts.partitions import PartitionHost, Replica


def maintain(host: PartitionHost, now_ms: int) -> None:
    """One round, all on the calling thread."""
    for replica in due_for_flush(host, now_ms):
        replica.log.flush()
    retention_and_checkpoints(host, now_ms)


async def maintain_off_loop(host: PartitionHost, clock: Callable[[], int],
                            run_blocking: Callable[[Callable[[], None]], Any]) -> None:
    """One round with the fsyncs in `run_blocking` (a worker thread)."""
    tickets = [(replica.log, replica.log.prepare_flush()) for replica in due_for_flush(host, clock())]

    def sync_all() -> None:
        failure: OSError | None = None
        for _, ticket in tickets:  # every ticket syncs (and closes its descriptors), even after a failure
            try:
                ticket.sync()
            except OSError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    if tickets:
        await run_blocking(sync_all)
    for log, ticket in tickets:
        log.complete_flush(ticket)
    if host.logs is not None:
        retention_and_checkpoints(host, clock())


def due_for_flush(host: PartitionHost, now_ms: int) -> list[Replica]:
    """The replicas whose flush.ms passed since their last flush, or with flush.messages unflushed, or with a
    producer snapshot written at a roll and not yet synced (Kafka flushes those asynchronously after the roll;
    without it their descriptors would stay open until a flush that by default never comes)."""
    due = []
    for replica in host.replicas.values():
        log, settings = replica.log, replica.settings
        if replica.last_flush_ms < 0:
            replica.last_flush_ms = now_ms
        unflushed = log.end_offset() - log.flushed_end_offset()
        if log.producer_snapshots.has_unsynced() or unflushed > 0 and (
                now_ms - replica.last_flush_ms >= settings.flush_ms or unflushed >= settings.flush_messages):
            replica.last_flush_ms = now_ms
            due.append(replica)
    return due


def retention_and_checkpoints(host: PartitionHost, now_ms: int) -> None:
    """Retention where `delete` is in the topic's cleanup.policy (Kafka's UnifiedLog.deleteOldSegments; a
    compact-only log only loses the segments below its log start, DeleteRecords'), not while the log cleaner is
    swapping segments of that partition (Kafka runs a compacted log's retention on its cleaner thread between passes
    for the same reason), then the producers' expiry and the checkpoint files."""
    # producer.id.expiration.ms may change without a restart (a dynamic broker config, as in Kafka)
    expiration_ms = host.topic_settings.broker_int("producer.id.expiration.ms", host.settings.producer_id_expiration_ms,
                                                   minimum=1)
    cleaning = host.cleaning
    for key, replica in host.replicas.items():
        settings = replica.settings
        if not (cleaning is not None and cleaning.in_progress(key)):
            if settings.delete:
                delete_expired_segments(replica.log, now_ms, settings.retention_ms, settings.retention_bytes)
            else:
                delete_expired_segments(replica.log, now_ms, -1, -1)
        replica.producers.expire(now_ms, expiration_ms)
    assert host.logs is not None
    host.logs.checkpoint()
