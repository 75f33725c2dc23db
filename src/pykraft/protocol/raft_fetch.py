"""A direct encoder for raft's own Fetch v17 (the version the core speaks between voters, protocol/core_versions.py):
the FetchRequest a follower sends and the FetchResponse a leader answers, each a few struct calls instead of kio's
generic Python writer (measured idle: 27 -> 3 us for the request, 25 -> 6 us for an answer with one batch). On the
commit path every committed record crosses both.

Exactness is the contract: the output is byte-identical to kio's (codec.encode_request / encode_response_body).
Each function handles the shape raft sends (with the leader's `node_endpoints`, as every raft answer carries) and
returns None for anything else (aborted transactions, forgotten topics, a rack id in a request, a subclass, a value
struct cannot pack...); the caller then
uses kio, which gives its usual bytes or error. So this never writes different bytes, only sooner
(tests/protocol/test_raft_fetch.py checks it against kio).

The decoding side stays kio's: its native reader already builds a FetchRequest in ~2.5 us and a FetchResponse in
~7 us with the guard walk (measured), and a Python decoder building the same dataclasses was no faster.
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
import uuid
from typing import Any

from kio.schema.fetch.v17 import request as fetch_req
from kio.schema.fetch.v17 import response as fetch_resp

from pykraft.protocol.codec import response_body
from pykraft.protocol.framing import FrameBody
from pykraft.protocol.wire_check import uvarint_bytes

__all__ = ["encode_request", "encode_response_body", "millis", "uvarint"]

FETCH_KEY, VERSION = 1, 17
_ZERO_UUID = bytes(16)
_IDS = struct.Struct(">hhi")  # request header: api key, api version, correlation id
_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")
_REQUEST_FIXED = struct.Struct(">iiibii")  # max_wait, min_bytes, max_bytes, isolation_level, session id, epoch
_FETCH_PARTITION = struct.Struct(">iiqiqi")  # partition, current_leader_epoch, fetch_offset, last_fetched_epoch, ...
_REPLICA_STATE = struct.Struct(">iqB")  # replica_id, replica_epoch, empty tag section
_RESPONSE_TOP = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PARTITION_DATA = struct.Struct(">ihqqq")  # partition_index, error_code, high_watermark, last_stable, log_start
_EPOCH_END = struct.Struct(">iqB")  # diverging_epoch: epoch, end_offset, empty tag section
_LEADER = struct.Struct(">iiB")  # current_leader: leader_id, leader_epoch, empty tag section
_SNAPSHOT_ID = struct.Struct(">qiB")  # snapshot_id: end_offset, epoch, empty tag section


def _defaults(entity_type: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(entity_type) if f.default is not dataclasses.MISSING}


_REQUEST_DEFAULTS = _defaults(fetch_req.FetchRequest)
_PARTITION_DEFAULTS = _defaults(fetch_resp.PartitionData)


class _NotThisShape(Exception):
    """Inside an encoder: the message is not the shape handled here (the caller falls back to kio)."""


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint; one byte for the small values these messages hold."""
    return bytes((value,)) if 0 <= value < 0x80 else uvarint_bytes(value)


def _uuid_bytes(value: uuid.UUID | None) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def millis(value: datetime.timedelta) -> int:
    return round(value.total_seconds() * 1000)  # what kio's timedelta_i32 writer does


# --- the follower: encode its FetchRequest ----------------------------------------------------------------------
def encode_request(message: Any, correlation_id: int, client_id: str | None) -> bytes | None:
    """The request frame body (header v2 + body, no size prefix) exactly as codec.encode_request writes it, or
    None when `message` is not a v17 FetchRequest of the shape handled here."""
    if type(message) is not fetch_req.FetchRequest:
        return None
    try:
        if client_id is None:
            header = _IDS.pack(FETCH_KEY, VERSION, correlation_id) + b"\xff\xff\x00"
        else:
            name = client_id.encode()
            header = _IDS.pack(FETCH_KEY, VERSION, correlation_id) + _INT16.pack(len(name)) + name + b"\x00"
        body = _request_body(message)
    except (struct.error, AttributeError, TypeError, ValueError, OverflowError, _NotThisShape):
        return None
    return header + body


def _request_body(message: fetch_req.FetchRequest) -> bytes:
    if message.forgotten_topics_data != () or message.rack_id != "":
        raise _NotThisShape
    out = [_REQUEST_FIXED.pack(millis(message.max_wait), message.min_bytes, message.max_bytes,
                               message.isolation_level, message.session_id, message.session_epoch),
           uvarint(len(message.topics) + 1)]
    for topic in message.topics:
        if type(topic) is not fetch_req.FetchTopic:
            raise _NotThisShape
        out += (_uuid_bytes(topic.topic_id), uvarint(len(topic.partitions) + 1))
        for partition in topic.partitions:
            if type(partition) is not fetch_req.FetchPartition:
                raise _NotThisShape
            out.append(_FETCH_PARTITION.pack(
                partition.partition, partition.current_leader_epoch, partition.fetch_offset,
                partition.last_fetched_epoch, partition.log_start_offset, partition.partition_max_bytes))
            directory = partition.replica_directory_id
            out.append(b"\x00" if directory is None else b"\x01\x00\x10" + directory.bytes)
        out.append(b"\x00")  # the topic's tag section
    out.append(b"\x01\x01")  # forgotten_topics_data: empty; rack_id: ""
    out.append(_request_tags(message))
    return b"".join(out)


def _request_tags(message: fetch_req.FetchRequest) -> bytes:
    tags = []
    if message.cluster_id != _REQUEST_DEFAULTS["cluster_id"]:
        if type(message.cluster_id) is not str:
            raise _NotThisShape
        name = message.cluster_id.encode()
        value = uvarint(len(name) + 1) + name
        tags.append(b"\x00" + uvarint(len(value)) + value)
    state = message.replica_state
    if state != _REQUEST_DEFAULTS["replica_state"]:
        if type(state) is not fetch_req.ReplicaState:
            raise _NotThisShape
        tags.append(b"\x01" + uvarint(_REPLICA_STATE.size) + _REPLICA_STATE.pack(state.replica_id,
                                                                                   state.replica_epoch, 0))
    return uvarint(len(tags)) + b"".join(tags)


# --- the leader: encode its FetchResponse -----------------------------------------------------------------------
def encode_response_body(correlation_id: int, message: Any) -> memoryview | FrameBody | None:
    """The response frame body (header v1 + body, no size prefix) with the bytes codec.encode_response_body
    writes, joined as there (`codec.response_body`), or None when `message` is not a v17 FetchResponse of the
    shape handled here."""
    if type(message) is not fetch_resp.FetchResponse:
        return None
    try:
        parts: list[Any] = [_INT32.pack(correlation_id) + b"\x00" + _RESPONSE_TOP.pack(
            millis(message.throttle_time), message.error_code.value, message.session_id)
            + uvarint(len(message.responses) + 1)]
        for topic in message.responses:
            if type(topic) is not fetch_resp.FetchableTopicResponse:
                return None
            parts.append(_uuid_bytes(topic.topic_id) + uvarint(len(topic.partitions) + 1))
            for partition in topic.partitions:
                _partition_data(partition, parts)
            parts.append(b"\x00")  # the topic's tag section
        parts.append(_node_endpoints_tag(message.node_endpoints))
    except (struct.error, AttributeError, TypeError, ValueError, OverflowError, _NotThisShape):
        return None
    return response_body(parts)


def _node_endpoints_tag(endpoints: Any) -> bytes:
    """The response's tag section: tag 0, the leader's endpoints (a raft answer names them), unless empty."""
    if type(endpoints) is not tuple:
        raise _NotThisShape
    if not endpoints:
        return b"\x00"
    value = [uvarint(len(endpoints) + 1)]
    for endpoint in endpoints:
        if type(endpoint) is not fetch_resp.NodeEndpoint or type(endpoint.host) is not str:
            raise _NotThisShape
        host = endpoint.host.encode()
        value += (_INT32.pack(endpoint.node_id), uvarint(len(host) + 1), host, _INT32.pack(endpoint.port))
        rack = endpoint.rack
        if rack is None:
            value.append(b"\x00\x00")  # null rack, empty tag section
        elif type(rack) is str:
            encoded = rack.encode()
            value += (uvarint(len(encoded) + 1), encoded, b"\x00")
        else:
            raise _NotThisShape
    joined = b"".join(value)
    return b"\x01\x00" + uvarint(len(joined)) + joined


def _partition_data(partition: Any, parts: list[Any]) -> None:
    if type(partition) is not fetch_resp.PartitionData:
        raise _NotThisShape
    aborted = partition.aborted_transactions
    if aborted is not None and aborted != ():
        raise _NotThisShape
    head = _PARTITION_DATA.pack(partition.partition_index, partition.error_code.value, partition.high_watermark,
                                partition.last_stable_offset, partition.log_start_offset)
    head += (b"\x00" if aborted is None else b"\x01") + _INT32.pack(partition.preferred_read_replica)
    records = partition.records
    if records is None:
        parts.append(head + b"\x00")
    elif isinstance(records, bytes | bytearray | memoryview):
        parts.append(head + uvarint(len(records) + 1))
        parts.append(records)
    else:
        raise _NotThisShape
    parts.append(_partition_tags(partition))


def _partition_tags(partition: fetch_resp.PartitionData) -> bytes:
    """Tags 0-2 in order, each written unless it equals its default (kio's rule)."""
    tags = []
    diverging, leader, snapshot = partition.diverging_epoch, partition.current_leader, partition.snapshot_id
    if diverging != _PARTITION_DEFAULTS["diverging_epoch"]:
        if type(diverging) is not fetch_resp.EpochEndOffset:
            raise _NotThisShape
        tags.append(b"\x00" + uvarint(_EPOCH_END.size) + _EPOCH_END.pack(diverging.epoch, diverging.end_offset, 0))
    if leader != _PARTITION_DEFAULTS["current_leader"]:
        if type(leader) is not fetch_resp.LeaderIdAndEpoch:
            raise _NotThisShape
        tags.append(b"\x01" + uvarint(_LEADER.size) + _LEADER.pack(leader.leader_id, leader.leader_epoch, 0))
    if snapshot != _PARTITION_DEFAULTS["snapshot_id"]:
        if type(snapshot) is not fetch_resp.SnapshotId:
            raise _NotThisShape
        tags.append(b"\x02" + uvarint(_SNAPSHOT_ID.size) + _SNAPSHOT_ID.pack(snapshot.end_offset, snapshot.epoch, 0))
    return bytes((len(tags),)) + b"".join(tags)
