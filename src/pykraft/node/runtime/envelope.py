"""Forwarding in an Envelope (KIP-590), both ends: a broker sends a client's controller request (CreateTopics,
CreateAcls, AlterUserScramCredentials, ...) to the active controller wrapped with the client's principal and address,
so that the controller authorizes the client, not the broker; the controller checks that the sender may forward
(CLUSTER_ACTION, authz_rules.py), unwraps the request, answers it as if the client had sent it there, and wraps the
answer.

- `wrap(decoded)`: the EnvelopeRequest of a decoded client request (its own header and body, the principal serialized
  as Kafka's DefaultKafkaPrincipalBuilder does, the client's IP address as bytes);
- `unwrap_answer(decoded, answer)`: the client's answer from the EnvelopeResponse, or None when the envelope itself
  failed (`envelope_error` says why);
- `open_envelope(decoded, registry)`: the controller's side, the inner request decoded with the forwarded principal
  and address in its context, or the EnvelopeResponse refusing it (an API Kafka does not forward, an unreadable
  request or principal).
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import Any

from pykraft.protocol import headers
from pykraft.protocol.apis import ApiKey, ApiRegistry
from pykraft.protocol.codec import DecodedRequest, decode_request, decode_response, encode_request
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.principal import ANONYMOUS, PrincipalError, deserialize_principal, serialize_principal

envelope_rq = schema_module("kio.schema.envelope.v0.request")
envelope_rs = schema_module("kio.schema.envelope.v0.response")

__all__ = ["FORWARDABLE", "envelope_answer", "envelope_error", "on_behalf_of", "open_envelope", "unwrap_answer",
           "wrap"]

K = ApiKey
# Kafka's ApiKeys.forwardable (of the APIs pykraft serves)
FORWARDABLE = frozenset({K.CREATE_TOPICS, K.DELETE_TOPICS, K.CREATE_ACLS, K.DELETE_ACLS, K.ALTER_CONFIGS,
                         K.CREATE_PARTITIONS, K.ELECT_LEADERS, K.INCREMENTAL_ALTER_CONFIGS,
                         K.ALTER_PARTITION_REASSIGNMENTS, K.LIST_PARTITION_REASSIGNMENTS,
                         K.ALTER_USER_SCRAM_CREDENTIALS, K.DESCRIBE_QUORUM, K.UPDATE_FEATURES, K.UNREGISTER_BROKER,
                         K.ALLOCATE_PRODUCER_IDS, K.ADD_RAFT_VOTER, K.REMOVE_RAFT_VOTER})
_SIZE_PREFIX = 4
PRINCIPAL_DESERIALIZATION_FAILURE = 97


def wrap(decoded: DecodedRequest) -> Any:
    context = decoded.context
    principal = getattr(context, "principal", ANONYMOUS)
    try:
        address = ipaddress.ip_address(getattr(context, "peer_host", "") or "0.0.0.0").packed
    except ValueError:
        address = bytes(4)
    inner = encode_request(decoded.message, correlation_id=decoded.correlation_id,
                           client_id=decoded.header.client_id)[_SIZE_PREFIX:]
    return envelope_rq.EnvelopeRequest(request_data=inner, request_principal=serialize_principal(principal),
                                       client_host_address=address)


def on_behalf_of(decoded: DecodedRequest, message: Any) -> DecodedRequest:
    """A request the node makes for a client's request (Metadata's auto-created topics): the client's principal and
    address, its client id and correlation id (as Kafka's AutoTopicCreationManager borrows them)."""
    header = headers.make_request_header(int(message.__api_key__), int(message.__version__),
                                         decoded.correlation_id, decoded.header.client_id)
    return DecodedRequest(header=header, message=message, context=decoded.context)


def envelope_error(answer: Any) -> ErrorCode | None:
    code = int(answer.error_code)
    return None if code == 0 else ErrorCode(code)


def unwrap_answer(decoded: DecodedRequest, answer: Any) -> Any | None:
    """The client's answer inside an EnvelopeResponse; None when there is none (an envelope error or bad bytes)."""
    if envelope_error(answer) is not None or answer.response_data is None:
        return None
    try:
        return decode_response(bytes(answer.response_data), int(decoded.api_key), decoded.api_version).message
    except ProtocolError:
        return None


def envelope_answer(error: ErrorCode, response_data: bytes | None = None) -> Any:
    return envelope_rs.EnvelopeResponse(response_data=response_data, error_code=error)


def inner_answer_bytes(inner: DecodedRequest, answer: Any) -> bytes:
    """The inner answer's frame without its size prefix, as one buffer (EnvelopeResponse.response_data): a
    large one too, which `encode_response_body` would hand back in parts."""
    return encode_response(inner.correlation_id, answer)[_SIZE_PREFIX:]


def open_envelope(decoded: DecodedRequest, registry: ApiRegistry) -> DecodedRequest | Any:
    """The forwarded request with the client's principal and address as its context, or an EnvelopeResponse."""
    message = decoded.message
    try:
        principal = deserialize_principal(bytes(message.request_principal or b""))
    except PrincipalError:
        return envelope_answer(ErrorCode(PRINCIPAL_DESERIALIZATION_FAILURE))
    try:
        host = str(ipaddress.ip_address(bytes(message.client_host_address)))
    except ValueError:
        return envelope_answer(ErrorCode.INVALID_REQUEST)
    context = replace(decoded.context, principal=principal, peer_host=host, peer_port=0) \
        if decoded.context is not None else None
    try:
        inner = decode_request(bytes(message.request_data), registry, context=context)
    except ProtocolError:
        return envelope_answer(ErrorCode.UNSUPPORTED_VERSION)  # Kafka: the embedded request cannot be parsed
    if not isinstance(inner, DecodedRequest):
        return envelope_answer(ErrorCode.UNSUPPORTED_VERSION)
    if inner.api_key not in FORWARDABLE:
        return envelope_answer(ErrorCode.INVALID_REQUEST)
    return inner
