"""The structural check every kio-encoded message passes before kio's native reader sees it: request and response
bodies (codec.py), metadata records (records/metadata/frame.py), KRaft control records (records/control.py).

Why (kio 0.6.5):
- kio's Rust reader reserves an array's capacity (8 bytes an element) from its length prefix before reading any
  element: `7f ff ff ff` asks for 16 GiB, a compact length up to 2^35. When that allocation fails Rust ABORTS the
  process; no `try` can contain it. Like Kafka's generated readers, the walk refuses an array longer than the
  bytes left (an element takes a byte at least), so kio never sees a length it cannot back with bytes.
- kio raises KeyError on a tagged field it does not know; Kafka skips it, which is how a newer peer's message
  still decodes. The walk returns *edits* that cut unknown tagged fields (and fix the counts and sizes around
  them) out of a copy of the bytes, and kio reads that copy.
- Where Kafka's reader refuses and kio does not, the walk refuses: a null in a non-nullable field, a string over
  32767 bytes, a tag that the struct uses in another version ("Tag N is not valid for version V", see
  `tag_rules`). It also requires a known tagged field to fill its declared size (kio ignores the size), and a
  KIP-893 nullable-struct marker of -1 or 1: kio reads only -1 as null, Kafka any negative value, so any other
  marker would make the walk and kio disagree about what follows.

The walk follows the dataclass metadata kio's codecs use (`kafka_type`, `tag`, `__flexible__`, annotations), builds
no values, and is compiled once per class into closures. Shortcuts: runs of fixed-size fields are one step, arrays
of fixed-size elements one multiplication; one-byte varints, empty tag sections, fixed-size tagged values: no call.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import struct
import types
from collections.abc import Callable, Container, Iterable
from typing import Any, Protocol, Union, cast, get_args, get_origin

__all__ = ["MAX_STRING_BYTES", "DeferredTagRules", "Edit", "Guard", "LiftingEdits", "TagRules", "WireFormatError",
           "apply_edits", "guard_for", "kio_input", "lazy_guard_for", "read_uvarint", "tag_rules",
           "uvarint_bytes"]  # fmt: skip

# (start, end, replacement) of a byte range of the walked buffer; edits never overlap.
Edit = tuple[int, int, bytes]
# A compiled step: (buffer, position, end of the enclosing value, edits) -> position after the value.
Step = Callable[[memoryview, int, int, list[Edit]], int]

MAX_STRING_BYTES = 0x7FFF  # Kafka's generated code refuses longer strings, on write and on read
_MAX_LENGTH = 0x7FFFFFFF  # Kafka reads lengths into a Java int
_FIXED_SIZES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
                "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8,
                "datetime_i64": 8, "uuid": 16}  # fmt: skip
_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")
# kafka_type -> (legacy length prefix, longest length Kafka reads)
_SIZED = {"string": (_INT16, MAX_STRING_BYTES), "bytes": (_INT32, _MAX_LENGTH), "records": (_INT32, _MAX_LENGTH)}


class LiftingEdits(list[Edit]):
    """The edits of a walk that also lifts record batches out of what kio reads (`Guard.walk(lift_records=True)`):
    every non-null `records` field is cut to an empty one by an edit, and the range of its bytes in the walked
    buffer is kept in `lifted`, in wire order. kio then copies only the few bytes around the batches; the caller
    puts views of the batches back (codec.py), so a 1 MB Produce or Fetch answer is not copied to be decoded."""

    __slots__ = ("lifted",)

    def __init__(self) -> None:
        super().__init__()
        self.lifted: list[tuple[int, int]] = []


class WireFormatError(ValueError):
    """Not a valid encoding. `truncated`: the bytes end too early, or a length claims more than remain."""

    def __init__(self, message: str, *, position: int, truncated: bool) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.position = position
        self.truncated = truncated


def _truncated(what: str, position: int) -> WireFormatError:
    return WireFormatError(f"{what} runs past the end of the data", position=position, truncated=True)


def _malformed(what: str, position: int) -> WireFormatError:
    return WireFormatError(what, position=position, truncated=False)


def read_uvarint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    """Kafka's `readUnsignedVarint` (at most 5 bytes). Returns (value, position after it)."""
    if pos < end and buf[pos] < 0x80:
        return buf[pos], pos + 1
    start, value = pos, 0
    for shift in (0, 7, 14, 21, 28):
        if pos >= end:
            raise _truncated("unsigned varint", start)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
    raise _malformed("unsigned varint longer than 5 bytes", start)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def apply_edits(buf: memoryview, start: int, end: int, edits: list[Edit]) -> bytes:
    """A copy of buf[start:end] with every edit applied."""
    out, last = bytearray(), start
    for edit_start, edit_end, replacement in sorted(edits):
        out += buf[last:edit_start]
        out += replacement
        last = edit_end
    out += buf[last:end]
    return bytes(out)


def kio_input(buf: memoryview, start: int, end: int, edits: list[Edit]) -> tuple[memoryview | bytes, int, int]:
    """(buffer, offset, stop) for kio after a walk of buf[start:end], which must then read stop - offset bytes."""
    if not edits:
        return buf, start, end
    edited = apply_edits(buf, start, end, edits)
    return edited, 0, len(edited)


@dataclasses.dataclass(frozen=True, slots=True)
class TagRules:
    """The tags Kafka rejects in one struct (those its other versions use), and the rules of its nested
    structs by field name."""

    invalid: frozenset[int] = frozenset()
    nested: tuple[tuple[str, TagRules], ...] = ()

    def of(self, field_name: str) -> TagRules:
        return next((rules for name, rules in self.nested if name == field_name), NO_RULES)


NO_RULES = TagRules()


class Rules(Protocol):
    """What compiling a walk reads of a struct's tag rules: a `TagRules`, or a `DeferredTagRules`."""

    @property
    def invalid(self) -> Container[int]: ...

    def of(self, field_name: str) -> Rules: ...

    def __hash__(self) -> int: ...  # compiled steps are cached per (class, rules)


class DeferredTagRules:
    """The `TagRules` of one struct, worked out only when a walk meets a tag its class does not know.

    Knowing which tags the other versions use means importing every version kio has of the message: for Fetch
    alone, 15 version packages (~1.6 MiB of an idle node's RSS, and ~2.7 MiB for the families a node decodes) that a
    node talking to peers of its own version never needs. A walk reads `invalid` only on an unknown tag, so the
    family is loaded then, once, and the verdict is the one the eager rules give."""

    __slots__ = ("_resolve", "_rules")

    def __init__(self, resolve: Callable[[], TagRules]) -> None:
        self._resolve = resolve
        self._rules: TagRules | None = None

    def rules(self) -> TagRules:
        if self._rules is None:
            self._rules = self._resolve()
        return self._rules

    @property
    def invalid(self) -> frozenset[int]:
        return self.rules().invalid

    def of(self, field_name: str) -> DeferredTagRules:
        return DeferredTagRules(lambda: self.rules().of(field_name))


def tag_rules(entity_type: type, family: Iterable[type]) -> TagRules:
    """Kafka's "Tag N is not valid for version V": `family` holds the other versions of the same message
    (it may include `entity_type`); structs are matched across versions by field name."""
    others = [other for other in family if other is not entity_type]
    invalid = frozenset().union(*(_tags(other) for other in others)) - _tags(entity_type)
    nested = []
    for field in dataclasses.fields(entity_type):
        inner = _struct_of(field)
        if inner is None:
            continue
        counterparts = [_struct_of({f.name: f for f in dataclasses.fields(o)}.get(field.name)) for o in others]
        rules = tag_rules(inner, [c for c in counterparts if c is not None])
        if rules != NO_RULES:
            nested.append((field.name, rules))
    return TagRules(invalid, tuple(nested))


def _tags(entity_type: type) -> frozenset[int]:
    return frozenset(int(f.metadata["tag"]) for f in dataclasses.fields(entity_type) if "tag" in f.metadata)


def _struct_of(field: dataclasses.Field[Any] | None) -> type | None:
    """The struct class of a struct or struct-array field, else None."""
    if field is None:
        return None
    annotation, _ = split_optional(field.type)
    if get_origin(annotation) is tuple:
        annotation, _ = split_optional(get_args(annotation)[0])
    return dataclass_type(annotation)


def split_optional(annotation: object) -> tuple[object, bool]:
    """(inner type, nullable) of `X | None`."""
    if get_origin(annotation) in (types.UnionType, Union):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {annotation!r}")
        return args[0], True
    return annotation, False


def dataclass_type(annotation: object) -> type | None:
    """`annotation` if it is a dataclass (a kio struct), else None; typed `type`, which mypy takes as hashable
    for the caches below (it does not for the `type[DataclassInstance]` that `is_dataclass` narrows to)."""
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


@dataclasses.dataclass(frozen=True, slots=True)
class Guard:
    """The compiled walk of one message class."""

    entity_type: type
    step: Step

    def walk(self, buf: memoryview, start: int, end: int, *, lift_records: bool = False) -> tuple[int, list[Edit]]:
        """(position after the message in buf[start:end], edits cutting its unknown tags). Raises WireFormatError.
        With `lift_records` the edits are a `LiftingEdits`: the record batches are cut out too, their ranges kept."""
        edits: list[Edit] = LiftingEdits() if lift_records else []
        return self.step(buf, start, end, edits), edits


@functools.cache
def guard_for(entity_type: type, family: tuple[type, ...] = ()) -> Guard:
    """The guard of `entity_type`; `family` lists the message's other versions (see `tag_rules`)."""
    return Guard(entity_type, _entity_step(entity_type, tag_rules(entity_type, family))[0])


def lazy_guard_for(entity_type: type, family: Callable[[], Iterable[type]]) -> Guard:
    """The guard of `entity_type` whose tag rules load `family()` (the message's versions) at the first unknown tag
    a walk meets (`DeferredTagRules`); the same verdicts as `guard_for(entity_type, tuple(family()))`. Not cached
    here: the caller keeps one guard per class (codec.py)."""
    rules = DeferredTagRules(lambda: tag_rules(entity_type, family()))
    return Guard(entity_type, _entity_step(entity_type, rules)[0])


# --- compiling a class into steps; compilers return (step, size), size being the byte count when it is fixed ---
@functools.cache
def _entity_step(entity_type: type, rules: Rules) -> tuple[Step, int | None]:
    flexible = bool(cast(Any, entity_type).__flexible__)
    plans: list[tuple[Step, int | None, str]] = []
    tagged: dict[int, tuple[Step, int | None]] = {}
    for field in dataclasses.fields(entity_type):
        tag = field.metadata.get("tag")
        if tag is None:
            plans.append((*_field_step(field, flexible, rules.of(field.name)), field.name))
        else:  # tagged values are always in the compact (flexible) encoding
            tagged[int(tag)] = _field_step(field, True, rules.of(field.name))
    if tagged and not flexible:
        raise TypeError(f"{entity_type.__name__}: tagged fields on a non-flexible class")
    steps = _coalesce(plans)
    if flexible:
        return _struct_step(steps, _tag_section_step(tagged, rules)), None
    if all(size is not None for _, size, _ in plans):  # one fixed step: arrays of it are one multiplication
        total = sum(size or 0 for _, size, _ in plans)
        return _fixed_step(entity_type.__name__, total), total
    return _struct_step(steps, None), None


def _field_step(field: dataclasses.Field[Any], flexible: bool, rules: Rules) -> tuple[Step, int | None]:
    annotation, nullable = split_optional(field.type)
    name = field.name
    if get_origin(annotation) is tuple:
        element = dataclass_type(split_optional(get_args(annotation)[0])[0])
        if element is not None:
            element_step, size = _entity_step(element, rules)
        else:  # array elements are never null in Kafka's schemas
            element_step, size = _primitive_step(name, field.metadata["kafka_type"], False, flexible)
        return _array_step(name, element_step, size, nullable, flexible), None
    struct = dataclass_type(annotation)
    if struct is not None:
        struct_step, size = _entity_step(struct, rules)
        # kio's reader expects the int8 marker before every optional struct, tagged or not.
        return (_nullable_struct_step(name, struct_step), None) if nullable else (struct_step, size)
    return _primitive_step(name, field.metadata["kafka_type"], nullable, flexible)


def _primitive_step(name: str, kafka_type: str, nullable: bool, flexible: bool) -> tuple[Step, int | None]:
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return _fixed_step(name, size), size
    if kafka_type not in _SIZED:
        raise TypeError(f"field {name}: no wire rule for kafka_type {kafka_type!r}")
    prefix, max_length = _SIZED[kafka_type]
    step = _sized_step(name, nullable, max_length, None if flexible else prefix)
    return (_records_step(step, None if flexible else prefix) if kafka_type == "records" else step), None


def _coalesce(plans: list[tuple[Step, int | None, str]]) -> list[Step]:
    """Runs of fixed-size fields become one step: fewer Python calls on the hot path."""
    steps: list[Step] = []
    for fixed, run in itertools.groupby(plans, key=lambda plan: plan[1] is not None):
        group = list(run)
        if fixed:
            steps.append(_fixed_step(", ".join(n for _, _, n in group), sum(size or 0 for _, size, _ in group)))
        else:
            steps.extend(step for step, _, _ in group)
    return steps


# --- steps: (buffer, position, end of the enclosing value, edits) -> position after the value -----------------
def _bad_length(name: str, length: int, position: int, kind: str = "field") -> WireFormatError:
    if length == -1:
        return _malformed(f"non-nullable field {name} was serialized as null", position)
    return _malformed(f"{kind} {name} has invalid length {length}", position)


def _fixed_step(name: str, size: int) -> Step:
    def walk_fixed(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        if pos + size <= end:
            return pos + size
        raise _truncated(f"{name} ({size} bytes)", pos)

    return walk_fixed


def _struct_step(steps: list[Step], tag_section: Step | None) -> Step:
    """A struct's fields in order, then (in flexible versions) its tag section, which is nearly always empty."""
    if tag_section is None and len(steps) == 1:
        return steps[0]

    def walk_struct(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        for step in steps:
            pos = step(buf, pos, end, edits)
        if tag_section is None:
            return pos
        if pos < end and buf[pos] == 0:
            return pos + 1
        return tag_section(buf, pos, end, edits)

    return walk_struct


def _sized_step(name: str, nullable: bool, max_length: int, prefix: struct.Struct | None) -> Step:
    """A string or bytes: compact (varint length + 1, 0 for null) or legacy (`prefix`: int16/int32, -1 for null)."""

    def walk_sized(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        start = pos
        length: int
        if prefix is not None:
            pos += prefix.size
            if pos > end:
                raise _truncated(f"length of field {name}", start)
            (length,) = prefix.unpack_from(buf, start)
        elif pos < end and buf[pos] < 0x80:
            length, pos = buf[pos] - 1, pos + 1
        else:
            stored, pos = read_uvarint(buf, pos, end)
            length = stored - 1
        if length < 0 or length > max_length:
            if length == -1 and nullable:
                return pos
            raise _bad_length(name, length, start)
        if pos + length > end:
            raise _truncated(f"field {name} ({length} bytes)", start)
        return pos + length

    return walk_sized


def _records_step(walk_sized: Step, prefix: struct.Struct | None) -> Step:
    """A `records` field: walked as bytes; in a lifting walk a non-null one is also cut out (see LiftingEdits)."""
    empty = prefix.pack(0) if prefix is not None else b"\x01"

    def walk_records(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        after = walk_sized(buf, pos, end, edits)
        if type(edits) is not LiftingEdits:
            return after
        if prefix is not None:
            if prefix.unpack_from(buf, pos)[0] < 0:
                return after  # null: nothing to lift
            data_start = pos + prefix.size
        else:
            stored, data_start = read_uvarint(buf, pos, end)
            if stored == 0:
                return after
        edits.append((pos, after, empty))
        edits.lifted.append((data_start, after))
        return after

    return walk_records


def _array_step(name: str, element: Step, element_size: int | None, nullable: bool, flexible: bool) -> Step:
    min_size = element_size or 1  # every element takes at least one byte: the rule kio forgets

    def walk_array(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        start = pos
        count: int
        if not flexible:
            pos += 4
            if pos > end:
                raise _truncated(f"length of array {name}", start)
            (count,) = _INT32.unpack_from(buf, start)
        elif pos < end and buf[pos] < 0x80:
            count, pos = buf[pos] - 1, pos + 1
        else:
            stored, pos = read_uvarint(buf, pos, end)
            count = stored - 1
        if count < 0 or count > _MAX_LENGTH:
            if count == -1 and nullable:
                return pos
            raise _bad_length(name, count, start, "array")
        if count * min_size > end - pos:
            message = f"array {name} of {count} elements cannot fit in the {end - pos} bytes left"
            raise WireFormatError(message, position=start, truncated=True)
        if element_size is not None:
            return pos + count * element_size
        for _ in range(count):
            pos = element(buf, pos, end, edits)
        return pos

    return walk_array


def _nullable_struct_step(name: str, struct_step: Step) -> Step:
    """KIP-893 nullable struct: an int8 marker, -1 for null and 1 for a struct (see the module docstring)."""

    def walk_nullable_struct(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        if pos >= end:
            raise _truncated(f"null marker of {name}", pos)
        marker = buf[pos]
        if marker == 1:
            return struct_step(buf, pos + 1, end, edits)
        if marker == 0xFF:
            return pos + 1
        signed = marker - 256 if marker > 0x7F else marker
        raise _malformed(f"nullable struct {name} has marker {signed}, not -1 or 1", pos)

    return walk_nullable_struct


def _tag_section_step(known: dict[int, tuple[Step, int | None]], rules: Rules) -> Step:
    """`rules.invalid` is read only when a tag is unknown (it may load the message's other versions then)."""

    def walk_tag_section(buf: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        count, count_end = read_uvarint(buf, pos, end)
        count_start, pos = pos, count_end
        if count * 2 > end - pos:  # a tag and a size take a byte each at least
            message = f"{count} tagged fields cannot fit in the {end - pos} bytes left"
            raise WireFormatError(message, position=count_start, truncated=True)
        dropped = 0
        for _ in range(count):
            entry_start = pos
            if pos + 2 <= end and buf[pos] < 0x80 and buf[pos + 1] < 0x80:  # one-byte tag and size
                tag, size, size_start, pos = buf[pos], buf[pos + 1], pos + 1, pos + 2
            else:
                tag, size_start = read_uvarint(buf, pos, end)
                size, pos = read_uvarint(buf, size_start, end)
            value_end = pos + size
            if value_end > end:
                raise _truncated(f"tagged field {tag} ({size} bytes)", entry_start)
            plan = known.get(tag)
            if plan is None:
                if tag in rules.invalid:
                    raise _malformed(f"tag {tag} is not valid for this version", entry_start)
                edits.append((entry_start, value_end, b""))  # Kafka keeps it aside; kio cannot skip it
                dropped += 1
            elif plan[1] is not None:
                if size != plan[1]:
                    raise _wrong_size(tag, size, plan[1], pos)
            else:
                before = len(edits)
                reached = plan[0](buf, pos, value_end, edits)
                if reached != value_end:
                    raise _wrong_size(tag, size, reached - pos, pos)
                if len(edits) > before:  # unknown tags cut from inside this value shrink it
                    removed = sum(cut_end - cut_start - len(new) for cut_start, cut_end, new in edits[before:])
                    edits.append((size_start, pos, uvarint_bytes(size - removed)))
            pos = value_end
        if dropped:
            edits.append((count_start, count_end, uvarint_bytes(count - dropped)))
        return pos

    return walk_tag_section


def _wrong_size(tag: int, size: int, held: int, position: int) -> WireFormatError:
    return _malformed(f"tagged field {tag} declares {size} bytes but holds {held}", position)
