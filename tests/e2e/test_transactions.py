"""Transactions with real processes and confluent-kafka's (librdkafka's) transactional producer: one controller,
three brokers, `__transaction_state` with 3 partitions (RF 3).

- commits and aborts across two topics, read back read_committed and read_uncommitted;
- a consume-transform-produce loop (tests/e2e/txn_loop.py) SIGKILLed mid-way and started again: every input
  appears exactly once in the output;
- a zombie producer fenced by a second one with the same transactional.id;
- the transaction coordinator's broker SIGKILLed while transactions are open: the one whose producer lives on
  commits, the abandoned one is aborted by its timeout, the last stable offset reaches the high watermark;
- a transaction left open past transaction.timeout.ms is aborted by the coordinator.
Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pykraft.records.group_records import partition_for

from .data_plane_checks import bootstrap, partition, start_cluster
from .helpers import wait_for

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.e2e

TXN_PARTITIONS = 3
PROPERTIES = {"transaction.state.log.num.partitions": str(TXN_PARTITIONS), "offsets.topic.num.partitions": "3",
              "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
              "group.initial.rebalance.delay.ms": "0"}
LOOP = Path(__file__).with_name("txn_loop.py")


@pytest.fixture
def cluster(tmp_path):
    cluster = start_cluster(tmp_path / "cluster", "a", PROPERTIES)
    for topic in ("b", "in", "out"):
        cluster.cli("topics", "create", "--bootstrap-server", bootstrap(cluster).split(",")[0], "--topic", topic,
                    "--partitions", "1", "--replication-factor", "3")
    yield cluster
    cluster.stop_all(timeout=20)


def producer(cluster, transactional_id: str, **extra) -> ck.Producer:
    p = ck.Producer({"bootstrap.servers": bootstrap(cluster), "transactional.id": transactional_id, **extra})
    p.init_transactions(60)
    return p


def read_all(cluster, topic: str, isolation: str) -> list[str]:
    """Every record of partition 0 up to the end the consumer's isolation level lets it see."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": f"reader-{time.monotonic_ns()}",
                            "isolation.level": isolation, "enable.auto.commit": False})
    try:
        tp = ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)
        end = visible_end(consumer, topic)
        consumer.assign([tp])
        values: list[str] = []
        deadline = time.monotonic() + 30
        position = 0
        while position < end and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=0.5):
                if message.error() is None:
                    values.append(message.value().decode())
            position = consumer.position([ck.TopicPartition(topic, 0)])[0].offset
        return values
    finally:
        consumer.close()


def visible_end(consumer, topic: str) -> int:
    """The end offset as the consumer's isolation level sees it (ListOffsets: the LSO for read_committed)."""
    return consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10, cached=False)[1]


def ends(cluster, topic: str) -> tuple[int, int]:
    """(last stable offset, high watermark) of partition 0."""
    found = []
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = ck.Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": "ends",
                                "isolation.level": isolation})
        try:
            found.append(visible_end(consumer, topic))
        finally:
            consumer.close()
    return found[0], found[1]


def transaction(p: ck.Producer, topics: tuple[str, ...], prefix: str, count: int, commit: bool) -> None:
    p.begin_transaction()
    for i in range(count):
        for topic in topics:
            p.produce(topic, value=f"{prefix}-{i}".encode())
    p.flush(30)  # on the brokers before the outcome (librdkafka drops queued records on abort)
    if commit:
        p.commit_transaction(60)
    else:
        p.abort_transaction(60)


def test_commit_and_abort_across_two_topics(cluster):
    p = producer(cluster, "two-topics")
    transaction(p, ("a", "b"), "committed", 10, commit=True)
    transaction(p, ("a", "b"), "aborted", 5, commit=False)
    transaction(p, ("a", "b"), "again", 3, commit=True)
    for topic in ("a", "b"):
        committed = read_all(cluster, topic, "read_committed")
        uncommitted = read_all(cluster, topic, "read_uncommitted")
        assert committed == [f"committed-{i}" for i in range(10)] + [f"again-{i}" for i in range(3)], committed
        assert sorted(uncommitted) == sorted(committed + [f"aborted-{i}" for i in range(5)]), uncommitted
        lso, hwm = ends(cluster, topic)
        assert lso == hwm  # no transaction open: the last stable offset is the high watermark


def test_consume_transform_produce_survives_sigkill(cluster):
    inputs = [f"in-{i:03d}" for i in range(200)]
    plain = ck.Producer({"bootstrap.servers": bootstrap(cluster), "enable.idempotence": True})
    for value in inputs:
        plain.produce("in", value=value.encode())
    plain.flush(30)
    args = [sys.executable, str(LOOP), bootstrap(cluster), "in", "out", "ctp", "ctp-loop", str(len(inputs))]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        line = wait_for(lambda: (lambda text: text if "committed up to" in text else None)(first.stdout.readline()),
                        "the loop committed a transaction")
        assert int(line.split()[-1]) < len(inputs)
        first.send_signal(signal.SIGKILL)  # inside its next transaction, most likely
    finally:
        first.wait(timeout=30)
    second = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    output = read_all(cluster, "out", "read_committed")
    assert sorted(output) == sorted(v.upper() for v in inputs)  # each input exactly once


def test_a_zombie_is_fenced_by_a_second_producer(cluster):
    zombie = producer(cluster, "zombie")
    zombie.begin_transaction()
    zombie.produce("a", value=b"zombie")
    zombie.flush(30)
    successor = producer(cluster, "zombie")  # fences the first and aborts its transaction
    with pytest.raises(ck.KafkaException) as raised:
        zombie.produce("a", value=b"zombie-late")
        zombie.commit_transaction(30)
    assert raised.value.args[0].fatal() or raised.value.args[0].txn_requires_abort()
    transaction(successor, ("a",), "successor", 1, commit=True)
    seen = read_all(cluster, "a", "read_committed")
    assert seen == ["successor-0"], seen


def _same_coordinator(transactional_id: str) -> str:
    """Another transactional id whose coordinator is the same __transaction_state partition."""
    wanted = partition_for(transactional_id, TXN_PARTITIONS)
    return next(f"{transactional_id}-{n}" for n in range(1000)
                if partition_for(f"{transactional_id}-{n}", TXN_PARTITIONS) == wanted)


def test_the_coordinators_broker_killed_during_open_transactions(cluster):
    committing, abandoned_id = "survivor", _same_coordinator("survivor")
    p = producer(cluster, committing, **{"transaction.timeout.ms": 60000})
    abandoned = producer(cluster, abandoned_id, **{"transaction.timeout.ms": 3000})
    for producer_, value in ((p, b"kept"), (abandoned, b"abandoned")):
        producer_.begin_transaction()
        producer_.produce("a", value=value)
        producer_.flush(30)
    del abandoned  # its process gone: only the coordinator can end its transaction
    lso, hwm = ends(cluster, "a")
    assert lso < hwm  # both transactions hold the last stable offset back
    coordinator = partition(cluster, "__transaction_state", partition_for(committing, TXN_PARTITIONS)).leader
    cluster.kill(coordinator)
    wait_for(lambda: (lambda s: s if s is not None and s.leader not in (-1, coordinator) else None)(
        partition(cluster, "__transaction_state", partition_for(committing, TXN_PARTITIONS))),
        "a new coordinator elected")
    p.commit_transaction(60)  # found again, the transaction loaded there and committed
    wait_for(lambda: (lambda e: e[0] == e[1] or None)(ends(cluster, "a")),
             "the last stable offset at the high watermark (the abandoned transaction aborted)")
    assert read_all(cluster, "a", "read_committed") == ["kept"]
    cluster.start(coordinator)


def test_a_transaction_past_its_timeout_is_aborted(cluster):
    p = producer(cluster, "slow", **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce("b", value=b"late")
    p.flush(30)
    wait_for(lambda: (lambda e: e[0] == e[1] or None)(ends(cluster, "b")), "the coordinator aborted it")
    with pytest.raises(ck.KafkaException):
        p.commit_transaction(30)
    assert read_all(cluster, "b", "read_committed") == []


def _table(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in text.splitlines()]


def test_the_transactions_tool(cluster):
    """`pykraft transactions` as kafka-transactions.sh: an open transaction listed, described, its producer's start
    offset shown, not hanging (its coordinator has it), then aborted by its start offset: the LSO moves past it."""
    p = producer(cluster, "tool", **{"transaction.timeout.ms": 60000})
    p.begin_transaction()
    p.produce("b", value=b"open")
    p.flush(30)
    server = bootstrap(cluster).split(",")[0]

    def tool(*args: str, check: bool = True):
        return cluster.cli("transactions", "--bootstrap-server", server, *args, check=check)

    listed = _table(tool("list").stdout)
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert any(row[0] == "tool" and row[3] == "Ongoing" for row in listed[1:]), listed
    described = _table(tool("describe", "--transactional-id", "tool").stdout)
    assert described[1][1] == "tool" and described[1][4] == "Ongoing" and described[1][8] == "b-0", described
    producers = _table(tool("describe-producers", "--topic", "b", "--partition", "0").stdout)
    assert producers[0][-1] == "CurrentTransactionStartOffset" and producers[1][-1] == "0", producers
    hanging = _table(tool("find-hanging", "--topic", "b", "--max-transaction-timeout", "0").stdout)
    assert hanging == [["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                        "LastTimestamp", "Duration(min)"]]
    tool("abort", "--topic", "b", "--partition", "0", "--start-offset", "0")
    wait_for(lambda: (lambda e: e[0] == e[1] or None)(ends(cluster, "b")), "the LSO past the aborted transaction")
    again = _table(tool("describe-producers", "--topic", "b", "--partition", "0").stdout)
    assert again[1][-1] == "None", again
    missing = tool("abort", "--topic", "b", "--partition", "0", "--start-offset", "0", check=False)
    assert missing.returncode == 1 and "Could not find any open transactions starting at offset 0" in missing.stderr
    unknown = tool("describe", "--transactional-id", "nope", check=False)
    assert unknown.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in unknown.stderr, unknown.stderr
