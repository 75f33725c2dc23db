"""Issue 27 with real processes: compacted topics on a 3-broker cluster, written and read by stock clients.

- A topic with cleanup.policy=compact written with many overwrites and tombstones by kafka-python: once every
  replica cleaned it, a consumer reading from offset 0 sees exactly the latest record of each key at the offset
  its producer was given, all three replicas hold exactly those records below the uncleaned segment, and after
  delete.retention.ms (and one more pass) the tombstones are gone from every replica.
- compact,delete: retention deletes old segments of that topic, while a compact-only topic keeps its data.
- A group committing thousands of times leaves a small `__consumer_offsets` partition, and its committed offset
  survives a restart of every broker.
- Each broker SIGKILLed while its cleaner works, then restarted: nothing lost, the replicas agree again.
Segments roll by time (segment.ms or log.roll.ms of a few hundred ms): a pause in the workload longer than that
makes the next append roll, so the data before it is cleanable. Every wait is bounded; nothing asserts a duration.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pykraft.records import iter_batches
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.offset_checkpoints import read_offsets

from .data_plane_checks import bootstrap, partition, start_cluster
from .helpers import wait_for

kafka = pytest.importorskip("kafka")
TOPIC = "table"
ROLL_MS = 400
CLEANER = {"log.cleaner.backoff.ms": "200", "log.cleaner.dedupe.buffer.size": str(1 << 20)}
KEYS = 40
ROUNDS = 12
TOMBSTONED = {f"key-{k:02d}" for k in range(0, KEYS, 7)}


@pytest.fixture
def cluster(tmp_path):
    cluster = start_cluster(tmp_path / "cluster", "warmup", {**CLEANER, "offsets.topic.num.partitions": "1",
                                                              "log.roll.ms": str(ROLL_MS)})
    yield cluster
    cluster.stop_all(timeout=20)


def _create(cluster, topic: str, **configs: str) -> None:
    flags = [arg for name, value in configs.items() for arg in ("--config", f"{name.replace('_', '.')}={value}")]
    cluster.cli("topics", "create", "--bootstrap-server", bootstrap(cluster).split(",")[0], "--topic", topic,
                "--partitions", "1", "--replication-factor", "3", *flags)
    wait_for(lambda: (lambda p: p is not None and len(p.isr) == 3)(partition(cluster, topic)),
             f"{topic} with a full ISR")


def _produce(cluster, topic: str, pairs: list[tuple[str, str | None]], pause_every: int = 0) -> dict[str, int]:
    """Send (key, value) pairs with kafka-python (acks=all, idempotent); the offset of each key's last record."""
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap(cluster), acks="all", enable_idempotence=True,
                                   linger_ms=2, request_timeout_ms=10_000)
    try:
        offsets: dict[str, int] = {}
        for i, (key, value) in enumerate(pairs):
            meta = producer.send(topic, key=key.encode(), value=None if value is None else value.encode())
            offsets[key] = meta.get(timeout=30).offset
            if pause_every and (i + 1) % pause_every == 0:
                time.sleep(ROLL_MS / 1000 + 0.1)  # the next append rolls the segment: what came before is cleanable
        return offsets
    finally:
        producer.close(10)


def _consume_all(cluster, topic: str) -> list[tuple[int, str, str | None]]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster), enable_auto_commit=False,
                                   auto_offset_reset="earliest", consumer_timeout_ms=3000)
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    end = consumer.end_offsets([tp])[tp]
    rows = []
    try:
        while consumer.position(tp) < end:
            batch = consumer.poll(timeout_ms=1000)
            for record in batch.get(tp, []):
                value = None if record.value is None else record.value.decode()
                rows.append((record.offset, record.key.decode(), value))
            if not batch and consumer.position(tp) >= end:
                break
    finally:
        consumer.close()
    return rows


def _replica_dirs(cluster, topic: str) -> list[Path]:
    return [cluster.nodes[b].data_dir / f"{topic}-0" for b in cluster.broker_ids]


def _on_disk(directory: Path, below: int) -> list[tuple[int, str, str | None]]:
    """The records a replica's segment files hold below `below`, read straight from disk."""
    rows = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        data = (directory / name).read_bytes()
        for batch in iter_batches(data, verify_crc=False, allow_truncated_tail=True):
            for record in batch.records():
                if record.offset < below:
                    rows.append((record.offset, bytes(record.key).decode(),
                                 None if record.value is None else bytes(record.value).decode()))
    return sorted(rows)


def _cleaned_to(directory: Path, topic: str) -> int:
    return read_offsets(str(directory.parent / CLEANER_CHECKPOINT)).get((topic, 0), -1)


def _workload() -> tuple[list[tuple[str, str | None]], dict[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    for r in range(ROUNDS):
        for k in range(KEYS):
            key = f"key-{k:02d}"
            pairs.append((key, None if (r == ROUNDS - 1 and key in TOMBSTONED) else f"{key}-round-{r}"))
    return pairs, dict(pairs)


def test_every_replica_keeps_exactly_the_latest_record_of_each_key_and_drops_tombstones_later(cluster):
    _create(cluster, TOPIC, cleanup_policy="compact", segment_ms=str(ROLL_MS), min_cleanable_dirty_ratio="0.01",
            delete_retention_ms="4000")
    pairs, latest = _workload()
    offsets = _produce(cluster, TOPIC, pairs, pause_every=KEYS * 3)
    time.sleep(ROLL_MS / 1000 + 0.1)
    marker = _produce(cluster, TOPIC, [("marker", "x")], pause_every=1)["marker"]
    # The marker's append rolled the last data segment: every replica cleans everything below it.
    expected = sorted((offsets[key], key, value) for key, value in latest.items())
    dirs = _replica_dirs(cluster, TOPIC)
    wait_for(lambda: all(_cleaned_to(d, TOPIC) >= marker for d in dirs), "every replica cleaned below the marker",
             timeout=120)
    for directory in dirs:  # the replicas agree below the uncleaned segment: exactly the latest records
        wait_for(lambda d=directory: _on_disk(d, marker) == expected, f"{directory} holding the latest records",
                 timeout=60)
    read = _consume_all(cluster, TOPIC)
    assert [row for row in read if row[0] < marker] == expected  # offsets preserved, tombstones still there
    assert {row[1] for row in read if row[2] is None} == TOMBSTONED

    time.sleep(4.5)  # past delete.retention.ms; then new dirty data makes the cleaner pass again
    more = _produce(cluster, TOPIC, [("late", "1"), ("late", "2")], pause_every=1)
    last = _produce(cluster, TOPIC, [("marker", "y")], pause_every=1)["marker"]
    wait_for(lambda: all(_cleaned_to(d, TOPIC) >= last for d in dirs), "a second pass on every replica", timeout=120)
    survivors = sorted((offsets[k], k, v) for k, v in latest.items() if v is not None)
    survivors += [(more["late"], "late", "2")]
    for directory in dirs:
        wait_for(lambda d=directory: [r for r in _on_disk(d, last) if r[1] != "marker"] == survivors,
                 f"{directory} without tombstones", timeout=60)
    assert not [row for row in _consume_all(cluster, TOPIC) if row[2] is None]


def test_compact_delete_applies_retention_and_compact_alone_does_not(cluster):
    _create(cluster, "both", cleanup_policy="compact,delete", segment_ms=str(ROLL_MS), retention_ms="1500")
    _create(cluster, "kept", cleanup_policy="compact", segment_ms=str(ROLL_MS), retention_ms="1500")
    pairs = [(f"k{i % 5}", f"v{i}") for i in range(60)]
    for topic in ("both", "kept"):
        _produce(cluster, topic, pairs, pause_every=20)
    time.sleep(2)
    for topic in ("both", "kept"):
        _produce(cluster, topic, [("fresh", "1")], pause_every=1)
        _produce(cluster, topic, [("fresh", "2")])

    def earliest(topic: str) -> int:
        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster))
        try:
            tp = kafka.TopicPartition(topic, 0)
            return consumer.beginning_offsets([tp])[tp]
        finally:
            consumer.close()

    wait_for(lambda: earliest("both") >= 60, "retention deleting the old segments of compact,delete", timeout=90)
    wait_for(lambda: all(_cleaned_to(d, "kept") > 0 for d in _replica_dirs(cluster, "kept")),
             "the compact-only topic cleaned", timeout=90)
    assert earliest("kept") == 0
    kept = _consume_all(cluster, "kept")
    assert {k: v for _, k, v in kept if k.startswith("k")} == {f"k{i}": f"v{55 + i}" for i in range(5)}


def test_a_group_committing_thousands_of_times_leaves_a_small_offsets_log_that_survives_restarts(cluster):
    tp = kafka.TopicPartition("warmup", 0)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster), group_id="committer",
                                   enable_auto_commit=False)
    try:
        consumer.assign([tp])
        commits = 3000
        for i in range(1, commits + 1):
            consumer.commit({tp: kafka.structs.OffsetAndMetadata(i, "", -1)})
            if i % 600 == 0:
                time.sleep(ROLL_MS / 1000 + 0.1)  # log.roll.ms: the next commit rolls the segment
        time.sleep(ROLL_MS / 1000 + 0.1)
        consumer.commit({tp: kafka.structs.OffsetAndMetadata(commits + 1, "", -1)})
    finally:
        consumer.close()
    dirs = _replica_dirs(cluster, "__consumer_offsets")
    wait_for(lambda: all(_cleaned_to(d, "__consumer_offsets") >= commits for d in dirs),
             "every replica of __consumer_offsets cleaned", timeout=120)
    for directory in dirs:
        size = sum((directory / n).stat().st_size for n in os.listdir(directory) if n.endswith(".log"))
        assert size < 16 * 1024, (directory, size)  # ~3000 commit records were over 250 KiB
    for broker in cluster.broker_ids:
        cluster.stop(broker)
    cluster.start_all(cluster.broker_ids)

    def committed() -> int | None:
        reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster), group_id="committer",
                                     enable_auto_commit=False)
        try:
            return reader.committed(tp)
        finally:
            reader.close()

    assert wait_for(committed, "the committed offset read back after every broker restarted", timeout=120) == \
        commits + 1


def test_brokers_killed_while_cleaning_lose_nothing_and_the_replicas_still_agree(cluster):
    """Each broker SIGKILLed right after a burst of overwrites, when its cleaner is busy with the segments that just
    rolled, then restarted: recovery finishes or drops any half-done swap (every step is a crash point of
    tests/storage/test_cleaner_crash.py; here the moment is whatever the kill hits), and once every replica cleaned
    again they hold exactly the latest records, at the producer's offsets."""
    topic = "crashy"
    _create(cluster, topic, cleanup_policy="compact", segment_ms=str(ROLL_MS), min_cleanable_dirty_ratio="0.01")
    pairs, latest = _workload()
    offsets = _produce(cluster, topic, pairs, pause_every=KEYS * 2)
    for broker in cluster.broker_ids:
        _produce(cluster, topic, [(f"burst-{broker}-{i}", "x") for i in range(20)], pause_every=10)
        offsets.update(_produce(cluster, topic, [(key, value) for key, value in pairs[-KEYS:]]))
        cluster.kill(broker)
        cluster.start(broker)
        wait_for(lambda: (lambda p: p is not None and len(p.isr) == 3)(partition(cluster, topic)),
                 f"broker {broker} back in the ISR", timeout=120)
    time.sleep(ROLL_MS / 1000 + 0.1)
    marker = _produce(cluster, topic, [("marker", "x")], pause_every=1)["marker"]
    dirs = _replica_dirs(cluster, topic)
    wait_for(lambda: all(_cleaned_to(d, topic) >= marker for d in dirs), "every replica cleaned below the marker",
             timeout=180)
    expected = sorted((offsets[key], key, value) for key, value in latest.items())
    for directory in dirs:
        wait_for(lambda d=directory: [r for r in _on_disk(d, marker) if not r[1].startswith("burst-")] == expected,
                 f"{directory} holding the latest records", timeout=60)
    assert [row for row in _consume_all(cluster, topic) if row[0] < marker and not row[1].startswith("burst-")] \
        == expected
