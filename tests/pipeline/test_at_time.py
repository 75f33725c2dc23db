"""`analyze --at-time`: the image at a time is the replay stopped at the last committed record whose timestamp is
at or before it (tables.stop_offsets: the highest committed offset with timestamp <= the time, -1 when none).
Checked on the sample log, whose batches are written 25 ms apart from a fixed clock: the expected offset comes
from a plain decoding of the segment (dump-log's code path), the expected image from the controller's replay."""

from __future__ import annotations

import datetime as dt

import pytest

from pykraft.cli.analyze_cmd import parse_time_ms
from pykraft.cli.sample_log import START_MS
from pykraft.pipeline.run import AnalyzeOptions, analyze

from .cluster_files import end_offset, make_cluster, replayed, segment
from .test_analyze import _expected_image, _image, _image_of
from .test_sources import _plain

pytestmark = pytest.mark.spark

CLUSTER = "AtTimeClusterAAAAAAAAAA"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("at-time")
    data = make_cluster(root / "c", CLUSTER)
    records = _plain(segment(data[0]))
    assert records and all(r["crcValid"] for r in records)
    return root / "c", data[0], records


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _last_at_or_before(records: list[dict], hwm: int, ms: int) -> int:
    offsets = [r["offset"] for r in records if r["offset"] < hwm and r["timestamp"] <= ms]
    return max(offsets, default=-1)


def _at(spark, root, tmp_path, name: str, ms: int) -> dict:
    summary = analyze(spark, AnalyzeOptions([str(root)], str(tmp_path / name), at_time_ms=parse_time_ms(_iso(ms))))
    return _image(summary, CLUSTER)


def test_image_at_a_time_equals_a_replay_stopped_at_the_last_record_at_or_before_it(spark, cluster, tmp_path):
    root, data, records = cluster
    hwm = end_offset(data)  # no traces: the prefix every node holds
    times = sorted({r["timestamp"] for r in records})
    assert len(times) > 4  # batches at distinct times: the choice of offset is not trivial
    middle = times[len(times) // 2]
    exact = _last_at_or_before(records, hwm, middle)
    assert 0 < exact < hwm - 1
    for name, ms, expected_offset in (("exact", middle, exact),  # a record's own timestamp counts (at or before)
                                      ("between", middle + 10, exact),  # before the next batch (25 ms later)
                                      ("just-before", middle - 1, _last_at_or_before(records, hwm, middle - 1))):
        got = _at(spark, root, tmp_path, name, ms)
        assert got["offset"] == expected_offset, name
        assert got["highWatermark"] == hwm
        brokers, partitions, features = _expected_image(replayed(data, committed_offset=expected_offset))
        assert _image_of(got) == (brokers, sorted(partitions), features), name
    assert _last_at_or_before(records, hwm, middle - 1) < exact  # the third case stops a batch earlier


def test_a_time_before_every_record_gives_the_empty_image_and_after_every_record_the_hwm(spark, cluster, tmp_path):
    root, data, records = cluster
    hwm = end_offset(data)
    before = _at(spark, root, tmp_path, "before", min(r["timestamp"] for r in records) - 1)
    assert before["offset"] == -1
    assert _image_of(before) == ([], [], [])
    after = _at(spark, root, tmp_path, "after", max(r["timestamp"] for r in records) + 60_000)
    assert after["offset"] == hwm - 1
    brokers, partitions, features = _expected_image(replayed(data))
    assert _image_of(after) == (brokers, sorted(partitions), features)


def test_iso_8601_without_a_zone_is_utc():
    assert parse_time_ms("2025-10-09T08:53:20") == parse_time_ms("2025-10-09T08:53:20Z") == START_MS
    assert parse_time_ms("2025-10-09T10:53:20.025+02:00") == START_MS + 25
