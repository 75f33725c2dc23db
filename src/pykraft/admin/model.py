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

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, VoterNode, VoterSet, normalize_directory_id

__all__ = [
    "ClusterInfo",
    "ClusterNode",
    "FeatureMetadata",
    "FinalizedRange",
    "QuorumInfo",
    "ReplicaState",
    "SupportedRange",
    "error_code_of",
]

_ABSENT = -1  # how DescribeQuorum says "no timestamp" (Kafka's OptionalLong.empty())


def error_code_of(raw: object) -> ErrorCode:
    """Our enum for a code read from a peer; a number Kafka does not define is an unknown server error."""
    try:
        return ErrorCode(int(raw))  # type: ignore[arg-type]
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

    def voter_keys(self) -> frozenset[ReplicaKey]:
        return frozenset(v.key for v in self.voters)

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
