"""Request and response headers, and which header version a message uses.

Request header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable string.
Request header v2 adds a tagged-field section. client_id stays a *legacy* (int16-length) nullable string
in v2 as well: a broker must be able to read the header of an ApiVersions request of any version, even
one newer than itself, to answer it (kio's codec knows this special case).
Response header v0: correlation_id int32; v1 adds a tagged-field section. ApiVersions responses use v0
at every version, because the client reads them before it knows what the server speaks.

The header version of each message comes from its kio class (`__header_schema__`), that is from Kafka's
schemas, never from a table of our own.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import Reader
from kio.static.primitive import i16, i32

from pykraft.protocol.apis import ApiKey, kio_knows, request_class, response_class

__all__ = [
    "RequestHeader",
    "RequestHeaderV1",
    "RequestHeaderV2",
    "RequestIds",
    "ResponseHeader",
    "ResponseHeaderV0",
    "ResponseHeaderV1",
    "decode_request_header",
    "decode_response_header",
    "encode_request_header",
    "encode_response_header",
    "make_request_header",
    "peek_request_ids",
    "request_header_class",
    "response_header_class",
]

RequestHeader = RequestHeaderV1 | RequestHeaderV2
ResponseHeader = ResponseHeaderV0 | ResponseHeaderV1

# First flexible ApiVersions version: requests from v3 on carry header v2 (Kafka's generated rule).
_API_VERSIONS_FIRST_FLEXIBLE = 3
_IDS = struct.Struct(">hhi")  # the fixed prefix shared by both request header versions

_WRITERS = {cls: entity_writer(cls) for cls in (RequestHeaderV1, RequestHeaderV2, ResponseHeaderV0, ResponseHeaderV1)}
_READERS: dict[type, Reader[Any]] = {cls: entity_reader(cls) for cls in (RequestHeaderV1, RequestHeaderV2, ResponseHeaderV0, ResponseHeaderV1)}


@dataclass(frozen=True, slots=True)
class RequestIds:
    """The 8 bytes every request header starts with, readable before the header version is known."""

    api_key: int
    api_version: int
    correlation_id: int


def peek_request_ids(frame: memoryview) -> RequestIds | None:
    """The ids at the start of a request frame, or None if the frame is shorter than 8 bytes."""
    if len(frame) < _IDS.size:
        return None
    return RequestIds(*_IDS.unpack_from(frame))


def request_header_class(api_key: int, api_version: int) -> type[RequestHeader] | None:
    """The header class for a request, or None when neither kio nor Kafka's rules say which it is."""
    if kio_knows(api_key, api_version):
        return request_class(api_key, api_version).__header_schema__
    if api_key == ApiKey.API_VERSIONS:
        # A future ApiVersions version: flexible like every version from 3 on, so header v2.
        return RequestHeaderV2 if api_version >= _API_VERSIONS_FIRST_FLEXIBLE else RequestHeaderV1
    return None


def response_header_class(api_key: int, api_version: int) -> type[ResponseHeader]:
    """The header class of the response to (api_key, api_version); the version must be known to kio."""
    if api_key == ApiKey.API_VERSIONS:
        return ResponseHeaderV0  # at every version, see the module docstring
    return response_class(api_key, api_version).__header_schema__


def make_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> RequestHeader:
    header_class = request_header_class(api_key, api_version)
    assert header_class is not None, (api_key, api_version)
    return header_class(
        request_api_key=i16(api_key),
        request_api_version=i16(api_version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )


def encode_request_header(header: RequestHeader) -> bytes:
    buffer = io.BytesIO()
    _WRITERS[type(header)](buffer, header)
    return buffer.getvalue()


def encode_response_header(correlation_id: int, header_class: type[ResponseHeader]) -> bytes:
    buffer = io.BytesIO()
    _WRITERS[header_class](buffer, header_class(correlation_id=i32(correlation_id)))
    return buffer.getvalue()


def decode_request_header(frame: memoryview, header_class: type[RequestHeader]) -> tuple[RequestHeader, int]:
    """Read a request header from the start of `frame`; return it and the offset of the body.

    Raises whatever kio raises on bad bytes; the codec turns that into MalformedRequestError. Headers have
    no arrays, so kio's over-allocation on array lengths (see wire_check.py) cannot happen here.
    """
    header: RequestHeader
    header, size = _READERS[header_class](frame, 0)
    return header, size


def decode_response_header(frame: memoryview, header_class: type[ResponseHeader]) -> tuple[int, int]:
    """Read a response header; return the correlation id and the offset of the body."""
    header, size = _READERS[header_class](frame, 0)
    return int(header.correlation_id), size
