"""Envelope forwarding (node/runtime/envelope.py): every request a broker forwards is one Kafka lets a controller take
in an Envelope (ApiKeys.forwardable), and it arrives with the client's principal and address."""

from __future__ import annotations

import datetime

from pykraft.net.server import ConnectionInfo
from pykraft.node.runtime.envelope import FORWARDABLE, open_envelope, wrap
from pykraft.node.runtime.served_apis import CONTROLLER_HANDLED as HOST_APIS, FORWARDED_APIS
from pykraft.protocol import headers
from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange, request_class
from pykraft.protocol.codec import DecodedRequest
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
