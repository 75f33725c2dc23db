"""node/config/node_config.py validation: one clear message per problem, all problems at once."""

from __future__ import annotations

import pytest

from pykraft.node.config.node_config import ConfigError, parse_config

from .test_config import BROKER, CONTROLLER, with_line


def problems(text: str) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "node.properties")
    assert str(info.value) == "\n".join(info.value.problems)
    assert all(p.startswith("node.properties: ") for p in info.value.problems)
    return tuple(p.removeprefix("node.properties: ") for p in info.value.problems)


def only(text: str) -> str:
    found = problems(text)
    assert len(found) == 1, found
    return found[0]


def test_all_problems_are_reported_at_once():
    found = problems(
        "process.roles=controller,foo\nnode.id=x\nlisteners=bad,CONTROLLER://:99999\n"
        "controller.quorum.voters=1@nohostport\ncontroller.quorum.election.timeout.ms=0\n"
    )
    assert found == (
        "process.roles: unknown role 'foo' (expected broker and/or controller)",
        "Invalid value x for configuration node.id: Not a number of type INT",
        "listeners: cannot parse listener 'bad' (expected NAME://host:port)",
        "listeners: listener 'CONTROLLER://:99999': port 99999 is out of range (0-65535)",
        "controller.listener.names must contain at least one value on a controller",
        "controller.quorum.voters: cannot parse voter '1@nohostport' (expected id@host:port)",
        "Invalid value 0 for configuration controller.quorum.election.timeout.ms: Value must be at least 1",
    )


def test_empty_file():
    found = problems("")
    assert "process.roles is missing: set it to broker, controller or broker,controller" in found
    assert "node.id is missing: every KRaft node needs a unique non-negative node.id" in found


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("process.roles", "controller,controller", "process.roles: duplicate role names found in 'controller,controller'"),
        ("node.id", "-1", "Invalid value -1 for configuration node.id: Value must be at least 0"),
        ("node.id", "2147483648", "Invalid value 2147483648 for configuration node.id: Not a number of type INT"),
        ("controller.listener.names", "OTHER", "controller.listener.names: OTHER is not defined in listeners"),
        ("listeners", "CONTROLLER://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094",
         "listeners: listener name CONTROLLER appears more than once"),
        ("listeners", "CONTROLLER://127.0.0.1", "listeners: cannot parse listener 'CONTROLLER://127.0.0.1' (expected NAME://host:port)"),
        ("listeners", "CONTROLLER://h:-1", "listeners: listener 'CONTROLLER://h:-1': port -1 is out of range (0-65535)"),
        ("controller.quorum.voters", "1@h:1,1@h:2", "controller.quorum.voters: voter id 1 appears more than once"),
        ("controller.quorum.voters", "1@h:1,x@h:2", "controller.quorum.voters: cannot parse voter 'x@h:2' (expected id@host:port)"),
        ("controller.quorum.voters", "1@h:1,2@h:0", "controller.quorum.voters: voter '2@h:0': port 0 is out of range (1-65535)"),
        ("controller.quorum.voters", "1@h:1,-2@h:2", "controller.quorum.voters: voter '-2@h:2' has an invalid node id -2"),
        ("controller.quorum.voters", "2@h:1,3@h:2",
         "If process.roles contains the 'controller' role, the node id 1 must be included in the set of voters "
         "controller.quorum.voters={2, 3}"),
        ("controller.quorum.fetch.timeout.ms", "abc",
         "Invalid value abc for configuration controller.quorum.fetch.timeout.ms: Not a number of type INT"),
        ("controller.quorum.fetch.timeout.ms", "0",
         "Invalid value 0 for configuration controller.quorum.fetch.timeout.ms: Value must be at least 1"),
        ("controller.quorum.request.timeout.ms", "-5",
         "Invalid value -5 for configuration controller.quorum.request.timeout.ms: Value must be at least 1"),
        ("controller.quorum.append.linger.ms", "-1",
         "Invalid value -1 for configuration controller.quorum.append.linger.ms: Value must be at least 0"),
        ("controller.quorum.auto.join.enable", "yes",
         "Invalid value yes for configuration controller.quorum.auto.join.enable: Expected value to be either true or false"),
        ("metadata.log.segment.bytes", "1000",
         "Invalid value 1000 for configuration metadata.log.segment.bytes: Value must be at least 8388608"),
        ("metadata.max.retention.ms", "-2",
         "Invalid value -2 for configuration metadata.max.retention.ms: Value must be at least -1"),
        ("broker.session.timeout.ms", "1.5",
         "Invalid value 1.5 for configuration broker.session.timeout.ms: Not a number of type INT"),
        ("pykraft.metrics.port", "70000",
         "Invalid value 70000 for configuration pykraft.metrics.port: Value must be no more than 65535"),
        ("pykraft.log.format", "xml",
         "Invalid value xml for configuration pykraft.log.format: String must be one of: json, text"),
        ("ssl.client.auth", "maybe",
         "Invalid value maybe for configuration ssl.client.auth: String must be one of: required, requested, none"),
        ("log.dirs", "/a,/a", "log.dirs: a directory appears more than once in /a,/a"),
        ("log.dirs", " , ", "log.dirs is empty: give at least one directory"),
        ("listener.security.protocol.map", "CONTROLLER", "listener.security.protocol.map: cannot parse 'CONTROLLER' "
         "(expected LISTENER_NAME:SECURITY_PROTOCOL)"),
        ("listener.security.protocol.map", "CONTROLLER:KERBEROS", "listener.security.protocol.map: listener "
         "CONTROLLER uses KERBEROS, which is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT", "listener.security.protocol.map: no security protocol "
         "for listener CONTROLLER (add CONTROLLER:PLAINTEXT, CONTROLLER:SSL, CONTROLLER:SASL_PLAINTEXT or "
         "CONTROLLER:SASL_SSL)"),
        ("advertised.listeners", "OTHER://h:1", "advertised.listeners: listener name OTHER is not defined in listeners"),
        ("advertised.listeners", "CONTROLLER://0.0.0.0:9093", "advertised.listeners cannot use the nonroutable "
         "meta-address 0.0.0.0. Use a routable IP address."),
    ],
)
def test_one_message_per_bad_controller_value(key, value, message):
    assert only(with_line(CONTROLLER, key, value)) == message


def test_neither_voters_nor_bootstrap_servers():
    assert only(with_line(CONTROLLER, "controller.quorum.voters", None)) == (
        "neither controller.quorum.voters nor controller.quorum.bootstrap.servers is set: "
        "set one of them so this node can find the controllers"
    )


def test_bootstrap_servers_alone_are_enough_for_a_controller():
    text = with_line(CONTROLLER, "controller.quorum.voters", None) + "\ncontroller.quorum.bootstrap.servers=h:9093"
    assert parse_config(text).bootstrap_servers == (("h", 9093),)


def test_malformed_bootstrap_server():
    text = with_line(BROKER, "controller.quorum.bootstrap.servers", "h:1,h")
    assert only(text) == "controller.quorum.bootstrap.servers: cannot parse 'h' (expected host:port)"


def test_controller_without_controller_listener_names():
    assert only(with_line(CONTROLLER, "controller.listener.names", None)) == (
        "controller.listener.names must contain at least one value on a controller"
    )


def test_broker_without_controller_listener_names():
    assert only(with_line(BROKER, "controller.listener.names", None)) == (
        "controller.listener.names must contain at least one value on a broker (to reach the controllers)"
    )


def test_broker_in_the_voters_is_refused():
    text = with_line(BROKER, "controller.quorum.voters", "1@h:1,4@h:2")
    assert only(text) == (
        "If process.roles contains just the 'broker' role, the node id 4 must not be included in the set of voters "
        "controller.quorum.voters={1, 4}"
    )


def test_broker_must_not_bind_the_controller_listener():
    text = with_line(BROKER, "listeners", "PLAINTEXT://h:9092,CONTROLLER://h:9093")
    assert only(text) == (
        "controller.listener.names must not contain a value appearing in the 'listeners' configuration when "
        "running KRaft with just the broker role (CONTROLLER)"
    )


def test_broker_needs_a_broker_listener():
    text = with_line(CONTROLLER, "process.roles", "broker,controller")
    assert only(text) == "listeners: a broker needs at least one listener that is not a controller listener"


def test_broker_must_not_advertise_the_wildcard_address():
    text = with_line(BROKER, "listeners", "PLAINTEXT://0.0.0.0:9092")
    assert only(text) == (
        "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0 (listener PLAINTEXT; set "
        "advertised.listeners to a routable address)"
    )


def test_ssl_listener_needs_the_three_pem_paths():
    text = with_line(CONTROLLER, "listener.security.protocol.map", "CONTROLLER:SSL") + "\nssl.ca.location=/ca.pem"
    assert only(text) == ("SSL listener CONTROLLER needs a certificate, its key and a CA: set ssl.certificate.location "
                          "and ssl.key.location (or ssl.keystore.*)")


def test_partial_tls_paths_without_ssl_listener():
    assert only(CONTROLLER + "\nssl.key.location=/k.pem") == (
        "TLS needs a certificate, its key and a CA: set ssl.certificate.location and ssl.key.location "
        "(or ssl.keystore.*) and ssl.ca.location (or ssl.truststore.*)"
    )
