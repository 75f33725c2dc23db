"""Issue 33, authorization: the StandardAuthorizer on real processes (security_cluster.py), ACLs managed with
`pykraft acls` and with kafka-python's admin client, enforced for kafka-python clients:

- produce and consume allowed and denied (DENY before ALLOW, prefixed patterns), consumer groups, topic creation
  (CREATE on a prefix), cluster operations (CreateAcls, DescribeConfigs of a broker), Metadata listing only the
  topics the principal may describe, super users past a DENY for everyone;
- transactions (confluent-kafka): WRITE on the TRANSACTIONAL_ID and on the topic, read back read_committed;
- KIP-848 (confluent-kafka, group.protocol=consumer): READ on the group, a regex subscription resolved by the
  coordinator over the topics the member may describe only;
- DescribeAcls / DeleteAcls round trips through the tool and through kafka-python's admin client;
- ACLs and SCRAM credentials survive a restart of every node;
- a broker with a wrong inter-broker password never registers.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from pykraft.node.local_cluster import LocalNode, free_ports

from .helpers import wait_for
from .secure_clients import produce, read
from .security_cluster import PASSWORDS, SecureCluster, client_settings, sasl_properties, secure_cluster

BOB = client_settings("kafka-python", "SCRAM-SHA-256", "bob", PASSWORDS["bob"])


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory):
    with secure_cluster(tmp_path_factory.mktemp("acls")) as setup:
        for topic in ("acl-orders", "acl-other", "secret-payroll"):
            created = setup.tool("topics", "create", "--topic", topic, "--partitions", "1",
                                 "--replication-factor", "2")
            assert created.returncode == 0, created.stderr
        yield setup


def acls(secure: SecureCluster, *args: str, user: str = "admin") -> tuple[int, str]:
    config = secure.admin_config if user == "admin" else secure.config_for(user, PASSWORDS[user], "SCRAM-SHA-256")
    done = secure.tool("acls", *args, config=config)
    return done.returncode, done.stdout + done.stderr


def add(secure: SecureCluster, *args: str) -> None:
    code, output = acls(secure, "--add", *args)
    assert code == 0, output


def bob_produces(secure: SecureCluster, topic: str) -> bool:
    try:
        return produce("kafka-python", secure.bootstrap(), BOB, topic, [b"bob"]) == 1
    except Exception:
        return False


def test_produce_follows_allow_deny_and_prefixed_patterns(secure):
    assert not bob_produces(secure, "acl-orders")  # no ACL at all: denied
    add(secure, "--allow-principal", "User:bob", "--operation", "Write", "--topic", "acl-",
        "--resource-pattern-type", "prefixed")
    wait_for(lambda: bob_produces(secure, "acl-orders"), "bob writes under the acl- prefix")
    assert bob_produces(secure, "acl-other")
    assert not bob_produces(secure, "secret-payroll")  # outside the prefix
    add(secure, "--deny-principal", "User:bob", "--operation", "Write", "--topic", "acl-orders")
    wait_for(lambda: not bob_produces(secure, "acl-orders"), "the DENY taking precedence over the prefixed ALLOW")
    assert bob_produces(secure, "acl-other")


def test_consume_needs_read_on_the_topic_and_on_the_group(secure):
    produce("kafka-python", secure.bootstrap(), client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"]),
            "acl-other", [b"for-bob"])
    with pytest.raises(Exception, match="(?i)authoriz"):
        read("kafka-python", secure.bootstrap(), BOB, "acl-other", 1)
    add(secure, "--allow-principal", "User:bob", "--operation", "Read", "--topic", "acl-other")
    wait_for(lambda: _reads(secure, None), "bob reading acl-other (assign mode: no group)")
    with pytest.raises(Exception, match="(?i)authoriz"):
        read("kafka-python", secure.bootstrap(), BOB, "acl-other", 1, group="bobs-group")
    add(secure, "--allow-principal", "User:bob", "--operation", "Read", "--group", "bobs-group")
    wait_for(lambda: _reads(secure, "bobs-group"), "bob reading acl-other in his group")


def _reads(secure: SecureCluster, group: str | None) -> bool:
    try:
        return len(read("kafka-python", secure.bootstrap(), BOB, "acl-other", 1, group=group)) >= 1
    except Exception:
        return False


def test_topic_creation_needs_create_and_listings_hide_what_bob_cannot_describe(secure):
    bob_config = secure.config_for("bob", PASSWORDS["bob"], "SCRAM-SHA-256")
    refused = secure.tool("topics", "create", "--topic", "acl-new", "--partitions", "1", "--replication-factor", "1",
                          config=bob_config)
    assert refused.returncode != 0 and "authoriz" in (refused.stdout + refused.stderr).lower()
    add(secure, "--allow-principal", "User:bob", "--operation", "Create", "--topic", "acl-",
        "--resource-pattern-type", "prefixed")

    def created() -> bool:
        done = secure.tool("topics", "create", "--topic", "acl-new", "--partitions", "1", "--replication-factor",
                           "1", config=bob_config)
        return done.returncode == 0 or "already exists" in done.stdout + done.stderr

    wait_for(created, "bob creating acl-new under his CREATE prefix")
    elsewhere = secure.tool("topics", "create", "--topic", "other-new", "--partitions", "1", "--replication-factor",
                            "1", config=bob_config)
    assert elsewhere.returncode != 0
    listed = secure.tool("topics", "list", config=bob_config)
    assert listed.returncode == 0, listed.stderr
    names = set(listed.stdout.split())
    assert "acl-new" in names and "acl-other" in names and "secret-payroll" not in names


def test_cluster_operations_need_cluster_acls(secure):
    code, output = acls(secure, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "x",
                        user="bob")
    assert code == 1 and "ClusterAuthorizationException" in output
    bob_config = secure.config_for("bob", PASSWORDS["bob"], "SCRAM-SHA-256")
    broker = str(secure.cluster.broker_ids[0])
    described = secure.tool("configs", "--describe", "--entity-type", "brokers", "--entity-name", broker,
                            config=bob_config)
    assert described.returncode == 1 and "ClusterAuthorizationException" in described.stderr
    add(secure, "--allow-principal", "User:bob", "--operation", "DescribeConfigs", "--cluster")
    wait_for(lambda: secure.tool("configs", "--describe", "--entity-type", "brokers", "--entity-name", broker,
                                 config=bob_config).returncode == 0, "bob describing the broker's configs")


def test_super_users_pass_a_deny_for_everyone(secure):
    add(secure, "--deny-principal", "User:*", "--operation", "All", "--topic", "secret-payroll")
    admin = client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"])
    assert produce("kafka-python", secure.bootstrap(), admin, "secret-payroll", [b"admin-wrote"]) == 1
    assert not bob_produces(secure, "secret-payroll")


def _transaction(secure: SecureCluster, transactional_id: str, topic: str, value: bytes) -> None:
    """One committed transaction by bob (confluent-kafka); raises the client's KafkaException when refused."""
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": secure.bootstrap(), "transactional.id": transactional_id,
                                         "transaction.timeout.ms": 30_000,
                                         **client_settings("confluent-kafka", "SCRAM-SHA-512", "bob",
                                                           PASSWORDS["bob"])})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value)
    producer.commit_transaction(30)


def test_transactions_need_write_on_the_transactional_id_and_the_topic(secure):
    import confluent_kafka

    created = secure.tool("topics", "create", "--topic", "bob-txn", "--partitions", "1", "--replication-factor", "2")
    assert created.returncode == 0, created.stderr
    add(secure, "--allow-principal", "User:bob", "--operation", "Write", "--topic", "bob-txn")
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        _transaction(secure, "bobs-tx", "bob-txn", b"never")
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    add(secure, "--allow-principal", "User:bob", "--operation", "Write", "--transactional-id", "bobs-",
        "--resource-pattern-type", "prefixed")

    def committed() -> bool:
        try:
            _transaction(secure, "bobs-tx", "bob-txn", b"committed")
            return True
        except confluent_kafka.KafkaException:
            return False
    wait_for(committed, "bob committing a transaction under his TRANSACTIONAL_ID prefix")
    admin = client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"])
    assert b"committed" in read("kafka-python", secure.bootstrap(), {**admin, "isolation_level": "read_committed"},
                                "bob-txn", 1)
    code, listed = acls(secure, "--list", "--transactional-id", "bobs-", "--resource-pattern-type", "prefixed")
    assert code == 0 and "resourceType=TRANSACTIONAL_ID, name=bobs-, patternType=PREFIXED" in listed


def _kip848_consumer(secure: SecureCluster, group: str, subscription: list[str]):
    import confluent_kafka

    return confluent_kafka.Consumer({
        "bootstrap.servers": secure.bootstrap(), "group.id": group, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        **client_settings("confluent-kafka", "SCRAM-SHA-512", "bob", PASSWORDS["bob"])})


def test_kip848_regex_subscription_gets_only_describable_topics(secure):
    admin = client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"])
    for topic in ("kip-open", "kip-hidden"):
        created = secure.tool("topics", "create", "--topic", topic, "--partitions", "2", "--replication-factor", "2")
        assert created.returncode == 0, created.stderr
        produce("kafka-python", secure.bootstrap(), admin, topic, [topic.encode()])
    add(secure, "--allow-principal", "User:bob", "--operation", "Read", "--topic", "kip-open")
    add(secure, "--allow-principal", "User:bob", "--operation", "Read", "--group", "bob-kip848")
    consumer = _kip848_consumer(secure, "bob-kip848", ["^kip-.*"])
    consumer.subscribe(["^kip-.*"])
    seen: set[bytes] = set()
    errors: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while b"kip-open" not in seen and time.monotonic() < deadline:
            for msg in consumer.consume(10, timeout=0.5):
                (errors.append(str(msg.error())) if msg.error() is not None else seen.add(msg.value()))
        assert b"kip-open" in seen, errors
        for _ in range(6):  # a few more rounds: kip-hidden must never be assigned
            for msg in consumer.consume(10, timeout=0.5):
                if msg.error() is None:
                    seen.add(msg.value())
        assigned = {tp.topic for tp in consumer.assignment()}
        # the coordinator's own view (the admin, a super user, sees every topic): kip-hidden never assigned
        described = secure.tool("consumer-groups", "--describe", "--group", "bob-kip848", "--members", "--verbose")
    finally:
        consumer.close()
    assert assigned == {"kip-open"} and b"kip-hidden" not in seen
    assert "kip-open:0,1" in described.stdout and "kip-hidden" not in described.stdout, described.stdout


def test_kip848_heartbeat_needs_read_on_the_group(secure):
    import confluent_kafka

    consumer = _kip848_consumer(secure, "not-bobs-kip848", ["acl-other"])
    consumer.subscribe(["acl-other"])
    codes: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED not in codes and time.monotonic() < deadline:
            try:
                for msg in consumer.consume(10, timeout=0.5):
                    if msg.error() is not None:
                        codes.add(msg.error().code())
                    else:
                        codes.add(-12345)  # a record: never with this group
            except confluent_kafka.KafkaException as exc:
                codes.add(exc.args[0].code())
    finally:
        consumer.close()
    assert confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED in codes and -12345 not in codes


def test_describe_and_delete_acls_round_trip(secure):
    add(secure, "--allow-principal", "User:carol", "--operation", "Read", "--operation", "Describe",
        "--topic", "round-trip")
    code, listed = acls(secure, "--list", "--topic", "round-trip")
    assert code == 0
    assert listed.splitlines()[0] == ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, "
                                      "name=round-trip, patternType=LITERAL)`: ")
    assert "\t(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    assert "\t(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)" in listed
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient
    from kafka.admin import ResourcePatternFilter, ResourceType

    admin = KafkaAdminClient(bootstrap_servers=secure.bootstrap(), request_timeout_ms=20_000,
                             **client_settings("kafka-python", "PLAIN", "admin", PASSWORDS["admin"]))
    try:
        pattern = ResourcePatternFilter(ResourceType.TOPIC, "round-trip", ACLResourcePatternType.LITERAL)
        found, error = admin.describe_acls(ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY, pattern))
        assert {acl.operation for acl in found} == {ACLOperation.READ, ACLOperation.DESCRIBE}
        deleted = admin.delete_acls([ACLFilter("User:carol", "*", ACLOperation.READ, ACLPermissionType.ANY,
                                               pattern)])
        assert [(len(matches), error.errno if error else 0) for _filter, matches, error in deleted] == [(1, 0)]
    finally:
        admin.close()
    code, removed = acls(secure, "--remove", "--force", "--topic", "round-trip")
    assert code == 0
    code, listed = acls(secure, "--list", "--topic", "round-trip")
    assert code == 0 and "round-trip" not in listed


def test_acls_and_credentials_survive_a_restart_of_every_node(secure):
    cluster = secure.cluster
    made = secure.tool("configs", "--alter", "--entity-type", "users", "--entity-name", "dave",
                       "--add-config", "SCRAM-SHA-256=[password=dave-secret]")
    assert made.returncode == 0, made.stderr
    add(secure, "--allow-principal", "User:dave", "--operation", "Write", "--topic", "acl-other")
    dave = client_settings("kafka-python", "SCRAM-SHA-256", "dave", "dave-secret")
    wait_for(lambda: _writes(secure, dave), "dave writing before the restart")
    cluster.stop_all(timeout=30)
    cluster.start_all()
    secure.wait_unfenced()
    wait_for(lambda: _writes(secure, dave), "dave (SCRAM credential and ACL from the log) writing after it")
    assert not _writes(secure, client_settings("kafka-python", "SCRAM-SHA-256", "dave", "wrong"))


def _writes(secure: SecureCluster, settings: dict[str, str]) -> bool:
    try:
        return produce("kafka-python", secure.bootstrap(), settings, "acl-other", [b"dave"]) == 1
    except Exception:
        return False


def test_a_broker_with_a_wrong_inter_broker_password_never_registers(secure):
    cluster = secure.cluster
    node_id = max(cluster.nodes) + 1
    intruder = LocalNode(node_id, free_ports(1)[0], cluster.root / f"node-{node_id}", uuid.uuid4(),
                         initial_voter=False, extra=sasl_properties(node_password="not-the-admin-secret"),
                         is_broker=True)
    cluster.nodes[node_id] = intruder
    cluster.format(intruder)
    cluster.start(node_id)
    try:
        wait_for(lambda: "SASL authentication with" in cluster.server_log(node_id),
                 "the intruder's refused SASL authentication in its log")
        time.sleep(3)  # a registration, if it were possible, would have happened by now (heartbeat 300 ms)
        assert node_id not in _registered(secure)
        assert "Invalid username or password" in cluster.server_log(node_id)
    finally:
        cluster.stop(node_id)
        del cluster.nodes[node_id]


def _registered(secure: SecureCluster) -> list[int]:
    listed = secure.tool("brokers", "list", "--json")
    return [b["id"] for b in json.loads(listed.stdout)] if listed.returncode == 0 else []
