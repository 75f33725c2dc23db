"""The transaction APIs' checks of Kafka's KafkaApis (InitProducerId and FindCoordinator's are in authz_groups.py):

- AddPartitionsToTxn from a client (v0-3): WRITE on its TRANSACTIONAL_ID (else every partition
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and WRITE on each topic, an internal topic never; one refused topic fails the
  whole transaction: its partitions TOPIC_AUTHORIZATION_FAILED, those of a topic that does not exist
  UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED. From a broker (v4+, KIP-890 verification):
  CLUSTER_ACTION, else the answer's top-level CLUSTER_AUTHORIZATION_FAILED;
- AddOffsetsToTxn: WRITE on the TRANSACTIONAL_ID, then READ on the group; EndTxn: WRITE on the TRANSACTIONAL_ID;
- TxnOffsetCommit: WRITE on the TRANSACTIONAL_ID and READ on the group (else every partition refused with that
  error), READ on each topic (else its partitions TOPIC_AUTHORIZATION_FAILED);
- WriteTxnMarkers (a coordinator's): ALTER or CLUSTER_ACTION on the cluster, else every partition
  CLUSTER_AUTHORIZATION_FAILED;
- DescribeTransactions: DESCRIBE on each TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), the topics of
  a transaction listed only when the principal may DESCRIBE them; ListTransactions: the transactions the principal
  may DESCRIBE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.protocol.apis import ApiKey, response_class
from pykraft.protocol.error_responses import error_response_for, field_entity, items, zero_entity
from pykraft.protocol.errors import ErrorCode

from pykraft.node.runtime.authz import Check, Denied, Narrowed, RequestAuthorizer
from pykraft.node.runtime.client_apis import INTERNAL_TOPICS  # not broker/'s: an idle controller imports no broker module
from pykraft.node.runtime.authz_data import Shape, every_partition, per_partition

__all__ = ["TXN_RULES"]

TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
ADD_PARTITIONS = Shape("v3_and_below_topics", "name", "partitions", None, "results_by_topic_v3_and_below",
                       "results_by_partition", "partition_index", error="partition_error_code")
TXN_COMMIT = Shape("topics", "name", "partitions", "partition_index", "topics", "partitions", "partition_index")
MARKER_TOPICS = Shape("topics", "name", "partition_indexes", None, "topics", "partitions", "partition_index")


def _write_txn(auth: RequestAuthorizer, decoded: Any, transactional_id: str) -> bool:
    return auth.allowed(decoded.context, Op.WRITE, Res.TRANSACTIONAL_ID, transactional_id)


def add_partitions_to_txn(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    if decoded.api_version >= 4:  # only brokers send these
        return None if auth.cluster(context, Op.CLUSTER_ACTION) else Denied(
            error_response_for(message, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    if not _write_txn(auth, decoded, message.v3_and_below_transactional_id):
        return Denied(every_partition(decoded, ADD_PARTITIONS, TXN_DENIED))
    names = [t.name for t in message.v3_and_below_topics]
    writable = auth.allowed_names(context, Op.WRITE, Res.TOPIC, [n for n in names if n not in INTERNAL_TOPICS])
    if all(n in writable for n in names):
        return None
    replication = auth.image_of().replication

    def error_of(name: str, index: int) -> ErrorCode:
        if name not in writable:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        topic_id = replication.topics_by_name.get(name)
        if topic_id is None or replication.partition(topic_id, index) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.OPERATION_NOT_ATTEMPTED  # the transaction fails whole: this one was not added
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    topic_type = field_entity(response_type, ADD_PARTITIONS.answer_topics)
    return Denied(zero_entity(response_type, {ADD_PARTITIONS.answer_topics: items(
        response_type, ADD_PARTITIONS.answer_topics, (
            {"name": topic.name, "results_by_partition": items(topic_type, "results_by_partition", (
                {"partition_index": p, "partition_error_code": error_of(topic.name, p)} for p in topic.partitions))}
            for topic in message.v3_and_below_topics))}))


def add_offsets_to_txn(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message = decoded.message
    if not _write_txn(auth, decoded, message.transactional_id):
        return Denied(error_response_for(message, TXN_DENIED))
    if not auth.allowed(decoded.context, Op.READ, Res.GROUP, message.group_id):
        return Denied(error_response_for(message, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    return None


def end_txn(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    if _write_txn(auth, decoded, decoded.message.transactional_id):
        return None
    return Denied(error_response_for(decoded.message, TXN_DENIED))


def txn_offset_commit(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    if not _write_txn(auth, decoded, message.transactional_id):
        return Denied(every_partition(decoded, TXN_COMMIT, TXN_DENIED))
    if not auth.allowed(context, Op.READ, Res.GROUP, message.group_id):
        return Denied(every_partition(decoded, TXN_COMMIT, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    return per_partition(decoded, TXN_COMMIT, lambda t: None if auth.allowed(context, Op.READ, Res.TOPIC, t.name)
                         else ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def write_txn_markers(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    context = decoded.context
    if auth.cluster(context, Op.ALTER, counted=False) or auth.cluster(context, Op.CLUSTER_ACTION):
        return None
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    marker_type = field_entity(response_type, "markers")
    topic_type = field_entity(marker_type, "topics")
    return Denied(zero_entity(response_type, {"markers": items(response_type, "markers", (
        {"producer_id": marker.producer_id, "topics": items(marker_type, "topics", (
            {"name": topic.name, "partitions": items(topic_type, "partitions", (
                {"partition_index": p, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
                for p in topic.partition_indexes))} for topic in marker.topics))}
        for marker in decoded.message.markers))}))


def describe_transactions(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    ids = list(message.transactional_ids)
    allowed = [i for i in ids if auth.allowed(context, Op.DESCRIBE, Res.TRANSACTIONAL_ID, i)]
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "transaction_states", (
        {"transactional_id": i, "error_code": TXN_DENIED} for i in ids if i not in allowed))

    def finish(answer: Any) -> Any:
        base = answer if answer is not None else zero_entity(response_type, {})
        states = [replace(s, topics=tuple(t for t in s.topics
                                          if auth.allowed(context, Op.DESCRIBE, Res.TOPIC, t.topic)))
                  for s in (*base.transaction_states, *denied)]
        order = {i: n for n, i in enumerate(ids)}  # Kafka answers in the request's order
        states.sort(key=lambda s: order.get(s.transactional_id, len(ids)))
        return replace(base, transaction_states=tuple(states))
    return Narrowed(replace(message, transactional_ids=tuple(allowed)) if allowed else None, finish)


def list_transactions(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    context = decoded.context
    return Narrowed(decoded.message, lambda answer: replace(answer, transaction_states=tuple(
        s for s in answer.transaction_states
        if auth.allowed(context, Op.DESCRIBE, Res.TRANSACTIONAL_ID, s.transactional_id, counted=False))))


TXN_RULES = {
    int(ApiKey.ADD_PARTITIONS_TO_TXN): add_partitions_to_txn,
    int(ApiKey.ADD_OFFSETS_TO_TXN): add_offsets_to_txn,
    int(ApiKey.END_TXN): end_txn,
    int(ApiKey.WRITE_TXN_MARKERS): write_txn_markers,
    int(ApiKey.TXN_OFFSET_COMMIT): txn_offset_commit,
    int(ApiKey.DESCRIBE_TRANSACTIONS): describe_transactions,
    int(ApiKey.LIST_TRANSACTIONS): list_transactions,
}
