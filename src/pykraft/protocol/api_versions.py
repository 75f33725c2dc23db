"""ApiVersions responses built from an `ApiRegistry`, with Kafka's per-version rules.

- v0: ErrorCode, ApiKeys. v1-v2 add ThrottleTimeMs. v3+ (flexible) add the tagged SupportedFeatures,
  FinalizedFeaturesEpoch and FinalizedFeatures.
- Below v4, supported features whose minimum version is 0 are left out: some older clients cannot parse
  a 0 minimum (KAFKA-17492; v4 is the version that allows it). kraft.version (min 0) therefore only
  shows up for v4 requests, which is what a KRaft leader sends when it checks a new voter (AddRaftVoter).
- Finalized features are levels; Kafka reports a level L as min = max = L and omits level 0.
- A request for a version this node does not know is answered in the v0 format with UNSUPPORTED_VERSION
  and, in ApiKeys, the node's ApiVersions range only (KIP-511): that is all a client needs to retry with
  a version both sides know, and what Kafka's `ApiVersionsRequest.getErrorResponse` sends.
- A v3+ request whose ClientSoftwareName/Version do not match Kafka's pattern gets INVALID_REQUEST.
"""

from __future__ import annotations

import datetime
import importlib
import re
from collections.abc import Mapping

from kio.schema.api_versions.v0 import request as request_v0
from kio.schema.api_versions.v0 import response as response_v0
from kio.static.primitive import i16, i32Timedelta, i64
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange, response_class
from pykraft.protocol.errors import ErrorCode, kio_code

__all__ = [
    "api_versions_response",
    "invalid_api_versions_response",
    "is_valid_api_versions_request",
    "unsupported_api_versions_response",
]

_FIRST_FEATURES_VERSION = 3  # first flexible version, where the feature fields exist
_ZERO_MIN_FEATURES_VERSION = 4  # first version allowed to report a supported minimum of 0
# Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN, for ClientSoftwareName and ClientSoftwareVersion.
_SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _throttle(throttle_time_ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=throttle_time_ms))


def api_versions_response(
    registry: ApiRegistry,
    version: int,
    *,
    supported_features: Mapping[str, VersionRange],
    finalized_features: Mapping[str, int],
    finalized_features_epoch: int,
    throttle_time_ms: int = 0,
) -> ResponsePayload:
    """The successful ApiVersions response at `version` (0-4) listing exactly `registry`'s ranges."""
    response_type = response_class(ApiKey.API_VERSIONS, version)
    namespace = importlib.import_module(response_type.__module__)  # the nested classes of that version
    api_keys = tuple(
        namespace.ApiVersion(api_key=i16(key), min_version=i16(r.min_version), max_version=i16(r.max_version))
        for key, r in registry
    )
    fields: dict[str, object] = {"error_code": ErrorCode.NONE, "api_keys": api_keys}
    if version >= 1:
        fields["throttle_time"] = _throttle(throttle_time_ms)
    if version >= _FIRST_FEATURES_VERSION:
        fields["supported_features"] = tuple(
            namespace.SupportedFeatureKey(name=name, min_version=i16(r.min_version), max_version=i16(r.max_version))
            for name, r in sorted(supported_features.items())
            if r.min_version > 0 or version >= _ZERO_MIN_FEATURES_VERSION
        )
        fields["finalized_features"] = tuple(
            namespace.FinalizedFeatureKey(name=name, max_version_level=i16(level), min_version_level=i16(level))
            for name, level in sorted(finalized_features.items())
            if level != 0
        )
        fields["finalized_features_epoch"] = i64(finalized_features_epoch)
    return response_type(**fields)


def unsupported_api_versions_response(registry: ApiRegistry) -> ResponsePayload:
    """The v0 answer to an ApiVersions request at a version this node does not implement."""
    own = registry.range_of(ApiKey.API_VERSIONS)
    assert own is not None, "a registry without ApiVersions cannot answer ApiVersions"
    entry = response_v0.ApiVersion(
        api_key=i16(ApiKey.API_VERSIONS), min_version=i16(own.min_version), max_version=i16(own.max_version)
    )
    return response_v0.ApiVersionsResponse(error_code=kio_code(ErrorCode.UNSUPPORTED_VERSION), api_keys=(entry,))


def is_valid_api_versions_request(request: RequestPayload) -> bool:
    """Kafka's `ApiVersionsRequest.isValid`: v3+ must name the client software with a safe pattern."""
    if isinstance(request, request_v0.ApiVersionsRequest) or int(request.__version__) < _FIRST_FEATURES_VERSION:
        return True
    name = getattr(request, "client_software_name", "")
    software_version = getattr(request, "client_software_version", "")
    return bool(_SOFTWARE_PATTERN.fullmatch(name) and _SOFTWARE_PATTERN.fullmatch(software_version))


def invalid_api_versions_response(version: int, throttle_time_ms: int = 0) -> ResponsePayload:
    """Kafka's answer to an invalid v3+ request: INVALID_REQUEST at the request's version, no ApiKeys."""
    fields: dict[str, object] = {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": ()}
    if version >= 1:
        fields["throttle_time"] = _throttle(throttle_time_ms)
    return response_class(ApiKey.API_VERSIONS, version)(**fields)
