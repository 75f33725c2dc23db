"""Answers the runtime gives itself, from the core's current state: ApiVersions, Metadata, DescribeCluster.

These let stock clients (kafka-python, aiokafka, Kafka's admin tools) bootstrap against a controller:
- ApiVersions lists the node's registry, SupportedFeatures kraft.version 0-1 (the local replica's range) and
  metadata.version 7-27, and FinalizedFeatures with the log's kraft.version (level 0 is omitted, Kafka's rule).
- Metadata and DescribeCluster read the metadata image when the runtime's state machine offers one
  (`metadata_image()`, see `MetadataImage`: the controller host returns its QuorumController, a broker host its
  MetadataCache; a plain state machine has none):
  - Metadata lists the image's topics (all of them for an all-topics request; named ones or ids otherwise, unknown
    names UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID as Kafka) and, as brokers, the unfenced
    registered brokers. `__cluster_metadata` partition 0 (raft leader, epoch, voters as replicas and ISR) is
    listed when a request names it, never in an all-topics listing (Kafka hides it too).
  - With no unfenced registered broker in the image (a pure controller quorum, every broker fenced, or no image),
    Metadata presents the controllers (the voters with an endpoint on the controller listener) as the brokers, so
    stock clients that bootstrap against controllers keep working (Kafka's broker would list no broker at all);
    DescribeCluster type 1 does the same when no broker is registered, for kafka-python's describe_cluster(),
    which asks for brokers.
  - DescribeCluster v0-v2: endpoint type 2 (controllers, KIP-919: what Kafka's admin client sends to a
    controller) lists the controllers; type 1 (brokers, and every v0 request) the registered brokers: unfenced
    ones only, plus the fenced ones (IsFenced set) when a v2 request sets IncludeFencedBrokers (KIP-1073).
  - A broker is shown with its endpoint on the listener the request came in on when the caller knows it and the
    broker has it, else with its first registered listener: a controller's own listener (CONTROLLER) is never a
    broker listener, so on a controller this is the broker's first listener (Kafka's brokers answer on the
    request's listener and leave out brokers without it; a broker host can pass its listener name).
  - controller_id, as Kafka's KRaft nodes answer it: where the answer lists registered brokers (Metadata, and
    DescribeCluster type 1) it is a live broker of that list (this node when it is one, else the lowest id; Kafka's
    brokers pick a random live broker), because clients send CreateTopics/DeleteTopics/configs to that id and
    brokers forward them to the active controller. Where the answer lists the controllers (DescribeCluster type 2,
    or no unfenced broker) it is the raft leader, the active controller, as Kafka's controllers answer.
  - Known limit: on the active controller the image also holds records written but not yet committed (the
    controller replays its own writes at once, as Kafka's does), so a topic can show up there a moment before its
    creation commits.
Each answer is built at the newest version and lowered to the request's (versions.py).
"""

from __future__ import annotations

import importlib
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from kio.static.primitive import i8, i32

from pykraft.protocol.api_versions import (
    api_versions_response,
    invalid_api_versions_response,
    is_valid_api_versions_request,
)
from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange, response_class
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID

from pykraft.node.apis.versions import to_request_version

if TYPE_CHECKING:
    from pykraft.controller.cluster import BrokerRegistration, ClusterControl
    from pykraft.controller.features import FeatureControl
    from pykraft.controller.partitions import PartitionRegistration
    from pykraft.controller.replication import ReplicationControl, TopicInfo

KRAFT_VERSION = "kraft.version"
METADATA_VERSION = "metadata.version"
METADATA_VERSION_RANGE = VersionRange(7, 27)  # 3.3-IV3 .. 4.1-IV1, the levels KRaft-only Kafka 4.x accepts
BROKERS_ENDPOINT_TYPE = 1
CONTROLLERS_ENDPOINT_TYPE = 2
NO_LEADER = -1
_ZERO_UUID = uuid.UUID(int=0)
# Kafka's internal topics (Topic.isInternal): flagged IsInternal in Metadata, as Kafka's brokers do.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class MetadataImage(Protocol):
    """What `state_machine.metadata_image()` returns: the registrations, the topics and the finalized features of
    the replayed log."""

    cluster: ClusterControl
    replication: ReplicationControl
    features: FeatureControl


def image_of(state_machine: Any) -> MetadataImage | None:
    """The state machine's metadata image, or None when it has none (CountingStateMachine and the like)."""
    getter = getattr(state_machine, "metadata_image", None)
    return getter() if callable(getter) else None


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
                            METADATA_VERSION: METADATA_VERSION_RANGE},
        finalized_features=finalized,
        finalized_features_epoch=hwm if hwm is not None else -1,
    )


def _endpoint(registration: BrokerRegistration, listener: str | None) -> tuple[str, int] | None:
    """The broker's endpoint on `listener` when it has one, else its first listener (see the module docstring)."""
    chosen = next((e for e in registration.listeners if e.name == listener), None) if listener else None
    if chosen is None and registration.listeners:
        chosen = registration.listeners[0]
    return None if chosen is None else (chosen.host, int(chosen.port))


def registered_brokers(image: MetadataImage | None, listener: str | None = None,
                       include_fenced: bool = False) -> list[tuple[BrokerRegistration, str, int]]:
    """(registration, host, port) of the image's brokers by id: unfenced ones, fenced ones too if asked; a
    registration without any listener cannot be reached and is left out."""
    if image is None:
        return []
    found = []
    for broker_id in sorted(image.cluster.brokers):
        registration = image.cluster.brokers[broker_id]
        endpoint = _endpoint(registration, listener)
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


def metadata(core: Any, cluster_id: str, request: Any, image: MetadataImage | None = None,
             listener: str | None = None) -> Any:
    if _topic_ids_before_v12(request):
        # Kafka's KafkaApis: v10-v11 carry a TopicId field but may not use it (their answer has no null name).
        return error_response_for(request, ErrorCode.INVALID_REQUEST,
                                  error_message=f"Topic IDs are not supported in version {request.__version__}")
    ns = _namespace(ApiKey.METADATA, 12)
    unfenced = registered_brokers(image, listener)
    if unfenced:
        brokers = tuple(ns.MetadataResponseBroker(node_id=i32(r.broker_id), host=h, port=i32(p), rack=r.rack)
                        for r, h, p in unfenced)
        controller_id = live_broker_id(core, [r.broker_id for r, _, _ in unfenced])
    else:  # an empty broker list would leave a client nowhere to go (kafka-python cannot bootstrap from it)
        brokers = tuple(ns.MetadataResponseBroker(node_id=i32(n), host=h, port=i32(p))
                        for n, h, p in controllers(core))
        controller_id = leader_id(core)
    version = int(request.__version__)
    # v0 has no null array: an empty topic list asks for every topic there; from v1 on, null does.
    every_topic = request.topics is None or (version == 0 and not request.topics)
    if every_topic:
        topics = [] if image is None else [
            _image_topic(ns, image, info) for info in sorted(image.replication.topics.values(), key=_by_name)]
    else:
        topics = [_requested_topic(core, ns, image, topic) for topic in request.topics]
    response = ns.MetadataResponse(throttle_time=ZERO_THROTTLE, brokers=brokers, cluster_id=cluster_id,
                                   controller_id=i32(controller_id), topics=tuple(topics))
    return to_request_version(response, version)


def _topic_ids_before_v12(request: Any) -> bool:
    """A Metadata v10-v11 request naming a topic by id (or with a null name)."""
    return int(request.__version__) < 12 and any(
        getattr(t, "name", "") is None or getattr(t, "topic_id", None) not in (None, _ZERO_UUID)
        for t in request.topics or ())


def _by_name(info: TopicInfo) -> str:
    return info.name


def _requested_topic(core: Any, ns: Any, image: MetadataImage | None, topic: Any) -> Any:
    name = getattr(topic, "name", None)
    raw_id = getattr(topic, "topic_id", None)
    topic_id = None if raw_id == _ZERO_UUID else raw_id  # v10+ requests by name carry the zero id
    if name == METADATA_TOPIC or (name is None and topic_id == METADATA_TOPIC_ID):
        return _metadata_topic(core, ns)
    info = None
    if image is not None:
        if name is not None:
            found_id = image.replication.topics_by_name.get(name)
            info = None if found_id is None else image.replication.topics.get(found_id)
        elif topic_id is not None:
            info = image.replication.topics.get(topic_id)
    if info is not None:
        return _image_topic(ns, image, info)  # type: ignore[arg-type]
    by_id = name is None and topic_id is not None
    error = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ns.MetadataResponseTopic(error_code=error, name=name, topic_id=raw_id, partitions=())


def _image_topic(ns: Any, image: MetadataImage, info: TopicInfo) -> Any:
    partitions = tuple(_image_partition(ns, image.cluster, index, info.partitions[index])
                       for index in sorted(info.partitions))
    return ns.MetadataResponseTopic(error_code=ErrorCode.NONE, name=info.name, topic_id=info.topic_id,
                                    is_internal=info.name in INTERNAL_TOPICS, partitions=partitions)


def _image_partition(ns: Any, cluster: ClusterControl, index: int, partition: PartitionRegistration) -> Any:
    # Offline replicas as Kafka's KRaftMetadataCache computes them: the replica's broker is not registered or is
    # fenced (Kafka also counts a broker without the request's listener and a replica in a failed log directory;
    # we pick a listener for every broker and track no directory failures).
    offline = tuple(i32(r) for r in partition.replicas if cluster.is_fenced(r))  # True for unregistered too
    # A leader that is not (or no longer) registered cannot be reached: Kafka answers LEADER_NOT_AVAILABLE with
    # leader -1, as for a partition without a leader.
    leader = partition.leader if cluster.is_registered(partition.leader) else NO_LEADER
    return ns.MetadataResponsePartition(
        error_code=ErrorCode.NONE if leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=i32(index), leader_id=i32(leader), leader_epoch=i32(partition.leader_epoch),
        replica_nodes=tuple(i32(r) for r in partition.replicas), isr_nodes=tuple(i32(r) for r in partition.isr),
        offline_replicas=offline)


def _metadata_topic(core: Any, ns: Any) -> Any:
    leader = leader_id(core)
    voters = tuple(i32(v) for v in sorted(core.voters().ids()))
    partition = ns.MetadataResponsePartition(
        error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=i32(METADATA_PARTITION), leader_id=i32(leader), leader_epoch=i32(core.quorum.epoch),
        replica_nodes=voters, isr_nodes=voters, offline_replicas=())
    return ns.MetadataResponseTopic(error_code=ErrorCode.NONE, name=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                    is_internal=True, partitions=(partition,))


def describe_cluster(core: Any, cluster_id: str, request: Any, image: MetadataImage | None = None,
                     listener: str | None = None) -> Any:
    ns = _namespace(ApiKey.DESCRIBE_CLUSTER, 2)
    endpoint_type = int(getattr(request, "endpoint_type", BROKERS_ENDPOINT_TYPE))
    if endpoint_type not in (BROKERS_ENDPOINT_TYPE, CONTROLLERS_ENDPOINT_TYPE):
        response = ns.DescribeClusterResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"unsupported endpoint type {endpoint_type}", endpoint_type=i8(endpoint_type),
            cluster_id=cluster_id, controller_id=i32(-1), brokers=())
        return to_request_version(response, int(request.__version__))
    if endpoint_type == BROKERS_ENDPOINT_TYPE and _has_brokers(image):
        include_fenced = bool(getattr(request, "include_fenced_brokers", False))  # v2 only (KIP-1073)
        listed = registered_brokers(image, listener, include_fenced)
        brokers = tuple(ns.DescribeClusterBroker(broker_id=i32(r.broker_id), host=h, port=i32(p), rack=r.rack,
                                                 is_fenced=r.fenced)
                        for r, h, p in listed)
        controller_id = live_broker_id(core, [r.broker_id for r, _, _ in listed if not r.fenced])
    else:
        brokers = tuple(ns.DescribeClusterBroker(broker_id=i32(n), host=h, port=i32(p), is_fenced=False)
                        for n, h, p in controllers(core))
        controller_id = leader_id(core)
    response = ns.DescribeClusterResponse(
        throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, endpoint_type=i8(endpoint_type),
        cluster_id=cluster_id, controller_id=i32(controller_id), brokers=brokers)
    return to_request_version(response, int(request.__version__))
