"""Topic and broker requests of the admin client, and reading their answers into the model values.

- CreateTopics v7 for one topic: partitions / replication factor -1 mean "the cluster default"; a manual
  assignment sends both as -1 (the controller refuses anything else, as Kafka's does). Configs are sent as given.
- DeleteTopics v6 names each topic by name (zero id) or by id (null name).
- Metadata v12 asks for every topic (null list) or the named ones, never auto-creating.
- DescribeCluster v2 with IncludeFencedBrokers (KIP-1073) lists fenced brokers too, marked IsFenced.
Reading never raises on a decoded answer: an unknown error number is UNKNOWN_SERVER_ERROR, a missing per-topic
result is an error for that topic.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.delete_topics.v6 import request as dt_req
from kio.schema.describe_cluster.v2 import request as dc_req
from kio.schema.metadata.v12 import request as md_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode

from .errors import TopicError
from .model import BrokerInfo, PartitionInfo, TopicCreated, TopicDescription, error_code_of
from .responses import Outcome

ZERO_UUID = uuid.UUID(int=0)
DEFAULT = -1  # CreateTopics: "use the cluster default" for partitions and replication factor
BROKERS_ENDPOINT_TYPE = 1


def _timeout(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def create_topics_request(name: str, partitions: int | None, replication_factor: int | None,
                          replica_assignment: Sequence[Sequence[int]] | None, configs: Mapping[str, str] | None,
                          validate_only: bool, timeout_ms: int) -> ct_req.CreateTopicsRequest:
    assignments = tuple(
        ct_req.CreatableReplicaAssignment(partition_index=i32(index), broker_ids=tuple(BrokerId(b) for b in brokers))
        for index, brokers in enumerate(replica_assignment or ()))
    topic = ct_req.CreatableTopic(
        name=TopicName(name),
        num_partitions=i32(DEFAULT if assignments or partitions is None else partitions),
        replication_factor=i16(DEFAULT if assignments or replication_factor is None else replication_factor),
        assignments=assignments,
        configs=tuple(ct_req.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()))
    return ct_req.CreateTopicsRequest(topics=(topic,), timeout=_timeout(timeout_ms), validate_only=validate_only)


def create_outcome(response: Any) -> Outcome:
    """The one topic's error as the outcome the retry loop judges (NOT_CONTROLLER arrives per topic)."""
    if len(response.topics) != 1:
        return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, f"expected one topic result, got {len(response.topics)}")
    result = response.topics[0]
    return Outcome(error_code_of(result.error_code), result.error_message)


def topic_created(response: Any) -> TopicCreated:
    """A CreateTopics answer whose outcome was NONE."""
    result = response.topics[0]
    topic_id = None if result.topic_id in (None, ZERO_UUID) else result.topic_id
    return TopicCreated(result.name, topic_id, int(result.num_partitions), int(result.replication_factor))


def delete_topics_request(topics: Iterable[str | uuid.UUID], timeout_ms: int) -> dt_req.DeleteTopicsRequest:
    states = tuple(dt_req.DeleteTopicState(name=None, topic_id=t) if isinstance(t, uuid.UUID)
                   else dt_req.DeleteTopicState(name=TopicName(t), topic_id=ZERO_UUID) for t in topics)
    return dt_req.DeleteTopicsRequest(topics=states, timeout=_timeout(timeout_ms))


def delete_results(response: Any, asked: Sequence[str | uuid.UUID]) -> dict[str | uuid.UUID, TopicError | None]:
    """Each asked topic's result (None = deleted), matched by name or by id."""
    by_key: dict[str | uuid.UUID, Any] = {}
    for result in response.responses:
        if result.name is not None:
            by_key[str(result.name)] = result
        if result.topic_id not in (None, ZERO_UUID):
            by_key.setdefault(result.topic_id, result)
    results: dict[str | uuid.UUID, TopicError | None] = {}
    for key in asked:
        result = by_key.get(key)
        label = str(key)
        if result is None:
            results[key] = TopicError(label, ErrorCode.UNKNOWN_SERVER_ERROR, "the server returned no result for it")
            continue
        code = error_code_of(result.error_code)
        results[key] = None if code == ErrorCode.NONE else TopicError(label, code, result.error_message)
    return results


def metadata_request(names: Iterable[str] | None) -> md_req.MetadataRequest:
    topics = None if names is None else tuple(
        md_req.MetadataRequestTopic(topic_id=ZERO_UUID, name=TopicName(n)) for n in names)
    return md_req.MetadataRequest(topics=topics, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)


def _partition(raw: Any) -> PartitionInfo:
    leader = int(raw.leader_id)
    return PartitionInfo(partition=int(raw.partition_index), leader=leader if leader >= 0 else None,
                         leader_epoch=int(raw.leader_epoch), replicas=tuple(int(r) for r in raw.replica_nodes),
                         isr=tuple(int(r) for r in raw.isr_nodes),
                         offline=tuple(int(r) for r in raw.offline_replicas))


# Per-partition codes that still describe the partition (Kafka's admin client keeps these partitions).
_PARTITION_OK = frozenset({ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.REPLICA_NOT_AVAILABLE,
                           ErrorCode.LISTENER_NOT_FOUND})


def topic_descriptions(response: Any) -> tuple[list[TopicDescription], list[TopicError]]:
    """The described topics (sorted by name) and the per-topic errors of a Metadata answer."""
    found, errors = [], []
    for topic in response.topics:
        code = error_code_of(topic.error_code)
        name = str(topic.name) if topic.name is not None else str(topic.topic_id)
        if code != ErrorCode.NONE:
            errors.append(TopicError(name, code))
            continue
        partitions = sorted((_partition(p) for p in topic.partitions
                             if error_code_of(p.error_code) in _PARTITION_OK), key=lambda p: p.partition)
        topic_id = None if topic.topic_id in (None, ZERO_UUID) else topic.topic_id
        found.append(TopicDescription(name, topic_id, tuple(partitions), bool(topic.is_internal)))
    return sorted(found, key=lambda t: t.name), errors


def describe_brokers_request() -> dc_req.DescribeClusterRequest:
    return dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                         endpoint_type=i8(BROKERS_ENDPOINT_TYPE), include_fenced_brokers=True)


def broker_infos(response: Any) -> list[BrokerInfo]:
    return sorted((BrokerInfo(int(b.broker_id), b.host, int(b.port), b.rack, bool(getattr(b, "is_fenced", False)))
                   for b in response.brokers), key=lambda b: b.broker_id)
