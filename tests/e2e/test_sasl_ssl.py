"""Issue 33, SASL_SSL: SASL over TLS on every listener (the controller's, and the brokers' that clients use), the
server authenticated by its certificate, the client by SCRAM or PLAIN, the StandardAuthorizer on the SASL principal.

The nodes register, replicate and forward over SASL_SSL (they trust the cluster CA and log in as admin); kafka-python,
aiokafka and confluent-kafka produce and read back with the right password and fail with a wrong one; pykraft's tools
take `security.protocol=SASL_SSL` with `ssl.ca.location` in their config file; a client speaking SASL_PLAINTEXT to the
TLS listener gets nothing.
"""

from __future__ import annotations

import ssl

import pytest

from .helpers import wait_for
from .secure_clients import CLIENTS, produce, read
from .security_cluster import PASSWORDS, client_settings, sasl_ssl_cluster

TOPIC = "tls-sasl"


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory):
    with sasl_ssl_cluster(tmp_path_factory.mktemp("sasl-ssl")) as setup:
        created = setup.tool("topics", "create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "2")
        assert created.returncode == 0, created.stdout + created.stderr
        for resource in (["--topic", TOPIC], ["--group", "sasl-", "--resource-pattern-type", "prefixed"]):
            added = setup.tool("acls", "--add", "--allow-principal", "User:alice", "--operation", "All", *resource)
            assert added.returncode == 0, added.stdout + added.stderr
        yield setup


def tls_settings(client: str, ca: str, mechanism: str, user: str, password: str) -> dict[str, object]:
    settings: dict[str, object] = dict(client_settings(client, mechanism, user, password))
    if client == "confluent-kafka":
        return {**settings, "security.protocol": "SASL_SSL", "ssl.ca.location": ca,
                "ssl.endpoint.identification.algorithm": "none"}
    if client == "aiokafka":
        context = ssl.create_default_context(cafile=ca)
        context.check_hostname = False
        return {**settings, "security_protocol": "SASL_SSL", "ssl_context": context}
    return {**settings, "security_protocol": "SASL_SSL", "ssl_cafile": ca, "ssl_check_hostname": False}


@pytest.mark.parametrize("client", CLIENTS)
def test_scram_over_tls_produces_and_reads_back(secure, client):
    settings = tls_settings(client, secure.ca, "SCRAM-SHA-512", "alice", PASSWORDS["alice"])
    value = f"over-tls-{client}".encode()
    wait_for(lambda: _produces(secure, client, settings, value), f"{client} writing over SASL_SSL")
    assert value in read(client, secure.bootstrap(), settings, TOPIC, 50)


def _produces(secure, client: str, settings: dict[str, object], value: bytes) -> bool:
    try:
        return produce(client, secure.bootstrap(), settings, TOPIC, [value]) == 1
    except Exception:
        return False


@pytest.mark.parametrize("client", CLIENTS)
def test_a_wrong_password_over_tls_writes_nothing(secure, client):
    settings = tls_settings(client, secure.ca, "SCRAM-SHA-256", "alice", "not-alice-secret")
    before = secure.tool("get-offsets", "--topic", TOPIC)
    with pytest.raises(Exception):  # noqa: B017 - each client's own authentication error
        produce(client, secure.bootstrap(), settings, TOPIC, [b"never"])
    after = secure.tool("get-offsets", "--topic", TOPIC)
    assert before.returncode == 0 and before.stdout == after.stdout


def test_the_tools_speak_sasl_ssl_and_plaintext_sasl_gets_nothing(secure):
    described = secure.tool("topics", "describe", "--topic", TOPIC)
    assert described.returncode == 0 and f"Topic: {TOPIC}" in described.stdout, described.stderr
    listed = secure.tool("acls", "--list", "--topic", TOPIC)
    assert listed.returncode == 0 and "principal=User:alice" in listed.stdout
    plain = client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"])  # SASL without TLS
    with pytest.raises(Exception):  # noqa: B017
        produce("kafka-python", secure.bootstrap(), plain, TOPIC, [b"never"])
