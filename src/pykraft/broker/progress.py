"""Where the ISR manager's follower progress comes from (KIP-497's input), as an explicit interface.

The data plane implements it from real replication: `node/hosts/partitions.py` (`PartitionHost.progress`) reports, per
partition this broker leads, its own log end offset, the start of its leader epoch, and each follower's log end
offset, last caught-up time and broker epoch as its Fetch requests showed them (`broker/partition_state.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from .isr_rules import LeaderProgress
from .metadata_cache import TopicPartition


class FollowerProgressSource(Protocol):
    def progress(self, partitions: list[TopicPartition], now_ms: int) -> Mapping[TopicPartition, LeaderProgress]:
        """Progress of the followers of each partition in `partitions` (the ones this broker leads now); a
        partition may be left out when nothing is known about it."""
        ...
