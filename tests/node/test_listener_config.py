"""The listener settings as Kafka reads them (node/config/listener_rules.py): listener.security.protocol.map,
advertised.listeners on a broker, inter.broker.listener.name / security.inter.broker.protocol."""

from __future__ import annotations

import pytest

from pykraft.node.config.node_config import Listener, parse_config

from .test_config import BROKER, CONTROLLER, with_line
from .test_config_validation import only, problems

TWO_LISTENERS = with_line(BROKER, "listeners", "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094")
MAPPED = with_line(TWO_LISTENERS, "listener.security.protocol.map",
                   "INTERNAL:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT")


def test_named_listeners_need_an_explicit_protocol_as_in_kafka():
    # Kafka's default map knows PLAINTEXT, SSL, SASL_*; only controller listener names default to PLAINTEXT.
    found = problems(with_line(TWO_LISTENERS, "inter.broker.listener.name", "INTERNAL"))
    assert "listener.security.protocol.map: no security protocol for listener INTERNAL (add INTERNAL:PLAINTEXT, " \
           "INTERNAL:SSL, INTERNAL:SASL_PLAINTEXT or INTERNAL:SASL_SSL)" in found
    assert any("listener EXTERNAL" in p for p in found)


def test_controller_names_default_to_plaintext_unless_a_secured_listener_is_in_use():
    assert parse_config(CONTROLLER).security_protocol("CONTROLLER") == "PLAINTEXT"
    ssl_too = with_line(CONTROLLER, "listeners", "CONTROLLER://127.0.0.1:9093,SSL://127.0.0.1:9095")
    ssl_too = with_line(ssl_too, "controller.listener.names", "CONTROLLER,SSL")
    # An SSL listener name is in use: Kafka adds no default mapping, so CONTROLLER must be mapped explicitly.
    assert only(ssl_too + "\nssl.ca.location=/ca\nssl.certificate.location=/c\nssl.key.location=/k") == (
        "listener.security.protocol.map: no security protocol for listener CONTROLLER (add CONTROLLER:PLAINTEXT, "
        "CONTROLLER:SSL, CONTROLLER:SASL_PLAINTEXT or CONTROLLER:SASL_SSL)")


def test_inter_broker_listener_must_be_an_advertised_broker_listener():
    # Unset: the listener named after security.inter.broker.protocol, PLAINTEXT, which this broker lacks.
    assert only(MAPPED + "\nssl.ca.location=/ca\nssl.certificate.location=/c\nssl.key.location=/k") == (
        "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options "
        "based on currently configured listeners are INTERNAL,EXTERNAL")
    ok = parse_config(MAPPED + "\ninter.broker.listener.name=internal\nssl.ca.location=/ca\n"
                      "ssl.certificate.location=/c\nssl.key.location=/k")
    assert ok.inter_broker_listener_name == "INTERNAL"
    assert parse_config(BROKER).inter_broker_listener_name == "PLAINTEXT"


@pytest.mark.parametrize(("extra", "message"), [
    ("inter.broker.listener.name=PLAINTEXT\nsecurity.inter.broker.protocol=PLAINTEXT",
     "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."),
    ("inter.broker.listener.name=NOWHERE",
     "Listener with name NOWHERE defined in inter.broker.listener.name not found in listener.security.protocol.map."),
])
def test_inter_broker_setting_errors(extra, message):
    assert message in problems(BROKER + "\n" + extra)


def test_an_unknown_inter_broker_protocol_is_one_message_in_kafkas_words():
    assert only(BROKER + "\nsecurity.inter.broker.protocol=GOPHER") == (
        "Invalid value GOPHER for configuration security.inter.broker.protocol: String must be one of: PLAINTEXT, "
        "SSL, SASL_PLAINTEXT, SASL_SSL")
    assert parse_config(BROKER + "\nsecurity.inter.broker.protocol=PLAINTEXT").inter_broker_listener_name == "PLAINTEXT"


def test_a_broker_advertises_what_advertised_listeners_names():
    # Kafka's effectiveAdvertisedBrokerListeners: when advertised.listeners is set, its broker entries only.
    text = with_line(MAPPED, "advertised.listeners", "INTERNAL://10.0.0.4:9092,EXTERNAL://kafka.example:19094")
    config = parse_config(text + "\ninter.broker.listener.name=INTERNAL\nssl.ca.location=/ca\n"
                          "ssl.certificate.location=/c\nssl.key.location=/k")
    assert config.advertised_broker_listeners() == (Listener("INTERNAL", "10.0.0.4", 9092),
                                                    Listener("EXTERNAL", "kafka.example", 19094))
    only_external = with_line(MAPPED, "advertised.listeners", "EXTERNAL://kafka.example:19094")
    config = parse_config(only_external + "\ninter.broker.listener.name=EXTERNAL\nssl.ca.location=/ca\n"
                          "ssl.certificate.location=/c\nssl.key.location=/k")
    assert config.advertised_broker_listeners() == (Listener("EXTERNAL", "kafka.example", 19094),)
    assert [l.name for l in config.served_listeners()] == ["INTERNAL", "EXTERNAL"]  # both are still bound


def test_a_combined_node_advertising_only_its_controller_listener_has_no_broker_listener():
    text = ("process.roles=broker,controller\nnode.id=1\nlisteners=PLAINTEXT://h:9092,CONTROLLER://h:9093\n"
            "advertised.listeners=CONTROLLER://h:9093\ncontroller.listener.names=CONTROLLER\n"
            "controller.quorum.voters=1@h:9093\n")
    assert only(text) == ("There must be at least one broker advertised listener. Perhaps all listeners appear in "
                          "controller.listener.names?")
