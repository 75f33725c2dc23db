"""Metadata records as Kafka's tools print them.

`kafka-dump-log --cluster-metadata-decoder` prints each metadata record as the JSON
`{"type":"<MetadataRecordType>","version":<n>,"data":{...}}`, where "data" comes from the record's generated
`JsonConverter`. The rules of that converter, reproduced here:
- field names are the schema names with a lower-case first letter ("brokerId", "endPoints", "isr");
- fields appear in schema order; a tagged field is left out while it holds its default value;
- uuids are printed as Kafka's base64 text (`uuids.uuid_to_kafka_str`), bytes as padded standard base64;
- null stays null, nested structs become objects, arrays become lists.
`metadata_record_to_json` also writes the text the way Jackson does (no spaces, Java's `Double.toString`,
upper-case `\\u00XX` escapes), so a dump can be compared with Kafka's byte for byte.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import math
from typing import Any

from ..uuids import uuid_to_kafka_str
from .registry import codec_for_class
from .schema import MetadataRecordType

_OMIT = object()  # a tagged field still at its default


def metadata_record_to_dict(record: object) -> dict[str, Any]:
    """The "data" object Kafka's dump tool prints for `record` (a generated metadata record object)."""
    codec_for_class(type(record))  # TypeError for anything else
    return _struct_to_dict(record)


def metadata_record_envelope(record: object) -> dict[str, Any]:
    """The whole payload object of kafka-dump-log: type name, version and data."""
    codec = codec_for_class(type(record))
    return {
        "type": MetadataRecordType(codec.api_key).name,
        "version": codec.version,
        "data": _struct_to_dict(record),
    }


def metadata_record_to_json(record: object) -> str:
    """The payload text kafka-dump-log prints for `record`, character for character."""
    return to_jackson_json(metadata_record_envelope(record))


def message_to_dict(message: object) -> dict[str, Any]:
    """The same JSON view for any kio-style message, e.g. the KRaft control records (LeaderChangeMessage...),
    whose classes declare their fields the way the metadata records do."""
    return _struct_to_dict(message)


def kafka_json_name(attribute: str) -> str:
    """Python attribute -> Kafka JSON name: "is_migrating_zk_broker" -> "isMigratingZkBroker"."""
    head, *rest = attribute.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@functools.cache
def _field_plan(cls: type) -> tuple[tuple[str, str, str | None, object], ...]:
    """(attribute, JSON name, kafka_type, default to omit or _OMIT-never) of each field, in wire order."""
    plan = []
    for field in dataclasses.fields(cls):
        omit_when = field.default if "tag" in field.metadata else _OMIT
        plan.append((field.name, kafka_json_name(field.name), field.metadata.get("kafka_type"), omit_when))
    return tuple(plan)


def _struct_to_dict(struct: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cls: type = type(struct)  # (mypy takes a class object typed type[object] for unhashable)
    for attribute, json_name, kafka_type, omit_when in _field_plan(cls):
        value = getattr(struct, attribute)
        if omit_when is not _OMIT and value == omit_when:
            continue
        out[json_name] = _value_to_json(value, kafka_type)
    return out


def _value_to_json(value: Any, kafka_type: str | None) -> Any:
    if isinstance(value, tuple):
        return [_value_to_json(item, kafka_type) for item in value]
    if kafka_type == "uuid":
        return uuid_to_kafka_str(value)  # kio's None is the zero uuid here, never JSON null
    if value is None:
        return None
    if dataclasses.is_dataclass(value):
        return _struct_to_dict(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


# ---------------------------------------------------------------------------------------------------------
# JSON text as Jackson writes it


def to_jackson_json(value: Any) -> str:
    """Compact JSON of dicts, lists, strings, numbers, booleans and None, formatted as Jackson does."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double_to_string(value)
    if isinstance(value, str):
        return _jackson_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_jackson_string(k)}:{to_jackson_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_jackson_json(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _jackson_string(text: str) -> str:
    """Jackson escapes quotes, backslashes and control characters only; the rest is written as is."""
    parts = []
    for char in text:
        if char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif ord(char) < 0x20:
            parts.append(f"\\u{ord(char):04X}")
        else:
            parts.append(char)
    return '"' + "".join(parts) + '"'


def java_double_to_string(number: float) -> str:
    """Java's `Double.toString` (JDK 19+: shortest digits that round-trip, like Python's repr).

    Plain notation for 1e-3 <= |x| < 1e7 ("100.0", "0.001"), otherwise "1.048576E7" / "1.0E-4". Jackson
    quotes the non-finite values ("NaN").
    """
    if math.isnan(number):
        return '"NaN"'
    if math.isinf(number):
        return '"Infinity"' if number > 0 else '"-Infinity"'
    sign = "-" if math.copysign(1.0, number) < 0 else ""
    magnitude = abs(number)
    if magnitude == 0.0:
        return sign + "0.0"
    digits, point = _shortest_digits(magnitude)
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def _shortest_digits(magnitude: float) -> tuple[str, int]:
    """(significant digits, decimal point position) with magnitude = 0.<digits> * 10**point.

    Python's repr gives the shortest digits that round-trip. Java agrees, except that when one digit is
    enough it also considers two digits and keeps the closer decimal (Double.MIN_VALUE prints as 4.9E-324,
    where repr says 5e-324).
    """
    text = repr(magnitude)
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    digits = all_digits.lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(all_digits) - len(digits))
    digits = digits.rstrip("0") or "0"
    if len(digits) == 1:
        return _closer_two_digits(magnitude, digits, point)
    return digits, point


def _closer_two_digits(magnitude: float, digit: str, point: int) -> tuple[str, int]:
    """The two-digit decimal nearest to the exact value, if it also rounds to `magnitude` and is closer."""
    import decimal  # here: only dump-log's rare float fields need it, and a server never renders JSON

    with decimal.localcontext() as context:
        context.prec = 1200  # enough for the exact value of every double
        exact = decimal.Decimal(magnitude)
        lead = exact.adjusted()  # exponent of the leading digit
        two = exact.scaleb(1 - lead).to_integral_value(rounding=decimal.ROUND_HALF_EVEN)
        candidate = two.scaleb(lead - 1)
        one = decimal.Decimal(int(digit)).scaleb(point - 1)
        if 10 <= two <= 99 and float(candidate) == magnitude and abs(candidate - exact) < abs(one - exact):
            return str(int(two)).rstrip("0"), lead + 1
    return digit, point
