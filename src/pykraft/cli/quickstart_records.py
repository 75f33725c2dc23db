"""The quickstart's records through the brokers: a stock client (kafka-python) produces and consumes them.

A producer thread sends keyed records (idempotent, acks=all) to the quickstart topic for the whole run, and writes
what it was told about each one (acknowledged at which offset, or failed) to the run's client history
(`pykraft-produce-history.jsonl`, records/client_history.py: the input of `pykraft analyze`'s acknowledged-history
audit). At the end a consumer group reads every partition back from the beginning, committing its offsets as it
goes (so that `__consumer_offsets` holds a group's history too), and the check says whether every acknowledged
record was consumed, each partition in the order of its acknowledged offsets. kafka-python is a
test dependency (the `dev` extra), not a runtime one: without it the quickstart says so and skips this part.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from pykraft.records.client_history import ProduceHistory

KEYS = 12
CONSUME_DEADLINE_S = 60.0
GROUP = "quickstart-check"
PRODUCER = "quickstart"


@dataclass
class RecordCheck:
    acknowledged: int = 0
    consumed: int = 0
    lost: int = 0
    out_of_order: list[int] = field(default_factory=list)  # partitions
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return self.skipped is None and self.lost == 0 and not self.out_of_order and self.acknowledged > 0

    def line(self) -> str:
        if self.skipped is not None:
            return f"records through the brokers: skipped ({self.skipped})"
        order = "in order" if not self.out_of_order else f"OUT OF ORDER in partitions {self.out_of_order}"
        return (f"records through the brokers (kafka-python, acks=all, idempotent): {self.acknowledged} "
                f"acknowledged, {self.consumed} consumed, {self.lost} lost, {order}")


class BrokerWorkload:
    def __init__(self, servers: str, topic: str, rate: int, history_path: str | None = None) -> None:
        self.servers = servers
        self.history_path = history_path
        self.topic = topic
        self.interval_s = 1.0 / max(rate, 1)
        self.acked: dict[int, list[tuple[int, int]]] = {}  # partition -> (offset, sequence)
        self.failed = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.unavailable: str | None = None

    def start(self) -> None:
        try:
            import kafka  # noqa: F401
        except ImportError:
            self.unavailable = "kafka-python is not installed: pip install 'pykraft[dev]'"
            return
        self._thread = threading.Thread(target=self._produce, name="quickstart-producer", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        import kafka

        producer = kafka.KafkaProducer(bootstrap_servers=self.servers, acks="all", enable_idempotence=True,
                                       request_timeout_ms=5000, retry_backoff_ms=200, metadata_max_age_ms=2000,
                                       delivery_timeout_ms=60_000, linger_ms=5)
        history = ProduceHistory(self.history_path, PRODUCER) if self.history_path else None
        sequence = 0
        try:
            while not self._stop.is_set():
                future = producer.send(self.topic, key=str(sequence % KEYS).encode(), value=str(sequence).encode())
                future.add_callback(self._acknowledged, sequence, history)
                future.add_errback(self._failed, sequence, history)
                sequence += 1
                time.sleep(self.interval_s)
            producer.flush(60)
        finally:
            producer.close(10)
            if history is not None:
                history.close()

    def _acknowledged(self, sequence: int, history: ProduceHistory | None, metadata) -> None:  # kafka-python RecordMetadata
        with self._lock:
            self.acked.setdefault(metadata.partition, []).append((metadata.offset, sequence))
        if history is not None:
            history.acked(self.topic, metadata.partition, metadata.offset, str(sequence).encode())

    def _failed(self, sequence: int, history: ProduceHistory | None, _exc: BaseException) -> None:
        with self._lock:
            self.failed += 1
        if history is not None:
            history.failed(self.topic, str(sequence).encode())

    def stop_and_check(self) -> RecordCheck:
        if self.unavailable is not None or self._thread is None:
            return RecordCheck(skipped=self.unavailable or "not started")
        self._stop.set()
        self._thread.join(90)
        with self._lock:
            acked = {p: sorted(entries) for p, entries in self.acked.items()}
        consumed = self._consume({p: {s for _, s in entries} for p, entries in acked.items()})
        check = RecordCheck(acknowledged=sum(len(e) for e in acked.values()),
                            consumed=sum(len(v) for v in consumed.values()))
        for partition, entries in acked.items():
            read = consumed.get(partition, [])
            wanted = [s for _, s in entries]
            present = set(read)
            check.lost += sum(1 for s in wanted if s not in present)
            order = [s for s in read if s in set(wanted)]
            if order != [s for s in wanted if s in present] or len(order) != len(set(order)):
                check.out_of_order.append(partition)
        return check

    def _consume(self, expected: dict[int, set[int]]) -> dict[int, list[int]]:
        import kafka

        # A new group from the earliest offsets, committing as it reads (auto-commit) and once more at the end.
        consumer = kafka.KafkaConsumer(self.topic, bootstrap_servers=self.servers, group_id=GROUP,
                                       auto_offset_reset="earliest", enable_auto_commit=True,
                                       auto_commit_interval_ms=500, consumer_timeout_ms=2000)
        found: dict[int, list[int]] = {}
        try:
            deadline = time.monotonic() + CONSUME_DEADLINE_S
            while time.monotonic() < deadline and any(not want <= set(found.get(p, []))
                                                      for p, want in expected.items()):
                for message in consumer:
                    found.setdefault(message.partition, []).append(int(message.value))
            consumer.commit()
        finally:
            consumer.close()
        return found
