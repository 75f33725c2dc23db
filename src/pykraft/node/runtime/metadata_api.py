"""Metadata, answered from the node's metadata image on the listener the request came in on (listeners.py).

- Topics: every topic of the image for an all-topics request (v0: an empty list; v1+: null), named ones or ids
  otherwise (unknown names UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID, ids before v12
  INVALID_REQUEST, as Kafka's KafkaApis). `__cluster_metadata` partition 0 (raft leader, epoch, voters as replicas
  and ISR) is listed when a request names it, never in an all-topics listing (Kafka hides it too).
- Brokers: the unfenced registered brokers, each by its endpoint on the request's listener. On a broker listener a
  broker without that listener is left out, as Kafka's `KRaftMetadataCache` does, and so are its partitions'
  endpoints: a leader that is registered but lacks the listener answers LISTENER_NOT_FOUND (v6+; before,
  LEADER_NOT_AVAILABLE) with leader -1, a replica without it (or unregistered, or fenced) is offline, and a v0
  answer keeps only the replicas a client can reach (REPLICA_NOT_AVAILABLE when one is missing). A broker never
  answers with anything but its own image: an empty broker list when no broker is live, never the controllers.
- On a controller listener (pykraft's controller bootstrap; Kafka's controllers do not answer Metadata), brokers
  are named by their endpoint on the request's listener or else their first listener, and with no unfenced broker
  in the image (a pure controller quorum, every broker fenced) the controllers stand in as the brokers, so stock
  clients that bootstrap against controllers keep working.
- controller_id, as Kafka's KRaft nodes answer it: a live broker of the list (this node when it is one, else the
  lowest id; Kafka picks a random live broker), because clients send CreateTopics and configs to that id and the
  brokers forward them; where the controllers stand in, the raft leader (the active controller).
- Known limit: on the active controller the image also holds records written but not yet committed (the
  controller replays its own writes at once, as Kafka's does), so a topic can show up there a moment before its
  creation commits.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kio.static.primitive import i32

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID

from pykraft.node.runtime.client_apis import (
    INTERNAL_TOPICS,
    NO_LEADER,
    MetadataImage,
    controllers,
    leader_id,
    live_broker_id,
    registered_brokers,
    response_namespace,
)
from pykraft.node.runtime.listeners import CONTROLLER_LISTENER, RequestListener, broker_endpoint
from pykraft.protocol.core_versions import to_request_version

if TYPE_CHECKING:
    from pykraft.controller.cluster import ClusterControl
    from pykraft.controller.partitions import PartitionRegistration
    from pykraft.controller.replication import TopicInfo

_ZERO_UUID = uuid.UUID(int=0)
FIRST_VERSION_WITH_LISTENER_NOT_FOUND = 6  # Kafka's errorUnavailableListeners


def metadata(core: Any, cluster_id: str, request: Any, image: MetadataImage | None = None,
             listener: RequestListener = CONTROLLER_LISTENER) -> Any:
    if _topic_ids_before_v12(request):
        # Kafka's KafkaApis: v10-v11 carry a TopicId field but may not use it (their answer has no null name).
        return error_response_for(request, ErrorCode.INVALID_REQUEST,
                                  error_message=f"Topic IDs are not supported in version {request.__version__}")
    ns = response_namespace(ApiKey.METADATA, 12)
    unfenced = registered_brokers(image, listener)
    if unfenced or listener.serves_brokers:
        brokers = tuple(ns.MetadataResponseBroker(node_id=i32(r.broker_id), host=h, port=i32(p), rack=r.rack)
                        for r, h, p in unfenced)
        controller_id = live_broker_id(core, [r.broker_id for r, _, _ in unfenced])
    else:  # an empty broker list would leave a client nowhere to go (kafka-python cannot bootstrap from it)
        brokers = tuple(ns.MetadataResponseBroker(node_id=i32(n), host=h, port=i32(p))
                        for n, h, p in controllers(core, listener.name))
        controller_id = leader_id(core)
    version = int(request.__version__)
    view = _PartitionView(ns, listener, version)
    # v0 has no null array: an empty topic list asks for every topic there; from v1 on, null does.
    every_topic = request.topics is None or (version == 0 and not request.topics)
    if every_topic:
        topics = [] if image is None else [
            view.topic(image, info) for info in sorted(image.replication.topics.values(), key=_by_name)]
    else:
        topics = [_requested_topic(core, view, image, topic) for topic in request.topics]
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


def _requested_topic(core: Any, view: _PartitionView, image: MetadataImage | None, topic: Any) -> Any:
    name = getattr(topic, "name", None)
    raw_id = getattr(topic, "topic_id", None)
    topic_id = None if raw_id == _ZERO_UUID else raw_id  # v10+ requests by name carry the zero id
    if name == METADATA_TOPIC or (name is None and topic_id == METADATA_TOPIC_ID):
        return _metadata_topic(core, view.ns)
    if image is not None:
        info = None
        if name is not None:
            found_id = image.replication.topics_by_name.get(name)
            info = None if found_id is None else image.replication.topics.get(found_id)
        elif topic_id is not None:
            info = image.replication.topics.get(topic_id)
        if info is not None:
            return view.topic(image, info)
    by_id = name is None and topic_id is not None
    error = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return view.ns.MetadataResponseTopic(error_code=error, name=name, topic_id=raw_id, partitions=())


class _PartitionView:
    """A topic's partitions as a client on `listener` sees them (Kafka's KRaftMetadataCache.getPartitionMetadata)."""

    def __init__(self, ns: Any, listener: RequestListener, version: int) -> None:
        self.ns = ns
        self.listener = listener
        self.version = version

    def topic(self, image: MetadataImage, info: TopicInfo) -> Any:
        partitions = tuple(self.partition(image.cluster, index, info.partitions[index])
                           for index in sorted(info.partitions))
        return self.ns.MetadataResponseTopic(error_code=ErrorCode.NONE, name=info.name, topic_id=info.topic_id,
                                             is_internal=info.name in INTERNAL_TOPICS, partitions=partitions)

    def _reachable(self, cluster: ClusterControl, broker_id: int) -> bool:
        """Registered, with an endpoint on the listener (a fenced broker is still named)."""
        registration = cluster.brokers.get(broker_id)
        return registration is not None and broker_endpoint(registration, self.listener) is not None

    def partition(self, cluster: ClusterControl, index: int, partition: PartitionRegistration) -> Any:
        # Offline replicas (Kafka's isReplicaOffline): unregistered, fenced, or without the request's listener (we
        # track no failed log directories).
        offline = tuple(i32(r) for r in partition.replicas
                        if cluster.is_fenced(r) or not self._reachable(cluster, r))  # is_fenced: unregistered too
        replicas, isr = partition.replicas, partition.isr
        if self.version == 0:  # Kafka's errorUnavailableEndpoints: v0 lists only the replicas a client can reach
            replicas, isr = (tuple(r for r in ids if not cluster.is_fenced(r) and self._reachable(cluster, r))
                             for ids in (partition.replicas, partition.isr))
        error, leader = ErrorCode.NONE, partition.leader
        if not cluster.is_registered(leader):
            # A leader that is not (or no longer) registered cannot be reached: LEADER_NOT_AVAILABLE with leader
            # -1, as for a partition without a leader.
            error, leader = ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER
        elif not self._reachable(cluster, leader):
            missing = self.version >= FIRST_VERSION_WITH_LISTENER_NOT_FOUND
            error, leader = (ErrorCode.LISTENER_NOT_FOUND if missing else ErrorCode.LEADER_NOT_AVAILABLE), NO_LEADER
        elif len(replicas) < len(partition.replicas) or len(isr) < len(partition.isr):
            error = ErrorCode.REPLICA_NOT_AVAILABLE
        return self.ns.MetadataResponsePartition(
            error_code=error, partition_index=i32(index), leader_id=i32(leader),
            leader_epoch=i32(partition.leader_epoch), replica_nodes=tuple(i32(r) for r in replicas),
            isr_nodes=tuple(i32(r) for r in isr), offline_replicas=offline)


def _metadata_topic(core: Any, ns: Any) -> Any:
    leader = leader_id(core)
    voters = tuple(i32(v) for v in sorted(core.voters().ids()))
    partition = ns.MetadataResponsePartition(
        error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=i32(METADATA_PARTITION), leader_id=i32(leader), leader_epoch=i32(core.quorum.epoch),
        replica_nodes=voters, isr_nodes=voters, offline_replicas=())
    return ns.MetadataResponseTopic(error_code=ErrorCode.NONE, name=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                    is_internal=True, partitions=(partition,))
