"""Issue 33, authentication: real `pykraft server start` processes with SASL_PLAINTEXT everywhere (security_cluster.py),
and kafka-python, aiokafka and confluent-kafka as the clients.

- with the right password each client produces and reads back with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512;
- with a wrong password each client fails with an authentication error and nothing of it reaches the log;
- a client that does not speak SASL is disconnected after ApiVersions (raw sockets: no Metadata answer);
- a user created with AlterUserScramCredentials (`pykraft configs --entity-type users`) can log in at once, and not
  once deleted;
- a raw client without credentials cannot send BrokerRegistration, Vote or Fetch to the controller, and an
  authenticated user who is not a super user gets CLUSTER_AUTHORIZATION_FAILED for them.
"""

from __future__ import annotations

import socket
import struct
import uuid

import pytest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .secure_clients import CLIENTS, produce, read
from .security_cluster import MECHANISMS, PASSWORDS, SecureCluster, client_settings, secure_cluster
from .helpers import wait_for

TOPIC = "sasl-topic"
versions_rq = schema_module("kio.schema.api_versions.v3.request")
metadata_rq = schema_module("kio.schema.metadata.v12.request")
vote_rq = schema_module("kio.schema.vote.v2.request")
fetch_rq = schema_module("kio.schema.fetch.v17.request")
register_rq = schema_module("kio.schema.broker_registration.v4.request")
handshake_rq = schema_module("kio.schema.sasl_handshake.v1.request")
authenticate_rq = schema_module("kio.schema.sasl_authenticate.v2.request")


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory):
    with secure_cluster(tmp_path_factory.mktemp("sasl")) as setup:
        created = setup.tool("topics", "create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "2")
        assert created.returncode == 0, created.stderr
        for args in (["--topic", "sasl-", "--resource-pattern-type", "prefixed", "--operation", "All"],
                     ["--group", "sasl-", "--resource-pattern-type", "prefixed", "--operation", "Read"]):
            added = setup.tool("acls", "--add", "--allow-principal", "User:alice", *args)
            assert added.returncode == 0, added.stdout + added.stderr
        yield setup


def end_offset(secure: SecureCluster, topic: str) -> int:
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=secure.bootstrap(),
                                   **client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"]))
    try:
        partition = kafka.TopicPartition(topic, 0)
        return consumer.end_offsets([partition])[partition]
    finally:
        consumer.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", CLIENTS)
def test_the_right_password_produces_and_reads_back(secure, client, mechanism):
    settings = client_settings(client, mechanism, "alice", PASSWORDS["alice"])
    values = [f"{client}-{mechanism}-{i}".encode() for i in range(10)]
    assert produce(client, secure.bootstrap(), settings, TOPIC, values) == len(values)
    seen = read(client, secure.bootstrap(), settings, TOPIC, end_offset(secure, TOPIC))
    assert set(values) <= set(seen)


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_fails_and_writes_nothing(secure, client, mechanism, caplog):
    before = end_offset(secure, TOPIC)
    settings = client_settings(client, mechanism, "alice", "not-alice-secret")
    with pytest.raises(Exception) as refused:
        produce(client, secure.bootstrap(), settings, TOPIC, [b"must-not-arrive"])
    # the client's exception, or (aiokafka: "unable to bootstrap") what it logged about the refusal
    text = f"{type(refused.value).__name__}: {refused.value} {caplog.text}".lower()
    assert "authentication" in text or "sasl" in text, text
    assert end_offset(secure, TOPIC) == before


def _frame(message, correlation_id: int = 1) -> bytes:
    return encode_request(message, correlation_id=correlation_id, client_id="raw")


def _exchange(sock: socket.socket, message, correlation_id: int = 1):
    sock.sendall(_frame(message, correlation_id))
    header = _recv(sock, 4)
    if header is None:
        return None
    body = _recv(sock, struct.unpack(">i", header)[0])
    return None if body is None else decode_response(body, int(message.__api_key__), int(message.__version__)).message


def _recv(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _connect(address: str) -> socket.socket:
    host, port = address.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def test_a_client_without_sasl_is_disconnected_without_data(secure):
    for address in (secure.bootstrap(secure.cluster.broker_ids[0]), secure.controller()):
        with _connect(address) as sock:
            versions = _exchange(sock, versions_rq.ApiVersionsRequest(client_software_name="raw",
                                                                      client_software_version="1"))
            assert versions is not None and versions.error_code == 0  # ApiVersions is answered before SASL
            metadata = metadata_rq.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                   include_topic_authorized_operations=False)
            assert _exchange(sock, metadata, 2) is None  # closed: no brokers, no topics


def _authenticated(address: str, user: str, password: str) -> socket.socket:
    sock = _connect(address)
    assert _exchange(sock, handshake_rq.SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
    answer = _exchange(sock, authenticate_rq.SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 2)
    assert answer.error_code == 0, answer
    return sock


def _controller_rpcs(cluster_id: str):
    vote = vote_rq.VoteRequest(cluster_id=cluster_id, voter_id=BrokerId(1), topics=(vote_rq.TopicData(
        topic_name="__cluster_metadata", partitions=(vote_rq.PartitionData(
            partition_index=i32(0), replica_epoch=i32(99), replica_id=BrokerId(42),
            replica_directory_id=uuid.uuid4(), voter_directory_id=uuid.UUID(int=0), last_offset_epoch=i32(99),
            last_offset=i64(10**9), pre_vote=False),)),))
    fetch = fetch_rq.FetchRequest(cluster_id=cluster_id, replica_state=fetch_rq.ReplicaState(
        replica_id=BrokerId(42), replica_epoch=i64(-1)), max_wait=ZERO_THROTTLE, min_bytes=i32(0), max_bytes=i32(1 << 20),
        isolation_level=i8(0), session_id=i32(0), session_epoch=i32(-1), topics=(fetch_rq.FetchTopic(
            topic_id=uuid.UUID(int=1), partitions=(fetch_rq.FetchPartition(
                partition=i32(0), current_leader_epoch=i32(-1), fetch_offset=i64(0), last_fetched_epoch=i32(-1),
                log_start_offset=i64(-1), partition_max_bytes=i32(1 << 20), replica_directory_id=uuid.uuid4()),)),),
        forgotten_topics_data=(), rack_id="")
    register = register_rq.BrokerRegistrationRequest(
        broker_id=BrokerId(42), cluster_id=cluster_id, incarnation_id=uuid.uuid4(), listeners=(),
        features=(), rack=None, is_migrating_zk_broker=False, log_dirs=(uuid.uuid4(),), previous_broker_epoch=i64(-1))
    return {"Vote": vote, "Fetch": fetch, "BrokerRegistration": register}


def test_the_controller_takes_no_cluster_rpc_without_credentials(secure):
    cluster_id = secure.cluster.cluster_id
    for name, message in _controller_rpcs(cluster_id).items():
        with _connect(secure.controller()) as sock:  # no SASL at all: disconnected, nothing answered
            assert _exchange(sock, message) is None, name
        with _authenticated(secure.controller(), "alice", PASSWORDS["alice"]) as sock:  # not a super user
            answer = _exchange(sock, message, 3)
            assert answer is not None and answer.error_code == 31, (name, answer)  # CLUSTER_AUTHORIZATION_FAILED
    # nothing registered: broker 42 is not among the brokers
    assert 42 not in secure.unfenced()


def test_a_scram_user_created_and_deleted_with_alter_user_scram_credentials(secure):
    created = secure.tool("configs", "--alter", "--entity-type", "users", "--entity-name", "carol",
                          "--add-config", "SCRAM-SHA-512=[iterations=8192,password=carol-secret]")
    assert created.returncode == 0 and created.stdout.strip() == "Completed updating config for user carol.", (
        created.stdout + created.stderr)
    described = secure.tool("configs", "--describe", "--entity-type", "users", "--entity-name", "carol")
    assert described.stdout.strip() == "SCRAM credential configs for user-principal 'carol' are " \
                                       "SCRAM-SHA-512=iterations=8192"
    assert "carol-secret" not in described.stdout + described.stderr
    allowed = secure.tool("acls", "--add", "--allow-principal", "User:carol", "--topic", TOPIC, "--operation", "Write")
    assert allowed.returncode == 0
    settings = client_settings("kafka-python", "SCRAM-SHA-512", "carol", "carol-secret")
    wait_for(lambda: _produces(secure, settings), "carol's first write (the brokers replayed the credential)")
    deleted = secure.tool("configs", "--alter", "--entity-type", "users", "--entity-name", "carol",
                          "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr
    wait_for(lambda: not _produces(secure, settings), "carol refused (the credential deleted everywhere)")


def _produces(secure: SecureCluster, settings: dict[str, str]) -> bool:
    try:
        return produce("kafka-python", secure.bootstrap(), settings, TOPIC, [b"carol"]) == 1
    except Exception:
        return False


def test_the_client_tools_authenticate_with_their_config_files(secure):
    """console-producer (acks=0 on a connection of its own, and acks=all), console-consumer, get-offsets and
    consumer-groups over SASL with Kafka's config-file flags; without them the listener refuses the tool."""
    import subprocess

    from pykraft.node.local_cluster import CLI

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, *args, "--bootstrap-server", secure.bootstrap()], input=stdin,
                              capture_output=True, text=True, timeout=120)

    config = str(secure.admin_config)
    topic = "sasl-tools"
    created = secure.tool("topics", "create", "--topic", topic, "--partitions", "1", "--replication-factor", "2")
    assert created.returncode == 0, created.stderr
    for acks in ("0", "all"):
        sent = run("console-producer", "--topic", topic, "--producer.config", config, "--producer-property",
                   f"acks={acks}", stdin=f"acks-{acks}\n")
        assert sent.returncode == 0, sent.stdout + sent.stderr
    wait_for(lambda: end_offset(secure, topic) == 2, "both console-producer records written")
    read_back = run("console-consumer", "--topic", topic, "--consumer.config", config, "--from-beginning",
                    "--max-messages", "2", "--group", "sasl-tools-group", "--timeout-ms", "30000")
    assert read_back.returncode == 0 and read_back.stdout.split() == ["acks-0", "acks-all"], read_back.stderr
    offsets = run("get-offsets", "--topic", topic, "--command-config", config)
    assert offsets.returncode == 0 and offsets.stdout.split() == [f"{topic}:0:2"], offsets.stderr
    listed = run("consumer-groups", "--list", "--command-config", config)
    assert listed.returncode == 0 and "sasl-tools-group" in listed.stdout.split(), listed.stdout
    refused = run("consumer-groups", "--list", "--timeout", "5000")  # no SASL: the listener closes the connection
    assert refused.returncode != 0 and "sasl-tools-group" not in refused.stdout
    assert "cannot reach any bootstrap server" in refused.stdout + refused.stderr


def test_no_secret_in_logs_traces_tool_output_or_dump_log(secure):
    """JAAS passwords and SCRAM passwords, salts and keys: never in a node's log or trace, in `pykraft configs
    --describe --all` of a broker, nor in `pykraft dump-log` of the metadata log (salts and keys redacted)."""
    secrets = [*PASSWORDS.values(), "carol-secret", "not-alice-secret"]
    seen = []
    for node in secure.cluster.nodes.values():
        seen.append(secure.cluster.server_log(node.node_id))
        seen += [p.read_text(errors="replace") for p in node.data_dir.rglob("pykraft-trace*.jsonl")]
    broker = str(secure.cluster.broker_ids[0])
    described = secure.tool("configs", "--describe", "--all", "--entity-type", "brokers", "--entity-name", broker)
    assert described.returncode == 0, described.stderr
    assert "sasl.jaas.config" in described.stdout  # listed, its value hidden
    seen.append(described.stdout + described.stderr)
    controller = secure.cluster.nodes[secure.cluster.controller_ids[0]]
    segments = sorted(str(p) for p in (controller.data_dir / "__cluster_metadata-0").glob("*.log"))
    dumped = secure.cluster.cli("dump-log", *segments, check=False, timeout=120)
    assert "USER_SCRAM_CREDENTIAL_RECORD" in dumped.stdout and "(redacted)" in dumped.stdout
    seen.append(dumped.stdout)
    for text in seen:
        assert not any(secret in text for secret in secrets)
