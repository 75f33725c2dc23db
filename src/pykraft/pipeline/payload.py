"""The metadata columns of one decoded metadata record (record_type, record_version, payload), fast.

The payload column is the text of `json.dumps(metadata_record_envelope(record)["data"], default=str)`: Kafka's
JSON view of the record (records/metadata/json_view.py: field names, tagged fields left out at their default,
uuids and bytes as base64). json_view builds that view generically, dispatching on every value's type at run time;
that cost more than decoding the record (about 8 us of ~20 us a record). Here each record class is compiled once
into a plan that knows from the schema which fields need converting (uuids, bytes, structs) and passes every other
value through: the JSON encoder writes ints, bools, strings, floats and tuples of them as json_view's dict would.
A class with a field type the plan does not know keeps the generic view (same text, slower).
tests/pipeline/test_payload.py compares both on random records of every class and version.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import json.encoder
import types
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

from pykraft.controller.describe_configs import config_value_sensitive
from pykraft.protocol.wire_check import dataclass_type
from pykraft.records.metadata import metadata_record_envelope
from pykraft.records.metadata.redaction import redact_view
from pykraft.records.metadata.json_view import kafka_json_name
from pykraft.records.metadata.registry import codec_for_class
from pykraft.records.metadata.schema import MetadataRecordType
from pykraft.records.uuids import uuid_to_kafka_str



def _json_encoder() -> Callable[[dict[str, Any]], str]:
    """dict -> the text of json.dumps(value, default=str). json.dumps builds a new encoder per call (a JSONEncoder,
    then CPython's C encoder inside it): half the cost of encoding a small record. This builds the C encoder once,
    with json.dumps's options; without the circular-reference check, which only raises on a cycle (the dicts here
    are fresh trees). Elsewhere than CPython: one shared JSONEncoder."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(default=str).encode
    encode = make(None, str, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return lambda value: "".join(encode(value, 0))


_ENCODE = _json_encoder()
# Kafka types whose Python values the JSON encoder writes as json_view would (tuples of them as lists).
_AS_IS = frozenset({"int8", "int16", "int32", "int64", "uint16", "bool", "string", "float64"})
_KEEP = object()  # a field written whatever its value (not tagged)

Convert = Callable[[Any], Any]


class _Unsupported(TypeError):
    """A field type the compiled plan does not handle: the class keeps the generic JSON view."""


# ConfigRecord and UserScramCredentialRecord can carry secrets: their payload is redacted (redaction.py).
_SECRET_HOLDERS = frozenset({4, 11})


def metadata_columns(record: object) -> tuple[str, int, str]:
    """(record type name, version, payload JSON) of a decoded metadata record; SCRAM salts and keys and sensitive
    config values redacted, never in a table."""
    cls: type = type(record)
    return _compiled(cls)(record)


@functools.cache
def _compiled(cls: type) -> Callable[[object], tuple[str, int, str]]:
    codec = codec_for_class(cls)
    kind, version = MetadataRecordType(codec.api_key).name, int(codec.version)
    if codec.api_key in _SECRET_HOLDERS:
        return lambda record: (kind, version, _ENCODE(redact_view(
            kind, metadata_record_envelope(record)["data"], config_value_sensitive)))
    try:
        build = _struct_builder(cls)
    except _Unsupported:
        return lambda record: (kind, version, _ENCODE(metadata_record_envelope(record)["data"]))
    return lambda record: (kind, version, _ENCODE(build(record)))


@functools.cache
def _struct_builder(cls: type) -> Callable[[object], dict[str, Any]]:
    """record -> the dict json_view gives for it (the same JSON text once encoded)."""
    plan = tuple((field.name, kafka_json_name(field.name), _converter(field),
                  field.default if "tag" in field.metadata else _KEEP) for field in dataclasses.fields(cls))

    def build(record: object) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attribute, name, convert, omit_when in plan:
            value = getattr(record, attribute)
            if omit_when is not _KEEP and value == omit_when:
                continue
            out[name] = value if convert is None else convert(value)
        return out

    return build


def _split_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (types.UnionType, Union):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(inner) != 1:
            raise _Unsupported(f"union {annotation!r}")
        return inner[0]
    return annotation


def _converter(field: dataclasses.Field) -> Convert | None:
    """How json_view turns this field's value into JSON (None: as it is), decided from the schema once."""
    annotation = _split_optional(field.type)
    kafka_type = field.metadata.get("kafka_type")
    if get_origin(annotation) is tuple:
        element = dataclass_type(_split_optional(get_args(annotation)[0]))
        if element is not None:
            build_item = _struct_builder(element)
            return lambda value: None if value is None else [build_item(item) for item in value]
        item = _scalar_converter(kafka_type)
        if item is None:
            return None
        # json_view converts a tuple item by item; a null array takes the scalar rule (a null uuid array is
        # the zero uuid there, whatever that means, so it is here too).
        return lambda value: [item(v) for v in value] if isinstance(value, tuple) else item(value)
    struct = dataclass_type(annotation)
    if struct is not None:
        build = _struct_builder(struct)
        return lambda value: None if value is None else build(value)
    return _scalar_converter(kafka_type)


def _scalar_converter(kafka_type: str | None) -> Convert | None:
    if kafka_type in _AS_IS:
        return None
    if kafka_type == "uuid":
        return uuid_to_kafka_str  # kio's None is the zero uuid, as in json_view
    if kafka_type == "bytes":
        return _base64
    raise _Unsupported(f"kafka_type {kafka_type!r}")


def _base64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")
