"""Record batches handed over as views of the frame they arrived in, instead of the copy kio's reader makes.

A Produce request and a Fetch answer are almost all record batches: decoded the usual way, kio copied the
megabyte into a `bytes` (and a leader copied it once more into a `bytearray` to patch its header). With
`decode_request(..., borrow_records=True)` / `decode_response(..., borrow_records=True)` the walk lifts the
batches out of what kio reads (wire_check.LiftingEdits) and `put_back` sets every non-null `records` field to a
memoryview of its bytes in the frame. The caller must own the frame: it is written nowhere else (FrameReader's
large frames are private bytearrays, so the views are writable; a small frame is a read-only copy).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from enum import Enum
from typing import Any, get_args, get_origin

from pykraft.protocol.wire_check import dataclass_type, split_optional


class _Kind(Enum):
    RECORDS = "records"
    STRUCT = "struct"
    ARRAY = "array"


@functools.cache
def _plan(entity_type: type) -> tuple[tuple[str, _Kind], ...]:
    """The fields of `entity_type` that are, or hold, `records`, in wire order (tagged fields last, by tag)."""
    untagged: list[tuple[int, str, _Kind]] = []
    tagged: list[tuple[int, str, _Kind]] = []
    for field in dataclasses.fields(entity_type):
        kind = _kind_of(field)
        if kind is None:
            continue
        tag = field.metadata.get("tag")
        (untagged if tag is None else tagged).append((-1 if tag is None else int(tag), field.name, kind))
    ordered = untagged + sorted(tagged)
    return tuple((name, kind) for _, name, kind in ordered)


def _kind_of(field: dataclasses.Field[Any]) -> _Kind | None:
    if field.metadata.get("kafka_type") == "records":
        return _Kind.RECORDS
    annotation, _ = split_optional(field.type)
    if get_origin(annotation) is tuple:
        element = dataclass_type(split_optional(get_args(annotation)[0])[0])
        return _Kind.ARRAY if element is not None and _plan(element) else None
    struct = dataclass_type(annotation)
    if struct is not None and _plan(struct):
        return _Kind.STRUCT
    return None


def put_back(entity: Any, views: list[memoryview]) -> Any:
    """`entity` with its non-null `records` fields, in wire order, set to `views` (one each, all used)."""
    remaining = iter(views)
    result = _put_back(entity, remaining)
    if next(remaining, None) is not None:
        raise ValueError(f"{type(entity).__name__}: more record batches lifted than records fields")
    return result


def _put_back(entity: Any, views: Iterator[memoryview]) -> Any:
    entity_class: type = type(entity)
    plan = _plan(entity_class)
    if not plan:
        return entity
    changes: dict[str, Any] = {}
    for name, kind in plan:
        value = getattr(entity, name)
        if value is None:
            continue
        if kind is _Kind.RECORDS:
            view = next(views, None)
            if view is None:
                raise ValueError(f"{type(entity).__name__}.{name}: fewer record batches lifted than records fields")
            changes[name] = view
        elif kind is _Kind.STRUCT:
            changes[name] = _put_back(value, views)
        else:
            changes[name] = tuple(_put_back(element, views) for element in value)
    return dataclasses.replace(entity, **changes)
