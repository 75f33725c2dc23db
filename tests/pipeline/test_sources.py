"""The data sources against a plain single-process decoding of the same files (dump-log's code path)."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pykraft.cli.dump_log import dump_file
from pykraft.pipeline.layout import LayoutError, find_files
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import LogConfig, open_file_log

from .cluster_files import make_cluster, segment

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sources")
    make_cluster(root, "SourcesClusterAAAAAAAAA")
    return root


def _plain(path: Path) -> list[dict]:
    out = io.StringIO()
    assert dump_file(path, as_json=True, out=out) == []
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_kafka_log_rows_equal_a_single_process_decoding(spark, cluster):
    df = spark.read.format("kafka-log").option("metadata", "true").load(str(cluster))
    rows = df.collect()
    expected = set()
    for path in sorted(cluster.glob("node-*/data/__cluster_metadata-0/*.log")):
        for r in _plain(path):
            kind = r["metadata"]["type"] if "metadata" in r else None
            node = int(path.parts[-4].removeprefix("node-"))
            expected.add((node, f"{path.parent.name}/{path.name}", r["baseOffset"], r["offset"], r["leaderEpoch"],
                          r["timestamp"], r["isControl"], r["crcValid"], kind))
    got = {(r.node_id, r.file, r.base_offset, r.offset, r.leader_epoch, r.timestamp, r.is_control, r.crc_valid,
            None if r.is_control else r.record_type) for r in rows}
    assert got == expected
    assert len(rows) == len(expected)
    assert {r.node_id for r in rows} == {1, 2, 3}
    assert {r.cluster_id for r in rows} == {"SourcesClusterAAAAAAAAA"}
    assert all(r.directory_id and r.topic == "__cluster_metadata" and r.partition == 0 for r in rows)
    controls = {r.control_type for r in rows if r.is_control}
    assert controls == {"LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"}
    leader_change = next(r for r in rows if r.control_type == "LEADER_CHANGE")
    assert json.loads(leader_change.payload)["leaderId"] == 1


def test_plain_rows_have_no_metadata_columns(spark, cluster):
    df = spark.read.format("kafka-log").load(str(cluster / "node-1"))
    assert "payload" not in df.columns
    assert df.count() == len(_plain(segment(cluster / "node-1" / "data")))


def test_parquet_written_by_the_session_keeps_every_row_and_the_chosen_layout(spark, cluster, tmp_path):
    """session.PARQUET_SETTINGS: v2 pages (delta-encoded offsets), no min/max on the per-file strings or on
    key/value, min/max kept on the other columns, dictionaries kept on the per-file strings; the rows read back are
    the source's, and a filter on a per-file column still finds its rows."""
    source = spark.read.format("kafka-log").load(str(cluster))
    source.write.parquet(str(tmp_path / "out"))
    back = spark.read.parquet(str(tmp_path / "out"))
    assert Counter(map(tuple, back.collect())) == Counter(map(tuple, source.collect()))
    one_file = segment(cluster / "node-2" / "data")
    relative = f"{one_file.parent.name}/{one_file.name}"  # the `file` column: the path below the data directory
    assert back.where((back.file == relative) & (back.node_id == 2)).count() == len(_plain(one_file))
    for part in (tmp_path / "out").glob("*.parquet"):
        metadata = pq.ParquetFile(part).metadata
        for group in range(metadata.num_row_groups):
            columns = {metadata.row_group(group).column(i).path_in_schema: metadata.row_group(group).column(i)
                       for i in range(metadata.num_columns)}
            assert "DELTA_BINARY_PACKED" in columns["offset"].encodings
            for name in ("cluster_id", "directory_id", "topic", "file", "key", "value"):
                assert not columns[name].is_stats_set, name
            for name in ("offset", "position", "leader_epoch"):
                assert columns[name].is_stats_set, name
            for name in ("cluster_id", "topic", "file"):
                assert columns[name].has_dictionary_page, name


def test_large_segment_split_at_index_positions(spark, tmp_path):
    data = tmp_path / "node-9" / "data"
    log, _ = open_file_log(str(data), LogConfig(index_interval_bytes=512))
    with log:
        for i in range(200):
            values = [SimpleRecord(f"value-{i}-{j}".encode() * 4, key=f"k{j}".encode()) for j in range(10)]
            log.append_as_leader(encode_batch(values, base_offset=log.end_offset(), partition_leader_epoch=3,
                                              timestamp_ms=1_000 + i), 3)
        log.flush()
    whole = spark.read.format("kafka-log").load(str(data))
    split = spark.read.format("kafka-log").option("splitBytes", "8192").load(str(data))
    assert whole.rdd.getNumPartitions() == 1
    assert split.rdd.getNumPartitions() > 3
    columns = ["offset", "position", "key", "value", "leader_epoch", "crc_valid", "batch_digest"]
    assert sorted(split.select(*columns).collect()) == sorted(whole.select(*columns).collect())
    assert split.count() == 2000
    assert split.filter("error is not null").count() == 0


def test_user_topic_partition_directory(spark, cluster, tmp_path):
    topic_dir = tmp_path / "node-1" / "data" / "payments-4"
    topic_dir.mkdir(parents=True)
    shutil.copy(segment(cluster / "node-1" / "data"), topic_dir)
    df = spark.read.format("kafka-log").load(str(tmp_path))
    assert {(r.topic, r.partition, r.cluster_id) for r in df.select("topic", "partition", "cluster_id").collect()} \
        == {("payments", 4, "unknown")}


def test_snapshot_source_has_the_snapshot_id(spark, cluster):
    df = spark.read.format("kafka-snapshot").load(str(cluster / "node-2"))
    rows = df.collect()
    path = next((cluster / "node-2" / "data" / "__cluster_metadata-0").glob("*.checkpoint"))
    assert {(r.snapshot_end_offset, r.snapshot_epoch) for r in rows} == {(13, 1)}
    assert len(rows) == len(_plain(path))
    assert {r.control_type for r in rows if r.is_control} >= {"SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"}
    assert "REGISTER_BROKER_RECORD" in {r.record_type for r in rows}


def test_a_folder_without_logs_is_bad_input(tmp_path):
    with pytest.raises(LayoutError, match="no Kafka log segment"):
        find_files([str(tmp_path)], snapshots=False)
