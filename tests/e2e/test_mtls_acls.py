"""Issue 33, principals from client certificates: a cluster whose every listener is mutual TLS
(`ssl.client.auth=required`), `ssl.principal.mapping.rules` turning a subject "CN=alice,O=pykraft" into User:alice,
and the StandardAuthorizer deciding on those principals (kafka-python clients, ACLs added with `pykraft acls` by a
super user known by its certificate). The nodes' own certificates (CN=node-N) are the super users they need for
registration and replication, as in a Kafka mTLS deployment.
"""

from __future__ import annotations

import pytest

from pykraft.node.local_cluster import LocalCluster

from .certs import KeyPair, client_tls_properties, issue_client, make_cluster_certs, node_tls_properties
from .helpers import FAST_TIMEOUTS, wait_for
from .secure_clients import produce, read

MAPPING = "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT"
SUPER_USERS = "User:node-1;User:node-2;User:admin"


class MtlsCluster:
    def __init__(self, cluster: LocalCluster, ca: str, users: dict[str, KeyPair]) -> None:
        self.cluster, self.ca, self.users = cluster, ca, users

    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.cluster.nodes[b].port}" for b in self.cluster.broker_ids)

    def client(self, user: str) -> dict[str, object]:
        pair = self.users[user]
        return {"security_protocol": "SSL", "ssl_cafile": self.ca, "ssl_certfile": pair.cert,
                "ssl_keyfile": pair.key, "ssl_check_hostname": False}

    def tool(self, *args: str) -> tuple[int, str]:
        config = self.cluster.root / "admin-ssl.properties"
        config.write_text(client_tls_properties(self.users["admin"], self.ca))
        done = self.cluster.cli(args[0], "--bootstrap-server", self.bootstrap(), "--command-config", str(config),
                                *args[1:], check=False, timeout=120)
        return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("mtls-acls")
    certs = make_cluster_certs(root / "certs", [1, 2], intruder_id=9)
    users = {"admin": certs.client, **{u: issue_client(root / "certs", u) for u in ("alice", "bob")}}
    cluster = LocalCluster(root / "cluster", controllers=1, brokers=1, properties={
        **FAST_TIMEOUTS, "offsets.topic.replication.factor": "1",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": SUPER_USERS, "ssl.principal.mapping.rules": MAPPING})
    for node_id, node in cluster.nodes.items():
        node.extra.update(node_tls_properties(certs.nodes[node_id], certs.ca))
        node.extra["listener.security.protocol.map"] = "CONTROLLER:SSL,PLAINTEXT:SSL"
    try:
        cluster.format_all()
        cluster.start_all()
        setup = MtlsCluster(cluster, certs.ca, users)
        wait_for(lambda: setup.tool("topics", "create", "--topic", "mtls-orders", "--partitions", "1",
                                    "--replication-factor", "1")[0] == 0, "the admin creating a topic over mTLS",
                 timeout=120)
        yield setup
    finally:
        cluster.stop_all(timeout=20)


def writes(mtls: MtlsCluster, user: str) -> bool:
    try:
        return produce("kafka-python", mtls.bootstrap(), mtls.client(user), "mtls-orders", [user.encode()]) == 1
    except Exception:
        return False


def test_the_certificates_subject_is_the_principal_acls_name(mtls):
    assert not writes(mtls, "alice")  # no ACL for User:alice yet
    code, output = mtls.tool("acls", "--add", "--allow-principal", "User:alice", "--operation", "Write",
                             "--operation", "Read", "--topic", "mtls-orders")
    assert code == 0, output
    wait_for(lambda: writes(mtls, "alice"), "alice (CN=alice) writing once User:alice may")
    assert not writes(mtls, "bob")  # another certificate of the same CA: another principal
    assert b"alice" in read("kafka-python", mtls.bootstrap(), mtls.client("alice"), "mtls-orders", 1)
    code, listed = mtls.tool("acls", "--list", "--topic", "mtls-orders")
    assert code == 0 and "principal=User:alice" in listed, listed


def test_the_admin_certificate_is_a_super_user_and_others_are_not(mtls):
    code, output = mtls.tool("acls", "--list")
    assert code == 0, output
    config = mtls.cluster.root / "bob-ssl.properties"
    config.write_text(client_tls_properties(mtls.users["bob"], mtls.ca))
    done = mtls.cluster.cli("acls", "--bootstrap-server", mtls.bootstrap(), "--command-config", str(config),
                            "--add", "--allow-principal", "User:bob", "--operation", "All", "--topic", "*",
                            check=False, timeout=120)
    assert done.returncode != 0 and "ClusterAuthorizationException" in done.stdout + done.stderr
