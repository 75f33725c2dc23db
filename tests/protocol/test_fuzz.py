"""Fuzzing: whatever bytes a peer sends, the decoders return a documented value or raise a ProtocolError.

Anything else escaping (KeyError, struct.error, UnicodeDecodeError, ...) fails these tests; a process
abort inside kio would kill the test run, which is why wire_check.py exists.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey
from pykraft.protocol.codec import (
    DecodedRequest,
    DecodedResponse,
    RequestDecodeFailure,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.protocol.errors import ProtocolError
from pykraft.protocol.frame_reader import FrameReader

from .helpers import REGISTRY_PAIRS, REQUEST_CLASSES, RESPONSE_CLASSES, mutated, receive, unframe

FUZZ = settings(max_examples=400, suppress_health_check=list(HealthCheck), deadline=None)
PRE_VOTE_LESS = KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 1)


def check_request(frame: bytes) -> None:
    for registry in (KRAFT_NODE_APIS, PRE_VOTE_LESS):
        try:
            result = decode_request(frame, registry)
        except ProtocolError:
            continue
        assert isinstance(result, DecodedRequest | RequestDecodeFailure)
        if isinstance(result, RequestDecodeFailure):
            # The answer we would send must itself be a well-formed frame.
            assert len(receive(FrameReader(), result.response)) == 1


def check_response(frame: bytes, api_key: int, version: int) -> None:
    try:
        result = decode_response(frame, api_key, version)
    except ProtocolError:
        return
    assert isinstance(result, DecodedResponse)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_as_a_request(frame: bytes) -> None:
    check_request(frame)


@FUZZ
@given(
    key_version=st.sampled_from(REGISTRY_PAIRS),
    rest=st.binary(max_size=120),
    correlation=st.binary(min_size=4, max_size=4),
)
def test_random_bodies_behind_valid_ids(key_version: tuple[int, int], rest: bytes, correlation: bytes) -> None:
    key, version = key_version
    check_request(key.to_bytes(2, "big") + version.to_bytes(2, "big") + correlation + rest)


@FUZZ
@given(data=st.data(), cls=st.sampled_from(REQUEST_CLASSES))
def test_mutated_valid_requests(data: st.DataObject, cls: type) -> None:
    message = data.draw(st.from_type(cls))
    frame = bytes(unframe(encode_request(message, correlation_id=5, client_id="fuzz")))
    check_request(data.draw(mutated(frame)))


@FUZZ
@given(data=st.data(), cls=st.sampled_from(RESPONSE_CLASSES))
def test_mutated_valid_responses(data: st.DataObject, cls: type) -> None:
    message = data.draw(st.from_type(cls))
    frame = bytes(unframe(encode_response(5, message)))
    check_response(data.draw(mutated(frame)), cls.__api_key__, cls.__version__)


@FUZZ
@given(data=st.data(), cls=st.sampled_from(REQUEST_CLASSES), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_mutated_streams_through_the_frame_reader(data: st.DataObject, cls: type, cuts: list[int]) -> None:
    frame = encode_request(data.draw(st.from_type(cls)), correlation_id=1, client_id=None)
    stream = data.draw(mutated(frame + frame))
    reader = FrameReader(max_frame_size=4096)
    points = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    try:
        for start, stop in zip(points, points[1:]):
            for body in receive(reader, stream[start:stop]):
                check_request(bytes(body))
    except ProtocolError:
        pass
