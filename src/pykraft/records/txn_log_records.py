"""The record keys and values of `__transaction_state` (Kafka's TransactionLogKey / TransactionLogValue).

Each starts with an int16 version. The key is v0 (non-flexible): the transactional id. The value is v0
(non-flexible) or v1 (flexible: compact strings and arrays, tagged fields PreviousProducerId (tag 0),
NextProducerId (tag 1) and ClientTransactionVersion (tag 2)). Kafka writes v1 once transaction.version >= 1 is
finalized (flexible records), v0 before; it reads both, and so do we. A null value is a tombstone (an expired
transactional id). TransactionPartitions is null for an Empty transaction, as Kafka writes it.

Bytes come from a partition log that may be damaged: anything we cannot read raises `TxnRecordError`, never an
IndexError or struct.error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

KEY_VERSION = 0
_TAG_PREVIOUS_PRODUCER_ID, _TAG_NEXT_PRODUCER_ID, _TAG_CLIENT_TXN_VERSION = 0, 1, 2


class TxnRecordError(ValueError):
    """A __transaction_state key or value we cannot read."""


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state_id: int  # TxnState id (broker/txn_state.py)
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None  # by topic; None for Empty
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


# ---- writing -------------------------------------------------------------------------------------------------------
def encode_txn_key(transactional_id: str) -> bytes:
    data = transactional_id.encode()
    return struct.pack(">hh", KEY_VERSION, len(data)) + data


def encode_txn_value(value: TxnLogValue, version: int) -> bytes:
    """TransactionLogValue at `version` (0 or 1)."""
    if version not in (0, 1):
        raise ValueError(f"TransactionLogValue version {version} is not one we write")
    flexible = version >= 1
    out = bytearray(struct.pack(">hq", version, value.producer_id))
    out += struct.pack(">hib", value.producer_epoch, value.timeout_ms, value.state_id)
    parts = value.partitions
    if parts is None:
        out += b"\x00" if flexible else struct.pack(">i", -1)
    else:
        _array_length(out, len(parts), flexible)
        for topic, ids in parts:
            _string(out, topic, flexible)
            _array_length(out, len(ids), flexible)
            for partition in ids:
                out += struct.pack(">i", partition)
            if flexible:
                out += b"\x00"  # the PartitionsSchema struct's (empty) tagged fields
    out += struct.pack(">qq", value.last_update_ms, value.start_ms)
    if flexible:
        tags = []
        if value.previous_producer_id != -1:
            tags.append((_TAG_PREVIOUS_PRODUCER_ID, struct.pack(">q", value.previous_producer_id)))
        if value.next_producer_id != -1:
            tags.append((_TAG_NEXT_PRODUCER_ID, struct.pack(">q", value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append((_TAG_CLIENT_TXN_VERSION, struct.pack(">h", value.client_transaction_version)))
        append_varint_u(out, len(tags))
        for tag, data in tags:
            append_varint_u(out, tag)
            append_varint_u(out, len(data))
            out += data
    return bytes(out)


def append_varint_u(out: bytearray, value: int) -> None:
    """An unsigned varint (Kafka's ByteUtils.writeUnsignedVarint), as flexible messages use for lengths and tags."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _array_length(out: bytearray, length: int, flexible: bool) -> None:
    if flexible:
        append_varint_u(out, length + 1)
    else:
        out += struct.pack(">i", length)


def _string(out: bytearray, text: str, flexible: bool) -> None:
    data = text.encode()
    if flexible:
        append_varint_u(out, len(data) + 1)
    else:
        out += struct.pack(">h", len(data))
    out += data


# ---- reading -------------------------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes | memoryview, what: str) -> None:
        self.data, self.pos, self.what = bytes(data), 0, what

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise TxnRecordError(f"{self.what} is truncated at byte {self.pos}")
        value: int = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise TxnRecordError(f"{self.what} has a bad varint at byte {self.pos}")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise TxnRecordError(f"{self.what} is truncated at byte {self.pos}")
        self.pos, start = self.pos + length, self.pos
        return self.data[start:self.pos]

    def string(self, flexible: bool) -> str:
        length = self.uvarint() - 1 if flexible else self.take(">h")
        if length < 0:
            raise TxnRecordError(f"{self.what}: a null string where one is required")
        try:
            return self.raw(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TxnRecordError(f"{self.what}: a string is not UTF-8 ({exc})") from None

    def array_length(self, flexible: bool) -> int:
        length = self.uvarint() - 1 if flexible else self.take(">i")
        if length > len(self.data):  # every element takes at least a byte
            raise TxnRecordError(f"{self.what}: array length {length} is impossible")
        return length

    def tags(self) -> dict[int, bytes]:
        found = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            found[tag] = self.raw(self.uvarint())
        return found

    def end(self) -> None:
        if self.pos != len(self.data):
            raise TxnRecordError(f"{self.what} has {len(self.data) - self.pos} bytes after its fields")


def decode_txn_key(data: bytes | memoryview) -> str:
    """The transactional id of a key; TxnRecordError for another version (Kafka skips such keys with a warning)."""
    reader = _Reader(data, "TransactionLogKey")
    version = reader.take(">h")
    if version != KEY_VERSION:
        raise TxnRecordError(f"TransactionLogKey version {version} is not one we read")
    transactional_id = reader.string(False)
    reader.end()
    return transactional_id


def decode_txn_value(data: bytes | memoryview) -> TxnLogValue:
    reader = _Reader(data, "TransactionLogValue")
    version = reader.take(">h")
    if version not in (0, 1):
        raise TxnRecordError(f"TransactionLogValue version {version} is not one we read")
    flexible = version >= 1
    producer_id, epoch = reader.take(">q"), reader.take(">h")
    timeout, state = reader.take(">i"), reader.take(">b")
    count = reader.array_length(flexible)
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    if count >= 0:
        found = []
        for _ in range(count):
            topic = reader.string(flexible)
            ids = tuple(reader.take(">i") for _ in range(max(reader.array_length(flexible), 0)))
            if flexible:
                reader.tags()
            found.append((topic, ids))
        partitions = tuple(found)
    last_update, start = reader.take(">q"), reader.take(">q")
    tags = reader.tags() if flexible else {}
    reader.end()
    return TxnLogValue(producer_id, epoch, timeout, state, partitions, last_update, start,
                       _tag_int(tags, _TAG_PREVIOUS_PRODUCER_ID, ">q", -1),
                       _tag_int(tags, _TAG_NEXT_PRODUCER_ID, ">q", -1),
                       _tag_int(tags, _TAG_CLIENT_TXN_VERSION, ">h", 0))


def _tag_int(tags: dict[int, bytes], tag: int, fmt: str, default: int) -> int:
    data = tags.get(tag)
    if data is None:
        return default
    if len(data) != struct.calcsize(fmt):
        raise TxnRecordError(f"TransactionLogValue tagged field {tag} has {len(data)} bytes")
    value: int = struct.unpack(fmt, data)[0]
    return value


__all__ = ["TxnLogValue", "TxnRecordError", "decode_txn_key", "decode_txn_value", "encode_txn_key",
           "encode_txn_value"]
