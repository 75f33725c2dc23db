"""A transactional workload on a real cluster for the pipeline's real-cluster test, with librdkafka
(confluent-kafka): a KIP-848 consumer (`group.protocol=consumer`) reads the test's topic, and a transactional
producer writes to a topic of its own, committing the consumer's position in the same transaction
(send_offsets_to_transaction); then a second transaction, aborted, commits a lower position. What the brokers
write for it is what `pykraft analyze` must decode rather than fail on or mislabel: COMMIT/ABORT markers, the
`.txnindex`, `__transaction_state` records, KIP-848 ConsumerGroup* records and transactional offset commits.

The produce history says what the producer was told: acked (with the delivery's partition and offset) for the
committed transaction's records, failed for the aborted one's."""

from __future__ import annotations

import time

from pykraft.records.client_history import ProduceHistory

GROUP = "txn-848"
TRANSACTIONAL_ID = "analyze-txn"
PER_TXN = 5
TIMEOUT_S = 60


def _consume(consumer, count: int) -> list:
    got, deadline = [], time.monotonic() + TIMEOUT_S
    while len(got) < count and time.monotonic() < deadline:
        got += [m for m in consumer.consume(num_messages=count - len(got), timeout=1.0) if m.error() is None]
    assert len(got) >= count, f"the KIP-848 consumer read {len(got)} of {count} records"
    return got


def _transaction(producer, topic: str, prefix: str, offsets: list, group_metadata) -> list:
    """One transaction of PER_TXN values and the consumer's offsets; the delivered messages (not yet ended)."""
    delivered: list = []
    producer.begin_transaction()
    for i in range(PER_TXN):
        producer.produce(topic, f"{prefix}-{i}".encode(),
                         on_delivery=lambda err, msg: delivered.append(msg) if err is None else None)
    producer.flush(TIMEOUT_S)
    producer.send_offsets_to_transaction(offsets, group_metadata, TIMEOUT_S)
    return delivered


def run(servers: str, source: str, sink: str, history: ProduceHistory) -> dict:
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": servers, "group.id": GROUP, "group.protocol": "consumer",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False,
                            "isolation.level": "read_committed"})
    producer = ck.Producer({"bootstrap.servers": servers, "transactional.id": TRANSACTIONAL_ID,
                            "transaction.timeout.ms": 30000})
    try:
        consumer.subscribe([source])
        read = _consume(consumer, 2 * PER_TXN)
        producer.init_transactions(TIMEOUT_S)
        position = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        committed = _transaction(producer, sink, "txn-committed", position, consumer.consumer_group_metadata())
        producer.commit_transaction(TIMEOUT_S)
        for m in committed:
            history.acked(sink, m.partition(), m.offset(), m.value())
        # A lower position in a transaction that aborts: never a committed offset, never a step back.
        lower = [ck.TopicPartition(tp.topic, tp.partition, max(0, tp.offset - 1)) for tp in position]
        _transaction(producer, sink, "txn-aborted", lower, consumer.consumer_group_metadata())
        producer.abort_transaction(TIMEOUT_S)
        for i in range(PER_TXN):
            history.failed(sink, f"txn-aborted-{i}".encode())
    finally:
        consumer.close()
    return {"committed_positions": {(tp.topic, tp.partition): tp.offset for tp in position}, "read": len(read),
            "committed_values": len(committed)}
