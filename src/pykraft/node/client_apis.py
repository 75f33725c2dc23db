"""Answers the runtime gives itself, from the core's current state: ApiVersions, Metadata, DescribeCluster.

These let stock clients (kafka-python, aiokafka, Kafka's admin tools) bootstrap against a controller:
- ApiVersions lists the node's registry, SupportedFeatures kraft.version 0-1 (the local replica's range) and
  metadata.version 7-27, and FinalizedFeatures with the log's kraft.version (level 0 is omitted, Kafka's rule).
- Metadata presents the controllers (the voters with an endpoint on the controller listener) as the brokers, the
  cluster id, and the raft leader as the controller; `__cluster_metadata` partition 0 (leader, epoch, voters as
  replicas and ISR) is listed when a request names it, never in an all-topics listing (Kafka hides it too).
- DescribeCluster (v0-v1) lists the same controllers. endpoint_type 2 (controllers, KIP-919) is what Kafka's
  admin client sends to a controller; type 1 (brokers, and every v0 request) gets the same list, because a pure
  controller quorum has no brokers and kafka-python's describe_cluster() asks for brokers.
Each answer is built at the newest version and lowered to the request's (versions.py).
"""

from __future__ import annotations

import datetime
import importlib
from typing import Any

from kio.static.primitive import i8, i32, i32Timedelta

from pykraft.protocol.api_versions import (
    api_versions_response,
    invalid_api_versions_response,
    is_valid_api_versions_request,
)
from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange, response_class
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID

from .versions import to_request_version

KRAFT_VERSION = "kraft.version"
METADATA_VERSION = "metadata.version"
METADATA_VERSION_RANGE = VersionRange(7, 27)  # 3.3-IV3 .. 4.1-IV1, the levels KRaft-only Kafka 4.x accepts
CONTROLLERS_ENDPOINT_TYPE = 2
ZERO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def _namespace(api_key: int, version: int) -> Any:
    return importlib.import_module(response_class(api_key, version).__module__)


def controllers(core: Any) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every voter with an endpoint on the raft listener, by id."""
    listener = core.local.listener_name
    found = []
    for node in core.voters().voters.values():
        address = node.endpoints.address(listener)
        if address is not None:
            found.append((node.key.id, address.host, address.port))
    local = core.local
    address = local.endpoints.address(listener)
    if local.node_id is not None and address is not None and local.node_id not in {n for n, _, _ in found}:
        found.append((local.node_id, address.host, address.port))  # an observer still names itself
    return sorted(found)


def leader_id(core: Any) -> int:
    leader = core.quorum.leader_id()
    return -1 if leader is None else leader


def api_versions(core: Any, registry: ApiRegistry, request: Any) -> Any:
    version = int(request.__version__)
    if not is_valid_api_versions_request(request):
        return invalid_api_versions_response(version)
    kraft = core.local.supported_kraft
    hwm = core.high_watermark
    return api_versions_response(
        registry, version,
        supported_features={KRAFT_VERSION: VersionRange(kraft.min_version, kraft.max_version),
                            METADATA_VERSION: METADATA_VERSION_RANGE},
        finalized_features={KRAFT_VERSION: core.kraft_version()},
        finalized_features_epoch=hwm if hwm is not None else -1,
    )


def metadata(core: Any, cluster_id: str, request: Any) -> Any:
    ns = _namespace(ApiKey.METADATA, 12)
    brokers = tuple(ns.MetadataResponseBroker(node_id=i32(n), host=h, port=i32(p)) for n, h, p in controllers(core))
    topics = []
    for topic in request.topics or ():
        name = getattr(topic, "name", None)
        topic_id = getattr(topic, "topic_id", None)
        if name == METADATA_TOPIC or topic_id == METADATA_TOPIC_ID:
            topics.append(_metadata_topic(core, ns))
        else:
            topics.append(ns.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                                   topic_id=topic_id, partitions=()))
    response = ns.MetadataResponse(throttle_time=ZERO_THROTTLE, brokers=brokers, cluster_id=cluster_id,
                                   controller_id=i32(leader_id(core)), topics=tuple(topics))
    return to_request_version(response, int(request.__version__))


def _metadata_topic(core: Any, ns: Any) -> Any:
    leader = leader_id(core)
    voters = tuple(i32(v) for v in sorted(core.voters().ids()))
    partition = ns.MetadataResponsePartition(
        error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=i32(METADATA_PARTITION), leader_id=i32(leader), leader_epoch=i32(core.quorum.epoch),
        replica_nodes=voters, isr_nodes=voters, offline_replicas=())
    return ns.MetadataResponseTopic(error_code=ErrorCode.NONE, name=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                    is_internal=True, partitions=(partition,))


def describe_cluster(core: Any, cluster_id: str, request: Any) -> Any:
    ns = _namespace(ApiKey.DESCRIBE_CLUSTER, 1)
    endpoint_type = int(getattr(request, "endpoint_type", 1))
    if endpoint_type not in (1, CONTROLLERS_ENDPOINT_TYPE):
        response = ns.DescribeClusterResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"unsupported endpoint type {endpoint_type}", endpoint_type=i8(endpoint_type),
            cluster_id=cluster_id, controller_id=i32(-1), brokers=())
    else:
        response = ns.DescribeClusterResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, endpoint_type=i8(endpoint_type),
            cluster_id=cluster_id, controller_id=i32(leader_id(core)),
            brokers=tuple(ns.DescribeClusterBroker(broker_id=i32(n), host=h, port=i32(p))
                          for n, h, p in controllers(core)))
    return to_request_version(response, int(request.__version__))
