"""A cluster with SASL on every listener and the StandardAuthorizer, shared by the security process tests and the Java
tier: one controller and two brokers (`pykraft server start` processes), SASL_PLAINTEXT on the controller listener
and on the brokers' listener with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 enabled.

- PLAIN users come from the JAAS configs (`user_admin`, `user_alice`, `user_bob`), SCRAM users from the metadata log:
  `storage format --add-scram` bootstraps admin, alice and bob for both mechanisms;
- the nodes authenticate to each other as `admin` with PLAIN (sasl.mechanism.controller.protocol,
  sasl.mechanism.inter.broker.protocol), and `super.users=User:admin`;
- `admin_config` is a --command-config for pykraft's tools as admin; `client_settings(client, mechanism, user,
  password)` the SASL settings of kafka-python, aiokafka or confluent-kafka.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pykraft.node.local_cluster import LocalCluster

from .data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from .helpers import wait_for

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def jaas(module: str, username: str, password: str, users: Mapping[str, str] | None = None) -> str:
    options = [f'username="{username}"', f'password="{password}"']
    options += [f'user_{name}="{secret}"' for name, secret in (users or {}).items()]
    return f"{module} required {' '.join(options)};"


def sasl_properties(node_password: str = PASSWORDS["admin"], plain_users: Mapping[str, str] | None = None,
                    listeners: tuple[str, ...] = ("controller", "plaintext")) -> dict[str, str]:
    """Every node's SASL and authorizer settings; `node_password` is what this node itself sends."""
    users = dict(PASSWORDS if plain_users is None else plain_users)
    props = {
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "sasl.mechanism.controller.protocol": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin",
    }
    for listener in listeners:
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = jaas(PLAIN_MODULE, "admin", node_password, users)
        for mechanism in MECHANISMS[1:]:
            props[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"] = jaas(
                SCRAM_MODULE, "admin", node_password)
    return props


def scram_arguments(users: Mapping[str, str] = PASSWORDS) -> list[str]:
    found = []
    for user, password in users.items():
        for mechanism in MECHANISMS[1:]:
            found += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
    return found


def command_config(user: str, password: str, mechanism: str = "PLAIN") -> str:
    module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    return (f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n"
            f"sasl.jaas.config={jaas(module, user, password)}\n")


def client_settings(client: str, mechanism: str, user: str, password: str) -> dict[str, str]:
    if client == "confluent-kafka":
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user,
                "sasl.password": password}
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism, "sasl_plain_username": user,
            "sasl_plain_password": password}


@dataclass
class SecureCluster:
    cluster: LocalCluster
    admin_config: Path

    def bootstrap(self, broker: int | None = None) -> str:
        ids = [broker] if broker is not None else self.cluster.broker_ids
        return ",".join(f"127.0.0.1:{self.cluster.nodes[b].port}" for b in ids)

    def controller(self) -> str:
        return self.cluster.bootstrap_servers()

    def tool(self, *args: str, config: Path | None = None, check: bool = False):
        """`pykraft <args>` with the admin's (or `config`'s) credentials, against the brokers."""
        name, rest = args[0], args[1:]
        flags = ["--bootstrap-server", self.bootstrap(), "--command-config", str(config or self.admin_config)]
        if name in ("topics", "brokers", "metadata-quorum"):
            sub, rest = rest[0], rest[1:]
            return self.cluster.cli(name, sub, *flags, *rest, check=check, timeout=120)
        return self.cluster.cli(name, *flags, *rest, check=check, timeout=120)

    def config_for(self, user: str, password: str, mechanism: str = "PLAIN") -> Path:
        path = self.cluster.root / f"client-{user}-{mechanism}-{abs(hash(password)) % 10_000}.properties"
        path.write_text(command_config(user, password, mechanism))
        return path

    def unfenced(self) -> list[int]:
        listed = self.tool("brokers", "list", "--json")
        if listed.returncode != 0:
            return []
        return [b["id"] for b in json.loads(listed.stdout) if not b["fenced"]]

    def wait_unfenced(self, count: int | None = None, timeout: float = 120) -> None:
        want = len(self.cluster.broker_ids) if count is None else count
        wait_for(lambda: len(self.unfenced()) >= want, f"{want} unfenced brokers", timeout=timeout)


@contextmanager
def secure_cluster(root: Path, *, brokers: int = 2, extra: Mapping[str, str] | None = None,
                   admin_properties: str | None = None) -> Iterator[SecureCluster]:
    """`admin_properties`: the tools' config file when the listeners are not SASL_PLAINTEXT (SASL_SSL's CA)."""
    cluster = LocalCluster(root, controllers=1, brokers=brokers,
                           properties={**DATA_PLANE_TIMING, "min.insync.replicas": "1",
                                       "offsets.topic.replication.factor": str(brokers),
                                       "transaction.state.log.replication.factor": str(brokers),
                                       "transaction.state.log.min.isr": "1",
                                       "transaction.state.log.num.partitions": "2",
                                       **sasl_properties(),
                                       **(extra or {})})
    voters = ",".join(n.voter_spec for n in cluster.nodes.values() if n.initial_voter)
    for node in cluster.nodes.values():
        flags = () if node.is_broker else ("--initial-controllers", voters, *scram_arguments())
        cluster.format(node, *flags)
    admin_config = root / "admin.properties"
    admin_config.write_text(admin_properties or command_config("admin", PASSWORDS["admin"]))
    secure = SecureCluster(cluster, admin_config)
    cluster.start_all()
    try:
        secure.wait_unfenced()
        yield secure
    finally:
        stop_cluster(cluster)


@contextmanager
def sasl_ssl_cluster(root: Path) -> Iterator[SecureCluster]:
    """The same cluster with SASL_SSL on every listener (the nodes' certificate from a test CA, clients checking it
    without hostname verification); `.ca` is the CA's PEM file, the admin's config file has it."""
    from .certs import make_cluster_certs

    certs = make_cluster_certs(root / "certs", [1], intruder_id=9)
    tls = {"listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:SASL_SSL",
           "ssl.certificate.location": certs.nodes[1].cert, "ssl.key.location": certs.nodes[1].key,
           "ssl.ca.location": certs.ca}
    admin = command_config("admin", PASSWORDS["admin"]).replace("SASL_PLAINTEXT", "SASL_SSL")
    with secure_cluster(root / "cluster", extra=tls, admin_properties=f"{admin}ssl.ca.location={certs.ca}\n") as setup:
        setup.ca = certs.ca  # type: ignore[attr-defined]
        yield setup

