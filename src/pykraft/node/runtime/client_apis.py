"""Answers the runtime gives itself, from the core's current state: ApiVersions and DescribeCluster (Metadata is
metadata_api.py's), and the pieces every answer naming endpoints shares (the controllers, the registered brokers
on a listener, the controller id).

These let stock clients (kafka-python, aiokafka, Kafka's admin tools) bootstrap against a controller:
- ApiVersions lists the node's registry, SupportedFeatures kraft.version 0-1 (the local replica's range) and
  metadata.version 7-27, and FinalizedFeatures with the log's kraft.version (level 0 is omitted, Kafka's rule).
- Metadata and DescribeCluster read the metadata image when the runtime's state machine offers one
  (`metadata_image()`, see `MetadataImage`: the controller host returns its QuorumController, a broker host its
  MetadataCache; a plain state machine has none), and name each broker by its endpoint on the listener the
  request came in on (listeners.py: on a broker listener, brokers without that listener are left out).
- DescribeCluster v0-v2: endpoint type 1 (brokers, and every v0 request) lists the registered brokers: unfenced
  ones only, plus the fenced ones (IsFenced set) when a v2 request sets IncludeFencedBrokers (KIP-1073); its
  controller_id is a live broker of the list (this node when it is one, else the lowest id; Kafka's brokers pick a
  random live broker), because clients send controller requests to that id and brokers forward them.
  Endpoint type 2 (controllers, KIP-919: what Kafka's admin client sends with --bootstrap-controller) lists the
  controllers, the voters with an endpoint on the request's controller listener, and the raft leader as
  controller_id (-1 while it is not among them), as Kafka's controllers answer. As Kafka, a broker listener
  answers type 2 with MISMATCHED_ENDPOINT_TYPE.
  On a controller listener, type 1 with no broker registered lists the controllers instead, for kafka-python's
  describe_cluster(), which asks for brokers (Kafka's controllers answer MISMATCHED_ENDPOINT_TYPE).
Each answer is built at the newest version and lowered to the request's (versions.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from kio.static.primitive import i8, i32

from pykraft.protocol.api_versions import (
    api_versions_response,
    invalid_api_versions_response,
    is_valid_api_versions_request,
)
from pykraft.controller.features import DEFAULT_SUPPORTED_FEATURES
from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange, response_class
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE

from pykraft.node.runtime.listeners import CONTROLLER_LISTENER, RequestListener, broker_endpoint
from pykraft.protocol.core_versions import to_request_version

if TYPE_CHECKING:
    from pykraft.controller.cluster import BrokerRegistration, ClusterControl
    from pykraft.controller.features import FeatureControl
    from pykraft.controller.replication import ReplicationControl

KRAFT_VERSION = "kraft.version"
METADATA_VERSION = "metadata.version"
METADATA_VERSION_RANGE = VersionRange(7, 27)  # 3.3-IV3 .. 4.1-IV1, the levels KRaft-only Kafka 4.x accepts
BROKERS_ENDPOINT_TYPE = 1
CONTROLLERS_ENDPOINT_TYPE = 2
NO_LEADER = -1
# Kafka's internal topics (Topic.isInternal): flagged IsInternal in Metadata, as Kafka's brokers do.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class MetadataImage(Protocol):
    """What `state_machine.metadata_image()` returns: the registrations, the topics and the finalized features of
    the replayed log."""

    cluster: ClusterControl
    replication: ReplicationControl
    features: FeatureControl
    scram: Any  # the SCRAM credentials (controller/scram.py), what SASL/SCRAM listeners check passwords against


def image_of(state_machine: Any) -> MetadataImage | None:
    """The state machine's metadata image, or None when it has none (CountingStateMachine and the like)."""
    getter = getattr(state_machine, "metadata_image", None)
    return getter() if callable(getter) else None


def response_namespace(api_key: int, version: int) -> Any:
    return importlib.import_module(response_class(api_key, version).__module__)


def controllers(core: Any, listener: str | None = None) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every voter with an endpoint on `listener` (a controller listener; the raft
    listener when None, or when no voter has an endpoint on the one named: a static voter set knows only the raft
    listener), by id. An observer controller names itself too."""
    found = _controllers_on(core, listener or core.local.listener_name)
    if not found and listener is not None and listener != core.local.listener_name:
        found = _controllers_on(core, core.local.listener_name)
    return found


def _controllers_on(core: Any, listener: str) -> list[tuple[int, str, int]]:
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


# The other features a node supports, as Kafka's ApiVersions lists them (transaction.version 0-2, group.version 0-1):
# describeFeatures and `pykraft features describe` show them beside their finalized levels.
_OTHER_FEATURES = {name: VersionRange(r.min_version, r.max_version) for name, r in DEFAULT_SUPPORTED_FEATURES.items()
                   if name not in (KRAFT_VERSION, METADATA_VERSION)}


def api_versions(core: Any, registry: ApiRegistry, request: Any, image: Any | None = None) -> Any:
    """FinalizedFeatures: kraft.version from the raft log, the other features (metadata.version, ...) from the
    metadata image when the node keeps one (controllers and brokers do)."""
    version = int(request.__version__)
    if not is_valid_api_versions_request(request):
        return invalid_api_versions_response(version)
    kraft = core.local.supported_kraft
    hwm = core.high_watermark
    finalized = {} if image is None else dict(image.features.finalized)
    finalized[KRAFT_VERSION] = core.kraft_version()
    return api_versions_response(
        registry, version,
        supported_features={KRAFT_VERSION: VersionRange(kraft.min_version, kraft.max_version),
                            METADATA_VERSION: METADATA_VERSION_RANGE, **_OTHER_FEATURES},
        finalized_features=finalized,
        finalized_features_epoch=hwm if hwm is not None else -1,
    )


def registered_brokers(image: MetadataImage | None, listener: RequestListener = CONTROLLER_LISTENER,
                       include_fenced: bool = False) -> list[tuple[BrokerRegistration, str, int]]:
    """(registration, host, port) of the image's brokers by id, as an answer on `listener` names them
    (listeners.py: on a broker listener the ones without an endpoint on it are left out): unfenced ones, fenced
    ones too if asked."""
    if image is None:
        return []
    found = []
    for broker_id in sorted(image.cluster.brokers):
        registration = image.cluster.brokers[broker_id]
        endpoint = broker_endpoint(registration, listener)
        if endpoint is not None and (include_fenced or not registration.fenced):
            found.append((registration, *endpoint))
    return found


def live_broker_id(core: Any, broker_ids: list[int]) -> int:
    """The controller id an answer listing `broker_ids` gives: this node if listed, else the lowest id."""
    local = core.local.node_id
    if local in broker_ids:
        return int(local)
    return min(broker_ids) if broker_ids else -1


def _has_brokers(image: MetadataImage | None) -> bool:
    return image is not None and bool(image.cluster.brokers)

def describe_cluster(core: Any, cluster_id: str, request: Any, image: MetadataImage | None = None,
                     listener: RequestListener = CONTROLLER_LISTENER) -> Any:
    ns = response_namespace(ApiKey.DESCRIBE_CLUSTER, 2)
    version = int(request.__version__)
    endpoint_type = int(getattr(request, "endpoint_type", BROKERS_ENDPOINT_TYPE))
    if endpoint_type not in (BROKERS_ENDPOINT_TYPE, CONTROLLERS_ENDPOINT_TYPE):
        return _describe_cluster_error(ns, version, cluster_id, endpoint_type, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                                       f"unsupported endpoint type {endpoint_type}")
    if endpoint_type == CONTROLLERS_ENDPOINT_TYPE and listener.serves_brokers:
        # Kafka's brokers answer endpoint type 1 only (KIP-919): the controllers are asked on their own listener.
        return _describe_cluster_error(ns, version, cluster_id, endpoint_type, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                                       "The request was sent to an endpoint of type BROKER, but we wanted an "
                                       "endpoint of type CONTROLLER")
    if endpoint_type == BROKERS_ENDPOINT_TYPE and (listener.serves_brokers or _has_brokers(image)):
        include_fenced = bool(getattr(request, "include_fenced_brokers", False))  # v2 only (KIP-1073)
        listed = registered_brokers(image, listener, include_fenced)
        brokers = tuple(ns.DescribeClusterBroker(broker_id=i32(r.broker_id), host=h, port=i32(p), rack=r.rack,
                                                 is_fenced=r.fenced)
                        for r, h, p in listed)
        controller_id = live_broker_id(core, [r.broker_id for r, _, _ in listed if not r.fenced])
    else:
        listed_controllers = controllers(core, listener.name)
        brokers = tuple(ns.DescribeClusterBroker(broker_id=i32(n), host=h, port=i32(p), is_fenced=False)
                        for n, h, p in listed_controllers)
        # The active controller, or -1 while it is not among those listed (Kafka's computeDescribeClusterResponse).
        leader = leader_id(core)
        controller_id = leader if leader in {n for n, _, _ in listed_controllers} else -1
    response = ns.DescribeClusterResponse(
        throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, endpoint_type=i8(endpoint_type),
        cluster_id=cluster_id, controller_id=i32(controller_id), brokers=brokers)
    return to_request_version(response, version)


def _describe_cluster_error(ns: Any, version: int, cluster_id: str, endpoint_type: int, error: ErrorCode,
                            message: str) -> Any:
    response = ns.DescribeClusterResponse(
        throttle_time=ZERO_THROTTLE, error_code=error, error_message=message, endpoint_type=i8(endpoint_type),
        cluster_id=cluster_id, controller_id=i32(-1), brokers=())
    return to_request_version(response, version)
