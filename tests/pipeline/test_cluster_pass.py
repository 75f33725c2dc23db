"""The per-cluster pass's decisions (cluster_pass.py) on small frames, without Spark: the high watermark without
traces, the stop offset, the snapshot a replay starts from, and when the directories no longer hold what an image
at the stop offset needs (the CLI then exits 2); then `analyze` itself on logs that start after a snapshot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from pykraft.pipeline.cluster_pass import StopAt, choose_snapshot, high_watermark, stop_offset, unreachable
from pykraft.records import iter_batches

from .cluster_files import make_cluster, replayed, segment

NONE = pd.Series([], dtype=object)


def _log(copies: dict[int, list[tuple[int, int, bool]]]) -> pd.DataFrame:
    """node -> [(offset, digest, crc valid)]."""
    rows = [(node, offset, digest, valid) for node, held in copies.items() for offset, digest, valid in held]
    return pd.DataFrame(rows, columns=["node_id", "offset", "batch_digest", "crc_valid"])


def test_the_high_watermark_without_traces_is_the_end_of_the_majority_prefix():
    same = [(0, 1, True), (1, 2, True), (2, 3, True)]
    assert high_watermark(_log({1: same, 2: same, 3: same[:2]}), NONE) == 3  # 2 of 3 hold offset 2
    assert high_watermark(_log({1: same, 2: same[:2], 3: same[:1]}), NONE) == 2
    damaged = [(0, 1, True), (1, 2, False), (2, 3, True)]
    assert high_watermark(_log({1: same, 2: damaged, 3: damaged}), NONE) == 1  # offset 1: one valid copy
    assert high_watermark(_log({1: same}), pd.Series([7.0, None])) == 7  # a traced one wins


def _snapshots(*ends: int) -> pd.DataFrame:
    return pd.DataFrame([(end, node) for end in ends for node in (2, 1)],
                        columns=["snapshot_end_offset", "node_id"])


def test_the_replay_starts_at_0_or_at_the_earliest_snapshot_the_log_continues_from():
    assert choose_snapshot(_snapshots(13, 40), first=0, stop=99) is None  # the log reaches back to 0
    assert choose_snapshot(_snapshots(13, 40), first=10, stop=99) == (13, 1)  # lowest node holding it
    assert choose_snapshot(_snapshots(13, 40), first=20, stop=99) == (40, 1)
    assert choose_snapshot(_snapshots(13, 40), first=20, stop=30) == (13, 1)  # the latest within the stop
    assert choose_snapshot(_snapshots(0), first=20, stop=30) is None  # a bootstrap snapshot holds no image


def test_an_image_before_what_the_directories_hold_is_unreachable():
    snaps = _snapshots(13)
    assert unreachable(0, None, 5, StopAt(at_offset=5), snaps) is None
    assert unreachable(13, (13, 1), 20, StopAt(at_offset=20), snaps) is None
    assert unreachable(13, (13, 1), 12, StopAt(at_offset=12), snaps) is None  # the snapshot is the image at 12
    problem = unreachable(13, None, 5, StopAt(at_offset=5), snaps)
    assert problem == ("--at-offset 5 is before what the directories still hold: every metadata log starts at offset "
                       "13 or later; the earliest they give is the image after offset 12 (a snapshot)")
    assert "\n" not in problem
    assert unreachable(13, None, -1, StopAt(at_time_ms=1), snaps).startswith("--at-time (before every record")


def test_the_stop_offset_at_a_time_is_the_last_committed_record_at_or_before_it():
    committed = pd.DataFrame({"offset": [0, 1, 2], "timestamp": [100, 200, 300]})
    assert stop_offset(committed, 3, StopAt(at_time_ms=250)) == 1
    assert stop_offset(committed, 3, StopAt(at_time_ms=50)) == -1
    assert stop_offset(committed, 3, StopAt(at_offset=99)) == 2
    assert stop_offset(committed, 3, StopAt()) == 2


def _start_logs_at_snapshot(data: Path, end: int) -> None:
    """Drop every batch below `end` (as a node does once a snapshot covers them): the log starts at `end`."""
    old = segment(data)
    raw, position, kept = old.read_bytes(), 0, b""
    for batch in iter_batches(raw, verify_crc=False):
        if batch.base_offset >= end:
            kept += raw[position: position + batch.size_in_bytes]
        position += batch.size_in_bytes
    for path in old.parent.glob("00000000000000000000.*"):
        if path.suffix != ".checkpoint":
            path.unlink()
    (old.parent / f"{end:020d}.log").write_bytes(kept)


@pytest.mark.spark
def test_analyze_before_a_logs_start_is_refused_and_after_it_equals_the_controllers_replay(spark, tmp_path):
    from pykraft.pipeline.run import AnalyzeOptions, UnreachableOffsetError, analyze

    data = make_cluster(tmp_path / "c", "TruncatedClusterAAAAAAA")
    end = int(next((data[0] / "__cluster_metadata-0").glob("*-*.checkpoint")).name.split("-")[0])
    full = tmp_path / "full"
    shutil.copytree(data[0], full)
    for d in data:
        _start_logs_at_snapshot(d, end)
    with pytest.raises(UnreachableOffsetError) as refused:
        analyze(spark, AnalyzeOptions([str(tmp_path / "c")], str(tmp_path / "out-early"), at_offset=end - 5))
    assert str(refused.value).startswith(f"--at-offset {end - 5} is before what the directories still hold")
    summary = analyze(spark, AnalyzeOptions([str(tmp_path / "c")], str(tmp_path / "out"), at_offset=end + 3))
    (cluster,) = summary["clusters"]
    from .test_analyze import _expected_image, _image_of

    brokers, partitions, features = _expected_image(replayed(full, committed_offset=end + 3))
    assert _image_of(cluster) == (brokers, sorted(partitions), features) and partitions
