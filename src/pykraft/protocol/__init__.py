"""Kafka wire protocol for pykraft: frames, headers, the API registry, error codes, request/response codecs.

Messages themselves are kio's dataclasses; this package decides how they travel: framing (framing.py,
frame_reader.py), header versions (headers.py), which APIs and versions a node speaks (apis.py, api_versions.py),
error codes and exceptions (errors.py, error_responses.py), and the guarded decode path (wire_check.py, codec.py).
"""

from pykraft.protocol.api_versions import (
    api_versions_response,
    invalid_api_versions_response,
    is_valid_api_versions_request,
    unsupported_api_versions_response,
)
from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey, ApiRegistry, VersionRange
from pykraft.protocol.codec import (
    DecodedRequest,
    DecodedResponse,
    RequestDecodeFailure,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.protocol.error_responses import error_response_for, has_top_level_error_code
from pykraft.protocol.errors import (
    ErrorCode,
    FrameTooLargeError,
    InvalidFrameError,
    MalformedRequestError,
    MalformedResponseError,
    MessageError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from pykraft.protocol.frame_reader import FrameReader
from pykraft.protocol.framing import DEFAULT_MAX_FRAME_SIZE, encode_frame, encode_frame_parts

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "KRAFT_NODE_APIS",
    "ApiKey",
    "ApiRegistry",
    "DecodedRequest",
    "DecodedResponse",
    "ErrorCode",
    "FrameReader",
    "FrameTooLargeError",
    "InvalidFrameError",
    "MalformedRequestError",
    "MalformedResponseError",
    "MessageError",
    "ProtocolError",
    "RequestDecodeFailure",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "VersionRange",
    "api_versions_response",
    "decode_request",
    "decode_response",
    "encode_frame",
    "encode_frame_parts",
    "encode_request",
    "encode_response",
    "error_response_for",
    "has_top_level_error_code",
    "invalid_api_versions_response",
    "is_valid_api_versions_request",
    "unsupported_api_versions_response",
]
