"""ApiVersions: responses list exactly the registry, features follow Kafka's per-version rules, unknown
versions get the v0 UNSUPPORTED_VERSION answer with header v0, bad client software gets INVALID_REQUEST."""

from __future__ import annotations

import struct

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsRequestV4

from pykraft.protocol.api_versions import (
    api_versions_response,
    invalid_api_versions_response,
    is_valid_api_versions_request,
)
from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey, VersionRange, request_class
from pykraft.protocol.codec import (
    DecodedRequest,
    RequestDecodeFailure,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.protocol.errors import ErrorCode

from .helpers import unframe

SUPPORTED = {"kraft.version": VersionRange(0, 1), "metadata.version": VersionRange(7, 27)}
FINALIZED = {"metadata.version": 27, "kraft.version": 0}


def build(version: int, registry=KRAFT_NODE_APIS):
    return api_versions_response(
        registry, version, supported_features=SUPPORTED, finalized_features=FINALIZED, finalized_features_epoch=42
    )


def listed(response) -> dict[int, tuple[int, int]]:
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


@pytest.mark.parametrize("version", range(5))
def test_response_lists_exactly_the_registry(version: int) -> None:
    response = build(version)
    assert response.error_code == ErrorCode.NONE
    assert listed(response) == {int(k): (r.min_version, r.max_version) for k, r in KRAFT_NODE_APIS}
    assert [int(k.api_key) for k in response.api_keys] == sorted(int(k) for k in KRAFT_NODE_APIS.api_keys)


def test_a_node_without_pre_vote_advertises_vote_0_to_1() -> None:
    response = build(4, KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 1))
    assert listed(response)[ApiKey.VOTE] == (0, 1)


def test_v4_lists_all_supported_features_and_finalized_levels() -> None:
    response = build(4)
    assert {(f.name, f.min_version, f.max_version) for f in response.supported_features} == {
        ("kraft.version", 0, 1),
        ("metadata.version", 7, 27),
    }
    # Level 0 is omitted; a level is reported as min = max.
    assert [(f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features] == [
        ("metadata.version", 27, 27)
    ]
    assert response.finalized_features_epoch == 42


def test_v3_omits_supported_features_with_minimum_zero() -> None:
    response = build(3)
    assert [f.name for f in response.supported_features] == ["metadata.version"]  # KAFKA-17492


@pytest.mark.parametrize("version", [0, 1, 2])
def test_versions_before_3_have_no_feature_fields(version: int) -> None:
    response = build(version)
    assert not hasattr(response, "supported_features")
    assert hasattr(response, "throttle_time") == (version >= 1)


@pytest.mark.parametrize("version", range(5))
def test_responses_use_header_v0_and_round_trip(version: int) -> None:
    response = build(version)
    frame = encode_response(77, response)
    body = unframe(frame)
    # Header v0 is the bare correlation id: the error code follows it directly, with no tag byte,
    # even at the flexible versions 3 and 4.
    assert struct.unpack_from(">ih", body) == (77, 0)
    decoded = decode_response(body, ApiKey.API_VERSIONS, version)
    assert (decoded.correlation_id, decoded.api_version, decoded.message) == (77, version, response)


def _api_versions_request_frame(version: int, correlation_id: int = 5) -> bytes:
    if version >= 3:
        message = request_class(ApiKey.API_VERSIONS, version)(client_software_name="x", client_software_version="1")
    else:
        message = request_class(ApiKey.API_VERSIONS, version)()
    return encode_request(message, correlation_id=correlation_id, client_id="c")


def test_unknown_version_gets_v0_unsupported_version_with_header_v0() -> None:
    frame = bytearray(unframe(_api_versions_request_frame(4, correlation_id=1234)))
    struct.pack_into(">h", frame, 2, 99)  # claim ApiVersions v99; the body is never read
    frame += b"future fields we cannot parse"
    result = decode_request(bytes(frame), KRAFT_NODE_APIS)
    assert isinstance(result, RequestDecodeFailure)
    assert (result.api_key, result.api_version, result.correlation_id) == (18, 99, 1234)
    assert result.error_code is ErrorCode.UNSUPPORTED_VERSION
    body = unframe(result.response)
    # v0 layout: correlation id | error int16 | ApiKeys int32 count | (key, min, max) int16s.
    assert bytes(body) == struct.pack(">ihihhh", 1234, 35, 1, 18, 0, 4)


def test_unknown_version_answer_reflects_the_registry() -> None:
    registry = KRAFT_NODE_APIS.with_range(ApiKey.API_VERSIONS, 0, 2)
    result = decode_request(unframe(_api_versions_request_frame(3)), registry)
    assert isinstance(result, RequestDecodeFailure)
    decoded = decode_response(unframe(result.response), ApiKey.API_VERSIONS, 3)
    assert decoded.api_version == 0  # the client reads it as v0, as Kafka's client does
    assert listed(decoded.message) == {18: (0, 2)}


@pytest.mark.parametrize("version", range(5))
def test_supported_versions_decode_normally(version: int) -> None:
    result = decode_request(unframe(_api_versions_request_frame(version)), KRAFT_NODE_APIS)
    assert isinstance(result, DecodedRequest)
    assert (result.api_key, result.api_version, result.client_id) == (ApiKey.API_VERSIONS, version, "c")


@pytest.mark.parametrize(
    ("name", "version", "valid"),
    [("kafka-python", "3.0.12", True), ("apache-kafka-java", "4.1.0", True), ("", "1", False),
     ("bad name", "1", False), ("x", "-1", False), ("x", "1.", False)],
)  # fmt: skip
def test_client_software_validation(name: str, version: str, valid: bool) -> None:
    for cls in (ApiVersionsRequestV3, ApiVersionsRequestV4):
        request = cls(client_software_name=name, client_software_version=version)
        assert is_valid_api_versions_request(request) is valid
    assert is_valid_api_versions_request(request_class(ApiKey.API_VERSIONS, 0)())


@pytest.mark.parametrize("version", [3, 4])
def test_invalid_request_answer(version: int) -> None:
    response = invalid_api_versions_response(version)
    assert response.error_code == ErrorCode.INVALID_REQUEST
    assert response.api_keys == ()
    decoded = decode_response(unframe(encode_response(3, response)), ApiKey.API_VERSIONS, version)
    assert decoded.message == response and decoded.api_version == version


def test_unsupported_version_answer_in_the_requested_format_still_decodes() -> None:
    # Kafka servers answer in v0, but a body at the requested version is read too (tried second).
    template = invalid_api_versions_response(3)
    in_version = type(template)(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=(), throttle_time=template.throttle_time)
    decoded = decode_response(unframe(encode_response(6, in_version)), ApiKey.API_VERSIONS, 3)
    assert decoded.api_version == 3 and decoded.message == in_version
