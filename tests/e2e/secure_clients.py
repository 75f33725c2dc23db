"""Produce and read back with the three stock clients over SASL (security_cluster.client_settings): each call either
returns what it achieved or raises the client's own exception, so a test can tell a refusal from a success."""

from __future__ import annotations

import asyncio
import time

CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")
DEADLINE_S = 60.0


def produce(client: str, servers: str, settings: dict[str, str], topic: str, values: list[bytes]) -> int:
    """Send every value (acks=all) and wait for them; the number acknowledged. Raises on a refused connection."""
    if client == "kafka-python":
        import kafka

        producer = kafka.KafkaProducer(bootstrap_servers=servers, acks="all", request_timeout_ms=10_000,
                                       max_block_ms=15_000, **settings)
        try:
            futures = [producer.send(topic, value) for value in values]
            producer.flush(60)
            for future in futures:
                future.get(timeout=30)
            return len(futures)
        finally:
            producer.close(10)
    if client == "aiokafka":
        return asyncio.run(_produce_aiokafka(servers, settings, topic, values))
    return _produce_confluent(servers, settings, topic, values)


async def _produce_aiokafka(servers: str, settings: dict[str, str], topic: str, values: list[bytes]) -> int:
    import aiokafka

    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=servers, acks="all", request_timeout_ms=10_000,
                                         **settings)
    try:
        await producer.start()
        for value in values:
            await producer.send_and_wait(topic, value)
        return len(values)
    finally:
        await producer.stop()


def _produce_confluent(servers: str, settings: dict[str, str], topic: str, values: list[bytes]) -> int:
    import confluent_kafka

    errors: list[object] = []
    delivered: list[int] = []
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "message.timeout.ms": 10_000,
                                         **settings})
    for value in values:
        producer.produce(topic, value, on_delivery=lambda e, _m: (errors if e else delivered).append(e or 1))
        producer.poll(0)
    producer.flush(40)
    if errors:
        raise RuntimeError(f"confluent-kafka delivery failed: {errors[0]}")
    return len(delivered)


def read(client: str, servers: str, settings: dict[str, str], topic: str, count: int,
         group: str | None = None) -> list[bytes]:
    """Read `count` values of partition 0 from the beginning (as a member of `group` when given, committing)."""
    if client == "kafka-python":
        return _read_kafka_python(servers, settings, topic, count, group)
    if client == "aiokafka":
        return asyncio.run(_read_aiokafka(servers, settings, topic, count, group))
    return _read_confluent(servers, settings, topic, count, group)


def _read_kafka_python(servers, settings, topic, count, group):
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=servers, group_id=group, auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=2000, request_timeout_ms=20_000,
                                   **settings)
    try:
        if group is None:
            consumer.assign([kafka.TopicPartition(topic, 0)])
            consumer.seek_to_beginning()
        else:
            consumer.subscribe([topic])
        found: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(found) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                found += [r.value for r in records]
        if group is not None:
            consumer.commit()
        return found
    finally:
        consumer.close()


async def _read_aiokafka(servers, settings, topic, count, group):
    import aiokafka

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=servers, group_id=group, auto_offset_reset="earliest",
                                         enable_auto_commit=False, request_timeout_ms=20_000, **settings)
    await consumer.start()
    try:
        if group is None:
            consumer.assign([aiokafka.TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
        else:
            consumer.subscribe([topic])
        found: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(found) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            found += [r.value for records in batches.values() for r in records]
        if group is not None:
            await consumer.commit()
        return found
    finally:
        await consumer.stop()


def _read_confluent(servers, settings, topic, count, group):
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": group or "sasl-assign",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **settings})
    try:
        if group is None:
            consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        else:
            consumer.subscribe([topic])
        found: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                raise RuntimeError(f"confluent-kafka consume failed: {message.error()}")
            found.append(message.value())
        if group is not None and found:
            consumer.commit(asynchronous=False)
        return found
    finally:
        consumer.close()
