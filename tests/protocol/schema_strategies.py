"""Hypothesis strategies for whole Kafka messages, built from the schema that kio's generated classes carry.

Every field of a kio entity names its Kafka type (`field.metadata["kafka_type"]`), whether it is tagged
(`metadata["tag"]`), nullable (`X | None`), an array (`tuple[X, ...]`) or a nested struct. `message(cls)` draws:
- integers over their whole range, with the edges (0, -1, min, max) favoured;
- strings and bytes empty or short (or null where the schema allows it), uuids zero or random;
- arrays empty or of a few items, null where nullable;
- fields that have a default (tagged fields: absent on the wire) left at it half of the time;
- durations of at most `max_duration_ms`, so a long-poll (Fetch's MaxWaitMs) answers within a test's bounds;
- for the field names in `hints`, one of the values given there half of the time (the cluster id, node ids and
  names a node knows, so requests get past the first checks), or only those values for `host` fields (a node
  may connect to a host a request names: the tests stay on 127.0.0.1).
"""

from __future__ import annotations

import datetime
import types
import typing
import uuid
from dataclasses import MISSING, Field, fields, is_dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import Records, i32Timedelta, i64Timedelta

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _integers(low: int, high: int) -> st.SearchStrategy[int]:
    edges = [v for v in (0, -1, 1, low, high) if low <= v <= high]
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


def _scalar(kafka_type: str, max_duration_ms: int) -> st.SearchStrategy[Any]:
    if kafka_type in _INT_BITS:
        bits = _INT_BITS[kafka_type]
        return _integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if kafka_type == "uint16":
        return _integers(0, 0xFFFF)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "string":
        return st.text(max_size=12)
    if kafka_type == "bytes":
        return st.binary(max_size=32)
    if kafka_type == "records":
        return st.binary(max_size=64).map(Records)
    if kafka_type == "uuid":
        return st.one_of(st.just(uuid.UUID(int=0)), st.uuids())
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        parse = i32Timedelta.parse if kafka_type == "timedelta_i32" else i64Timedelta.parse
        return st.integers(0, max_duration_ms).map(lambda ms: parse(datetime.timedelta(milliseconds=ms)))
    if kafka_type == "datetime_i64":
        return st.integers(0, 2**41).map(tz_aware_from_i64)
    if kafka_type == "error_code":
        return st.sampled_from(list(ErrorCode))
    if kafka_type == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    raise NotImplementedError(f"no strategy for the Kafka type {kafka_type!r}")


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without `| None`, whether it was nullable)."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        inner = [arg for arg in typing.get_args(annotation) if arg is not types.NoneType]
        return inner[0], len(inner) < len(typing.get_args(annotation))
    return annotation, False


Hints = tuple[tuple[str, tuple[Any, ...]], ...]  # (field name, values): hashable, for the cache
LOCAL_ONLY = frozenset({"host"})


def _field(field_obj: Field[Any], max_duration_ms: int, hints: Hints) -> st.SearchStrategy[Any]:
    annotation, nullable = _unwrap(field_obj.type)
    array = typing.get_origin(annotation) is tuple
    item = typing.get_args(annotation)[0] if array else annotation
    if isinstance(item, type) and is_dataclass(item):
        single = st.deferred(lambda: message(item, max_duration_ms, hints))
    else:
        single = _scalar(field_obj.metadata["kafka_type"], max_duration_ms)
        known = dict(hints).get(field_obj.name)
        if known:
            single = st.sampled_from(known) if field_obj.name in LOCAL_ONLY else st.one_of(st.sampled_from(known),
                                                                                          single)
    value = st.lists(single, max_size=3).map(tuple) if array else single
    if nullable:
        value = st.one_of(st.none(), value)
    default = _default(field_obj)
    if default is not MISSING:  # tagged fields: absent (the default) or present
        value = st.one_of(st.just(default), value)
    return value


def _default(field_obj: Field[Any]) -> Any:
    if field_obj.default is not MISSING:
        return field_obj.default
    if field_obj.default_factory is not MISSING:
        return field_obj.default_factory()
    return MISSING


@cache
def message(entity_type: type, max_duration_ms: int = 100, hints: Hints = ()) -> st.SearchStrategy[Any]:
    """Valid instances of a kio request, response or nested struct class."""
    return st.builds(entity_type, **{f.name: _field(f, max_duration_ms, hints) for f in fields(entity_type)})
