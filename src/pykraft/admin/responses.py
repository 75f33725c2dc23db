"""Reading kio responses into an `Outcome` (error code, message, leader hint) and into the model values.

Everything here tolerates odd answers from a peer: a code Kafka does not define is UNKNOWN_SERVER_ERROR, a
DescribeQuorum without the metadata partition is an error outcome, a missing per-feature result is an error for
that feature. Nothing raises on a response that decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.raft.voter_set import Endpoint

from .errors import AdminError
from .model import (
    ClusterInfo,
    ClusterNode,
    FeatureMetadata,
    FinalizedRange,
    QuorumInfo,
    ReplicaState,
    SupportedRange,
    error_code_of,
    optional_timestamp,
)


@dataclass(frozen=True, slots=True)
class Outcome:
    code: ErrorCode
    message: str | None = None
    leader_hint: int | None = None  # a leader id named by an error response, when it names one


def simple_outcome(response: Any) -> Outcome:
    """Responses with a top-level ErrorCode (and ErrorMessage when the version has one)."""
    return Outcome(error_code_of(response.error_code), getattr(response, "error_message", None))


def _metadata_partition(response: Any) -> Any | None:
    for topic in response.topics:
        if topic.topic_name == METADATA_TOPIC:
            for partition in topic.partitions:
                if partition.partition_index == METADATA_PARTITION:
                    return partition
    return None


def describe_quorum_outcome(response: Any) -> Outcome:
    top = simple_outcome(response)
    if top.code != ErrorCode.NONE:
        return top
    partition = _metadata_partition(response)
    if partition is None:
        return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, f"the answer has no {METADATA_TOPIC}-{METADATA_PARTITION}")
    code = error_code_of(partition.error_code)
    hint = int(partition.leader_id) if code != ErrorCode.NONE and int(partition.leader_id) >= 0 else None
    return Outcome(code, partition.error_message, hint)


def _replica(state: Any) -> ReplicaState:
    return ReplicaState(
        replica_id=int(state.replica_id),
        directory_id=state.replica_directory_id,
        log_end_offset=int(state.log_end_offset),
        last_fetch_timestamp=optional_timestamp(int(state.last_fetch_timestamp)),
        last_caught_up_timestamp=optional_timestamp(int(state.last_caught_up_timestamp)),
    )


def quorum_info(response: Any) -> QuorumInfo:
    """A DescribeQuorum v2 response whose outcome was NONE."""
    partition = _metadata_partition(response)
    assert partition is not None, "checked by describe_quorum_outcome"
    nodes: dict[int, tuple[Endpoint, ...]] = {}
    for node in response.nodes:
        # Kept in the order the leader listed them: Kafka prints them in that order.
        nodes[int(node.node_id)] = tuple(Endpoint(item.name, item.host, int(item.port)) for item in node.listeners)
    return QuorumInfo(
        leader_id=int(partition.leader_id),
        leader_epoch=int(partition.leader_epoch),
        high_watermark=int(partition.high_watermark),
        voters=tuple(_replica(v) for v in partition.current_voters),
        observers=tuple(_replica(o) for o in partition.observers),
        nodes=nodes,
    )


def cluster_info(response: Any) -> ClusterInfo:
    return ClusterInfo(
        cluster_id=response.cluster_id,
        controller_id=int(response.controller_id),
        nodes=tuple(ClusterNode(int(b.broker_id), b.host, int(b.port), b.rack) for b in response.brokers),
    )


def feature_metadata(response: Any) -> FeatureMetadata:
    """ApiVersions v3+ tagged fields; a v0 answer (no features) gives empty maps."""
    supported = {f.name: SupportedRange(int(f.min_version), int(f.max_version))
                 for f in getattr(response, "supported_features", ())}
    finalized = {f.name: FinalizedRange(int(f.min_version_level), int(f.max_version_level))
                 for f in getattr(response, "finalized_features", ())}
    epoch = int(getattr(response, "finalized_features_epoch", -1))
    return FeatureMetadata(supported, finalized, epoch if epoch >= 0 else None)


def feature_update_results(response: Any, levels: Mapping[str, int]) -> dict[str, AdminError | None]:
    """UpdateFeatures v0-v1 per-feature results (v2 has none: then the top-level NONE covers every feature)."""
    results: dict[str, AdminError | None] = {}
    listed = {r.feature: r for r in getattr(response, "results", ())}
    for name in levels:
        if not hasattr(response, "results"):
            results[name] = None
            continue
        item = listed.get(name)
        if item is None:
            results[name] = AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, "the server returned no result for it")
            continue
        code = error_code_of(item.error_code)
        results[name] = None if code == ErrorCode.NONE else AdminError(code, item.error_message)
    return results
