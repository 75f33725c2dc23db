"""Issue 6: a cluster whose controllers speak mutual TLS on the CONTROLLER listener, and a node with a wrong
certificate refused.

One cluster serves every check (module fixture): nodes 1-3 are the initial voters, node 5 a genuine observer and
node 4 an intruder whose certificate is issued by an unrelated CA (with a genuine node's subject, CN=node-4). The
intruder trusts the cluster CA, so it is the cluster's side that must refuse it. Node 5 is the control: an
observer with a good certificate started at the same time does get listed, so node 4's absence is the refusal
and not slowness.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess

import pytest

from pykraft.admin.client import AdminClient
from pykraft.admin.transport import default_transport
from pykraft.admin.writer import MetadataLogWriter
from pykraft.net.tls import client_context
from pykraft.node.local_cluster import LocalCluster

from .certs import ClusterCerts, client_tls_properties, make_cluster_certs, node_tls_properties
from .helpers import FAST_TIMEOUTS, observer_ids, values, voter_ids, wait_for

INTRUDER, OBSERVER, BROKER = 4, 5, 6
REFUSED_DEADLINE = "default.api.timeout.ms=5000\nrequest.timeout.ms=2000\n"
# The runtime's WARNING line for a failed handshake on an outbound raft connection.
TLS_FAILURE = re.compile(r"TLS handshake with 127\.0\.0\.1:(\d+) failed")


class TlsCluster:
    def __init__(self, cluster: LocalCluster, certs: ClusterCerts) -> None:
        self.cluster, self.certs = cluster, certs
        root = cluster.root
        self.client_config = root / "client-ssl.properties"
        self.client_config.write_text(client_tls_properties(certs.client, certs.ca))
        # The refused clients retry until default.api.timeout.ms (60 s by default, as in Kafka's tools: a
        # closed connection is retriable), so their configs shorten it; neither config has a client certificate.
        self.no_cert_config = root / "client-no-cert.properties"
        self.no_cert_config.write_text(client_tls_properties(None, certs.ca) + REFUSED_DEADLINE)
        self.plaintext_config = root / "client-plaintext.properties"
        self.plaintext_config.write_text(REFUSED_DEADLINE)

    def bootstrap(self, ids: list[int]) -> str:
        return ",".join(f"127.0.0.1:{self.cluster.nodes[i].port}" for i in ids)

    def describe(self, *flags: str, ids: list[int] | None = None) -> subprocess.CompletedProcess:
        return self.cluster.cli("metadata-quorum", "--bootstrap-controller", self.bootstrap(ids or [1, 2, 3]),
                                *flags, "describe", "--status", check=False, timeout=60)

    def status(self) -> dict[str, object]:
        result = self.describe("--command-config", str(self.client_config))
        assert result.returncode == 0, result.stderr
        fields: dict[str, object] = {}
        for line in result.stdout.splitlines():
            label, _, value = line.partition(":")
            fields[label] = value.strip()
        fields["CurrentVoters"] = json.loads(fields["CurrentVoters"])  # type: ignore[arg-type]
        fields["CurrentObservers"] = json.loads(fields["CurrentObservers"])  # type: ignore[arg-type]
        for key in ("LeaderId", "LeaderEpoch", "HighWatermark"):
            fields[key] = int(fields[key])  # type: ignore[arg-type]
        return fields

    def leader_status(self) -> dict[str, object] | None:
        status = self.status()
        return status if status["LeaderId"] >= 0 and status["HighWatermark"] >= 0 else None  # type: ignore[operator]

    def client_ssl(self):  # ssl.SSLContext
        return client_context(self.certs.client.cert, self.certs.client.key, self.certs.ca)

    def write(self, batch: list[bytes]) -> int:
        """One committed write through a TLS transport; returns its base offset."""
        addresses = [self.cluster.nodes[i].address for i in (1, 2, 3)]

        async def main() -> int:
            async with MetadataLogWriter(addresses, transport=default_transport(self.client_ssl()),
                                         deadline_ms=30_000, request_timeout_ms=3000) as writer:
                return (await writer.write(batch)).base_offset

        return asyncio.run(main())

    def replication(self) -> tuple[int, dict[int, int]]:
        """(high watermark, log end offset per voter) from the leader, over TLS."""

        async def main() -> tuple[int, dict[int, int]]:
            async with AdminClient([self.cluster.nodes[i].address for i in (1, 2, 3)], deadline_ms=10_000,
                                   ssl_context=self.client_ssl()) as admin:
                info = await admin.describe_quorum()
                return info.high_watermark, {v.replica_id: v.log_end_offset for v in info.voters}

        return asyncio.run(main())


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("tls-cluster")
    certs = make_cluster_certs(root / "certs", [1, 2, 3, OBSERVER, BROKER], intruder_id=INTRUDER)
    cluster = LocalCluster(root / "cluster", controllers=3, observers=2, brokers=1, properties=FAST_TIMEOUTS)
    for node_id, node in cluster.nodes.items():
        pair = certs.intruder if node_id == INTRUDER else certs.nodes[node_id]
        node.extra.update(node_tls_properties(pair, certs.ca))
    # The broker's own listener is SSL too: its clients and its registration with the controllers use TLS.
    cluster.nodes[BROKER].extra["listener.security.protocol.map"] = "CONTROLLER:SSL,PLAINTEXT:SSL"
    try:
        cluster.format_all()
        cluster.start_all()
        yield TlsCluster(cluster, certs)
    finally:
        cluster.stop_all(timeout=20)


def test_mutual_tls_cluster_elects_commits_and_describes_through_the_cli(tls):
    status = wait_for(tls.leader_status, "a leader, described over TLS")
    assert voter_ids(status) == [1, 2, 3]
    assert status["LeaderId"] in (1, 2, 3)

    first = tls.write(values("tls", 50))
    second = tls.write(values("tls-more", 50))
    assert second >= first + 50, "the second batch is committed after the first"
    # The followers replicated over TLS too: every voter reaches the leader's high watermark.
    high_watermark, ends = wait_for(lambda: (r := tls.replication()) and all(e >= r[0] for e in r[1].values()) and r,
                                    "every voter to reach the high watermark")
    assert high_watermark >= second + 50
    assert sorted(ends) == [1, 2, 3]
    described = tls.status()
    assert described["HighWatermark"] >= second + 50
    assert described["LeaderId"] == status["LeaderId"] or described["LeaderEpoch"] > status["LeaderEpoch"]


def test_a_node_with_a_certificate_from_another_ca_is_never_admitted(tls):
    cluster = tls.cluster
    wait_for(tls.leader_status, "a leader")
    # Control: the genuine observer, started with the intruder, is listed by the leader.
    wait_for(lambda: {OBSERVER, BROKER} <= set(observer_ids(tls.status())), "the genuine observer and broker listed")
    # The bound: the intruder has been refused repeatedly (each line is one failed connection attempt).
    wait_for(lambda: len(TLS_FAILURE.findall(cluster.server_log(INTRUDER))) >= 3,
             "the intruder's log to show repeated TLS failures")
    refused_ports = {int(port) for port in TLS_FAILURE.findall(cluster.server_log(INTRUDER))}
    assert refused_ports <= {cluster.nodes[i].port for i in (1, 2, 3)}, "it was refused by the voters it asked"
    status = tls.status()
    assert INTRUDER not in observer_ids(status) and INTRUDER not in voter_ids(status)
    assert observer_ids(status) == [OBSERVER, BROKER]  # the broker is an observer of the metadata log too
    assert cluster.nodes[INTRUDER].is_running(), "a refused node keeps retrying; it does not crash"
    # The cluster keeps working with the intruder knocking.
    offset = tls.write(values("while-refused", 20))
    assert wait_for(tls.leader_status, "a leader")["HighWatermark"] >= offset + 20
    assert INTRUDER not in observer_ids(tls.status())


def test_plaintext_and_half_configured_clients_get_one_line_and_a_failure_exit(tls):
    wait_for(tls.leader_status, "a leader")
    plaintext = tls.describe("--command-config", str(tls.plaintext_config))
    assert plaintext.returncode == 1
    assert plaintext.stdout == ""
    assert len(plaintext.stderr.strip().splitlines()) == 1, plaintext.stderr
    assert plaintext.stderr.startswith("pykraft metadata-quorum: cannot reach any bootstrap controller")

    # TLS without a client certificate: the nodes require one (ssl.client.auth=required).
    no_cert = tls.describe("--command-config", str(tls.no_cert_config))
    assert no_cert.returncode == 1
    assert no_cert.stdout == ""
    assert len(no_cert.stderr.strip().splitlines()) == 1, no_cert.stderr
    assert no_cert.stderr.startswith("pykraft metadata-quorum: cannot reach any bootstrap controller")
    assert "TLS handshake rejected" in no_cert.stderr

    # The same command with the client TLS config works against the same nodes.
    assert tls.describe("--command-config", str(tls.client_config)).returncode == 0


def test_a_broker_registers_over_tls_and_forwards_a_topic_creation_over_tls(tls):
    cluster = tls.cluster
    broker = f"127.0.0.1:{cluster.nodes[BROKER].port}"

    def listed() -> list[dict] | None:
        result = cluster.cli("brokers", "list", "--json", "--bootstrap-server", broker, "--command-config",
                             str(tls.client_config), check=False, timeout=60)
        return json.loads(result.stdout) if result.returncode == 0 else None

    assert wait_for(lambda: (found := listed()) and found[0]["fenced"] is False and found,
                    "the broker registered and unfenced")[0]["id"] == BROKER
    created = cluster.cli("topics", "create", "--bootstrap-server", broker, "--command-config",
                          str(tls.client_config), "--topic", "secure", "--partitions", "2",
                          "--replication-factor", "1", check=False, timeout=60)
    assert created.stdout.strip() == "Created topic secure.", created.stderr
    # A plaintext client gets nothing from the broker's SSL listener: one line (Kafka's printException line, on
    # stdout as Kafka prints it), exit 1.
    refused = cluster.cli("topics", "list", "--bootstrap-server", broker, "--command-config",
                          str(tls.plaintext_config), check=False, timeout=60)
    assert refused.returncode == 1 and len(refused.stdout.strip().splitlines()) == 1 and refused.stderr == ""
