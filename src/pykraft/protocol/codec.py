"""Requests and responses to and from frames (the frame body: header + message, without the size prefix).

Server side, `decode_request(frame, registry)` returns one of:
- `DecodedRequest`: a request at a version the registry supports;
- `RequestDecodeFailure`: a request the node must answer with an error instead of handling, with the
  ready-to-send response frame:
  * ApiVersions at a version we do not implement: the v0 UNSUPPORTED_VERSION answer (api_versions.py),
    which is what Kafka does, so clients can retry at a version both sides know;
  * another API we implement, at a version we do not support but whose response kio can still encode
    and which has a top-level ErrorCode: that response carrying UNSUPPORTED_VERSION. Kafka closes the
    connection here instead, because its clients never send a version the server did not advertise. We
    answer because KRaft peers fall back from pre-vote (Vote v2) to a standard vote on exactly this
    error (KIP-996), and a pykraft peer that has not asked ApiVersions first learns it this way.
It raises (all `ProtocolError`s; the caller closes the connection, as Kafka does):
- `UnknownApiKeyError` for an API key the registry does not list;
- `UnsupportedVersionError` when no error response of the request's type can be built;
- `MalformedRequestError` for a truncated or undecodable header or body.
Bytes after a request's body are ignored, as Kafka's request parser ignores them (it reads the body's fields and
never looks at what is left in the buffer): librdkafka 2.x sends Metadata v9+ with 3 bytes more than the schema
(its issue 5049), and its `list_topics()` must work. The body itself is still walked and checked whole first.
A response with trailing bytes stays malformed (our peers' responses have no such excuse).

Client side, `encode_request` and `decode_response` mirror these. Every body is walked by wire_check.py
before kio sees it (hostile lengths and malformed fields are refused; tagged fields this version does not know
are cut out, as Kafka skips them), and every exception kio raises on bad bytes is wrapped.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import IO, Any, cast

import kio.index
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol import headers
from pykraft.protocol.api_versions import unsupported_api_versions_response
from pykraft.protocol.apis import ApiKey, ApiRegistry, kio_knows, request_class, response_class
from pykraft.protocol.error_responses import error_response_for, has_top_level_error_code
from pykraft.protocol.errors import (
    ErrorCode,
    MalformedRequestError,
    MalformedResponseError,
    MessageError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from pykraft.protocol.framing import SIZE_PREFIX_BYTES, FileRegion, FrameBody, Part, check_frame_size
from pykraft.protocol.borrowed_records import put_back
from pykraft.protocol.wire_check import Guard, LiftingEdits, WireFormatError, kio_input, lazy_guard_for

__all__ = [
    "DecodedRequest",
    "DecodedResponse",
    "RequestDecodeFailure",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_body",
]

_INT16 = struct.Struct(">h")
_FRAME_SIZE = struct.Struct(">i")
_NO_SIZE_YET = bytes(SIZE_PREFIX_BYTES)


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    header: headers.RequestHeader
    # One API's request dataclass, known only from the header at run time: each handler reads its own API's fields.
    message: Any
    # Where the request came from (the server's connection info: listener, peer), opaque to the codec; handlers
    # that answer per listener read it (Kafka's RequestContext). None for a request decoded outside a server.
    context: Any = None

    @property
    def api_key(self) -> ApiKey:
        return ApiKey(self.header.request_api_key)

    @property
    def api_version(self) -> int:
        return int(self.header.request_api_version)

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)

    @property
    def client_id(self) -> str:
        # Kafka treats a null client id as the empty string.
        return self.header.client_id or ""


@dataclass(frozen=True, slots=True)
class RequestDecodeFailure:
    """A request answered with an error instead of being handled. `response` is the whole frame to send."""

    api_key: int
    api_version: int
    correlation_id: int
    error_code: ErrorCode
    response: bytes
    reason: str


@dataclass(frozen=True, slots=True)
class DecodedResponse:
    correlation_id: int
    message: Any  # as DecodedRequest.message
    api_version: int  # the version the body was read at: 0 for an ApiVersions fallback answer


@cache
def _reader(entity_type: type) -> Callable[[Any, int], tuple[Any, int]]:
    return entity_reader(entity_type)


@cache
def _guard(entity_type: type) -> Guard:
    """The walk of one request or response class. The tags of every version kio has of it are looked up only when
    a message carries a tag its version does not know (wire_check.DeferredTagRules): an idle node does not hold
    the other versions' modules."""
    kio_class: Any = entity_type
    is_request = kio_class.__type__ is EntityType.request
    load = kio.index.load_request_schema if is_request else kio.index.load_response_schema
    key = int(kio_class.__api_key__)

    def family() -> tuple[type, ...]:
        return tuple(load(key, version) for version in schema_name_map[api_key_map[key]])

    return lazy_guard_for(entity_type, family)


def _byte_view(frame: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(frame)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _view(frame: bytes | bytearray | memoryview) -> memoryview:
    return _byte_view(frame).toreadonly()  # kio's reader refuses writable buffers (a bytearray frame); no copy


def _encode_frame(header: bytes, message: RequestPayload | ResponsePayload) -> bytes:
    """Size prefix, header and body serialized into one buffer, the prefix patched in last: a body that carries
    record batches (a Fetch answer, a Produce) is copied once into the frame, not once more by a join."""
    buffer = io.BytesIO()
    buffer.write(_NO_SIZE_YET)
    buffer.write(header)
    entity_writer(type(message))(buffer, message)
    size = buffer.tell() - SIZE_PREFIX_BYTES
    check_frame_size(size)
    with buffer.getbuffer() as view:  # released before getvalue(), which then hands over the buffer uncopied
        _FRAME_SIZE.pack_into(view, 0, size)
    return buffer.getvalue()


def encode_request(message: RequestPayload, *, correlation_id: int, client_id: str | None) -> bytes:
    """A complete request frame (size prefix, header, body); api key and version come from the message."""
    header = headers.make_request_header(
        int(message.__api_key__), int(message.__version__), correlation_id, client_id
    )
    return _encode_frame(headers.encode_request_header(header), message)


def encode_response(correlation_id: int, message: ResponsePayload) -> bytes:
    """A complete response frame; the header version follows the message's API and version."""
    header_class = headers.response_header_class(int(message.__api_key__), int(message.__version__))
    return _encode_frame(headers.encode_response_header(correlation_id, header_class), message)


def encode_response_body(correlation_id: int, message: ResponsePayload) -> memoryview | FrameBody:
    """A response frame's body without its size prefix, for a server that writes the prefix itself. A record
    batches buffer of `KEPT_AS_IS` bytes or more (a Fetch answer) is not copied into the body: the answer comes
    back as a `FrameBody` whose parts include that buffer itself."""
    header_class = headers.response_header_class(int(message.__api_key__), int(message.__version__))
    writer = _PartsWriter()
    writer.write(headers.encode_response_header(correlation_id, header_class))
    entity_writer(type(message))(cast(IO[bytes], writer), message)  # it has the one method kio calls
    return writer.body()


def response_body(parts: list[Part]) -> memoryview | FrameBody:
    """A response body from its encoded pieces in order, as `encode_response_body` gives it: small pieces joined,
    a record batches buffer of `KEPT_AS_IS` bytes or more kept as it is (for encoders that bypass kio)."""
    writer = _PartsWriter()
    for part in parts:
        writer.write(part)
    return writer.body()


KEPT_AS_IS = 64 * 1024
# A file region smaller than this is read and joined with the pieces around it: one pread and one send cost less
# than mapping the region for the send.
SENT_FROM_FILE = 16 * 1024


class _PartsWriter:
    """kio's output stream: small writes gathered in a BytesIO, a large one kept as the caller's object, a file
    region (a consumer Fetch answer's batches, framing.FileRegion) kept for the server to send from its file."""

    __slots__ = ("_parts", "_small", "size")

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._small = io.BytesIO()
        self.size = 0

    def write(self, data: Part) -> int:
        if isinstance(data, FileRegion):
            return self._write_region(data)
        length = memoryview(data).nbytes
        if length >= KEPT_AS_IS:
            self._cut()
            self._parts.append(data)
        else:
            self._small.write(data)
        self.size += length
        return length

    def _write_region(self, region: FileRegion) -> int:
        if region.size < SENT_FROM_FILE:
            data = region.read()
            region.close()
            if len(data) != region.size:  # truncated under us: the length prefix already promised region.size
                raise OSError(f"a segment file was truncated under a Fetch answer ({len(data)} of {region.size})")
            self._small.write(data)
        else:
            self._cut()
            self._parts.append(region)
        self.size += region.size
        return region.size

    def _cut(self) -> None:
        if self._small.tell():
            self._parts.append(self._small.getvalue())
            self._small = io.BytesIO()

    def finish(self) -> list[Part]:
        self._cut()
        return self._parts or [b""]

    def body(self) -> memoryview | FrameBody:
        check_frame_size(self.size)
        parts = self.finish()
        if len(parts) == 1 and type(parts[0]) is not FileRegion:
            return memoryview(parts[0])  # type: ignore[arg-type]  # not a FileRegion
        return FrameBody(tuple(parts), self.size)


def _read_body(entity_type: type, view: memoryview, offset: int, error: type[MessageError], ids: dict[str, Any],
               *, allow_trailing: bool = False, borrow_from: memoryview | None = None) -> Any:
    """Walk, then decode one body that must fill the rest of the frame exactly (unless `allow_trailing`).
    With `borrow_from` (the frame, same positions as `view`) the record batches are views of it, not copies."""
    try:
        end, edits = _guard(entity_type).walk(view, offset, len(view), lift_records=borrow_from is not None)
    except WireFormatError as exc:
        raise error(f"malformed body: {exc}", **ids) from exc
    if end != len(view) and not allow_trailing:
        raise error(f"malformed body: {len(view) - end} trailing bytes after the body", **ids)
    source, start, stop = kio_input(view, offset, end, edits)
    try:
        message, size = _reader(entity_type)(source, start)  # kio returns the size read, not an offset
    except Exception as exc:  # kio raises DecodeError, ValueError, KeyError...; all mean bad bytes here
        raise error(f"body does not decode: {type(exc).__name__}: {exc}", **ids) from exc
    # The walk and kio read the same schema, so they must agree; a disagreement means the walk missed
    # something and must not pass silently.
    if start + size != stop:
        raise error(f"kio read {size} body bytes, the walk {stop - start}", **ids)
    if isinstance(edits, LiftingEdits) and edits.lifted:
        assert borrow_from is not None
        try:
            message = put_back(message, [borrow_from[a:b] for a, b in edits.lifted])
        except ValueError as exc:  # the walk and the plan disagree about where records are: never silently
            raise error(f"record batches: {exc}", **ids) from exc
    return message


def _read_request_header(view: memoryview, header_class: type[headers.RequestHeader] | None,
                         ids: dict[str, Any]) -> tuple[headers.RequestHeader, int]:
    try:
        assert header_class is not None  # read only for versions kio knows, and ApiVersions (always known)
        return headers.decode_request_header(view, header_class)
    except Exception as exc:  # headers have no arrays, so kio cannot over-allocate on them
        reason = f"request header does not decode: {type(exc).__name__}: {exc}"
        raise MalformedRequestError(reason, **ids) from exc


def decode_request(
    frame: bytes | bytearray | memoryview, registry: ApiRegistry, *, borrow_records: bool = False,
    context: Any = None,
) -> DecodedRequest | RequestDecodeFailure:
    """Decode one request frame body against what `registry` supports (see the module docstring).
    `borrow_records`: the caller owns `frame`; record batches come as views of it (borrowed_records.py).
    `context` is handed on as the request's `context`."""
    view = _view(frame)
    peeked = headers.peek_request_ids(view)
    if peeked is None:
        raise MalformedRequestError(f"request of {len(view)} bytes is shorter than a request header")
    key, version = peeked.api_key, peeked.api_version
    ids = {"api_key": key, "api_version": version, "correlation_id": peeked.correlation_id}
    if registry.range_of(key) is None:
        raise UnknownApiKeyError(f"api key {key} is not implemented by this node", **ids)
    header_class = headers.request_header_class(key, version)
    if not registry.supports(key, version):
        return _refuse_version(view, registry, header_class, ids)
    header, offset = _read_request_header(view, header_class, ids)
    message = _read_body(request_class(key, version), view, offset, MalformedRequestError, ids,
                         allow_trailing=True, borrow_from=_byte_view(frame) if borrow_records else None)
    return DecodedRequest(header=header, message=message, context=context)


def _refuse_version(
    view: memoryview, registry: ApiRegistry, header_class: type[headers.RequestHeader] | None, ids: dict[str, Any]
) -> RequestDecodeFailure:
    key, version, correlation_id = ids["api_key"], ids["api_version"], ids["correlation_id"]
    supported = registry.range_of(key)
    reason = f"{ApiKey(key).name} v{version} is not supported (this node: {supported})"
    if key == ApiKey.API_VERSIONS:
        # Like Kafka, the body is not read at all: its format may be newer than anything we know.
        _read_request_header(view, header_class, ids)
        answer = unsupported_api_versions_response(registry)
    elif kio_knows(key, version) and has_top_level_error_code(response_class(key, version)):
        _read_request_header(view, header_class, ids)
        answer = error_response_for((key, version), ErrorCode.UNSUPPORTED_VERSION)
    else:
        raise UnsupportedVersionError(reason + "; no error response can be encoded", **ids)
    return RequestDecodeFailure(
        api_key=key,
        api_version=version,
        correlation_id=correlation_id,
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        response=encode_response(correlation_id, answer),
        reason=reason,
    )


def decode_response(
    frame: bytes | bytearray | memoryview, request_api_key: int, request_api_version: int, *,
    borrow_records: bool = False
) -> DecodedResponse:
    """Decode the response to a request we sent at (request_api_key, request_api_version).

    ApiVersions: a server that does not know the requested version answers in the v0 format with
    UNSUPPORTED_VERSION; that body is read as v0. Any other ApiVersions body that fails to decode at the
    requested version is retried as v0, as Kafka's client does.
    """
    view = _view(frame)
    ids = {"api_key": request_api_key, "api_version": request_api_version, "correlation_id": None}
    try:
        response_type = response_class(request_api_key, request_api_version)
    except kio.index.KioIndexError as exc:
        raise UnsupportedVersionError("no response class for this request", **ids) from exc
    header_class = headers.response_header_class(request_api_key, request_api_version)
    try:
        correlation_id, offset = headers.decode_response_header(view, header_class)
    except Exception as exc:
        reason = f"response header does not decode: {type(exc).__name__}: {exc}"
        raise MalformedResponseError(reason, **ids) from exc
    ids["correlation_id"] = correlation_id
    if request_api_key == ApiKey.API_VERSIONS and request_api_version > 0:
        return _decode_api_versions_response(view, offset, ids)
    message = _read_body(response_type, view, offset, MalformedResponseError, ids,
                         borrow_from=_byte_view(frame) if borrow_records else None)
    return DecodedResponse(correlation_id, message, request_api_version)


def _decode_api_versions_response(view: memoryview, offset: int, ids: dict[str, Any]) -> DecodedResponse:
    correlation_id, version = ids["correlation_id"], ids["api_version"]
    error = _INT16.unpack_from(view, offset)[0] if len(view) - offset >= _INT16.size else None
    # UNSUPPORTED_VERSION means "v0 body" from Kafka; otherwise v0 is only the fallback, as in Kafka's client.
    first, second = (0, version) if error == ErrorCode.UNSUPPORTED_VERSION else (version, 0)
    try:
        body = _read_body(response_class(ApiKey.API_VERSIONS, first), view, offset, MalformedResponseError, ids)
        return DecodedResponse(correlation_id, body, first)
    except MalformedResponseError:
        body = _read_body(response_class(ApiKey.API_VERSIONS, second), view, offset, MalformedResponseError, ids)
        return DecodedResponse(correlation_id, body, second)
