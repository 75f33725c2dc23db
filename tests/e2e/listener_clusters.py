"""Clusters of one controller and two brokers with two listeners per broker, as Kafka users set them up (used by
the e2e listener tests and by the Java interop tier):
- `split_cluster`: INTERNAL (127.0.0.1, the inter-broker listener) and EXTERNAL, bound on 127.0.0.1 but advertised
  at 127.0.0.2 on another port, where a forwarder (a NAT, a load balancer) carries connections to the bound port;
- `plain_and_ssl_cluster`: PLAINTEXT and SSL, the replica fetchers on SSL (server authentication only).
Each yields a `Listeners` once both brokers are unfenced and a topic `replicated` (RF 2) is fully in sync.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykraft.net.tls import client_context
from pykraft.node.local_cluster import LocalCluster, free_ports

from .certs import make_cluster_certs
from .data_plane_checks import partition, wait_every_broker_unfenced
from .forwarder import Forwarder
from .helpers import FAST_TIMEOUTS, wait_for

TIMING = {**FAST_TIMEOUTS, "broker.heartbeat.interval.ms": "300", "broker.session.timeout.ms": "3000",
          "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2",
          "group.initial.rebalance.delay.ms": "0"}


@dataclass
class Listeners:
    """A running cluster and, per listener and broker id, the (host, port) it advertises."""

    cluster: LocalCluster
    advertised: dict[str, dict[int, tuple[str, int]]]  # listener -> broker id -> advertised address
    client_config: dict[str, dict[str, dict[str, Any]]]  # listener -> client -> extra client settings
    forwarders: dict[int, Forwarder] = field(default_factory=dict)  # broker id -> its EXTERNAL forwarder
    ssl_context: Any = None
    ca: str | None = None  # the CA a client of the SSL listener trusts

    def bootstrap(self, listener: str, broker: int | None = None) -> str:
        """host:port of one broker's listener (the first broker by default)."""
        host, port = self.advertised[listener][broker if broker is not None else self.cluster.broker_ids[0]]
        return f"{host}:{port}"

    def create(self, listener: str, topic: str, partitions: int = 1) -> None:
        """A topic replicated on both brokers, created through `listener`, with a full ISR."""
        extra = ["--command-config", str(self.cluster.root / "client-ssl.properties")] if listener == "SSL" else []
        self.cluster.cli("topics", "create", "--bootstrap-server", self.bootstrap(listener), *extra, "--topic", topic,
                         "--partitions", str(partitions), "--replication-factor", "2")
        wait_for(lambda: all((p := partition(self.cluster, topic, i)) is not None and len(p.isr) == 2
                             for i in range(partitions)), f"{topic} fully in sync")


def _start(cluster: LocalCluster) -> None:
    cluster.format_all()
    cluster.start_all()
    wait_every_broker_unfenced(cluster)


@contextmanager
def split_cluster(root: Path) -> Iterator[Listeners]:
    cluster = LocalCluster(root / "cluster", controllers=1, brokers=2, properties=TIMING)
    advertised: dict[str, dict[int, tuple[str, int]]] = {"INTERNAL": {}, "EXTERNAL": {}}
    with ExitStack() as stack:
        forwarders = {}
        for broker in cluster.broker_ids:
            node = cluster.nodes[broker]
            bound, public = free_ports(2)
            node.extra.update({
                "listeners": f"INTERNAL://127.0.0.1:{node.port},EXTERNAL://127.0.0.1:{bound}",
                "advertised.listeners": f"INTERNAL://127.0.0.1:{node.port},EXTERNAL://127.0.0.2:{public}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                "inter.broker.listener.name": "INTERNAL",
            })
            advertised["INTERNAL"][broker] = ("127.0.0.1", node.port)
            advertised["EXTERNAL"][broker] = ("127.0.0.2", public)
            forwarders[broker] = stack.enter_context(Forwarder(("127.0.0.2", public), ("127.0.0.1", bound)))
        setup = Listeners(cluster, advertised, {"INTERNAL": {}, "EXTERNAL": {}}, forwarders)
        try:
            _start(cluster)
            setup.create("INTERNAL", "replicated")
            yield setup
        finally:
            cluster.stop_all(timeout=20)


@contextmanager
def plain_and_ssl_cluster(root: Path) -> Iterator[Listeners]:
    cluster = LocalCluster(root / "cluster", controllers=1, brokers=2, properties=TIMING)
    certs = make_cluster_certs(root / "certs", cluster.broker_ids, intruder_id=99)
    advertised: dict[str, dict[int, tuple[str, int]]] = {"PLAINTEXT": {}, "SSL": {}}
    for broker in cluster.broker_ids:
        node = cluster.nodes[broker]
        (ssl_port,) = free_ports(1)
        both = f"PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port}"
        node.extra.update({
            "listeners": both, "advertised.listeners": both,
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
            "inter.broker.listener.name": "SSL",  # the replica fetchers speak TLS
            "ssl.certificate.location": certs.nodes[broker].cert, "ssl.key.location": certs.nodes[broker].key,
            "ssl.ca.location": certs.ca, "ssl.client.auth": "none",
        })
        advertised["PLAINTEXT"][broker] = ("127.0.0.1", node.port)
        advertised["SSL"][broker] = ("127.0.0.1", ssl_port)
    cluster.root.mkdir(parents=True, exist_ok=True)
    (cluster.root / "client-ssl.properties").write_text(f"security.protocol=SSL\nssl.ca.location={certs.ca}\n")
    ssl_clients = {"kafka-python": {"security_protocol": "SSL", "ssl_cafile": certs.ca, "ssl_check_hostname": False},
                   "confluent-kafka": {"security.protocol": "SSL", "ssl.ca.location": certs.ca,
                                       "ssl.endpoint.identification.algorithm": "none"}}
    setup = Listeners(cluster, advertised, {"PLAINTEXT": {}, "SSL": ssl_clients},
                      ssl_context=client_context(None, None, certs.ca), ca=certs.ca)
    try:
        _start(cluster)
        setup.create("SSL", "replicated")  # its ISR fills through the SSL replica fetchers
        yield setup
    finally:
        cluster.stop_all(timeout=20)
