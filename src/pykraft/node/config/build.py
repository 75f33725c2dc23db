"""From raw properties to the checked field values of `NodeConfig`, collecting every problem on the way.

Key names and defaults are Kafka's (reference §4.1, §4.2); the cross-key rules are the ones Kafka's
`KafkaConfig.validateValues` applies to a KRaft node, with Kafka's wording where the reference gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pykraft.raft.config import MAX_FETCH_WAIT_MS, QuorumConfig

from pykraft.node.config import listener_rules
from pykraft.node.config.security import security_config
from pykraft.node.config.stores import STORE_TYPES, StoreSpec
from pykraft.node.config.checks import kafka_value_problems, security_problem, unimplemented_warnings
from pykraft.node.config.values import (
    INT64_MAX,
    MAX_PORT,
    Listener,
    Problems,
    ValueReader,
    parse_bootstrap_servers,
    parse_listeners,
    parse_voters,
    split_list,
)

ROLES = ("broker", "controller")
DEFAULT_LOG_DIR = "/tmp/kafka-logs"  # Kafka's log.dir default
Q = "controller.quorum."


def build_config(props: Mapping[str, str]) -> tuple[dict[str, Any], list[str], list[str]]:
    """(NodeConfig keyword fields except raw/warnings, errors, warnings). `tls` is a 4-tuple or None."""
    problems = Problems()
    read = ValueReader(props, problems)
    roles = _roles(read)
    node_id = _node_id(read)
    before = len(problems.errors)
    listeners = parse_listeners("listeners", read.text("listeners"), problems)
    # A listener that did not parse is already reported; checks naming it would only repeat that problem.
    listeners_ok = len(problems.errors) == before
    advertised = listener_rules.advertised(read, listeners)
    controller_names = tuple(name.upper() for name in split_list(read.text("controller.listener.names")))
    protocols = listener_rules.protocols(read, roles, listeners, controller_names)
    inter_broker = listener_rules.inter_broker_listener_name(read, protocols)
    if listeners_ok:
        listener_rules.check_listeners(problems, roles, listeners, advertised, controller_names, inter_broker)
    elif not controller_names:
        listener_rules.check_listeners(problems, roles, (), (), controller_names, inter_broker)
    voters = parse_voters(Q + "voters", read.text(Q + "voters"), problems)
    bootstrap = parse_bootstrap_servers(Q + "bootstrap.servers", read.text(Q + "bootstrap.servers"), problems)
    _check_quorum(problems, roles, node_id, voters, bootstrap, read)
    log_dirs, metadata_dir = _dirs(read)
    fields: dict[str, Any] = dict(
        process_roles=frozenset(roles),
        node_id=node_id,
        listeners=listeners,
        advertised_listeners=advertised,
        controller_listener_names=controller_names,
        listener_security_protocols=MappingProxyType(protocols),
        inter_broker_listener_name=inter_broker,
        metadata_log_dir=metadata_dir,
        log_dirs=log_dirs,
        quorum_voters=voters,
        bootstrap_servers=bootstrap,
        quorum=_quorum(read),
        tls=_tls(read, listeners, protocols),
        security=security_config(read, roles, listeners, controller_names, protocols, inter_broker),
        metrics_port=_metrics_port(read),
        log_format=read.choice("pykraft.log.format", "text", ("json", "text")),
        logs_dir=read.text("pykraft.logs.dir") or None,
        **_metadata_log(read),
    )
    for problem in kafka_value_problems(props):
        problems.error(problem)
    refusal = security_problem(props)
    if refusal is not None:
        problems.error(refusal)
    for warning in unimplemented_warnings(props):
        problems.warn(warning)
    return fields, problems.errors, problems.warnings


def _roles(read: ValueReader) -> list[str]:
    raw = read.text("process.roles")
    roles = [role.lower() for role in split_list(raw)]
    if not roles:
        read.problems.error("process.roles is missing: set it to broker, controller or broker,controller")
    for role in roles:
        if role not in ROLES:
            read.problems.error(f"process.roles: unknown role {role!r} (expected broker and/or controller)")
    if len(set(roles)) != len(roles):
        read.problems.error(f"process.roles: duplicate role names found in {raw!r}")
    return [role for role in dict.fromkeys(roles) if role in ROLES]


def _node_id(read: ValueReader) -> int:
    if not read.text("node.id"):
        read.problems.error("node.id is missing: every KRaft node needs a unique non-negative node.id")
        return -1
    return read.integer("node.id", -1)


def _check_quorum(problems: Problems, roles: list[str], node_id: int, voters, bootstrap, read: ValueReader) -> None:
    if not voters and not bootstrap and not read.text(Q + "voters") and not read.text(Q + "bootstrap.servers"):
        problems.error(
            "neither controller.quorum.voters nor controller.quorum.bootstrap.servers is set: "
            "set one of them so this node can find the controllers"
        )
    voter_ids = {voter.node_id for voter in voters}
    if node_id < 0 or not voter_ids:
        return
    shown = "{" + ", ".join(str(i) for i in sorted(voter_ids)) + "}"
    if "controller" in roles and node_id not in voter_ids:
        problems.error(
            f"If process.roles contains the 'controller' role, the node id {node_id} must be included in "
            f"the set of voters controller.quorum.voters={shown}"
        )
    if roles == ["broker"] and node_id in voter_ids:
        problems.error(
            f"If process.roles contains just the 'broker' role, the node id {node_id} must not be included in "
            f"the set of voters controller.quorum.voters={shown}"
        )


def _quorum(read: ValueReader) -> QuorumConfig:
    election = read.integer(Q + "election.timeout.ms", 1000, low=1)
    fetch = read.integer(Q + "fetch.timeout.ms", 2000, low=1)
    if fetch < 2 * MAX_FETCH_WAIT_MS:
        # Not an error (Kafka accepts it), but a follower whose long-poll fetch waits 500 ms can then time out
        # between two fetches and start needless elections; KIP-1236 proposes 1000 ms as the lower bound.
        read.problems.warn(
            f"{Q}fetch.timeout.ms={fetch} is below {2 * MAX_FETCH_WAIT_MS} ms (twice the {MAX_FETCH_WAIT_MS} ms "
            "fetch long-poll): followers may start needless elections"
        )
    return QuorumConfig(
        election_timeout_ms=election,
        fetch_timeout_ms=fetch,
        election_backoff_max_ms=read.integer(Q + "election.backoff.max.ms", 1000, low=1),
        append_linger_ms=read.integer(Q + "append.linger.ms", 25),
        request_timeout_ms=read.integer(Q + "request.timeout.ms", 2000, low=1),
        retry_backoff_ms=read.integer(Q + "retry.backoff.ms", 20),
        auto_join=read.boolean(Q + "auto.join.enable", False),
    )


def _dirs(read: ValueReader) -> tuple[tuple[str, ...], str]:
    given = read.text("log.dirs") or read.text("log.dir", DEFAULT_LOG_DIR)
    log_dirs = tuple(split_list(given))
    if not log_dirs:
        read.problems.error("log.dirs is empty: give at least one directory")
        log_dirs = (DEFAULT_LOG_DIR,)
    if len(set(log_dirs)) != len(log_dirs):
        read.problems.error(f"log.dirs: a directory appears more than once in {','.join(log_dirs)}")
    return log_dirs, read.text("metadata.log.dir") or log_dirs[0]


def _metadata_log(read: ValueReader) -> dict[str, int]:
    return dict(
        max_record_bytes_between_snapshots=read.integer(
            "metadata.log.max.record.bytes.between.snapshots", 20 * 1024 * 1024, low=1, high=INT64_MAX
        ),
        max_snapshot_interval_ms=read.integer("metadata.log.max.snapshot.interval.ms", 3_600_000, high=INT64_MAX),
        segment_bytes=read.integer("metadata.log.segment.bytes", 1024**3, low=8 * 1024 * 1024),  # Kafka's minimum
        segment_ms=read.integer("metadata.log.segment.ms", 604_800_000, low=1, high=INT64_MAX),
        max_retention_bytes=read.integer("metadata.max.retention.bytes", 100 * 1024 * 1024, low=-1, high=INT64_MAX),
        max_retention_ms=read.integer("metadata.max.retention.ms", 604_800_000, low=-1, high=INT64_MAX),
        max_idle_interval_ms=read.integer("metadata.max.idle.interval.ms", 500),
        broker_heartbeat_interval_ms=read.integer("broker.heartbeat.interval.ms", 2000, low=1),
        broker_session_timeout_ms=read.integer("broker.session.timeout.ms", 9000, low=1),
        initial_broker_registration_timeout_ms=read.integer("initial.broker.registration.timeout.ms", 60_000, low=1),
    )


def _tls(read: ValueReader, listeners: tuple[Listener, ...], protocols: Mapping[str, str]) -> tuple | None:
    """(cert, key, ca, client auth required, keystore, truststore): PEM paths (librdkafka's names) and/or Kafka's
    keystore and truststore (StoreSpec), the node's certificate and key from one, the CA from the other."""
    keys = ("ssl.certificate.location", "ssl.key.location", "ssl.ca.location")
    paths = [read.text(key) or None for key in keys]
    auth = read.choice("ssl.client.auth", "none", ("required", "requested", "none"))
    keystore = _store(read, "keystore")
    truststore = _store(read, "truststore")
    have_chain = keystore is not None or (paths[0] is not None and paths[1] is not None)
    have_ca = truststore is not None or paths[2] is not None
    ssl_listeners = [l.name for l in listeners if protocols.get(l.name) in ("SSL", "SASL_SSL")]
    given = any(paths) or keystore is not None or truststore is not None
    if (ssl_listeners or given) and not (have_chain and have_ca):
        missing = ([] if have_chain else ["ssl.certificate.location and ssl.key.location (or ssl.keystore.*)"]) + (
            [] if have_ca else ["ssl.ca.location (or ssl.truststore.*)"])
        why = f"SSL listener {', '.join(ssl_listeners)} needs" if ssl_listeners else "TLS needs"
        read.problems.error(f"{why} a certificate, its key and a CA: set {' and '.join(missing)}")
        return None
    if not given:
        return None
    return (paths[0], paths[1], paths[2], auth == "required", keystore, truststore)


def _store(read: ValueReader, kind: str) -> StoreSpec | None:
    """Kafka's ssl.<kind>.location/type/password (and ssl.key.password for a keystore), or None when unset."""
    location = read.text(f"ssl.{kind}.location")
    if not location:
        return None
    store_type = read.text(f"ssl.{kind}.type", "JKS").upper()
    if store_type not in STORE_TYPES:
        read.problems.error(f"ssl.{kind}.type {store_type} is not supported by pykraft: use PKCS12 or PEM")
        return None
    password = read.props.get(f"ssl.{kind}.password")
    key_password = read.props.get("ssl.key.password") if kind == "keystore" else None
    return StoreSpec(location, store_type, password, key_password)


def _metrics_port(read: ValueReader) -> int | None:
    if not read.text("pykraft.metrics.port"):
        return None
    return read.integer("pykraft.metrics.port", 0, high=MAX_PORT)
