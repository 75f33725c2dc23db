"""Request/response codec: round trips of every registered message, header versions, unsupported versions,
and malformed input (always a documented ProtocolError with whatever ids are known)."""

from __future__ import annotations

import dataclasses

import datetime
import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.describe_quorum.v2 import request as dq_request
from kio.schema.fetch.v17 import request as fetch_request
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.schema.vote.v2 import request as vote_request
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from pykraft.protocol import headers
from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey, request_class, response_class
from pykraft.protocol.codec import (
    DecodedRequest,
    RequestDecodeFailure,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import (
    ErrorCode,
    MalformedRequestError,
    MalformedResponseError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)

from .helpers import REQUEST_CLASSES, RESPONSE_CLASSES, class_id, request_frame_body, unframe

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID ("AAAAAAAAAAAAAAAAAAAAAQ")


def vote_v2() -> vote_request.VoteRequest:
    partition = vote_request.PartitionData(
        partition_index=i32(0), replica_epoch=i32(7), replica_id=i32(2), replica_directory_id=uuid.uuid4(),
        voter_directory_id=uuid.uuid4(), last_offset_epoch=i32(6), last_offset=i64(1234), pre_vote=True,
    )  # fmt: skip
    topic = vote_request.TopicData(topic_name="__cluster_metadata", partitions=(partition,))
    return vote_request.VoteRequest(cluster_id="I4ZmrWqfT2e-upky_4fdPA", voter_id=i32(1), topics=(topic,))


def fetch_v17() -> fetch_request.FetchRequest:
    partition = fetch_request.FetchPartition(
        partition=i32(0), current_leader_epoch=i32(7), fetch_offset=i64(1000), last_fetched_epoch=i32(6),
        log_start_offset=i64(-1), partition_max_bytes=i32(8 << 20), replica_directory_id=uuid.uuid4(),
    )  # fmt: skip
    topic = fetch_request.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,))
    return fetch_request.FetchRequest(
        cluster_id="I4ZmrWqfT2e-upky_4fdPA",
        replica_state=fetch_request.ReplicaState(replica_id=i32(2), replica_epoch=i64(-1)),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
        min_bytes=i32(0), max_bytes=i32(8 << 20), isolation_level=i8(0), session_id=i32(0),
        session_epoch=i32(-1), topics=(topic,), forgotten_topics_data=(), rack_id="",
    )  # fmt: skip


def describe_quorum_v2() -> dq_request.DescribeQuorumRequest:
    partition = dq_request.PartitionData(partition_index=i32(0))
    return dq_request.DescribeQuorumRequest(
        topics=(dq_request.TopicData(topic_name="__cluster_metadata", partitions=(partition,)),)
    )


@pytest.mark.parametrize("message", [vote_v2(), fetch_v17(), describe_quorum_v2()], ids=lambda m: class_id(type(m)))
def test_real_requests_round_trip(message) -> None:
    frame = encode_request(message, correlation_id=99, client_id="raft-client-1")
    decoded = decode_request(unframe(frame), KRAFT_NODE_APIS)
    assert isinstance(decoded, DecodedRequest)
    assert decoded.message == message
    assert (decoded.api_key, decoded.api_version) == (message.__api_key__, message.__version__)
    assert (decoded.correlation_id, decoded.client_id) == (99, "raft-client-1")


@pytest.mark.parametrize(
    ("api_key", "version", "header_class"),
    [(ApiKey.API_VERSIONS, 2, RequestHeaderV1), (ApiKey.API_VERSIONS, 3, RequestHeaderV2),
     (ApiKey.API_VERSIONS, 99, RequestHeaderV2), (ApiKey.METADATA, 8, RequestHeaderV1),
     (ApiKey.METADATA, 9, RequestHeaderV2), (ApiKey.VOTE, 0, RequestHeaderV2), (ApiKey.FETCH, 17, RequestHeaderV2)],
)  # fmt: skip
def test_request_header_version_follows_the_schema(api_key: int, version: int, header_class: type) -> None:
    assert headers.request_header_class(api_key, version) is header_class


def test_response_header_versions() -> None:
    assert headers.response_header_class(ApiKey.API_VERSIONS, 4) is ResponseHeaderV0
    assert headers.response_header_class(ApiKey.METADATA, 8) is ResponseHeaderV0
    assert headers.response_header_class(ApiKey.METADATA, 9) is ResponseHeaderV1
    assert headers.response_header_class(ApiKey.DESCRIBE_QUORUM, 0) is ResponseHeaderV1


@pytest.mark.parametrize("client_id", [None, "", "ünïcode-client", "x" * 300])
@pytest.mark.parametrize("header_class", [RequestHeaderV1, RequestHeaderV2])
def test_request_headers_round_trip(header_class: type, client_id: str | None) -> None:
    header = header_class(request_api_key=i16(55), request_api_version=i16(1), correlation_id=i32(-7),
                          client_id=client_id)  # fmt: skip
    raw = headers.encode_request_header(header)
    # client_id is a legacy int16-length string in both versions; v2 only adds the tag section byte.
    length = -1 if client_id is None else len(client_id.encode())
    assert raw[8:10] == struct.pack(">h", length)
    assert len(raw) == 10 + max(length, 0) + (header_class is RequestHeaderV2)
    assert headers.decode_request_header(memoryview(raw), header_class) == (header, len(raw))


@pytest.mark.parametrize("header_class", [ResponseHeaderV0, ResponseHeaderV1])
def test_response_headers_round_trip(header_class: type) -> None:
    raw = headers.encode_response_header(-2, header_class)
    assert raw[:4] == struct.pack(">i", -2) and len(raw) == 4 + (header_class is ResponseHeaderV1)
    assert headers.decode_response_header(memoryview(raw), header_class) == (-2, len(raw))


def test_null_client_id_reads_as_empty_like_kafka() -> None:
    decoded = decode_request(unframe(encode_request(vote_v2(), correlation_id=1, client_id=None)), KRAFT_NODE_APIS)
    assert decoded.header.client_id is None and decoded.client_id == ""


@pytest.mark.parametrize("cls", REQUEST_CLASSES, ids=class_id)
@settings(max_examples=10, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_every_registered_request_round_trips(cls: type, data: st.DataObject, correlation_id: int) -> None:
    message = data.draw(st.from_type(cls))
    decoded = decode_request(unframe(encode_request(message, correlation_id=correlation_id, client_id="t")),
                             KRAFT_NODE_APIS)  # fmt: skip
    assert isinstance(decoded, DecodedRequest)
    assert (decoded.message, decoded.correlation_id) == (message, correlation_id)


@pytest.mark.parametrize("cls", RESPONSE_CLASSES, ids=class_id)
@settings(max_examples=10, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_every_registered_response_round_trips(cls: type, data: st.DataObject, correlation_id: int) -> None:
    message = data.draw(st.from_type(cls))
    if cls.__api_key__ == ApiKey.API_VERSIONS and message.error_code == ErrorCode.UNSUPPORTED_VERSION:
        message = dataclasses.replace(message, error_code=ErrorCode.NONE)  # that code means "v0 body"
    decoded = decode_response(unframe(encode_response(correlation_id, message)), cls.__api_key__, cls.__version__)
    assert (decoded.message, decoded.correlation_id, decoded.api_version) == (message, correlation_id,
                                                                              cls.__version__)  # fmt: skip


# --- versions and keys the node does not serve -------------------------------------------------------


def test_vote_v2_to_a_node_without_pre_vote_gets_unsupported_version_of_vote_v2() -> None:
    registry = KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 1)
    result = decode_request(unframe(encode_request(vote_v2(), correlation_id=31, client_id="c")), registry)
    assert isinstance(result, RequestDecodeFailure)
    assert (result.api_key, result.api_version, result.correlation_id) == (52, 2, 31)
    answer = decode_response(unframe(result.response), ApiKey.VOTE, 2)
    assert answer.correlation_id == 31
    assert answer.message.error_code == ErrorCode.UNSUPPORTED_VERSION  # the pre-vote fallback trigger
    assert answer.message.topics == ()


def test_unknown_api_key_closes_the_connection() -> None:
    frame = request_frame_body(0, 9, 17, b"\xff\xff")  # Produce v9
    with pytest.raises(UnknownApiKeyError) as info:
        decode_request(frame, KRAFT_NODE_APIS)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (0, 9, 17)


def test_api_removed_from_the_registry_is_unknown() -> None:
    frame = unframe(encode_request(describe_quorum_v2(), correlation_id=3, client_id=None))
    with pytest.raises(UnknownApiKeyError):
        decode_request(frame, KRAFT_NODE_APIS.without(ApiKey.DESCRIBE_QUORUM))


def test_version_kio_does_not_know_closes_the_connection() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(request_frame_body(ApiKey.VOTE, 9, 4, b"\xff\xff\x00"), KRAFT_NODE_APIS)
    assert not isinstance(info.value, UnknownApiKeyError)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (52, 9, 4)


def test_unsupported_version_without_top_level_error_code_closes_the_connection() -> None:
    # Metadata v1-12 responses have no top-level ErrorCode, so "unsupported" cannot be said in one.
    registry = KRAFT_NODE_APIS.with_range(ApiKey.METADATA, 0, 5)
    message = request_class(ApiKey.METADATA, 7)(topics=None, allow_auto_topic_creation=True)
    with pytest.raises(UnsupportedVersionError):
        decode_request(unframe(encode_request(message, correlation_id=8, client_id="c")), registry)


def test_metadata_v13_beyond_the_registry_is_answered() -> None:
    message = request_class(ApiKey.METADATA, 13)(topics=None, allow_auto_topic_creation=False,
                                                 include_topic_authorized_operations=False)  # fmt: skip
    result = decode_request(unframe(encode_request(message, correlation_id=8, client_id="c")), KRAFT_NODE_APIS)
    assert isinstance(result, RequestDecodeFailure)
    assert decode_response(unframe(result.response), ApiKey.METADATA, 13).message.error_code == 35


# --- malformed requests -------------------------------------------------------------------------------


def test_frame_shorter_than_the_ids_has_no_ids() -> None:
    with pytest.raises(MalformedRequestError) as info:
        decode_request(b"\x00\x34\x00", KRAFT_NODE_APIS)
    assert (info.value.api_key, info.value.correlation_id) == (None, None)


def test_truncated_body_reports_the_ids() -> None:
    frame = bytes(unframe(encode_request(vote_v2(), correlation_id=12, client_id="c")))
    with pytest.raises(MalformedRequestError) as info:
        decode_request(frame[:-3], KRAFT_NODE_APIS)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (52, 2, 12)


def test_trailing_bytes_after_a_request_body_are_ignored_as_kafka_does() -> None:
    # librdkafka 2.x sends Metadata v9+ with 3 bytes more than the schema (its issue 5049); Kafka reads the body
    # and ignores the rest, so must we.
    request = vote_v2()
    frame = bytes(unframe(encode_request(request, correlation_id=12, client_id="c")))
    decoded = decode_request(frame + b"\x00\xff\xff", KRAFT_NODE_APIS)
    assert isinstance(decoded, DecodedRequest)
    assert decoded.message == request



def test_invalid_utf8_client_id_is_malformed() -> None:
    frame = request_frame_body(ApiKey.DESCRIBE_QUORUM, 2, 5, b"\x00\x02\xff\xfe\x00\x01\x00")
    with pytest.raises(MalformedRequestError, match="header"):
        decode_request(frame, KRAFT_NODE_APIS)


def test_unknown_error_code_in_a_response_is_malformed() -> None:
    body = unframe(encode_response(4, error_response_for((ApiKey.VOTE, 2), ErrorCode.NONE)))
    corrupt = bytearray(body)
    struct.pack_into(">h", corrupt, 5, 30000)  # after correlation id (4) and the header tag byte (1)
    with pytest.raises(MalformedResponseError, match="ErrorCode") as info:
        decode_response(bytes(corrupt), ApiKey.VOTE, 2)
    assert info.value.correlation_id == 4


def test_response_with_trailing_bytes_is_malformed() -> None:
    body = bytes(unframe(encode_response(4, error_response_for((ApiKey.VOTE, 2), ErrorCode.NONE))))
    with pytest.raises(MalformedResponseError, match="trailing"):
        decode_response(body + b"\x00", ApiKey.VOTE, 2)


def test_response_to_an_unknown_version_cannot_be_decoded() -> None:
    with pytest.raises(UnsupportedVersionError):
        decode_response(b"\x00\x00\x00\x01\x00", ApiKey.VOTE, 9)


def test_response_class_lookups_match_kio() -> None:
    assert response_class(ApiKey.VOTE, 2).__name__ == "VoteResponse"
    assert request_class(ApiKey.FETCH, 18).__version__ == 18


def test_a_writable_frame_decodes_like_a_read_only_one() -> None:
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    message = ApiVersionsRequest(client_software_name="pykraft", client_software_version="1")
    frame = unframe(encode_request(message, correlation_id=7, client_id="t"))
    for buffer in (bytes(frame), bytearray(frame), memoryview(bytearray(frame))):
        decoded = decode_request(buffer, KRAFT_NODE_APIS)
        assert isinstance(decoded, DecodedRequest) and decoded.message == message


def test_response_body_keeps_large_record_batches_uncopied_and_matches_the_frame() -> None:
    """The server writes a Fetch answer's batches from the buffer they were read into: the body's parts hold that
    buffer itself, and prefix + parts are byte for byte the frame `encode_response` builds."""
    import datetime
    import uuid

    from kio.schema.fetch.v17.response import FetchableTopicResponse, FetchResponse, PartitionData
    from kio.schema.errors import ErrorCode as KioErrorCode
    from kio.static.primitive import i32Timedelta, i64

    from pykraft.protocol.codec import encode_response, encode_response_body
    from pykraft.protocol.framing import FrameBody

    def answer(records: object) -> FetchResponse:
        partition = PartitionData(partition_index=0, error_code=KioErrorCode.none, high_watermark=i64(5),
                                  last_stable_offset=i64(5), log_start_offset=i64(0), aborted_transactions=(),
                                  preferred_read_replica=-1, records=records)
        return FetchResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=KioErrorCode.none,
                             session_id=0, responses=(FetchableTopicResponse(topic_id=uuid.uuid4(),
                                                                             partitions=(partition,)),))

    records = memoryview(bytes(range(256)) * 1024).toreadonly()  # 256 KiB
    big = answer(records)
    body = encode_response_body(9, big)
    assert isinstance(body, FrameBody)
    assert any(part is records for part in body.parts)
    assert body.size == sum(memoryview(p).nbytes for p in body.parts)
    assert b"".join(body.parts) == encode_response(9, big)[4:]
    small = answer(b"tiny")
    assert bytes(encode_response_body(9, small)) == encode_response(9, small)[4:]
