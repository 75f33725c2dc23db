"""One message rebuilt as another version of the same schema, as Kafka's generated code writes a message at an
older or newer version: fields the target version does not have are dropped, fields the source did not have get
the schema default (or Kafka's zero value when the schema has none).

Both kio's protocol messages and the generated metadata record classes name a field the same way in every version
of one schema, so fields are matched by name; nested structs and arrays of structs are rebuilt recursively as the
target version's own nested classes.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any

from pykraft.protocol.error_responses import entity_type_of, zero_value


def convert(message: Any, target: type) -> Any:
    """`message` rebuilt as an instance of `target` (another version of the same entity)."""
    values: dict[str, Any] = {}
    message_class: type = type(message)
    source_fields = _names(message_class)
    for field_obj in _fields(target):
        if field_obj.name in source_fields:
            values[field_obj.name] = _convert_value(getattr(message, field_obj.name), field_obj.type)
        elif field_obj.default is MISSING and field_obj.default_factory is MISSING:
            values[field_obj.name] = zero_value(field_obj)
    return target(**values)


@cache
def _fields(target: type) -> tuple[Field[Any], ...]:
    return fields(target)


@cache
def _names(source: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(source))


def _convert_value(value: Any, annotation: Any) -> Any:
    entity = entity_type_of(annotation)
    if entity is None or value is None:
        return value
    if isinstance(value, tuple):
        return tuple(convert(item, entity) for item in value)
    return convert(value, entity)
