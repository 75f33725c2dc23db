"""What the admin client returns: plain frozen values read out of kio responses.

These mirror the Java admin client's result types (`QuorumInfo`, `QuorumInfo.ReplicaState`, `FeatureMetadata`,
the DescribeCluster result) closely enough that the CLI can print Kafka's output from them, and they carry no
kio types, so tests build them by hand. Reading a response never raises on odd values from a peer: an unknown
error number becomes UNKNOWN_SERVER_ERROR, a missing partition becomes an error outcome.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, VoterNode, VoterSet, normalize_directory_id

__all__ = [
    "BrokerInfo",
    "ClusterInfo",
    "ClusterNode",
    "FeatureMetadata",
    "FinalizedRange",
    "PartitionInfo",
    "QuorumInfo",
    "ReplicaState",
    "SupportedRange",
    "TopicCreated",
    "TopicDescription",
    "error_code_of",
]

_ABSENT = -1  # how DescribeQuorum says "no timestamp" (Kafka's OptionalLong.empty())


def error_code_of(raw: Any) -> ErrorCode:
    """Our enum for a code read from a peer; a number Kafka does not define is an unknown server error."""
    try:
        return ErrorCode(int(raw))
    except (TypeError, ValueError):
        return ErrorCode.UNKNOWN_SERVER_ERROR


def optional_timestamp(raw: int) -> int | None:
    return None if raw == _ABSENT else int(raw)


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One voter or observer as the leader sees it. Timestamps are epoch milliseconds, None when unknown."""

    replica_id: int
    directory_id: uuid.UUID | None
    log_end_offset: int
    last_fetch_timestamp: int | None = None
    last_caught_up_timestamp: int | None = None

    def __post_init__(self) -> None:
        # The zero uuid and None both mean "no directory id"; keep one spelling so equality works.
        object.__setattr__(self, "directory_id", normalize_directory_id(self.directory_id))

    @property
    def key(self) -> ReplicaKey:
        return ReplicaKey(self.replica_id, self.directory_id)


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """DescribeQuorum v2 of the metadata partition: leader, epoch, HWM, voters, observers, voter endpoints."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]
    nodes: Mapping[int, tuple[Endpoint, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", MappingProxyType(dict(self.nodes)))

    def endpoints_of(self, node_id: int) -> tuple[Endpoint, ...]:
        return self.nodes.get(node_id, ())

    def voter_set(self) -> VoterSet:
        """The voters with their endpoints, as the reassignment planner wants them."""
        return VoterSet.of(
            VoterNode(v.key, Endpoints.of(self.endpoints_of(v.replica_id))) for v in self.voters
        )


@dataclass(frozen=True, slots=True)
class ClusterNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """DescribeCluster: the cluster id, the controller (for controllers: the raft leader; -1 when unknown)
    and the nodes of the requested endpoint type (2 = controllers, 1 = brokers)."""

    cluster_id: str
    controller_id: int
    nodes: tuple[ClusterNode, ...]

    def node(self, node_id: int) -> ClusterNode | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)


@dataclass(frozen=True, slots=True)
class SupportedRange:
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class FinalizedRange:
    min_version_level: int
    max_version_level: int


@dataclass(frozen=True, slots=True)
class FeatureMetadata:
    """From ApiVersions v3+: what the answering node supports and what the cluster has finalized.
    `finalized_epoch` is None when the node does not know the finalized features (epoch -1)."""

    supported: Mapping[str, SupportedRange]
    finalized: Mapping[str, FinalizedRange]
    finalized_epoch: int | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "supported", MappingProxyType(dict(self.supported)))
        object.__setattr__(self, "finalized", MappingProxyType(dict(self.finalized)))


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as Metadata describes it. `leader` is None when the partition has no reachable leader
    (Kafka's LEADER_NOT_AVAILABLE); `offline` are the replicas whose broker is fenced or not registered."""

    partition: int
    leader: int | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionInfo, ...]  # by partition index
    is_internal: bool = False

    @property
    def replication_factor(self) -> int:
        """Of the first partition, as kafka-topics prints it (0 for a topic without partitions)."""
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(frozen=True, slots=True)
class TopicCreated:
    """CreateTopics' answer for one topic (with validate_only: what would have been created)."""

    name: str
    topic_id: uuid.UUID | None
    partitions: int
    replication_factor: int


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool
