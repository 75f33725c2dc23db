"""Build "this request failed with error X" responses for any request type.

Kafka's `RaftUtil.errorResponse` does this by hand for a few RPCs (a response with only the top-level
ErrorCode set). Here it is generic over kio's classes: the response class's top-level `error_code` gets
the error, an optional `error_message` field gets the message, collections stay empty, and every other
field without a schema default gets the zero value Kafka's generated code starts from (0, "", false,
the zero UUID). The node runtime uses it for timeouts, shutdown, versions it refuses and requests whose handler
failed; the request decoder uses it to answer UNSUPPORTED_VERSION.

Responses without a top-level ErrorCode (CreateTopics, DeleteTopics, ElectLeaders v0, Metadata v0-12, Produce,
CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs)
carry the error per item of the request instead, as Kafka's `AbstractRequest.getErrorResponse` of each of them
does: every topic (and partition) the request names is answered with the error. Such a response can only be
built from the request itself (`_PER_ITEM`), and where the request names nothing (Metadata or ElectLeaders v0 for
all topics) the answer is empty, as Kafka's is. APIs with both (ElectLeaders v1+, Metadata v13+) get both.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable
from dataclasses import MISSING, Field, fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import i64, i64Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol.apis import response_class
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE

__all__ = ["entity_type_of", "error_response_for", "field_entity", "has_top_level_error_code", "items",
           "zero_entity", "zero_value"]

_ZERO_BY_KAFKA_TYPE: dict[str, Any] = {
    "bool": False,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "records": b"",
    "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.NONE,
    "timedelta_i32": ZERO_THROTTLE,
    "timedelta_i64": i64Timedelta.parse(datetime.timedelta(0)),
    "datetime_i64": tz_aware_from_i64(i64(0)),
}
_INTEGER_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})

RequestSpec = type[RequestPayload] | RequestPayload | tuple[int, int]


def has_top_level_error_code(response_type: type[ResponsePayload]) -> bool:
    return any(f.name == "error_code" for f in fields(response_type))


def error_response_for(
    request: RequestSpec, error_code: ErrorCode, *, error_message: str | None = None
) -> ResponsePayload:
    """The response to `request` (a kio request class or instance, or an (api_key, version) pair) that
    reports `error_code`: at the top level, and per item for the APIs of `_PER_ITEM` (a request instance only).

    Raises ValueError if the error cannot be expressed: the response type has no top-level ErrorCode field and
    `request` is not an instance of a request with per-item errors. The caller must close the connection instead.
    """
    message = None if isinstance(request, tuple | type) else request
    if isinstance(request, tuple):
        api_key, version = request
    else:
        api_key, version = int(request.__api_key__), int(request.__version__)
    response_type = response_class(api_key, version)
    per_item = _PER_ITEM.get(api_key)
    top_level = has_top_level_error_code(response_type)
    if not top_level and (per_item is None or message is None):
        raise ValueError(f"{response_type.__module__}.{response_type.__name__} has no top-level error code")
    error = ErrorCode(error_code)
    overrides: dict[str, Any] = {}
    if per_item is not None and message is not None:
        overrides = per_item(message, response_type, {"error_code": error, "error_message": error_message})
    if top_level:
        overrides["error_code"] = error
        if error_message is not None and _has_field(response_type, "error_message"):
            overrides["error_message"] = error_message
    response: ResponsePayload = _zero_entity(response_type, overrides)
    return response


# ---- per-item errors (Kafka: each request's getErrorResponse) -----------------------------------------------------
Error = dict[str, Any]  # error_code and error_message, set where the item type has them
PerItem = Callable[[Any, type, Error], dict[str, Any]]


def _has_field(entity_type: type, name: str) -> bool:
    return any(f.name == name for f in fields(entity_type))


def _items(parent: type, field_name: str, values: Iterable[dict[str, Any]]) -> tuple[Any, ...]:
    """`parent.field_name` (an array of structs) holding one struct per dict of `values`; keys the struct does not
    have at this version are left out (error_message, topic_id), so one builder serves every version."""
    item_type = _field_entity(parent, field_name)
    return tuple(_zero_entity(item_type, {k: v for k, v in item.items() if v is not None and _has_field(item_type, k)})
                 for item in values)


def _field_entity(parent: type, field_name: str) -> type:
    (field_obj,) = (f for f in fields(parent) if f.name == field_name)
    entity = entity_type_of(field_obj.type)
    assert entity is not None, f"{parent.__name__}.{field_name} is not a struct field"
    return entity


def _topic_keys(entry: Any) -> dict[str, Any]:
    """What names a topic in a request entry (name, topic id, or both), to copy into its answer."""
    return {key: getattr(entry, key) for key in ("name", "topic_id") if hasattr(entry, key)}


def _create_topics(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    return {"topics": _items(response_type, "topics", ({"name": t.name, **error} for t in request.topics))}


def _delete_topics(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    named = ([_topic_keys(t) for t in request.topics] if hasattr(request, "topics")
             else [{"name": name} for name in request.topic_names])  # v0-v5 name topics only
    return {"responses": _items(response_type, "responses", ({**keys, **error} for keys in named))}


def _elect_leaders(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    result_type = _field_entity(response_type, "replica_election_results")
    return {"replica_election_results": _items(response_type, "replica_election_results", (
        {"topic": entry.topic,
         "partition_result": _items(result_type, "partition_result",
                                    ({"partition_id": p, **error} for p in entry.partitions))}
        for entry in request.topic_partitions or ()))}


def _metadata(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    return {"topics": _items(response_type, "topics", ({**_topic_keys(t), **error} for t in request.topics or ()))}


def _produce(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    topic_type = _field_entity(response_type, "responses")
    return {"responses": _items(response_type, "responses", (
        {**_topic_keys(topic),
         "partition_responses": _items(topic_type, "partition_responses",
                                       ({"index": p.index, "base_offset": -1, **error} for p in topic.partition_data))}
        for topic in request.topic_data))}


def _per_resource(answers: str) -> PerItem:
    """DescribeConfigs (`results`), AlterConfigs and IncrementalAlterConfigs (`responses`): one answer per resource."""
    def build(request: Any, response_type: type, error: Error) -> dict[str, Any]:
        return {answers: _items(response_type, answers, (
            {"resource_type": r.resource_type, "resource_name": r.resource_name, **error} for r in request.resources))}
    return build


def _alter_reassignments(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    topic_type = _field_entity(response_type, "responses")
    return {"responses": _items(response_type, "responses", (
        {"name": t.name, "partitions": _items(topic_type, "partitions",
                                              ({"partition_index": p.partition_index, **error} for p in t.partitions))}
        for t in request.topics))}


def _list_reassignments(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    # Kafka names each requested partition, with empty replica lists; the error is the top-level one only.
    topic_type = _field_entity(response_type, "topics")
    return {"topics": _items(response_type, "topics", (
        {"name": t.name, "partitions": _items(topic_type, "partitions",
                                              ({"partition_index": p} for p in t.partition_indexes))}
        for t in request.topics or ()))}


def _create_partitions(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    return {"results": _items(response_type, "results", ({"name": t.name, **error} for t in request.topics))}


def _create_acls(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    return {"results": _items(response_type, "results", (dict(error) for _ in request.creations))}


def _delete_acls(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    return {"filter_results": _items(response_type, "filter_results", (dict(error) for _ in request.filters))}


def _alter_scram(request: Any, response_type: type, error: Error) -> dict[str, Any]:
    # Kafka's getErrorResponse: one result per user the request names, whether deleted or upserted.
    users = dict.fromkeys(entry.name for entry in (*request.deletions, *request.upsertions))
    return {"results": _items(response_type, "results", ({"user": user, **error} for user in users))}


# By number: ApiKey lists only the APIs a node serves, and these are built for whichever of them it does.
_PER_ITEM: dict[int, PerItem] = {
    0: _produce,  # Produce
    3: _metadata,  # Metadata
    19: _create_topics,  # CreateTopics
    20: _delete_topics,  # DeleteTopics
    32: _per_resource("results"),  # DescribeConfigs
    33: _per_resource("responses"),  # AlterConfigs
    37: _create_partitions,  # CreatePartitions
    43: _elect_leaders,  # ElectLeaders
    44: _per_resource("responses"),  # IncrementalAlterConfigs
    45: _alter_reassignments,  # AlterPartitionReassignments (and the top-level error)
    46: _list_reassignments,  # ListPartitionReassignments (and the top-level error)
    30: _create_acls,  # CreateAcls
    31: _delete_acls,  # DeleteAcls
    51: _alter_scram,  # AlterUserScramCredentials
}


def entity_type_of(annotation: Any) -> type | None:
    """The struct class behind `X`, `X | None` or `tuple[X, ...]`, or None for a scalar field."""
    if get_origin(annotation) in (UnionType, Union):
        inner = [arg for arg in get_args(annotation) if arg is not NoneType]
        annotation = inner[0] if len(inner) == 1 else annotation
    if get_origin(annotation) is tuple:
        args = get_args(annotation)
        annotation = args[0] if args else annotation
    return annotation if isinstance(annotation, type) and is_dataclass(annotation) else None


def _zero_entity(entity_type: type, overrides: dict[str, Any]) -> Any:
    values = dict(overrides)
    for field_obj in fields(entity_type):
        if field_obj.name in values or _has_default(field_obj):
            continue
        values[field_obj.name] = zero_value(field_obj)
    return entity_type(**values)


def _has_default(field_obj: Field[Any]) -> bool:
    return field_obj.default is not MISSING or field_obj.default_factory is not MISSING


def zero_value(field_obj: Field[Any]) -> Any:
    """The value Kafka's generated code gives a field nobody set (also used to fill fields a newer version adds)."""
    annotation = field_obj.type
    optional = False
    if get_origin(annotation) in (UnionType, Union):
        optional = NoneType in get_args(annotation)
        (annotation,) = (arg for arg in get_args(annotation) if arg is not NoneType)
    if get_origin(annotation) is tuple:
        return ()  # collections stay empty
    if isinstance(annotation, type) and is_dataclass(annotation):
        # A nullable struct is left null; a required one is filled with its own zero values.
        return None if optional else _zero_entity(annotation, {})
    kafka_type = field_obj.metadata.get("kafka_type", "")
    if kafka_type in _INTEGER_TYPES or kafka_type not in _ZERO_BY_KAFKA_TYPE:
        return annotation(0) if isinstance(annotation, type) else 0
    if optional and kafka_type in ("string", "bytes", "records"):
        return None
    return _ZERO_BY_KAFKA_TYPE[kafka_type]


# Public names of the builders above, for code that answers parts of a request with an error (node/runtime/authz_*).
items = _items
field_entity = _field_entity
zero_entity = _zero_entity
