"""Structural check of a kio-encoded message before kio's native reader is allowed to see it.

Why this exists (kio 0.6.5, found while testing the metadata records):
- kio's Rust reader reserves an array's capacity from its length prefix before reading any element. A corrupt
  prefix such as `ff ff ff ff 0f` asks for 32 GiB and the process ABORTS (a Rust allocation failure is not a
  Python exception). Kafka's generated Java readers refuse an array longer than the bytes that remain; we apply
  the same rule here, so kio never sees a length it cannot back with bytes.
- kio also reads a null length into a non-nullable array as None, raises KeyError on a tagged field it does not
  know (Kafka skips and keeps those, for forward compatibility), and ignores the declared size of a known tagged
  field. The walk below rejects the first and the last like a strict Kafka reader, and returns *edits* that cut
  unknown tagged fields out of a copy of the bytes so that kio can read the rest.

The walk uses the message's dataclass (its `kafka_type`/`tag` field metadata and annotations, the same things
kio's codecs look at) as the map, touches every length prefix and builds no values. Plans are compiled once per
class into closures. Nothing here is specific to metadata records: any kio entity class can be walked.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Union, get_args, get_origin

# (start, end, replacement) of a byte range of the walked buffer.
Edit = tuple[int, int, bytes]
# A compiled step: (buffer, position, end of the enclosing value, edits) -> position after the value.
Step = Callable[[memoryview, int, int, list[Edit]], int]

MAX_STRING_BYTES = 0x7FFF  # Kafka's generated code refuses longer strings, on write and on read
_MAX_LENGTH = 0x7FFFFFFF  # Kafka reads lengths into a Java int

_FIXED_SIZES = {
    "bool": 1, "int8": 1, "uint8": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}


class WireFormatError(ValueError):
    """The bytes are not a valid encoding of the class. `truncated` is True when they end too early."""

    def __init__(self, message: str, *, position: int, truncated: bool) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.position = position
        self.truncated = truncated


def _truncated(what: str, position: int) -> WireFormatError:
    return WireFormatError(f"{what} runs past the end of the data", position=position, truncated=True)


def _malformed(what: str, position: int) -> WireFormatError:
    return WireFormatError(what, position=position, truncated=False)


def read_uvarint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    """Kafka's `readUnsignedVarint`: at most 5 bytes. Returns (value, position after it)."""
    if pos >= end:
        raise _truncated("unsigned varint", pos)
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    result, shift, start = byte & 0x7F, 7, pos
    pos += 1
    while pos < end and pos - start < 5:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    if pos - start >= 5:
        raise _malformed("unsigned varint longer than 5 bytes", start)
    raise _truncated("unsigned varint", start)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def walk_entity(entity_type: type, buf: memoryview, start: int, end: int,
                invalid_tags: frozenset[int] = frozenset()) -> tuple[int, list[Edit]]:
    """Walk one encoded `entity_type` in `buf[start:end]`; return (position after it, edits to apply).

    `invalid_tags` are tags that belong to other versions of the same message: Kafka rejects them ("Tag N is
    not valid for version V") instead of skipping them. Raises WireFormatError.
    """
    edits: list[Edit] = []
    position = _entity_step(entity_type, invalid_tags)(buf, start, end, edits)
    return position, edits


def apply_edits(buf: memoryview, start: int, end: int, edits: list[Edit]) -> bytes:
    """A copy of buf[start:end] with every edit applied (edits never overlap)."""
    out = bytearray()
    last = start
    for edit_start, edit_end, replacement in sorted(edits):
        out += buf[last:edit_start]
        out += replacement
        last = edit_end
    out += buf[last:end]
    return bytes(out)


# ---------------------------------------------------------------------------------------------------------
# Compiling a class into steps


@functools.cache
def _entity_step(entity_type: type, invalid_tags: frozenset[int] = frozenset()) -> Step:
    flexible = bool(entity_type.__flexible__)
    untagged: list[Step] = []
    tagged: dict[int, Step] = {}
    for field in dataclasses.fields(entity_type):
        tag = field.metadata.get("tag")
        if tag is None:
            untagged.append(_field_step(field, flexible))
        else:
            # Tagged values are always in the compact (flexible) encoding.
            tagged[int(tag)] = _field_step(field, True)
    if tagged and not flexible:
        raise TypeError(f"{entity_type.__name__}: tagged fields on a non-flexible class")
    tag_section = _tag_section_step(tagged, invalid_tags) if flexible else None

    def walk_struct(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        for step in untagged:
            pos = step(buf, pos, end, edits)
        return tag_section(buf, pos, end, edits) if tag_section is not None else pos

    return walk_struct


def _split_optional(annotation: object) -> tuple[object, bool]:
    """(inner type, nullable) of `X | None`."""
    if get_origin(annotation) in (types.UnionType, Union):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {annotation!r}")
        return args[0], True
    return annotation, False


def _field_step(field: dataclasses.Field, flexible: bool) -> Step:
    annotation, nullable = _split_optional(field.type)
    name = field.name
    if get_origin(annotation) is tuple:
        element, _ = _split_optional(get_args(annotation)[0])
        if dataclasses.is_dataclass(element):
            return _array_step(name, _entity_step(element), None, nullable, flexible)
        kafka_type = field.metadata["kafka_type"]
        size = _FIXED_SIZES.get(kafka_type)
        element_step = _primitive_step(name, kafka_type, False, flexible)
        return _array_step(name, element_step, size, nullable, flexible)
    if dataclasses.is_dataclass(annotation):
        struct_step = _entity_step(annotation)
        return _nullable_struct_step(struct_step) if nullable else struct_step
    return _primitive_step(name, field.metadata["kafka_type"], nullable, flexible)


def _primitive_step(name: str, kafka_type: str, nullable: bool, flexible: bool) -> Step:
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return _fixed_step(name, size)
    if kafka_type == "string":
        return _length_prefixed_step(name, nullable, flexible, legacy_width=2, max_length=MAX_STRING_BYTES)
    if kafka_type in ("bytes", "records"):
        return _length_prefixed_step(name, nullable, flexible, legacy_width=4, max_length=_MAX_LENGTH)
    raise TypeError(f"field {name}: no wire rule for kafka_type {kafka_type!r}")


# ---------------------------------------------------------------------------------------------------------
# Steps


def _fixed_step(name: str, size: int) -> Step:
    def walk_fixed(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        if pos + size > end:
            raise _truncated(f"field {name}", pos)
        return pos + size

    return walk_fixed


def _read_length(buf: memoryview, pos: int, end: int, flexible: bool, legacy_width: int) -> tuple[int, int]:
    """A length prefix; -1 means null. Compact lengths are stored plus one, legacy ones as signed ints."""
    if flexible:
        stored, pos = read_uvarint(buf, pos, end)
        return stored - 1, pos
    if pos + legacy_width > end:
        raise _truncated("length prefix", pos)
    return int.from_bytes(buf[pos:pos + legacy_width], "big", signed=True), pos + legacy_width


def _length_prefixed_step(name: str, nullable: bool, flexible: bool, *, legacy_width: int,
                          max_length: int) -> Step:
    def walk_length_prefixed(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        start = pos
        length, pos = _read_length(buf, pos, end, flexible, legacy_width)
        if length == -1:
            if not nullable:
                raise _malformed(f"non-nullable field {name} was serialized as null", start)
            return pos
        if length < -1 or length > max_length:
            raise _malformed(f"field {name} has invalid length {length}", start)
        if pos + length > end:
            raise _truncated(f"field {name} ({length} bytes)", start)
        return pos + length

    return walk_length_prefixed


def _array_step(name: str, element: Step, element_size: int | None, nullable: bool, flexible: bool) -> Step:
    min_size = element_size or 1  # every element takes at least one byte

    def walk_array(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        start = pos
        count, pos = _read_length(buf, pos, end, flexible, 4)
        if count == -1:
            if not nullable:
                raise _malformed(f"non-nullable field {name} was serialized as null", start)
            return pos
        if count < -1 or count > _MAX_LENGTH:
            raise _malformed(f"array {name} has invalid length {count}", start)
        if count * min_size > end - pos:
            raise _truncated(f"array {name} of {count} elements with {end - pos} bytes left", start)
        if element_size is not None:
            return pos + count * element_size
        for _ in range(count):
            pos = element(buf, pos, end, edits)
        return pos

    return walk_array


def _nullable_struct_step(struct_step: Step) -> Step:
    """KIP-893 nullable struct: an int8 marker, negative for null, then the struct."""

    def walk_nullable_struct(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        if pos >= end:
            raise _truncated("nullable struct marker", pos)
        if buf[pos] >= 0x80:
            return pos + 1
        return struct_step(buf, pos + 1, end, edits)

    return walk_nullable_struct


def _tag_section_step(known: dict[int, Step], invalid_tags: frozenset[int]) -> Step:
    def walk_tag_section(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        count_start = pos
        count, pos = read_uvarint(buf, pos, end)
        count_end = pos
        if count * 2 > end - pos:  # a tag and a size take a byte each at least
            raise _truncated(f"{count} tagged fields", count_start)
        dropped = 0
        for _ in range(count):
            entry_start = pos
            tag, pos = read_uvarint(buf, pos, end)
            size_start = pos
            size, pos = read_uvarint(buf, pos, end)
            value_end = pos + size
            if value_end > end:
                raise _truncated(f"tagged field {tag} ({size} bytes)", entry_start)
            if tag in known:
                _walk_tagged_value(known[tag], buf, pos, value_end, edits, tag, size_start)
            elif tag in invalid_tags:
                raise _malformed(f"tag {tag} is not valid for this version", entry_start)
            else:
                edits.append((entry_start, value_end, b""))
                dropped += 1
            pos = value_end
        if dropped:
            edits.append((count_start, count_end, uvarint_bytes(count - dropped)))
        return pos

    return walk_tag_section


def _walk_tagged_value(step: Step, buf: memoryview, pos: int, value_end: int, edits: list[Edit],
                       tag: int, size_start: int) -> None:
    """A known tagged field must fill exactly its declared size; unknown tags cut from inside it shrink it."""
    inner: list[Edit] = []
    reached = step(buf, pos, value_end, inner)
    if reached != value_end:
        raise _malformed(f"tagged field {tag} declares {value_end - pos} bytes but holds {reached - pos}", pos)
    if inner:
        removed = sum(edit_end - edit_start - len(new) for edit_start, edit_end, new in inner)
        edits.append((size_start, pos, uvarint_bytes(value_end - pos - removed)))
        edits.extend(inner)
