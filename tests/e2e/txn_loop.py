"""A consume-transform-produce loop with confluent-kafka's transactional producer, run as its own process by
tests/e2e/test_transactions.py (which SIGKILLs it mid-way and starts it again).

Usage: python txn_loop.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID EXPECTED
Each input record's value goes to OUTPUT upper-cased, the consumer's offsets committed in the same transaction
(send_offsets_to_transaction), a transaction every few records; it exits once the group's committed offsets
reach EXPECTED. It prints one line per committed transaction so the test knows it is under way.
"""

from __future__ import annotations

import sys
import time

import confluent_kafka as ck


def main() -> None:
    bootstrap, source, sink, group, transactional_id, expected = sys.argv[1:7]
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False, "isolation.level": "read_committed",
                            "session.timeout.ms": 6000})
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                            "transaction.timeout.ms": 10000})
    producer.init_transactions(60)
    consumer.subscribe([source])
    done = 0
    while done < int(expected):
        messages = consumer.consume(num_messages=7, timeout=1.0)
        messages = [m for m in messages if m.error() is None]
        if not messages:
            committed = consumer.committed([ck.TopicPartition(source, 0)], timeout=10)
            done = max(done, committed[0].offset)
            continue
        producer.begin_transaction()
        for m in messages:
            producer.produce(sink, key=m.key(), value=m.value().upper())
            time.sleep(0.01)  # slow enough for the test to kill it inside a transaction
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        done = messages[-1].offset() + 1
        print(f"committed up to {done}", flush=True)
    consumer.close()


if __name__ == "__main__":
    main()
