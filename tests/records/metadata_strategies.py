"""Hypothesis strategies and value helpers for the generated metadata record classes.

Built from each dataclass's fields rather than `st.from_type`, so that every value stays in range for its Kafka
type, uuids are never the zero uuid (kio reads that back as None, see test_metadata_roundtrip), and tagged fields
are drawn at their default about half of the time, which exercises both "tag written" and "tag omitted".
"""

from __future__ import annotations

import dataclasses
import types
import uuid
from typing import Any, Union, get_args, get_origin

from hypothesis import strategies as st
from kio.static.primitive import f64

from pykraft.records.metadata import RECORD_CLASSES
from pykraft.records.uuids import METADATA_TOPIC_ID

ALL_RECORD_CLASSES = [RECORD_CLASSES[key] for key in sorted(RECORD_CLASSES)]

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}

NONZERO_UUIDS = st.one_of(
    st.just(METADATA_TOPIC_ID),
    st.uuids(version=4),
    st.integers(min_value=1, max_value=2**128 - 1).map(lambda n: uuid.UUID(int=n)),
)
# kio's spelling of the zero uuid is None, so None stands for it in every uuid position.
UUIDS = st.one_of(st.none(), NONZERO_UUIDS)


def split_optional(annotation: Any) -> tuple[Any, bool]:
    if get_origin(annotation) in (types.UnionType, Union):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        return inner[0], True
    return annotation, False


def primitive_strategy(kafka_type: str, annotation: Any) -> st.SearchStrategy:
    if kafka_type in _INT_RANGES:
        low, high = _INT_RANGES[kafka_type]
        return st.integers(min_value=low, max_value=high).map(annotation)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "float64":
        return st.floats(allow_nan=False, allow_infinity=False).map(f64)
    if kafka_type == "string":
        return st.text(max_size=12)
    if kafka_type == "bytes":
        return st.binary(max_size=12)
    if kafka_type == "uuid":
        return UUIDS
    raise AssertionError(f"no strategy for {kafka_type}")


def field_strategy(field: dataclasses.Field) -> st.SearchStrategy:
    annotation, nullable = split_optional(field.type)
    kafka_type = field.metadata.get("kafka_type")
    if get_origin(annotation) is tuple:
        element, _ = split_optional(get_args(annotation)[0])
        if dataclasses.is_dataclass(element):
            element_strategy = record_strategy(element)
        else:
            element_strategy = primitive_strategy(kafka_type, element)
        base = st.lists(element_strategy, max_size=4).map(tuple)
    elif dataclasses.is_dataclass(annotation):
        base = record_strategy(annotation)
    else:
        base = primitive_strategy(kafka_type, annotation)
    if nullable and kafka_type != "uuid":
        base = st.one_of(st.none(), base)
    if "tag" in field.metadata:
        base = st.one_of(st.just(field.default), base)
    return base


def record_strategy(cls: type) -> st.SearchStrategy:
    return st.builds(cls, **{field.name: field_strategy(field) for field in dataclasses.fields(cls)})


def tagged_fields(cls: type) -> list[dataclasses.Field]:
    return [field for field in dataclasses.fields(cls) if "tag" in field.metadata]


def non_default_value(field: dataclasses.Field) -> Any:
    """A value different from the field's default, for forcing a tagged field onto the wire."""
    annotation, _ = split_optional(field.type)
    kafka_type = field.metadata.get("kafka_type")
    if get_origin(annotation) is tuple:
        element = uuid.UUID(int=0x1234) if kafka_type == "uuid" else 7
        return (element, element) if field.default != (element, element) else (element,)
    if kafka_type == "string":
        return "non-default"
    if kafka_type == "uuid":
        return uuid.UUID(int=0x5678)
    if kafka_type == "bool":
        return not field.default
    return annotation(5 if field.default != 5 else 6)


def to_plain(value: Any) -> Any:
    """Records as plain dicts and lists (field name -> value): the shape kafka-python's `to_dict` gives."""
    if dataclasses.is_dataclass(value):
        return {field.name: to_plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value
