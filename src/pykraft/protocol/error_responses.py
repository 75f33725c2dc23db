"""Build "this request failed with error X" responses for any request type.

Kafka's `RaftUtil.errorResponse` does this by hand for a few RPCs (a response with only the top-level
ErrorCode set). Here it is generic over kio's classes: the response class's top-level `error_code` gets
the error, an optional `error_message` field gets the message, collections stay empty, and every other
field without a schema default gets the zero value Kafka's generated code starts from (0, "", false,
the zero UUID). The node runtime uses it for timeouts, shutdown and versions it refuses; the request
decoder uses it to answer UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import MISSING, Field, fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import i32Timedelta, i64, i64Timedelta
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol.apis import response_class
from pykraft.protocol.errors import ErrorCode

__all__ = ["error_response_for", "has_top_level_error_code", "zero_value"]

_ZERO_BY_KAFKA_TYPE: dict[str, Any] = {
    "bool": False,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "records": b"",
    "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.NONE,
    "timedelta_i32": i32Timedelta.parse(datetime.timedelta(0)),
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
    reports `error_code` at the top level.

    Raises ValueError if the response type has no top-level ErrorCode field (Metadata v0-12, for one):
    such an error cannot be expressed and the caller must close the connection instead.
    """
    if isinstance(request, tuple):
        api_key, version = request
    else:
        api_key, version = int(request.__api_key__), int(request.__version__)
    response_type = response_class(api_key, version)
    if not has_top_level_error_code(response_type):
        raise ValueError(f"{response_type.__module__}.{response_type.__name__} has no top-level error code")
    overrides: dict[str, Any] = {"error_code": ErrorCode(error_code)}
    if error_message is not None and any(f.name == "error_message" for f in fields(response_type)):
        overrides["error_message"] = error_message
    return _zero_entity(response_type, overrides)


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
    if is_dataclass(annotation):
        # A nullable struct is left null; a required one is filled with its own zero values.
        return None if optional else _zero_entity(annotation, {})
    kafka_type = field_obj.metadata.get("kafka_type", "")
    if kafka_type in _INTEGER_TYPES or kafka_type not in _ZERO_BY_KAFKA_TYPE:
        return annotation(0) if isinstance(annotation, type) else 0
    if optional and kafka_type in ("string", "bytes", "records"):
        return None
    return _ZERO_BY_KAFKA_TYPE[kafka_type]
