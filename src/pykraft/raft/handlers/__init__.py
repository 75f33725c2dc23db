"""RPC handlers, one module per family; `dispatch.py` routes requests and responses to them. This package module
holds only the checks every handler shares (so that handler modules can import it without a cycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def single_partition(request: Any, topic_attr: str = "topics") -> Any | None:
    """The one partition of a single-partition KRaft request, or None if the shape is wrong."""
    topics = getattr(request, topic_attr)
    if len(topics) != 1 or getattr(topics[0], "topic_name", METADATA_TOPIC) != METADATA_TOPIC:
        return None
    partitions = topics[0].partitions
    if len(partitions) != 1:
        return None
    partition = partitions[0]
    index = getattr(partition, "partition_index", getattr(partition, "partition", None))
    return partition if index == METADATA_PARTITION else None


def valid_cluster_id(core: RaftCore, cluster_id: str | None) -> bool:
    """A null cluster id is accepted; an empty or different one is not."""
    return cluster_id is None or cluster_id == core.local.cluster_id
