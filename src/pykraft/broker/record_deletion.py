"""DeleteRecords on the partitions this broker leads (Kafka's `ReplicaManager.deleteRecords` and
`DelayedDeleteRecords`), and the follower's side of it. Pure over the partition host (broker/partition_host.py):
the waiters are the host's tokens (`new_waiter`/`finish`: asyncio futures in the node, reply addresses in the
simulator), kept in the leadership's purgatory.

- Leader: the request's offset is checked (broker/delete_records.py), the log start moves
  (`FileLog.increment_log_start`, storage/log_start.py) and the answer waits until the low watermark, the smallest
  log start among the leader and every follower on an alive broker (`LeaderState.low_watermark`), reaches it.
  Followers report their log start in each Fetch; `on_follower_fetch` and every metadata change (a broker fenced
  no longer counts) re-check the waiters. A leadership that ends answers them NOT_LEADER_OR_FOLLOWER; the API
  handler answers REQUEST_TIMED_OUT for those still waiting at the request's timeout.
- Follower: each Fetch answer carries the leader's log start; `adopt_leader_log_start` moves ours there (never
  above our high watermark), as Kafka's `ReplicaFetcherThread.processPartitionData` does.
The segments wholly below a moved start are deleted by the next maintenance round (retention's deletion path).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykraft.protocol.errors import ErrorCode

from .delete_records import INVALID_LOW_WATERMARK, cleanup_allows_delete, deletion_target, refuse_topic
from .replica_fetch import adopted_log_start

if TYPE_CHECKING:
    from .partition_host import PartitionCore as PartitionHost
    from .partition_host import Replica

_log = logging.getLogger("pykraft.node.partitions")  # the partition host's log lines


@dataclass(frozen=True, slots=True)
class DeletionStarted:
    """One partition of a DeleteRecords request: answered now (`waiter` None) or once the host's `waiter` token
    completes with (error, low watermark)."""

    error: ErrorCode
    low_watermark: int = INVALID_LOW_WATERMARK
    waiter: Any = None


def delete_records(host: PartitionHost, topic: str, partition: int, requested: int) -> DeletionStarted:
    refused = refuse_topic(topic)
    if refused is not None:
        return DeletionStarted(refused.error)
    found = host.leader_replica(topic, partition)
    if isinstance(found, ErrorCode):
        return DeletionStarted(found)
    replica, log = found, found.log
    leading = replica.leading
    assert leading is not None
    policy = getattr(replica.settings, "cleanup_policy", None)  # the log cleaner's setting, where it exists
    target = deletion_target(requested, log.high_watermark(), cleanup_allows_delete(policy))
    if target.error is not ErrorCode.NONE:
        return DeletionStarted(target.error)
    if log.increment_log_start(target.offset):
        _log.info("%s-%d: log start moved to %d by DeleteRecords", topic, partition, target.offset)
        host.changed_partition(replica)
    low = low_watermark(host, replica)
    if low >= target.offset:
        return DeletionStarted(ErrorCode.NONE, low)
    waiter = host.new_waiter()
    leading.forget_deletions(host.waiter_done)  # requests that timed out meanwhile
    leading.add_deletion_waiter(target.offset, waiter)
    return DeletionStarted(ErrorCode.NONE, low, waiter)


def low_watermark(host: PartitionHost, replica: Replica) -> int:
    leading = replica.leading
    if leading is None:
        return INVALID_LOW_WATERMARK

    def alive(broker_id: int) -> bool:
        registration = host.cache.registration(broker_id)
        return registration is not None and not registration.fenced

    return leading.low_watermark(replica.log.start_offset(), alive)


def release_deletions(host: PartitionHost, replica: Replica) -> None:
    """Complete the DeleteRecords waiters the low watermark now covers."""
    leading = replica.leading
    if leading is None:
        return
    low = low_watermark(host, replica)
    for waiter in leading.release_deletions(low):
        host.finish(waiter, (ErrorCode.NONE, low))


def abandon_deletions(host: PartitionHost, replica: Replica) -> None:
    if replica.leading is not None:
        for waiter in replica.leading.abandon_deletions():
            host.finish(waiter, (ErrorCode.NOT_LEADER_OR_FOLLOWER, INVALID_LOW_WATERMARK))


def adopt_leader_log_start(replica: Replica, leader_log_start: int) -> None:
    """A follower's log start follows its leader's, up to our own high watermark."""
    log = replica.log
    new_start = adopted_log_start(leader_log_start, log.high_watermark(), log.start_offset())
    if new_start is not None:
        log.increment_log_start(new_start)
        _log.debug("%s-%d: log start moved to %d (the leader's)", replica.topic, replica.partition, new_start)
