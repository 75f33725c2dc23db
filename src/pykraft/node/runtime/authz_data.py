"""The topic checks of the data plane's requests, as Kafka's KafkaApis makes them: the partitions of a topic the
principal may not use are answered TOPIC_AUTHORIZATION_FAILED (in the answer's own shape, beside the partitions the
handler answered), and topics it may not DESCRIBE are left out of listings.

- Produce: WRITE on the topic (a transactional producer also WRITE on its TRANSACTIONAL_ID: else every partition is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
- Fetch: a follower (replica id >= 0) needs CLUSTER_ACTION, a consumer READ on the topic (a topic id this node does not
  know is the handler's UNKNOWN_TOPIC_ID);
- ListOffsets, OffsetForLeaderEpoch (a consumer's; a follower's needs CLUSTER_ACTION), DescribeTopicPartitions:
  DESCRIBE; DeleteRecords: DELETE; DescribeProducers: READ;
- Metadata: DESCRIBE on each topic; asked by name, a topic the principal may not describe is TOPIC_AUTHORIZATION_FAILED
  whether or not it exists, and one that does not exist is only auto-created with CREATE on the cluster or the topic
  (else TOPIC_AUTHORIZATION_FAILED); asked for all topics, the others are left out. The AuthorizedOperations fields
  are computed from the ACLs (ClusterAuthorizedOperations needs DESCRIBE on the cluster, else 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.protocol.apis import response_class
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.error_responses import field_entity, items, zero_entity

from pykraft.node.runtime.authz import Check, Denied, Narrowed, RequestAuthorizer

__all__ = ["DATA_RULES"]

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


@dataclass(frozen=True, slots=True)
class Shape:
    """Where topics and partitions are in one API's request and answer."""

    topics: str  # the request's topic list
    key: str  # what names a topic in the request (and the answer): name, topic, topic_id
    parts: str  # a topic's partition list in the request
    index: str | None  # the partition number field in the request (None: the list holds numbers)
    answer_topics: str
    answer_parts: str
    answer_index: str
    answer_key: str | None = None  # when the answer names the topic otherwise (DescribeProducers: name)
    extra: dict[str, Any] = field(default_factory=dict)  # the other fields of a refused partition
    error: str = "error_code"  # a partition answer's error field (AddPartitionsToTxn: partition_error_code)


def per_partition(decoded: Any, shape: Shape, error_of: Callable[[Any], ErrorCode | None]) -> Check:
    """Topics with an error (`error_of(topic entry)`) answered with it in every partition; the rest handled."""
    message = decoded.message
    kept: list[tuple[Any, ErrorCode | None]] = []
    refused: list[tuple[Any, ErrorCode | None]] = []
    for topic in getattr(message, shape.topics):
        error = error_of(topic)
        (kept if error is None else refused).append((topic, error))
    if not refused:
        return None
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    topic_type = field_entity(response_type, shape.answer_topics)
    denied = items(response_type, shape.answer_topics, (
        {shape.answer_key or shape.key: getattr(topic, shape.key),
         shape.answer_parts: items(topic_type, shape.answer_parts, (
             {shape.answer_index: p if shape.index is None else getattr(p, shape.index), shape.error: error,
              **shape.extra} for p in getattr(topic, shape.parts)))}
        for topic, error in refused))
    narrowed = replace(message, **{shape.topics: tuple(t for t, _ in kept)}) if kept else None

    def finish(answer: Any) -> Any:
        if answer is None:
            if narrowed is not None:
                return None  # the handler sends nothing (Produce with acks=0)
            answer = zero_entity(response_type, {})
        return replace(answer, **{shape.answer_topics: (*getattr(answer, shape.answer_topics), *denied)})
    return Narrowed(narrowed, finish)


def every_partition(decoded: Any, shape: Shape, error: ErrorCode) -> Any:
    """The answer refusing every partition the request names (an empty answer when it names none)."""
    check = per_partition(decoded, shape, lambda _t: error)
    if isinstance(check, Narrowed):
        return check.finish(None)
    return zero_entity(response_class(int(decoded.api_key), decoded.api_version), {})


def topic_rule(shape: Shape, operation: Op, name_of: Callable[[RequestAuthorizer, Any], str | None] | None = None):
    """A rule refusing the topics the principal may not `operation` (names looked up by `name_of` for topic ids)."""
    def rule(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
        def error_of(topic: Any) -> ErrorCode | None:
            key = getattr(topic, shape.key)
            name = name_of(auth, key) if name_of is not None else key
            if name is None:
                return None  # an unknown topic id: the handler answers UNKNOWN_TOPIC_ID
            return None if auth.allowed(decoded.context, operation, Res.TOPIC, name) else TOPIC_DENIED
        return per_partition(decoded, shape, error_of)
    return rule


def _name_by_id(auth: RequestAuthorizer, topic_id: Any) -> str | None:
    return auth.image_of().replication.topic_name(topic_id)


PRODUCE = Shape("topic_data", "name", "partition_data", "index", "responses", "partition_responses", "index",
                extra={"base_offset": -1, "log_start_offset": -1})
FETCH = Shape("topics", "topic", "partitions", "partition", "responses", "partitions", "partition_index",
              extra={"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1, "records": b""})
FETCH_BY_ID = replace(FETCH, key="topic_id")
LIST_OFFSETS = Shape("topics", "name", "partitions", "partition_index", "topics", "partitions", "partition_index",
                     extra={"timestamp": -1, "offset": -1, "leader_epoch": -1})
EPOCHS = Shape("topics", "topic", "partitions", "partition", "topics", "partitions", "partition",
               extra={"leader_epoch": -1, "end_offset": -1})
DELETE_RECORDS = Shape("topics", "name", "partitions", "partition_index", "topics", "partitions", "partition_index",
                       extra={"low_watermark": -1})
PRODUCERS = Shape("topics", "name", "partition_indexes", None, "topics", "partitions", "partition_index")


def produce(auth: RequestAuthorizer, decoded: Any, controller: bool) -> Check:
    if controller:
        return None  # Produce to __cluster_metadata (pykraft.produce.enable): authz_rules' cluster check
    transactional = decoded.message.transactional_id
    if transactional is not None and not auth.allowed(decoded.context, Op.WRITE, Res.TRANSACTIONAL_ID, transactional):
        refused = every_partition(decoded, PRODUCE, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return Denied(None if int(decoded.message.acks) == 0 else refused)
    check = topic_rule(PRODUCE, Op.WRITE)(auth, decoded, controller)
    if check is not None and int(decoded.message.acks) == 0:
        return Denied(None) if check.request is None else Narrowed(check.request, lambda _answer: None)
    return check


def fetch(auth: RequestAuthorizer, decoded: Any, controller: bool) -> Check:
    message = decoded.message
    if controller:
        return None  # the raft Fetch: authz_rules' CLUSTER_ACTION
    replica = getattr(message, "replica_id", None)
    if replica is None:
        replica = message.replica_state.replica_id
    by_id = decoded.api_version >= 13
    shape = FETCH_BY_ID if by_id else FETCH
    if int(replica) >= 0:  # a follower
        if auth.cluster(decoded.context, Op.CLUSTER_ACTION):
            return None
        return per_partition(decoded, shape, lambda _t: TOPIC_DENIED)
    return topic_rule(shape, Op.READ, _name_by_id if by_id else None)(auth, decoded, controller)


def offsets_for_epoch(auth: RequestAuthorizer, decoded: Any, controller: bool) -> Check:
    replica = int(getattr(decoded.message, "replica_id", -1))
    if replica >= 0:  # a follower: Kafka's authorizeClusterOperation, every partition refused
        if auth.cluster(decoded.context, Op.CLUSTER_ACTION):
            return None
        return Denied(every_partition(decoded, EPOCHS, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    return topic_rule(EPOCHS, Op.DESCRIBE)(auth, decoded, controller)


def describe_topic_partitions(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    return described_topics(auth, decoded, "topics", lambda t: t.name, all_when_empty=True)


def described_topics(auth: RequestAuthorizer, decoded: Any, field_name: str, name_of: Callable[[Any], str | None],
                     *, all_when_empty: bool, allow_create: Callable[[str], bool] | None = None) -> Check:
    """Metadata and DescribeTopicPartitions: DESCRIBE per topic (see the module docstring)."""
    message, context = decoded.message, decoded.context
    asked = getattr(message, field_name)
    listing = asked is None or (all_when_empty and not asked)
    refused: list[tuple[str, ErrorCode]] = []
    kept = asked
    if not listing:
        kept = []
        for topic in asked:
            name = name_of(topic)
            if name is not None and not auth.allowed(context, Op.DESCRIBE, Res.TOPIC, name):
                refused.append((name, TOPIC_DENIED))
            elif name is not None and allow_create is not None and not allow_create(name):
                refused.append((name, TOPIC_DENIED))
            else:
                kept.append(topic)
        kept = tuple(kept)
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "topics", ({"name": name, "error_code": error} for name, error in refused))
    with_operations = bool(getattr(message, "include_topic_authorized_operations", False)) or not hasattr(
        message, "include_topic_authorized_operations")

    def finish(answer: Any) -> Any:
        topics = [t for t in answer.topics if t.name is None
                  or auth.allowed(context, Op.DESCRIBE, Res.TOPIC, t.name)]  # also v0's "no topics" = all
        if with_operations:
            topics = [replace(t, topic_authorized_operations=auth.operations(context, Res.TOPIC, t.name))
                      if t.name is not None and hasattr(t, "topic_authorized_operations") else t for t in topics]
        return replace(answer, topics=(*topics, *denied))
    return Narrowed(replace(message, **{field_name: kept}) if not listing else message, finish)


def metadata(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    image = auth.image_of()
    known = image.replication.topics_by_name

    def name_of(topic: Any) -> str | None:
        if getattr(topic, "name", None) is not None:
            return topic.name
        return image.replication.topic_name(topic.topic_id)

    def allow_create(name: str) -> bool:
        if name in known or not getattr(message, "allow_auto_topic_creation", True) or not auth.auto_create_topics:
            return True
        return auth.cluster(context, Op.CREATE) or auth.allowed(context, Op.CREATE, Res.TOPIC, name)

    check = described_topics(auth, decoded, "topics", name_of, all_when_empty=decoded.api_version == 0,
                             allow_create=allow_create)
    if decoded.api_version < 8 or not getattr(message, "include_cluster_authorized_operations", False):
        return check
    assert isinstance(check, Narrowed)
    operations = auth.operations(context, Res.CLUSTER, "kafka-cluster") if auth.cluster(context, Op.DESCRIBE) else 0
    return Narrowed(check.request, lambda answer: replace(check.finish(answer),
                                                          cluster_authorized_operations=operations))


DATA_RULES = {
    0: produce,
    1: fetch,
    2: topic_rule(LIST_OFFSETS, Op.DESCRIBE),
    3: metadata,
    21: topic_rule(DELETE_RECORDS, Op.DELETE),
    23: offsets_for_epoch,
    61: topic_rule(PRODUCERS, Op.READ),
    75: describe_topic_partitions,
}
