"""Where the ISR manager's follower progress comes from (KIP-497's input), as an explicit interface.

The replicated data plane (follower Fetch of partition data) will implement `FollowerProgressSource` for real: the
log end offset and last caught-up time of each follower, per partition this broker leads. Until it exists a
broker process runs `MetadataOnlyProgress`, which says what the metadata log alone can say: partitions hold no
data yet (every log end offset is 0), so a follower is caught up exactly when the metadata shows its broker
registered and unfenced, not in controlled shutdown; any other follower is reported with no progress at all
and drops out of the ISR after `replica.lag.time.max.ms`, like a follower that stopped fetching.

This stand-in keeps the whole AlterPartition path real (proposals, batching, the controller's KIP-841 checks, the
answers) without inventing offsets. It does not detect a live but lagging follower: that needs the data plane.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from .isr_rules import FollowerProgress, LeaderProgress
from .metadata_cache import MetadataCache, TopicPartition

EMPTY_LOG_END_OFFSET = 0


class FollowerProgressSource(Protocol):
    def progress(self, partitions: list[TopicPartition], now_ms: int) -> Mapping[TopicPartition, LeaderProgress]:
        """Progress of the followers of each partition in `partitions` (the ones this broker leads now); a
        partition may be left out when nothing is known about it."""
        ...


class MetadataOnlyProgress:
    """The stand-in described in the module docstring."""

    def __init__(self, cache: MetadataCache, broker_id: int) -> None:
        self.cache = cache
        self.broker_id = broker_id

    def progress(self, partitions: list[TopicPartition], now_ms: int) -> Mapping[TopicPartition, LeaderProgress]:
        cache = self.cache
        found: dict[TopicPartition, LeaderProgress] = {}
        for tp in partitions:
            partition = cache.partition(*tp)
            if partition is None or partition.leader != self.broker_id:
                continue
            followers = []
            for replica in partition.replicas:
                epoch = cache.broker_epoch(replica)
                if replica == self.broker_id or epoch is None or not cache.is_isr_eligible(replica, epoch):
                    continue
                followers.append(FollowerProgress(replica, EMPTY_LOG_END_OFFSET, now_ms, epoch))
            found[tp] = LeaderProgress(partition.leader_epoch, EMPTY_LOG_END_OFFSET, EMPTY_LOG_END_OFFSET,
                                       tuple(followers))
        return found
