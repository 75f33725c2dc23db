"""Issue 15: `pykraft server start` checks the whole configuration before starting, as Kafka does.

One test per refusal class, each through the real command: exit 1 and one stderr line. Then the warning naming the
keys pykraft does not implement, and Kafka's PKCS12 / PEM keystores and truststores for mutual TLS.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from pykraft.net.tls import client_context, peer_subject, server_context
from pykraft.node.config.node_config import ConfigError, parse_config

from .helpers import config_text, format_dir, free_ports

COMMAND = [sys.executable, "-m", "pykraft.cli.main", "server", "start", "--config"]
OPENSSL = "/usr/bin/openssl"


def start_with(tmp_path, extra: str) -> tuple[int, list[str]]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    format_dir(data, 1)
    path = tmp_path / "server.properties"
    path.write_text(config_text(1, {1: free_ports(1)[0]}, data) + extra)
    result = subprocess.run([*COMMAND, str(path)], capture_output=True, text=True, timeout=60)
    return result.returncode, result.stderr.strip().splitlines()


def test_a_kafka_key_of_the_wrong_type_is_refused_in_kafkas_words(tmp_path):
    code, lines = start_with(tmp_path, "num.network.threads=abc\n")
    assert code == 1 and len(lines) == 1
    assert lines[0].endswith("Invalid value abc for configuration num.network.threads: Not a number of type INT")


def test_a_kafka_key_out_of_kafkas_range_is_refused_in_kafkas_words(tmp_path):
    code, lines = start_with(tmp_path, "metadata.log.segment.bytes=1000\n")
    assert code == 1 and len(lines) == 1
    assert lines[0].endswith(
        "Invalid value 1000 for configuration metadata.log.segment.bytes: Value must be at least 8388608")


def test_security_settings_pykraft_does_not_enforce_refuse_the_start(tmp_path):
    code, lines = start_with(tmp_path, "sasl.kerberos.service.name=kafka\ndelegation.token.secret.key=s3cret\n"
                                       "listener.name.controller.plain.sasl.server.callback.handler.class=a.B\n"
                                       "principal.builder.class=a.Builder\n")
    assert code == 1 and len(lines) == 1
    assert ("pykraft does not enforce delegation.token.secret.key, "
            "listener.name.controller.plain.sasl.server.callback.handler.class, principal.builder.class, "
            "sasl.kerberos.service.name: refusing to start") in lines[0]


def test_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError) as info:
        parse_config("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://h:1\n"
                     "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=h:1\n"
                     "num.io.threads=0\nlog.cleaner.enable=maybe\nsasl.login.class=a.Login\n")
    assert [p.split(": ", 1)[1] for p in info.value.problems] == [
        "Invalid value 0 for configuration num.io.threads: Value must be at least 1",
        "Invalid value maybe for configuration log.cleaner.enable: Expected value to be either true or false",
        "pykraft does not enforce sasl.login.class: refusing to start rather than run without them "
        "(pykraft implements SASL/PLAIN, SASL/SCRAM and the StandardAuthorizer; remove these settings)"]


def test_kafka_keys_pykraft_does_not_implement_are_named_in_one_warning_unknown_keys_apart():
    config = parse_config("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://h:1\n"
                          "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=h:1\n"
                          "num.network.threads=3\nfoo.bar=1\npykraft.log.format=text\nmin.insync.replica=2\n"
                          "listener.name.controller.ssl.cipher.suites=X\n")
    assert config.warnings == (
        "These Kafka configurations are not implemented by pykraft and are ignored: "
        "listener.name.controller.ssl.cipher.suites, num.network.threads",
        "The configuration 'foo.bar' was supplied but isn't a known config.",
        "The configuration 'min.insync.replica' was supplied but isn't a known config. "
        "Did you mean 'min.insync.replicas'?")


def test_the_data_planes_keys_are_implemented_not_warned_about():
    config = parse_config("process.roles=broker\nnode.id=1\nlisteners=PLAINTEXT://h:2\n"
                          "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=h:1\n"
                          "min.insync.replicas=2\nlog.segment.bytes=1048576\nreplica.fetch.wait.max.ms=100\n"
                          "auto.create.topics.enable=false\nmessage.max.bytes=1000000\n")
    assert config.warnings == ()


def test_every_broker_key_of_the_topic_settings_is_implemented():
    from pykraft.broker.topic_settings import BROKER_KEYS
    from pykraft.node.config.checks import IMPLEMENTED_KEYS

    assert "log.retention.hours" in BROKER_KEYS and BROKER_KEYS <= IMPLEMENTED_KEYS


# ---- Kafka's keystores and truststores ------------------------------------------------------------------------
def _openssl(*args: str) -> None:
    subprocess.run([OPENSSL, *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A CA, a node certificate as a PKCS12 keystore and as a PEM keystore (encrypted key), a PKCS12 truststore."""
    d = tmp_path_factory.mktemp("stores")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    _openssl("req", "-x509", *ec, "-nodes", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2",
             "-subj", "/CN=test-ca")
    _openssl("req", "-new", *ec, "-nodes", "-keyout", f"{d}/node.key", "-out", f"{d}/node.csr",
             "-subj", "/O=pykraft/CN=node-1")
    _openssl("x509", "-req", "-in", f"{d}/node.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
             "-CAcreateserial", "-days", "2", "-out", f"{d}/node.pem")
    _openssl("pkcs12", "-export", "-in", f"{d}/node.pem", "-inkey", f"{d}/node.key", "-out", f"{d}/node.p12",
             "-passout", "pass:secret")
    _openssl("pkcs12", "-export", "-nokeys", "-in", f"{d}/ca.pem", "-out", f"{d}/trust.p12", "-passout", "pass:trust")
    _openssl("pkey", "-in", f"{d}/node.key", "-aes256", "-passout", "pass:keypw", "-out", f"{d}/node-enc.key")
    (d / "keystore.pem").write_bytes((d / "node-enc.key").read_bytes() + (d / "node.pem").read_bytes())
    return d


def tls_config(extra: str):
    return parse_config("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:1\n"
                        "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\n"
                        "listener.security.protocol.map=CONTROLLER:SSL\nssl.client.auth=required\n" + extra).tls


async def _mutual_handshake(server_tls, client_tls) -> tuple[str | None, str | None]:
    """A real TLS connection on 127.0.0.1 between contexts built from the two configs: (client seen by the server,
    server seen by the client)."""
    seen: asyncio.Future = asyncio.get_running_loop().create_future()

    async def on_client(reader, writer):
        seen.set_result(peer_subject(writer.get_extra_info("ssl_object")))
        writer.close()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0, ssl=server_context(
        server_tls.cert_path, server_tls.key_path, server_tls.ca_path, require_client_cert=True))
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(
            client_tls.cert_path, client_tls.key_path, client_tls.ca_path))
        server_subject = peer_subject(writer.get_extra_info("ssl_object"))
        client_subject = await asyncio.wait_for(seen, 10)
        writer.close()
    return client_subject, server_subject


def test_pkcs12_and_pem_keystores_and_truststores_give_mutual_tls(stores):
    pkcs12 = tls_config(f"ssl.keystore.type=PKCS12\nssl.keystore.location={stores}/node.p12\n"
                        f"ssl.keystore.password=secret\nssl.truststore.type=PKCS12\n"
                        f"ssl.truststore.location={stores}/trust.p12\nssl.truststore.password=trust\n")
    pem = tls_config(f"ssl.keystore.type=PEM\nssl.keystore.location={stores}/keystore.pem\nssl.key.password=keypw\n"
                     f"ssl.truststore.type=PEM\nssl.truststore.location={stores}/ca.pem\n")
    assert pkcs12.client_auth_required and pem.client_auth_required
    subjects = asyncio.run(_mutual_handshake(pkcs12, pem))
    assert subjects == ("CN=node-1,O=pykraft", "CN=node-1,O=pykraft")  # each side verified the other


@pytest.mark.parametrize(("extra", "message"), [
    ("ssl.keystore.location={d}/node.p12\n", "ssl.keystore.type JKS is not supported by pykraft: use PKCS12 or PEM"),
    ("ssl.keystore.type=PKCS12\nssl.keystore.location={d}/node.p12\nssl.keystore.password=wrong\n"
     "ssl.ca.location={d}/ca.pem\n", "ssl.keystore.location: cannot load the PKCS12 keystore {d}/node.p12"),
    ("ssl.keystore.type=PKCS12\nssl.keystore.location={d}/absent.p12\nssl.ca.location={d}/ca.pem\n",
     "ssl.keystore.location: cannot read {d}/absent.p12"),
])
def test_unusable_stores_are_config_problems(stores, extra, message):
    with pytest.raises(ConfigError) as info:
        tls_config(extra.format(d=stores))
    assert message.format(d=stores) in str(info.value)
