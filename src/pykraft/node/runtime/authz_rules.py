"""Every API's authorization rule (`RULES`, by api key), as Kafka's ControllerApis and KafkaApis check them. The data
plane's topic checks are in authz_data.py, the groups' in authz_groups.py, the transactions' in authz_txn.py; the
rest is here:

- the cluster operations, refused whole with CLUSTER_AUTHORIZATION_FAILED: on a controller listener the raft RPCs
  (Fetch, FetchSnapshot, Vote, BeginQuorumEpoch, EndQuorumEpoch, UpdateRaftVoter) and the brokers' RPCs
  (BrokerRegistration, BrokerHeartbeat, AlterPartition, ControllerRegistration, AllocateProducerIds,
  AssignReplicasToDirs) need CLUSTER_ACTION, DescribeQuorum DESCRIBE, AddRaftVoter, RemoveRaftVoter,
  UnregisterBroker and DescribeCluster (a controller's: Kafka asks more of it than a broker's) ALTER; anywhere,
  ElectLeaders, UpdateFeatures and AlterPartitionReassignments need ALTER (ListPartitionReassignments DESCRIBE), CreateAcls, DeleteAcls and AlterUserScramCredentials ALTER, DescribeAcls
  and DescribeUserScramCredentials DESCRIBE, a broker's DescribeLogDirs DESCRIBE and AlterReplicaLogDirs ALTER, an
  Envelope CLUSTER_ACTION (its sender must be a broker);
- per resource: CreateTopics (CREATE on the cluster or the topic; DESCRIBE_CONFIGS to see the new topic's configs),
  DeleteTopics (DELETE, with DESCRIBE deciding whether an absent topic may be reported absent), CreatePartitions
  (ALTER), DescribeConfigs and (Incremental)AlterConfigs (DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, the group or
  the cluster for a broker or its loggers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.protocol.apis import ApiKey, response_class
from pykraft.protocol.error_responses import error_response_for, field_entity, items, zero_entity
from pykraft.protocol.errors import ErrorCode

from pykraft.node.runtime.authz import Check, Denied, Narrowed, RequestAuthorizer, Rule
from pykraft.node.runtime.authz_data import DATA_RULES
from pykraft.node.runtime.authz_groups import GROUP_RULES
from pykraft.node.runtime.authz_txn import TXN_RULES

__all__ = ["RULES", "UNLISTED"]

K = ApiKey
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
MESSAGES = {CLUSTER_DENIED: "Cluster authorization failed.", TOPIC_DENIED: "Topic authorization failed.",
            ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed."}
# Config resource types (DescribeConfigs, AlterConfigs): TOPIC 2, BROKER 4, BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32
_CONFIG_RESOURCES = {2: (Res.TOPIC, TOPIC_DENIED), 32: (Res.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED)}


def cluster_denied(message: Any) -> Any:
    """The whole request refused with CLUSTER_AUTHORIZATION_FAILED, in its own answer's shape."""
    key, version = int(message.__api_key__), int(message.__version__)
    if key in _PER_ITEM_ANSWERS:
        return _PER_ITEM_ANSWERS[key](message, response_class(key, version))
    try:
        return error_response_for(message, CLUSTER_DENIED, error_message=MESSAGES[CLUSTER_DENIED])
    except ValueError:  # a version without a top-level error code (none a node serves there): an empty answer
        return zero_entity(response_class(key, version), {})


def needs(operation: Op, *, listener: str = "any") -> Rule:
    """A cluster operation; `listener` "controller" or "broker" limits the rule to that kind of listener."""
    def rule(auth: RequestAuthorizer, decoded: Any, controller: bool) -> Check:
        if (listener == "controller" and not controller) or (listener == "broker" and controller):
            return None
        return None if auth.cluster(decoded.context, operation) else Denied(cluster_denied(decoded.message))
    return rule


def either(controller_rule: Rule, broker_rule: Rule) -> Rule:
    return lambda auth, decoded, controller: (controller_rule if controller else broker_rule)(auth, decoded, controller)


# ---- answers without a top-level error code ------------------------------------------------------------------------
def _create_acls_denied(message: Any, response_type: type) -> Any:
    return zero_entity(response_type, {"results": items(response_type, "results", (
        {"error_code": CLUSTER_DENIED, "error_message": MESSAGES[CLUSTER_DENIED]} for _ in message.creations))})


def _delete_acls_denied(message: Any, response_type: type) -> Any:
    return zero_entity(response_type, {"filter_results": items(response_type, "filter_results", (
        {"error_code": CLUSTER_DENIED, "error_message": MESSAGES[CLUSTER_DENIED]} for _ in message.filters))})


def _alter_scram_denied(message: Any, response_type: type) -> Any:
    users = dict.fromkeys([*(d.name for d in message.deletions), *(u.name for u in message.upsertions)])
    return zero_entity(response_type, {"results": items(response_type, "results", (
        {"user": user, "error_code": CLUSTER_DENIED, "error_message": MESSAGES[CLUSTER_DENIED]} for user in users))})


def _alter_log_dirs_denied(message: Any, response_type: type) -> Any:
    topic_type = field_entity(response_type, "results")
    return zero_entity(response_type, {"results": items(response_type, "results", (
        {"topic_name": topic.name, "partitions": items(topic_type, "partitions", (
            {"partition_index": p, "error_code": CLUSTER_DENIED} for p in topic.partitions))}
        for directory in message.dirs for topic in directory.topics))})


def _describe_log_dirs_denied(message: Any, response_type: type) -> Any:
    overrides = {"error_code": CLUSTER_DENIED} if any(f == "error_code" for f in getattr(response_type, "__dataclass_fields__", ())) \
        else {}
    return zero_entity(response_type, overrides)


def _envelope_denied(message: Any, response_type: type) -> Any:
    return zero_entity(response_type, {"error_code": CLUSTER_DENIED, "response_data": None})


_PER_ITEM_ANSWERS: dict[int, Callable[[Any, type], Any]] = {
    K.CREATE_ACLS: _create_acls_denied, K.DELETE_ACLS: _delete_acls_denied,
    K.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram_denied, K.ALTER_REPLICA_LOG_DIRS: _alter_log_dirs_denied,
    K.DESCRIBE_LOG_DIRS: _describe_log_dirs_denied, K.ENVELOPE: _envelope_denied,
}


# ---- topics through the controller -----------------------------------------------------------------------------
def create_topics(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    names = [t.name for t in message.topics]
    repeated = {n for n in names if names.count(n) > 1}  # the handler answers duplicates INVALID_REQUEST
    creatable = set(names) if auth.cluster(context, Op.CREATE) else auth.allowed_names(context, Op.CREATE, Res.TOPIC,
                                                                                         names)
    refused = [n for n in names if n not in creatable and n not in repeated and n != "__cluster_metadata"]
    describable = auth.allowed_names(context, Op.DESCRIBE_CONFIGS, Res.TOPIC, names)
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "topics", ({"name": n, "error_code": TOPIC_DENIED, "error_message":
                                              "Authorization failed.", "num_partitions": -1,
                                              "replication_factor": -1} for n in refused))
    kept = tuple(t for t in message.topics if t.name not in refused)

    def hide_configs(topic: Any) -> Any:
        if topic.name in describable or topic.error_code != 0 or not hasattr(topic, "topic_config_error_code"):
            return topic
        return replace(topic, num_partitions=-1, replication_factor=-1, configs=(),
                       topic_config_error_code=TOPIC_DENIED)

    def finish(answer: Any) -> Any:
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, topics=(*(hide_configs(t) for t in base.topics), *denied))
    if not refused and describable >= set(names):
        return None
    return Narrowed(replace(message, topics=kept) if kept else None, finish)


def delete_topics(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    if auth.cluster(context, Op.DELETE):
        return None
    replication = auth.image_of().replication
    by_entries = hasattr(message, "topics")
    entries = list(message.topics) if by_entries else list(message.topic_names)
    kept, refused = [], []
    for entry in entries:
        name = (entry.name or replication.topic_name(entry.topic_id)) if by_entries else entry
        by_id = by_entries and entry.name is None
        describable = name is not None and auth.allowed(context, Op.DESCRIBE, Res.TOPIC, name)
        exists = name is not None and name in replication.topics_by_name
        if name is None or (describable and not exists and not by_id):
            kept.append(entry)  # the handler answers UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION
        elif describable and auth.allowed(context, Op.DELETE, Res.TOPIC, name):
            kept.append(entry)
        else:
            refused.append({"name": name if (describable or not by_id) else None, "error_code": TOPIC_DENIED,
                            **({"topic_id": entry.topic_id} if by_id else {})})
    if not refused:
        return None
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "responses", refused)
    narrowed = replace(message, **{"topics" if by_entries else "topic_names": tuple(kept)}) if kept else None

    def finish(answer: Any) -> Any:
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, responses=(*base.responses, *denied))
    return Narrowed(narrowed, finish)


def create_partitions(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    names = [t.name for t in message.topics]
    allowed = set(names) if auth.cluster(context, Op.ALTER) else auth.allowed_names(context, Op.ALTER, Res.TOPIC, names)
    refused = [n for n in names if n not in allowed]
    if not refused:
        return None
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "results", ({"name": n, "error_code": TOPIC_DENIED,
                                               "error_message": "The topic authorization is failed."} for n in refused))
    kept = tuple(t for t in message.topics if t.name in allowed)
    return Narrowed(replace(message, topics=kept) if kept else None, lambda answer: replace(
        answer if answer is not None else zero_entity(response_type, {}),
        results=(*(answer.results if answer is not None else ()), *denied)))


def config_resources(operation: Op, answers: str) -> Rule:
    """DescribeConfigs (`results`), AlterConfigs and IncrementalAlterConfigs (`responses`)."""
    def rule(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
        message, context = decoded.message, decoded.context
        kept, refused = [], []
        for resource in message.resources:
            kind = int(resource.resource_type)
            resource_type, error = _CONFIG_RESOURCES.get(kind, (Res.CLUSTER, CLUSTER_DENIED))
            name = resource.resource_name if resource_type != Res.CLUSTER else "kafka-cluster"
            if auth.allowed(context, operation, resource_type, name):
                kept.append(resource)
            else:
                refused.append({"resource_type": resource.resource_type, "resource_name": resource.resource_name,
                                "error_code": error, "error_message": MESSAGES[error]})
        if not refused:
            return None
        response_type = response_class(int(decoded.api_key), decoded.api_version)
        denied = items(response_type, answers, refused)

        def finish(answer: Any) -> Any:
            base = answer if answer is not None else zero_entity(response_type, {})
            return replace(base, **{answers: (*getattr(base, answers), *denied)})
        return Narrowed(replace(message, resources=tuple(kept)) if kept else None, finish)
    return rule


def describe_cluster(auth: RequestAuthorizer, decoded: Any, controller: bool) -> Check:
    context = decoded.context
    if controller and not auth.cluster(context, Op.ALTER):
        return Denied(cluster_denied(decoded.message))
    if not decoded.message.include_cluster_authorized_operations:
        return None
    operations = auth.operations(context, Res.CLUSTER, "kafka-cluster") if auth.cluster(context, Op.DESCRIBE) else 0
    return Narrowed(decoded.message, lambda answer: replace(answer, cluster_authorized_operations=operations))


CLUSTER_ACTION_ON_CONTROLLER = needs(Op.CLUSTER_ACTION, listener="controller")
RULES: dict[int, Rule] = {
    **DATA_RULES,
    **GROUP_RULES,
    **TXN_RULES,
    K.FETCH: either(CLUSTER_ACTION_ON_CONTROLLER, DATA_RULES[K.FETCH]),
    K.PRODUCE: either(CLUSTER_ACTION_ON_CONTROLLER, DATA_RULES[K.PRODUCE]),
    **{key: CLUSTER_ACTION_ON_CONTROLLER for key in (
        K.FETCH_SNAPSHOT, K.VOTE, K.BEGIN_QUORUM_EPOCH, K.END_QUORUM_EPOCH, K.UPDATE_RAFT_VOTER,
        K.BROKER_REGISTRATION, K.BROKER_HEARTBEAT, K.ALTER_PARTITION, K.CONTROLLER_REGISTRATION,
        K.ALLOCATE_PRODUCER_IDS, K.ASSIGN_REPLICAS_TO_DIRS)},
    K.DESCRIBE_QUORUM: needs(Op.DESCRIBE),
    **{key: needs(Op.ALTER, listener="controller") for key in (K.ADD_RAFT_VOTER, K.REMOVE_RAFT_VOTER)},
    K.UNREGISTER_BROKER: needs(Op.ALTER),
    **{key: needs(Op.ALTER) for key in (K.ELECT_LEADERS, K.UPDATE_FEATURES, K.CREATE_ACLS, K.DELETE_ACLS,
                                        K.ALTER_USER_SCRAM_CREDENTIALS, K.ALTER_PARTITION_REASSIGNMENTS)},
    K.LIST_PARTITION_REASSIGNMENTS: needs(Op.DESCRIBE),
    K.DESCRIBE_ACLS: needs(Op.DESCRIBE),
    K.DESCRIBE_USER_SCRAM_CREDENTIALS: needs(Op.DESCRIBE),
    K.DESCRIBE_LOG_DIRS: needs(Op.DESCRIBE, listener="broker"),
    K.ALTER_REPLICA_LOG_DIRS: needs(Op.ALTER, listener="broker"),
    K.ENVELOPE: needs(Op.CLUSTER_ACTION),
    K.CREATE_TOPICS: create_topics,
    K.DELETE_TOPICS: delete_topics,
    K.CREATE_PARTITIONS: create_partitions,
    K.DESCRIBE_CONFIGS: config_resources(Op.DESCRIBE_CONFIGS, "results"),
    K.ALTER_CONFIGS: config_resources(Op.ALTER_CONFIGS, "responses"),
    K.INCREMENTAL_ALTER_CONFIGS: config_resources(Op.ALTER_CONFIGS, "responses"),
    K.DESCRIBE_CLUSTER: describe_cluster,
    # answered before authorization matters: the versions a client may use, the SASL exchange itself
    **{key: lambda _auth, _decoded, _controller: None for key in (K.API_VERSIONS, K.SASL_HANDSHAKE,
                                                                 K.SASL_AUTHENTICATE)},
}
# An API served without a rule of its own (one added later and not yet given its check) is closed rather than open:
# only a principal with CLUSTER_ACTION (the nodes, super users) gets through. tests/node/test_authz_shapes.py checks
# that every served API has a rule.
UNLISTED: Rule = needs(Op.CLUSTER_ACTION)
