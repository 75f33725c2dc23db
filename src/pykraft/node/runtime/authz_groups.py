"""The group and producer-id checks of Kafka's KafkaApis:

- JoinGroup, SyncGroup, Heartbeat, LeaveGroup: READ on the group, else GROUP_AUTHORIZATION_FAILED;
- OffsetCommit: READ on the group (else every partition GROUP_AUTHORIZATION_FAILED) and READ on each topic (else its
  partitions TOPIC_AUTHORIZATION_FAILED); OffsetDelete: DELETE on the group, READ on each topic;
- OffsetFetch: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED) and on each topic: a topic asked for by name is
  TOPIC_AUTHORIZATION_FAILED, one the principal may not describe is left out of an all-topics answer;
- FindCoordinator: DESCRIBE on the group, or on the TRANSACTIONAL_ID for a transaction coordinator;
- DescribeGroups, DeleteGroups: DESCRIBE / DELETE per group; ListGroups: every group with DESCRIBE on the cluster, else
  the groups the principal may describe;
- ConsumerGroupHeartbeat (KIP-848): READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every topic of
  the subscription by name (one missing: the whole heartbeat TOPIC_AUTHORIZATION_FAILED, the coordinator never sees
  it); ConsumerGroupDescribe: DESCRIBE per group, and a group whose members' assignments (current or target) name
  a topic the principal may not describe answered TOPIC_AUTHORIZATION_FAILED without its members;
- InitProducerId: WRITE on its TRANSACTIONAL_ID (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), an idempotent producer
  IDEMPOTENT_WRITE on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.protocol.apis import response_class
from pykraft.protocol.error_responses import error_response_for, field_entity, items, zero_entity
from pykraft.protocol.errors import ErrorCode

from pykraft.node.runtime.authz import Check, Denied, Narrowed, RequestAuthorizer
from pykraft.node.runtime.authz_data import Shape, every_partition, per_partition

__all__ = ["GROUP_RULES"]

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
COMMIT = Shape("topics", "name", "partitions", "partition_index", "topics", "partitions", "partition_index")
OFFSET_DELETE = COMMIT
FETCH_V1 = Shape("topics", "name", "partition_indexes", None, "topics", "partitions", "partition_index",
                 extra={"committed_offset": -1, "metadata": ""})


def _group_read(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup."""
    if auth.allowed(decoded.context, Op.READ, Res.GROUP, decoded.message.group_id):
        return None
    return Denied(error_response_for(decoded.message, GROUP_DENIED))


def _topic_read(auth: RequestAuthorizer, decoded: Any, shape: Shape) -> Check:
    return per_partition(decoded, shape, lambda t: None if auth.allowed(decoded.context, Op.READ, Res.TOPIC, t.name)
                         else TOPIC_DENIED)


def offset_commit(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    if not auth.allowed(decoded.context, Op.READ, Res.GROUP, decoded.message.group_id):
        return Denied(every_partition(decoded, COMMIT, GROUP_DENIED))
    return _topic_read(auth, decoded, COMMIT)


def offset_delete(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    if not auth.allowed(decoded.context, Op.DELETE, Res.GROUP, decoded.message.group_id):
        return Denied(error_response_for(decoded.message, GROUP_DENIED))
    return _topic_read(auth, decoded, OFFSET_DELETE)


def _fetch_topics(auth: RequestAuthorizer, context: Any, topics: Any, topic_type: type) -> tuple[Any, list, bool]:
    """(the topics to ask the handler for, the refused topics' answers, whether to filter the answer)."""
    if topics is None:
        return None, [], True
    kept, refused = [], []
    for topic in topics:
        if auth.allowed(context, Op.DESCRIBE, Res.TOPIC, topic.name):
            kept.append(topic)
        else:
            refused.append({"name": topic.name, "partitions": items(topic_type, "partitions", (
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                 "error_code": TOPIC_DENIED} for p in topic.partition_indexes))})
    return tuple(kept), refused, False


def _visible(auth: RequestAuthorizer, context: Any, topics: tuple) -> tuple:
    return tuple(t for t in topics if auth.allowed(context, Op.DESCRIBE, Res.TOPIC, t.name))


def offset_fetch(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    if decoded.api_version < 8:
        if not auth.allowed(context, Op.DESCRIBE, Res.GROUP, message.group_id):
            if decoded.api_version < 2:  # no top-level error code yet: per partition
                return Denied(every_partition(decoded, FETCH_V1, GROUP_DENIED))
            return Denied(error_response_for(message, GROUP_DENIED))
        topic_type = field_entity(response_type, "topics")
        kept, refused, filtered = _fetch_topics(auth, context, message.topics, topic_type)
        denied = items(response_type, "topics", refused)
        return Narrowed(replace(message, topics=kept), lambda answer: replace(answer, topics=(
            *(_visible(auth, context, answer.topics) if filtered else answer.topics), *denied)))
    group_type = field_entity(response_type, "groups")
    topic_type = field_entity(group_type, "topics")
    groups, refused_groups, plans = [], [], {}
    for group in message.groups:
        if not auth.allowed(context, Op.DESCRIBE, Res.GROUP, group.group_id):
            refused_groups.append({"group_id": group.group_id, "error_code": GROUP_DENIED})
            continue
        kept, refused, filtered = _fetch_topics(auth, context, group.topics, topic_type)
        plans[group.group_id] = (items(group_type, "topics", refused), filtered)
        groups.append(replace(group, topics=kept))
    denied_groups = items(response_type, "groups", refused_groups)

    def finish(answer: Any) -> Any:
        answered = []
        for group in (answer.groups if answer is not None else ()):
            denied, filtered = plans.get(group.group_id, ((), False))
            topics = _visible(auth, context, group.topics) if filtered else group.topics
            answered.append(replace(group, topics=(*topics, *denied)))
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, groups=(*answered, *denied_groups))
    return Narrowed(replace(message, groups=tuple(groups)) if groups else None, finish)


def find_coordinator(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    transaction = int(getattr(message, "key_type", 0)) == 1
    resource = Res.TRANSACTIONAL_ID if transaction else Res.GROUP
    error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if transaction else GROUP_DENIED
    if decoded.api_version < 4:
        if auth.allowed(context, Op.DESCRIBE, resource, message.key):
            return None
        return Denied(replace(error_response_for(message, error), node_id=-1, port=-1))
    keys = list(message.coordinator_keys)
    refused = [k for k in keys if not auth.allowed(context, Op.DESCRIBE, resource, k)]
    if not refused:
        return None
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "coordinators", ({"key": k, "node_id": -1, "port": -1, "error_code": error}
                                                   for k in refused))
    kept = tuple(k for k in keys if k not in refused)

    def finish(answer: Any) -> Any:
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, coordinators=(*(answer.coordinators if answer is not None else ()), *denied))
    return Narrowed(replace(message, coordinator_keys=kept) if kept else None, finish)


def describe_groups(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    allowed = [g for g in message.groups if auth.allowed(context, Op.DESCRIBE, Res.GROUP, g)]
    refused = [g for g in message.groups if g not in allowed]
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "groups", ({"group_id": g, "error_code": GROUP_DENIED} for g in refused))
    with_operations = bool(getattr(message, "include_authorized_operations", False))

    def finish(answer: Any) -> Any:
        groups = answer.groups if answer is not None else ()
        if with_operations:
            groups = tuple(replace(g, authorized_operations=auth.operations(context, Res.GROUP, g.group_id))
                           for g in groups)
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, groups=(*groups, *denied))
    return Narrowed(replace(message, groups=tuple(allowed)) if allowed else None, finish)


def list_groups(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    context = decoded.context
    if auth.cluster(context, Op.DESCRIBE):
        return None
    return Narrowed(decoded.message, lambda answer: replace(answer, groups=tuple(
        g for g in answer.groups if auth.allowed(context, Op.DESCRIBE, Res.GROUP, g.group_id))))


def delete_groups(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    allowed = [g for g in message.groups_names if auth.allowed(context, Op.DELETE, Res.GROUP, g)]
    if len(allowed) == len(message.groups_names):
        return None
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "results", ({"group_id": g, "error_code": GROUP_DENIED}
                                              for g in message.groups_names if g not in allowed))

    def finish(answer: Any) -> Any:
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, results=(*(answer.results if answer is not None else ()), *denied))
    return Narrowed(replace(message, groups_names=tuple(allowed)) if allowed else None, finish)


def consumer_group_heartbeat(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    if not auth.allowed(context, Op.READ, Res.GROUP, message.group_id):
        return Denied(error_response_for(message, GROUP_DENIED))
    # Kafka: clients may not learn of topics they cannot describe, so a subscription naming one is refused whole
    names = set(message.subscribed_topic_names or ())
    if auth.allowed_names(context, Op.DESCRIBE, Res.TOPIC, names) != names:
        return Denied(error_response_for(message, TOPIC_DENIED))
    return None


def _assigned_topics(member: Any) -> set[str]:
    return {tp.topic_name for assignment in (member.assignment, member.target_assignment) if assignment is not None
            for tp in assignment.topic_partitions}


def consumer_group_describe(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    allowed = [g for g in message.group_ids if auth.allowed(context, Op.DESCRIBE, Res.GROUP, g)]
    response_type = response_class(int(decoded.api_key), decoded.api_version)
    denied = items(response_type, "groups", ({"group_id": g, "error_code": GROUP_DENIED}
                                             for g in message.group_ids if g not in allowed))
    with_operations = bool(message.include_authorized_operations)

    def described(group: Any) -> Any:
        topics = set().union(*(_assigned_topics(m) for m in group.members))
        if auth.allowed_names(context, Op.DESCRIBE, Res.TOPIC, topics) != topics:
            return items(response_type, "groups", [{
                "group_id": group.group_id, "error_code": TOPIC_DENIED,
                "error_message": "The group has described topic(s) that the client is not authorized to describe."}])[0]
        if with_operations and group.error_code == ErrorCode.NONE:
            return replace(group, authorized_operations=auth.operations(context, Res.GROUP, group.group_id))
        return group

    def finish(answer: Any) -> Any:
        base = answer if answer is not None else zero_entity(response_type, {})
        return replace(base, groups=(*denied, *(described(g) for g in (answer.groups if answer is not None else ()))))
    return Narrowed(replace(message, group_ids=tuple(allowed)) if allowed else None, finish)


def init_producer_id(auth: RequestAuthorizer, decoded: Any, _controller: bool) -> Check:
    message, context = decoded.message, decoded.context
    transactional = message.transactional_id
    if transactional is not None:
        if auth.allowed(context, Op.WRITE, Res.TRANSACTIONAL_ID, transactional):
            return None
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif (auth.cluster(context, Op.IDEMPOTENT_WRITE, counted=False)
          or auth.by_resource_type(context, Op.WRITE, Res.TOPIC)):
        return None
    else:
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return Denied(replace(error_response_for(message, error), producer_id=-1, producer_epoch=-1))


GROUP_RULES = {
    8: offset_commit,
    9: offset_fetch,
    10: find_coordinator,
    11: _group_read,
    12: _group_read,
    13: _group_read,
    14: _group_read,
    15: describe_groups,
    16: list_groups,
    22: init_producer_id,
    42: delete_groups,
    47: offset_delete,
    68: consumer_group_heartbeat,
    69: consumer_group_describe,
}
