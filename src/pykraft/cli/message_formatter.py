"""How `console-consumer` prints a record: Kafka's DefaultMessageFormatter.

Properties (--property or --formatter-config): print.timestamp (`CreateTime:1700000000000`), print.partition
(`Partition:0`), print.offset (`Offset:5`), print.epoch (`Epoch:3`), print.headers (`h1:v1,h2:v2` or
`NO_HEADERS`), print.key, print.value (true by default), key.separator (a tab: between the columns),
line.separator, headers.separator, null.literal (`null`), and key.deserializer / value.deserializer /
headers.deserializer naming one of Kafka's stock deserializers (String, ByteArray, Bytes, Integer, Long, Short,
Float, Double, UUID, Void). Pure: a record in, bytes out.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping

from pykraft.admin.fetcher import ConsumedRecord

PACKAGE = "org.apache.kafka.common.serialization."
FORMATTERS = {"org.apache.kafka.tools.consumer.DefaultMessageFormatter", "kafka.tools.DefaultMessageFormatter"}


class FormatterError(Exception):
    """A formatter setting that cannot be honoured (`str()` is the line to print)."""


def _number(fmt: str) -> Callable[[bytes], str]:
    size = struct.calcsize(fmt)

    def read(data: bytes) -> str:
        if len(data) != size:
            raise FormatterError(f"Size of data received by the deserializer is not {size}")
        value = struct.unpack(fmt, data)[0]
        return repr(value) if isinstance(value, float) else str(value)

    return read


DESERIALIZERS: dict[str, Callable[[bytes], str] | None] = {
    "StringDeserializer": lambda data: data.decode("utf-8", errors="replace"),
    "ByteArrayDeserializer": None,  # the bytes as they are
    "BytesDeserializer": None,
    "IntegerDeserializer": _number(">i"),
    "LongDeserializer": _number(">q"),
    "ShortDeserializer": _number(">h"),
    "FloatDeserializer": _number(">f"),
    "DoubleDeserializer": _number(">d"),
    "UUIDDeserializer": lambda data: str(uuid.UUID(data.decode("utf-8"))),
    "VoidDeserializer": lambda data: "null",
}


def _deserializer(props: Mapping[str, str], key: str) -> Callable[[bytes], str] | None:
    name = props.get(key)
    if name is None:
        return None
    short = name.removeprefix(PACKAGE)
    if short not in DESERIALIZERS:
        raise FormatterError(f"Unable to instantiate a deserializer from {name}: only Kafka's stock deserializers "
                             f"({', '.join(sorted(DESERIALIZERS))}) are available")
    return DESERIALIZERS[short]


class MessageFormatter:
    def __init__(self, props: Mapping[str, str]) -> None:
        def flag(name: str, default: bool) -> bool:
            return props[name].strip().lower() == "true" if name in props else default

        self.timestamp, self.key, self.offset = flag("print.timestamp", False), flag("print.key", False), \
            flag("print.offset", False)
        self.partition, self.epoch, self.headers = flag("print.partition", False), flag("print.epoch", False), \
            flag("print.headers", False)
        self.value = flag("print.value", True)
        self.key_separator = props.get("key.separator", "\t").encode()
        self.line_separator = props.get("line.separator", "\n").encode()
        self.headers_separator = props.get("headers.separator", ",").encode()
        self.null_literal = props.get("null.literal", "null").encode()
        self.key_reader = _deserializer(props, "key.deserializer")
        self.value_reader = _deserializer(props, "value.deserializer")
        self.headers_reader = _deserializer(props, "headers.deserializer")

    def _bytes(self, data: bytes | None, reader: Callable[[bytes], str] | None) -> bytes:
        raw = data if data is not None else self.null_literal
        return raw if reader is None else reader(raw).encode("utf-8")

    def format(self, record: ConsumedRecord) -> bytes:
        columns: list[bytes] = []
        if self.timestamp:
            columns.append(f"{record.timestamp_type}:{record.timestamp}".encode() if record.timestamp >= 0
                           else b"NO_TIMESTAMP")
        if self.partition:
            columns.append(f"Partition:{record.partition}".encode())
        if self.offset:
            columns.append(f"Offset:{record.offset}".encode())
        if self.epoch:
            columns.append(f"Epoch:{record.leader_epoch}".encode() if record.leader_epoch >= 0
                           else b"Epoch:NOT_PRESENT")
        if self.headers:
            columns.append(self.headers_separator.join(
                k.encode() + b":" + self._bytes(v, self.headers_reader) for k, v in record.headers) or b"NO_HEADERS")
        if self.key:
            columns.append(self._bytes(record.key, self.key_reader))
        if self.value:
            columns.append(self._bytes(record.value, self.value_reader))
        line = self.key_separator.join(columns)
        # Kafka ends a record with the line separator only after the value; without print.value the last column
        # is followed by nothing (its writeSeparator(false) prints the line separator there too).
        return line + self.line_separator if columns else b""
