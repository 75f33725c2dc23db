"""One workload, three stock clients: an idempotent acks=all producer and an assign-mode consumer each.

`produce(client, servers, topic, count, on_sent, history)` sends `rec-<i>` for i in range(count), calling
`on_sent(i)` after each send (the test kills and restarts brokers there), and returns the indexes the client
acknowledged; with a `ProduceHistory` it writes what the client was told about each record (the partition and
offset of an acknowledged one, or its failure: the input of `pykraft analyze`'s acknowledged-history audit).
`consume(client, servers, topic, expected)` reads partition 0 from the beginning until every expected index was
seen (or a deadline) and returns the indexes in the order read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pykraft.records.client_history import ProduceHistory

CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")
PAUSE_S = 0.01
DEADLINE_S = 90.0


def _index(value: bytes) -> int:
    return int(value.decode().split("-")[1])


def produce(client: str, servers: str, topic: str, count: int, on_sent: Callable[[int], None],
            history: ProduceHistory | None = None) -> set[int]:
    if client == "kafka-python":
        return _produce_kafka_python(servers, topic, count, on_sent, history)
    if client == "aiokafka":
        return asyncio.run(_produce_aiokafka(servers, topic, count, on_sent, history))
    return _produce_confluent(servers, topic, count, on_sent, history)


def _record(history: ProduceHistory | None, topic: str, i: int, metadata: tuple[int, int] | None) -> None:
    """Write one outcome: (partition, offset) of an acknowledged record, None for a failed one."""
    if history is None:
        return
    if metadata is None:
        history.failed(topic, f"rec-{i}".encode())
    else:
        history.acked(topic, metadata[0], metadata[1], f"rec-{i}".encode())


def consume(client: str, servers: str, topic: str, expected: set[int]) -> list[int]:
    if client == "kafka-python":
        return _consume_kafka_python(servers, topic, expected)
    if client == "aiokafka":
        return asyncio.run(_consume_aiokafka(servers, topic, expected))
    return _consume_confluent(servers, topic, expected)


def _produce_kafka_python(servers, topic, count, on_sent, history=None):
    import kafka

    producer = kafka.KafkaProducer(bootstrap_servers=servers, acks="all", enable_idempotence=True,
                                   request_timeout_ms=5000, retry_backoff_ms=200, metadata_max_age_ms=1000,
                                   delivery_timeout_ms=120_000, linger_ms=5)
    futures = {}
    for i in range(count):
        futures[i] = producer.send(topic, f"rec-{i}".encode())
        on_sent(i)
        time.sleep(PAUSE_S)
    producer.flush(120)
    producer.close(30)
    for i, f in futures.items():
        _record(history, topic, i, (f.value.partition, f.value.offset) if f.succeeded() else None)
    return {i for i, f in futures.items() if f.succeeded()}


async def _produce_aiokafka(servers, topic, count, on_sent, history=None):
    import aiokafka

    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=servers, acks="all", enable_idempotence=True,
                                         request_timeout_ms=5000, retry_backoff_ms=200, metadata_max_age_ms=1000,
                                         linger_ms=5)
    await producer.start()
    futures = {}
    try:
        for i in range(count):
            futures[i] = await producer.send(topic, f"rec-{i}".encode())
            on_sent(i)
            await asyncio.sleep(PAUSE_S)
        await asyncio.wait(list(futures.values()), timeout=120)
    finally:
        await producer.stop()
    done = {i for i, f in futures.items() if f.done() and not f.cancelled() and f.exception() is None}
    for i, f in futures.items():
        _record(history, topic, i, (f.result().partition, f.result().offset) if i in done else None)
    return done


def _produce_confluent(servers, topic, count, on_sent, history=None):
    import confluent_kafka

    acknowledged: set[int] = set()
    reported: set[int] = set()

    def delivered(error, message) -> None:
        index = _index(message.value())
        reported.add(index)
        if error is None:
            acknowledged.add(index)
        _record(history, topic, index, None if error is not None else (message.partition(), message.offset()))

    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
                                         "message.timeout.ms": 120_000, "retry.backoff.ms": 200,
                                         "topic.metadata.refresh.interval.ms": 1000, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"rec-{i}".encode(), on_delivery=delivered)
        producer.poll(0)
        on_sent(i)
        time.sleep(PAUSE_S)
    producer.flush(120)
    for i in set(range(count)) - reported:  # never answered within the flush: failed, as far as the client knows
        _record(history, topic, i, None)
    return acknowledged


def _consume_kafka_python(servers, topic, expected):
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False, group_id=None,
                                   consumer_timeout_ms=3000, metadata_max_age_ms=1000)
    values: list[int] = []
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not expected <= set(values):
            values += [_index(m.value) for m in consumer]
    finally:
        consumer.close()
    return values


async def _consume_aiokafka(servers, topic, expected):
    import aiokafka

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False, group_id=None,
                                         metadata_max_age_ms=1000)
    await consumer.start()
    values: list[int] = []
    try:
        tp = aiokafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not expected <= set(values):
            batches = await consumer.getmany(tp, timeout_ms=1000)
            values += [_index(m.value) for m in batches.get(tp, [])]
    finally:
        await consumer.stop()
    return values


def _consume_confluent(servers, topic, expected):
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "e2e-assign",
                                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    values: list[int] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not expected <= set(values):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(_index(message.value()))
    finally:
        consumer.close()
    return values


# ---- consumer groups (subscribe mode) --------------------------------------------------------------------------
GROUP_SESSION_MS = 10_000


def consume_group(client: str, servers: str, topic: str, group: str, want: int) -> list[int]:
    """Subscribe to `topic` in consumer group `group`, read until at least `want` records came (or a deadline),
    commit exactly what was read (synchronously), leave the group. Returns the indexes in the order read."""
    if client == "kafka-python":
        return _group_kafka_python(servers, topic, group, want)
    if client == "aiokafka":
        return asyncio.run(_group_aiokafka(servers, topic, group, want))
    return _group_confluent(servers, topic, group, want)


def _group_kafka_python(servers, topic, group, want):
    import kafka

    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=servers, group_id=group, enable_auto_commit=False,
                                   auto_offset_reset="earliest", metadata_max_age_ms=1000, max_poll_records=50,
                                   session_timeout_ms=GROUP_SESSION_MS, retry_backoff_ms=200)
    values: list[int] = []
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and len(values) < want:
            for records in consumer.poll(timeout_ms=500).values():
                values += [_index(m.value) for m in records]
        consumer.commit()
    finally:
        consumer.close()
    return values


async def _group_aiokafka(servers, topic, group, want):
    import aiokafka

    consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=servers, group_id=group, enable_auto_commit=False,
                                         auto_offset_reset="earliest", metadata_max_age_ms=1000,
                                         session_timeout_ms=GROUP_SESSION_MS, retry_backoff_ms=200)
    await consumer.start()
    values: list[int] = []
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and len(values) < want:
            for records in (await consumer.getmany(timeout_ms=500, max_records=50)).values():
                values += [_index(m.value) for m in records]
        await consumer.commit()
    finally:
        await consumer.stop()
    return values


def _group_confluent(servers, topic, group, want):
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": group,
                                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                         "session.timeout.ms": GROUP_SESSION_MS,
                                         "topic.metadata.refresh.interval.ms": 1000})
    values: list[int] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and len(values) < want:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(_index(message.value()))
        if values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values
