"""A bounds walk over a message body, run before kio decodes bytes that came from a peer.

Why this exists: kio 0.6.5's native reader reserves room for `n` elements (8 bytes each) as soon as it
reads an array length `n`, before checking that the buffer could hold them. An int32 array length of
2^31-1 asks for 16 GiB, a compact (varint) length up to 2^35; when the allocation fails, Rust aborts
the whole process. No Python exception is raised, so no `try` can contain it: one hostile or corrupt
frame would kill the node. (tests/protocol/test_bounds.py reproduces it in a subprocess.)

So every body is first walked with a plan built from the same dataclass metadata kio uses (the
`kafka_type` of each field, the entity's `__flexible__`, the `tag` of tagged fields). The walk builds no
objects; it only moves an offset and checks that each array claims no more elements than there are bytes
left (every element takes at least one byte) and that every length fits the buffer. Whatever it accepts,
kio can decode without a huge allocation; the rest is reported as `BoundsError`.

The walk is a little stricter than Kafka where strictness is free: a known tagged field must fill exactly
the size its tag announces, and a nullable-struct marker must be -1 or 1. It also rejects tagged fields
the schema does not know. Kafka skips those, but kio 0.6.5 fails on them (KeyError), so a message with one
cannot be decoded either way; rejecting it here gives a message that names the tag.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import Union, get_args, get_origin

__all__ = ["BoundsError", "check_bounds"]

# A step reads one field: (buffer, position, end) -> new position.
Step = Callable[[memoryview, int, int], int]

_FIXED_SIZES = {
    "int8": 1, "uint8": 1, "bool": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}  # fmt: skip
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL_MARKER, _PRESENT_MARKER = -1, 1


class BoundsError(ValueError):
    """The body is truncated, declares a length that cannot fit in it, or has a tag kio cannot skip."""


def check_bounds(entity_type: type, buf: memoryview, pos: int = 0) -> int:
    """Walk one `entity_type` starting at `pos`; return the offset just past it. Raises BoundsError."""
    return _entity_plan(entity_type)[0](buf, pos, len(buf))


def _need(pos: int, size: int, end: int, what: str) -> int:
    if size < 0 or pos + size > end:
        raise BoundsError(f"{what} of {size} bytes at offset {pos} overruns the body ({end} bytes)")
    return pos + size


def _uvarint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    if pos < end and buf[pos] < 0x80:  # one-byte varints are nearly all of them
        return buf[pos], pos + 1
    value = 0
    for shift in (0, 7, 14, 21, 28):  # Kafka varints for lengths and tags have at most 5 bytes
        if pos >= end:
            raise BoundsError(f"varint runs past the end of the body at offset {pos}")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise BoundsError(f"varint longer than 5 bytes ending at offset {pos}")


def _fixed(size: int) -> Step:
    def step(buf: memoryview, pos: int, end: int) -> int:
        if pos + size <= end:
            return pos + size
        return _need(pos, size, end, "field")  # raises with the details

    return step


def _legacy_sized(header: struct.Struct) -> Step:
    """int16- or int32-length string/bytes; -1 means null."""

    def step(buf: memoryview, pos: int, end: int) -> int:
        pos = _need(pos, header.size, end, "length")
        (length,) = header.unpack_from(buf, pos - header.size)
        return pos if length == -1 else _need(pos, length, end, "string or bytes")

    return step


def _compact_sized(buf: memoryview, pos: int, end: int) -> int:
    """Varint (length + 1) string/bytes; 0 means null."""
    length_plus_one, pos = _uvarint(buf, pos, end)
    return pos if length_plus_one == 0 else _need(pos, length_plus_one - 1, end, "string or bytes")


def _array(element: Step, element_size: int | None, compact: bool) -> Step:
    def step(buf: memoryview, pos: int, end: int) -> int:
        if compact:
            count_plus_one, pos = _uvarint(buf, pos, end)
            count = count_plus_one - 1
        else:
            pos = _need(pos, 4, end, "array length")
            (count,) = _INT32.unpack_from(buf, pos - 4)
        if count == -1:  # null array
            return pos
        # The check kio does not do before allocating: an element is at least one byte.
        if count < 0 or count > end - pos:
            raise BoundsError(f"array of {count} elements at offset {pos} cannot fit in {end - pos} bytes")
        if element_size is not None:
            return _need(pos, count * element_size, end, "array")
        for _ in range(count):
            pos = element(buf, pos, end)
        return pos

    return step


def _nullable(entity: Step) -> Step:
    """KIP-893 nullable struct: an int8 marker (-1 null, 1 present), then the struct."""

    def step(buf: memoryview, pos: int, end: int) -> int:
        pos = _need(pos, 1, end, "struct marker")
        marker = buf[pos - 1] - 256 if buf[pos - 1] > 127 else buf[pos - 1]
        if marker == _NULL_MARKER:
            return pos
        if marker != _PRESENT_MARKER:
            raise BoundsError(f"nullable struct marker {marker} at offset {pos - 1}")
        return entity(buf, pos, end)

    return step


def _primitive(kafka_type: str, flexible: bool) -> tuple[Step, int | None]:
    """The step for one primitive value and its fixed size (None if variable)."""
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return _fixed(size), size
    if kafka_type == "string":
        return (_compact_sized if flexible else _legacy_sized(_INT16)), None
    if kafka_type in ("bytes", "records"):
        return (_compact_sized if flexible else _legacy_sized(_INT32)), None
    raise TypeError(f"no bounds rule for kafka_type {kafka_type!r}")


def _unwrap_optional(annotation: object) -> tuple[object, bool]:
    if get_origin(annotation) in (UnionType, Union):
        args = [arg for arg in get_args(annotation) if arg is not NoneType]
        assert len(args) == 1, annotation
        return args[0], True
    return annotation, False


def _field_plan(entity_type: type, field_obj: object, tagged: bool) -> tuple[Step, int | None]:
    """The step for one field, and its size when that size is fixed."""
    flexible = bool(entity_type.__flexible__)
    annotation, optional = _unwrap_optional(field_obj.type)  # type: ignore[attr-defined]
    kafka_type = field_obj.metadata.get("kafka_type")  # type: ignore[attr-defined]
    if get_origin(annotation) is tuple:
        (inner, _ellipsis) = get_args(annotation)
        inner, _ = _unwrap_optional(inner)
        element, size = _entity_plan(inner) if is_dataclass(inner) else _primitive(kafka_type, flexible)
        return _array(element, size, flexible), None
    if is_dataclass(annotation):
        nested, size = _entity_plan(annotation)
        # kio writes the null marker only for optional structs outside tagged fields.
        return (_nullable(nested), None) if optional and not tagged else (nested, size)
    return _primitive(kafka_type, flexible)


def _coalesce(plans: list[tuple[Step, int | None]]) -> tuple[Step, ...]:
    """Merge runs of fixed-size fields into one step: fewer Python calls on the hot path."""
    steps: list[Step] = []
    run = 0
    for step, size in plans:
        if size is not None:
            run += size
            continue
        if run:
            steps.append(_fixed(run))
            run = 0
        steps.append(step)
    if run:
        steps.append(_fixed(run))
    return tuple(steps)


@cache
def _entity_plan(entity_type: type) -> tuple[Step, int | None]:
    """The step for one struct, and its size when every field is fixed and it has no tag section."""
    regular: list[tuple[Step, int | None]] = []
    tagged: dict[int, Step] = {}
    for field_obj in fields(entity_type):
        tag = field_obj.metadata.get("tag")
        if tag is None:
            regular.append(_field_plan(entity_type, field_obj, tagged=False))
        else:
            tagged[int(tag)] = _field_plan(entity_type, field_obj, tagged=True)[0]
    steps = _coalesce(regular)
    if not entity_type.__flexible__:
        if all(size is not None for _, size in regular):
            total = sum(size for _, size in regular if size is not None)
            return _fixed(total), total

        def non_flexible(buf: memoryview, pos: int, end: int) -> int:
            for step in steps:
                pos = step(buf, pos, end)
            return pos

        return non_flexible, None

    def flexible(buf: memoryview, pos: int, end: int) -> int:
        for step in steps:
            pos = step(buf, pos, end)
        return _tagged_fields(tagged, buf, pos, end)

    return flexible, None


def _tagged_fields(known: dict[int, Step], buf: memoryview, pos: int, end: int) -> int:
    if pos < end and buf[pos] == 0:  # the usual case: no tagged fields at all
        return pos + 1
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:  # each tagged field takes at least two bytes (tag and size)
        raise BoundsError(f"{count} tagged fields at offset {pos} cannot fit in {end - pos} bytes")
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        stop = _need(pos, size, end, f"tagged field {tag}")
        step = known.get(tag)
        if step is None:
            # Kafka's rule is to skip unknown tags; kio 0.6.5 raises KeyError on them instead. Say so here,
            # where the offending tag is known, rather than surface kio's bare KeyError.
            raise BoundsError(f"tagged field {tag} at offset {pos} is unknown to kio, which cannot skip it")
        if step(buf, pos, stop) != stop:
            raise BoundsError(f"tagged field {tag} at offset {pos} does not fill its {size} bytes")
        pos = stop
    return pos
