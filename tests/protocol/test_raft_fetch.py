"""raft_fetch.py against kio: the direct Fetch v17 encoders write kio's bytes exactly, or step aside (None)."""

from __future__ import annotations

import dataclasses
import datetime
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.fetch.v17 import request as fetch_req
from kio.schema.fetch.v17 import response as fetch_resp
from kio.static.primitive import Records

from pykraft.protocol import raft_fetch
from pykraft.protocol.codec import KEPT_AS_IS, encode_request, encode_response_body
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.framing import FrameBody
from pykraft.raft import messages
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ReplicaKey

from tests.protocol.schema_strategies import message

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
CLIENT_IDS = st.one_of(st.none(), st.text(max_size=20))


def _kio_request(request: object, correlation_id: int, client_id: str | None) -> bytes | type[BaseException]:
    try:
        return encode_request(request, correlation_id=correlation_id, client_id=client_id)[4:]
    except Exception as exc:  # the verdict compared
        return type(exc)


def _kio_response(correlation_id: int, response: object) -> bytes | type[BaseException]:
    try:
        return _flat(encode_response_body(correlation_id, response))
    except Exception as exc:  # the verdict compared
        return type(exc)


def _flat(body: bytes | memoryview | FrameBody) -> bytes:
    if isinstance(body, FrameBody):
        joined = b"".join(bytes(part) for part in body.parts)
        assert len(joined) == body.size
        return joined
    return bytes(body)


def _assert_request_like_kio(request: object, correlation_id: int, client_id: str | None) -> bytes | None:
    direct = raft_fetch.encode_request(request, correlation_id, client_id)
    if direct is not None:
        assert direct == _kio_request(request, correlation_id, client_id)
    return direct


def _assert_response_like_kio(correlation_id: int, response: object) -> bytes | None:
    direct = raft_fetch.encode_response_body(correlation_id, response)
    if direct is None:
        return None
    flat = _flat(direct)
    assert flat == _kio_response(correlation_id, response)
    return flat


# --- the shapes raft sends: always taken by the direct encoder -----------------------------------------------------
@st.composite
def raft_requests(draw: st.DrawFn) -> fetch_req.FetchRequest:
    replica = draw(st.one_of(st.none(), st.builds(ReplicaKey, st.integers(-1, 2**31 - 1),
                                                  st.one_of(st.none(), st.uuids()))))
    return messages.fetch_request(
        draw(st.one_of(st.none(), st.text(max_size=40))), replica, draw(INT32), draw(INT64), draw(INT32),
        draw(INT64), draw(st.integers(0, 2**31 - 1)), draw(INT32))


@st.composite
def raft_responses(draw: st.DrawFn) -> fetch_resp.FetchResponse:
    offsets = st.one_of(st.none(), st.builds(OffsetAndEpoch, INT64, INT32))
    records = draw(st.one_of(st.none(), st.binary(max_size=300), st.binary(max_size=300).map(memoryview)))
    endpoints = draw(st.lists(st.builds(fetch_resp.NodeEndpoint, node_id=INT32, host=st.text(max_size=30),
                                        port=INT32, rack=st.one_of(st.none(), st.text(max_size=10))), max_size=2))
    return messages.fetch_response(
        draw(st.sampled_from(list(ErrorCode))), endpoints=tuple(endpoints), partition_error=draw(st.sampled_from(list(ErrorCode))),
        high_watermark=draw(INT64), log_start=draw(INT64), leader_id=draw(st.one_of(st.none(), INT32)),
        epoch=draw(INT32), diverging=draw(offsets), snapshot_id=draw(offsets), records=records)


@settings(max_examples=300, deadline=None)
@given(raft_requests(), INT32, CLIENT_IDS)
def test_raft_requests_are_encoded_directly_and_exactly(request, correlation_id, client_id):
    assert _assert_request_like_kio(request, correlation_id, client_id) is not None


@settings(max_examples=300, deadline=None)
@given(raft_responses(), INT32)
def test_raft_answers_are_encoded_directly_and_exactly(response, correlation_id):
    assert _assert_response_like_kio(correlation_id, response) is not None


# --- anything kio can hold: the same bytes, or None and kio decides ----------------------------------------------
@settings(max_examples=400, deadline=None)
@given(message(fetch_req.FetchRequest), INT32, CLIENT_IDS)
def test_any_request_is_kios_bytes_or_left_to_kio(request, correlation_id, client_id):
    _assert_request_like_kio(request, correlation_id, client_id)


@settings(max_examples=400, deadline=None)
@given(message(fetch_resp.FetchResponse), INT32)
def test_any_answer_is_kios_bytes_or_left_to_kio(response, correlation_id):
    _assert_response_like_kio(correlation_id, response)


# --- the edges, one by one ---------------------------------------------------------------------------------------
def _request(**changes: object) -> fetch_req.FetchRequest:
    base = messages.fetch_request("cluster", ReplicaKey(2, uuid.uuid4()), 3, 100, 2, 0, 500, 1 << 20)
    return dataclasses.replace(base, **changes)


def _response(**partition_changes: object) -> fetch_resp.FetchResponse:
    base = messages.fetch_response(ErrorCode.NONE, high_watermark=10, log_start=0, leader_id=1, epoch=3,
                                   records=b"batch")
    partition = dataclasses.replace(base.responses[0].partitions[0], **partition_changes)
    topic = dataclasses.replace(base.responses[0], partitions=(partition,))
    return dataclasses.replace(base, responses=(topic,))


@pytest.mark.parametrize("request_", [
    _request(cluster_id=""),  # present (not the default None) though empty
    _request(cluster_id="é" * 70),  # a length needing a two-byte varint
    _request(replica_state=fetch_req.ReplicaState()),  # the default: no tag written
    _request(topics=()),
    _request(max_wait=datetime.timedelta(microseconds=1500)),  # kio rounds to milliseconds
], ids=["empty-cluster-id", "long-cluster-id", "default-replica-state", "no-topics", "sub-millisecond-wait"])
def test_request_edges_are_exact(request_):
    assert _assert_request_like_kio(request_, 7, "client") is not None


@pytest.mark.parametrize("request_", [
    _request(rack_id="rack"),
    _request(forgotten_topics_data=(fetch_req.ForgottenTopic(topic_id=None, partitions=(1,)),)),
    _request(cluster_id=b"bytes"),
    _request(min_bytes=2**31),  # out of int32: kio's error, not ours
    _request(topics=None),
], ids=["rack", "forgotten-topics", "bytes-cluster-id", "int32-overflow", "null-topics"])
def test_request_shapes_outside_the_direct_path_are_left_to_kio(request_):
    assert raft_fetch.encode_request(request_, 7, "client") is None


def test_a_client_id_too_long_for_int16_is_left_to_kio():
    assert raft_fetch.encode_request(_request(), 7, "x" * 40000) is None


@pytest.mark.parametrize("response", [
    _response(aborted_transactions=()),
    _response(records=None),
    _response(records=Records(b"")),
    _response(records=bytearray(b"\x01\x02")),
    _response(records=b"r" * (KEPT_AS_IS + 10)),  # kept a part of its own
    _response(current_leader=fetch_resp.LeaderIdAndEpoch()),  # the default: no tag
    _response(diverging_epoch=fetch_resp.EpochEndOffset(epoch=2, end_offset=5),
              snapshot_id=fetch_resp.SnapshotId(end_offset=9, epoch=1)),
    dataclasses.replace(_response(), node_endpoints=(
        fetch_resp.NodeEndpoint(node_id=1, host="127.0.0.1", port=9092),
        fetch_resp.NodeEndpoint(node_id=2, host="h" * 200, port=-1, rack="rack-é"))),
], ids=["empty-aborted", "null-records", "empty-records", "bytearray-records", "large-records", "default-leader",
        "diverging-and-snapshot", "node-endpoints"])
def test_answer_edges_are_exact(response):
    assert _assert_response_like_kio(11, response) is not None


def test_large_record_batches_are_not_copied_into_the_answer():
    records = b"r" * (KEPT_AS_IS + 10)
    body = raft_fetch.encode_response_body(11, _response(records=records))
    assert isinstance(body, FrameBody)
    assert any(part is records for part in body.parts)


@pytest.mark.parametrize("response", [
    _response(aborted_transactions=(fetch_resp.AbortedTransaction(producer_id=1, first_offset=2),)),
    _response(records="text"),
    _response(high_watermark=2**63),
    dataclasses.replace(_response(), node_endpoints=[]),  # kio writes an empty list (not the default ())
], ids=["aborted-transactions", "str-records", "int64-overflow", "endpoints-list"])
def test_answer_shapes_outside_the_direct_path_are_left_to_kio(response):
    assert raft_fetch.encode_response_body(11, response) is None


def test_other_messages_are_left_to_kio():
    assert raft_fetch.encode_request(messages.fetch_response(ErrorCode.NONE), 1, None) is None
    assert raft_fetch.encode_response_body(1, _request()) is None
