"""Envelope forwarding (node/runtime/envelope.py): every request a broker forwards is one Kafka lets a controller take
in an Envelope (ApiKeys.forwardable), and it arrives with the client's principal and address."""

from __future__ import annotations

import datetime

from pykraft.net.server import ConnectionInfo
from pykraft.node.runtime.envelope import FORWARDABLE, inner_answer_bytes, open_envelope, wrap
from pykraft.node.runtime.served_apis import CONTROLLER_HANDLED as HOST_APIS, FORWARDED_APIS
from pykraft.protocol import headers
from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange, request_class, response_class
from pykraft.protocol.codec import DecodedRequest, decode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.principal import KafkaPrincipal

BROKER = ConnectionInfo("10.0.0.2", 9092, 1, None, "CONTROLLER", KafkaPrincipal("User", "broker"))
CLIENT = ConnectionInfo("10.0.0.9", 5000, 2, None, "CLIENT", KafkaPrincipal("User", "alice"))


def test_every_forwarded_api_is_one_a_controller_accepts_in_an_envelope():
    assert sorted(ApiKey(k).name for k in FORWARDED_APIS if k not in FORWARDABLE) == []


def test_a_forwarded_reassignment_listing_arrives_with_the_clients_principal():
    low, high = HOST_APIS[ApiKey.LIST_PARTITION_REASSIGNMENTS]
    message = request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS, high)(timeout=datetime.timedelta(seconds=30), topics=None)
    header = headers.make_request_header(ApiKey.LIST_PARTITION_REASSIGNMENTS, high, 11, "admin")
    envelope = wrap(DecodedRequest(header=header, message=message, context=CLIENT))
    registry = ApiRegistry(((ApiKey.LIST_PARTITION_REASSIGNMENTS, VersionRange(low, high)),))
    header = headers.make_request_header(ApiKey.ENVELOPE, 0, 3, "broker")
    inner = open_envelope(DecodedRequest(header=header, message=envelope, context=BROKER), registry)
    assert isinstance(inner, DecodedRequest) and inner.message == message
    assert str(inner.context.principal) == "User:alice" and inner.context.peer_host == "10.0.0.9"


def test_a_large_inner_answer_is_one_buffer_that_decodes_to_the_answer():
    # 100 KiB of auth bytes: above the size at which a response body is handed back in parts (codec.KEPT_AS_IS)
    answer = response_class(ApiKey.SASL_AUTHENTICATE, 2)(error_code=ErrorCode.NONE, error_message=None,
                                                         auth_bytes=b"x" * 100_000,
                                                         session_lifetime=datetime.timedelta(0))
    header = headers.make_request_header(ApiKey.SASL_AUTHENTICATE, 2, 41, "client")
    data = inner_answer_bytes(DecodedRequest(header=header, message=None, context=CLIENT), answer)
    assert isinstance(data, bytes) and int.from_bytes(data[:4], "big") == 41  # the correlation id leads
    assert decode_response(data, ApiKey.SASL_AUTHENTICATE, 2).message == answer
