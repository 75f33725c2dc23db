"""node/config/node_config.py: every key, every default, every validation message, and the helpers others build on."""

from __future__ import annotations

import pytest

from pykraft.node.config.node_config import (
    ConfigError,
    Listener,
    NodeConfig,
    TlsConfig,
    VoterAddress,
    load_config,
    parse_config,
)
from pykraft.raft.config import QuorumConfig
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey

CONTROLLER = """
process.roles=controller
node.id=1
listeners=CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9094,3@[::1]:9095
log.dirs=/data/a,/data/b
"""

BROKER = """
process.roles=broker
node.id=4
listeners=PLAINTEXT://127.0.0.1:9092
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=127.0.0.1:9093,localhost:9094
log.dirs=/data/broker
"""


def config(text: str, **overrides: str) -> NodeConfig:
    lines = text + "".join(f"\n{key.replace('_', '.')}={value}" for key, value in overrides.items())
    return parse_config(lines)


def with_line(text: str, key: str, value: str | None) -> str:
    """`text` with `key` replaced by `key=value` (or removed when value is None)."""
    kept = [line for line in text.splitlines() if not line.startswith(key + "=")]
    return "\n".join(kept + ([] if value is None else [f"{key}={value}"]))


# ---- a valid controller: fields and defaults ----------------------------------------------------------------
def test_controller_fields():
    c = parse_config(CONTROLLER)
    assert c.process_roles == frozenset({"controller"})
    assert c.is_controller and not c.is_broker
    assert c.node_id == 1
    assert c.listeners == (Listener("CONTROLLER", "127.0.0.1", 9093),)
    assert c.advertised_listeners == c.listeners
    assert c.controller_listener_names == ("CONTROLLER",)
    assert c.quorum_voters == (
        VoterAddress(1, "127.0.0.1", 9093),
        VoterAddress(2, "127.0.0.1", 9094),
        VoterAddress(3, "::1", 9095),
    )
    assert c.bootstrap_servers == ()
    assert c.log_dirs == ("/data/a", "/data/b")
    assert c.metadata_log_dir == "/data/a"
    assert c.raw["controller.quorum.voters"] == "1@127.0.0.1:9093,2@127.0.0.1:9094,3@[::1]:9095"
    assert c.warnings == ()


def test_defaults_are_kafkas():
    c = parse_config(CONTROLLER)
    assert c.quorum == QuorumConfig()
    assert (c.quorum.election_timeout_ms, c.quorum.fetch_timeout_ms, c.quorum.election_backoff_max_ms) == (1000, 2000, 1000)
    assert (c.quorum.append_linger_ms, c.quorum.request_timeout_ms, c.quorum.retry_backoff_ms) == (25, 2000, 20)
    assert c.quorum.auto_join is False
    assert c.max_record_bytes_between_snapshots == 20971520
    assert c.max_snapshot_interval_ms == 3600000
    assert c.segment_bytes == 1073741824
    assert c.segment_ms == 604800000
    assert c.max_retention_bytes == 104857600
    assert c.max_retention_ms == 604800000
    assert c.max_idle_interval_ms == 500
    assert c.broker_heartbeat_interval_ms == 2000
    assert c.broker_session_timeout_ms == 9000
    assert c.initial_broker_registration_timeout_ms == 60000
    assert c.tls is None
    assert c.metrics_port is None
    assert (c.log_format, c.logs_dir) == ("text", None)  # Kafka's layout on stderr, no server.log
    # Kafka's default map, plus the controller listener mapped to PLAINTEXT because the map is not set.
    assert dict(c.listener_security_protocols) == {
        "PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL",
        "CONTROLLER": "PLAINTEXT",
    }


def test_every_key_is_read():
    c = config(
        CONTROLLER,
        **{
            "controller.quorum.election.timeout.ms": "1500",
            "controller.quorum.fetch.timeout.ms": "3000",
            "controller.quorum.election.backoff.max.ms": "700",
            "controller.quorum.append.linger.ms": "5",
            "controller.quorum.request.timeout.ms": "4000",
            "controller.quorum.retry.backoff.ms": "50",
            "controller.quorum.auto.join.enable": "TRUE",
            "metadata.log.max.record.bytes.between.snapshots": "1000",
            "metadata.log.max.snapshot.interval.ms": "0",
            "metadata.log.segment.bytes": "8388608",
            "metadata.log.segment.ms": "60000",
            "metadata.max.retention.bytes": "-1",
            "metadata.max.retention.ms": "86400000",
            "metadata.max.idle.interval.ms": "250",
            "broker.heartbeat.interval.ms": "100",
            "broker.session.timeout.ms": "600",
            "initial.broker.registration.timeout.ms": "5000",
            "metadata.log.dir": "/meta",
            "pykraft.metrics.port": "9404",
            "pykraft.log.format": "json",
            "pykraft.logs.dir": "/var/log/pykraft",
            "some.unknown.key": "kept",
        },
    )
    assert c.quorum == QuorumConfig(1500, 3000, 700, 5, 4000, 50, True)
    assert (c.max_record_bytes_between_snapshots, c.max_snapshot_interval_ms) == (1000, 0)
    assert (c.segment_bytes, c.segment_ms) == (8388608, 60000)
    assert (c.max_retention_bytes, c.max_retention_ms, c.max_idle_interval_ms) == (-1, 86400000, 250)
    assert (c.broker_heartbeat_interval_ms, c.broker_session_timeout_ms) == (100, 600)
    assert c.initial_broker_registration_timeout_ms == 5000
    assert c.metadata_log_dir == "/meta"
    assert c.log_dirs == ("/data/a", "/data/b")
    assert (c.metrics_port, c.log_format, c.logs_dir) == (9404, "json", "/var/log/pykraft")
    assert c.raw["some.unknown.key"] == "kept"


def test_log_dir_fallbacks():
    assert parse_config(with_line(CONTROLLER, "log.dirs", None) + "\nlog.dir=/single").log_dirs == ("/single",)
    default = parse_config(with_line(CONTROLLER, "log.dirs", None))
    assert default.log_dirs == ("/tmp/kafka-logs",)
    assert default.metadata_log_dir == "/tmp/kafka-logs"


def test_advertised_listeners_and_controller_endpoints():
    c = parse_config(
        with_line(CONTROLLER, "listeners", "CONTROLLER://:9093,EXTRA://0.0.0.0:9096")
        + "\nadvertised.listeners=CONTROLLER://ctrl-1.example:19093\ncontroller.listener.names=CONTROLLER,EXTRA"
        + "\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT"
    )
    assert c.controller_listener() == Listener("CONTROLLER", "", 9093)
    assert c.advertised_listeners == (Listener("CONTROLLER", "ctrl-1.example", 19093),)
    # CONTROLLER from advertised.listeners; EXTRA is not advertised, so it comes from listeners as bound.
    assert c.advertised_controller_endpoints() == Endpoints.of(
        [Endpoint("CONTROLLER", "ctrl-1.example", 19093), Endpoint("EXTRA", "0.0.0.0", 9096)]
    )


def test_empty_host_is_advertised_as_this_machine(monkeypatch):
    monkeypatch.setattr("pykraft.node.config.node_config.socket.getfqdn", lambda: "me.example")
    c = parse_config(with_line(CONTROLLER, "listeners", "CONTROLLER://:9093"))
    assert c.advertised_controller_endpoints() == Endpoints.of([Endpoint("CONTROLLER", "me.example", 9093)])


def test_listener_names_are_normalised_to_upper_case():
    c = parse_config(with_line(CONTROLLER, "listeners", "controller://127.0.0.1:9093") + "\ncontroller.listener.names=Controller")
    assert c.controller_listener() == Listener("CONTROLLER", "127.0.0.1", 9093)
    assert c.security_protocol("controller") == "PLAINTEXT"


def test_static_voter_set_and_local_replica():
    c = parse_config(CONTROLLER)
    voters = c.static_voter_set()
    assert voters is not None and voters.ids() == {1, 2, 3}
    assert voters.endpoints_of(3) == Endpoints.of([Endpoint("CONTROLLER", "::1", 9095)])
    replica = c.local_replica(None, "cluster")
    assert replica.key == ReplicaKey(1, None)
    assert replica.listener_name == "CONTROLLER"
    assert replica.can_become_voter and replica.static_voters == voters
    assert replica.endpoints == Endpoints.of([Endpoint("CONTROLLER", "127.0.0.1", 9093)])
    assert replica.cluster_id == "cluster"


def test_broker_with_bootstrap_servers():
    c = parse_config(BROKER)
    assert c.is_broker and not c.is_controller
    assert c.bootstrap_servers == (("127.0.0.1", 9093), ("localhost", 9094))
    assert c.static_voter_set() is None
    assert c.bootstrap_endpoints() == (Endpoint("CONTROLLER", "127.0.0.1", 9093), Endpoint("CONTROLLER", "localhost", 9094))
    replica = c.local_replica(None)
    assert not replica.can_become_voter and replica.endpoints == Endpoints()
    with pytest.raises(LookupError):
        c.controller_listener()


def test_combined_node():
    c = parse_config(
        with_line(CONTROLLER, "listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")
        + "\nprocess.roles=broker,controller"
    )
    assert c.is_broker and c.is_controller
    assert c.advertised_controller_endpoints() == Endpoints.of([Endpoint("CONTROLLER", "127.0.0.1", 9093)])


def test_tls():
    text = (
        with_line(CONTROLLER, "listeners", "CONTROLLER://127.0.0.1:9093")
        + "\nlistener.security.protocol.map=CONTROLLER:SSL"
        + "\nssl.certificate.location=/pem/cert.pem\nssl.key.location=/pem/key.pem\nssl.ca.location=/pem/ca.pem"
    )
    c = parse_config(text)
    assert c.security_protocol("CONTROLLER") == "SSL"
    assert c.tls == TlsConfig("/pem/cert.pem", "/pem/key.pem", "/pem/ca.pem", False)
    assert parse_config(text + "\nssl.client.auth=required").tls.client_auth_required is True
    # TLS paths without an SSL listener are still kept (for clients of SSL controllers).
    plain = parse_config(CONTROLLER + "\nssl.certificate.location=/c\nssl.key.location=/k\nssl.ca.location=/a")
    assert plain.tls == TlsConfig("/c", "/k", "/a", False)


def test_fetch_timeout_below_twice_the_long_poll_is_a_warning_not_an_error():
    c = config(CONTROLLER, **{"controller.quorum.fetch.timeout.ms": "800"})
    assert c.quorum.fetch_timeout_ms == 800
    assert len(c.warnings) == 1 and "fetch.timeout.ms=800 is below 1000 ms" in c.warnings[0]
    assert config(CONTROLLER, **{"controller.quorum.fetch.timeout.ms": "1000"}).warnings == ()


def test_load_config(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(CONTROLLER)
    assert load_config(path) == parse_config(CONTROLLER)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "missing.properties")
    assert info.value.problems == (f"{tmp_path / 'missing.properties'}: cannot read the configuration file: No such file or directory",)
    path.write_text("process.roles=controller\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert all(p.startswith(f"{path}: ") for p in info.value.problems)


def test_config_is_frozen():
    c = parse_config(CONTROLLER)
    with pytest.raises(AttributeError):
        c.node_id = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.raw["x"] = "y"  # type: ignore[index]
