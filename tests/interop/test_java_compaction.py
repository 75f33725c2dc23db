"""Kafka's Java client and parser on a compacted topic (issue 27): Compaction.java writes overwrites and
tombstones with an idempotent producer (uncompressed, and lz4: the cleaner rebuilds compressed batches), every
replica cleans its copy, then Kafka's consumer reads from offset 0 across the removed offsets and sees exactly the
latest record of each key at the offset the producer was given; after a clean stop Kafka's FileRecords reads every
cleaned segment (CRC-32C, records, offsets increasing)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.offset_checkpoints import read_offsets

from tests.e2e.data_plane_checks import start_cluster, stop_cluster
from tests.e2e.helpers import wait_for

from .conftest import brokers_of
from .java_programs import failures

ROUNDS, KEYS, PAUSE_MS = 6, 30, 600


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("java-compaction") / "cluster", "warmup",
                            {"log.cleaner.backoff.ms": "200"})
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


def _cleaned_to(cluster: LocalCluster, topic: str) -> list[int]:
    return [read_offsets(str(cluster.nodes[b].data_dir / CLEANER_CHECKPOINT)).get((topic, 0), -1)
            for b in cluster.broker_ids]


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_kafkas_consumer_reads_a_cleaned_topic_across_its_gaps(java, cluster, codec: str) -> None:
    topic = f"java-compacted-{codec}"
    produced = java.run("Compaction", "produce", brokers_of(cluster), topic, codec, str(ROUNDS), str(KEYS),
                        str(PAUSE_MS))
    assert not failures(produced)
    last = {key: int(offset) for key, offset in produced["produce"].detail.items()}
    marker = last.pop("marker")
    wait_for(lambda: all(c >= marker for c in _cleaned_to(cluster, topic)), "every replica cleaned", timeout=120)
    read = java.run("Compaction", "read", brokers_of(cluster), topic)
    assert not failures(read)
    rows = [(int(o), k, v) for o, k, v in read["read"].detail]
    tombstone = {f"key-{k}" for k in range(0, KEYS, 3)}
    expected = sorted((offset, key, None if key in tombstone else f"{key}-round-{ROUNDS - 1}")
                      for key, offset in last.items())
    assert [row for row in rows if row[0] < marker] == expected
    assert rows[-1] == (marker, "marker", "end")


def test_kafkas_parser_reads_every_cleaned_segment(java, cluster) -> None:
    stop_cluster(cluster)
    segments = [p for b in cluster.broker_ids for d in Path(cluster.nodes[b].data_dir).glob("java-compacted-*")
                for p in sorted(d.glob("*.log"))]
    assert segments and any(os.path.getsize(p) for p in segments)
    results = java.run("ParseLogs", *map(str, segments))
    assert len(results) == len(segments) and not failures(results)
