"""storage/format.py below the command line: crash safety, interrupted formats, locking, release versions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pykraft.raft.voter_set import Endpoint, Endpoints
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import DirectoryLock, LogDirectoryLockedError, open_file_log, read_meta_properties
from pykraft.storage import format as fmt
from pykraft.storage.files import PARTITION_DIR
from pykraft.storage.format import FormatError, FormatRequest, QuorumFlag, format_directories, plan_format
from pykraft.storage.format_options import parse_release_version

from .storage_helpers import CLUSTER_ID, decode_file


def request(tmp_path: Path, **changes) -> FormatRequest:
    values = dict(
        cluster_id=CLUSTER_ID,
        node_id=1,
        is_controller=True,
        log_dirs=(str(tmp_path / "meta"), str(tmp_path / "data")),
        metadata_log_dir=str(tmp_path / "meta"),
        has_static_voters=False,
        controller_listener_name="CONTROLLER",
        controller_endpoints=Endpoints.of([Endpoint("CONTROLLER", "c1", 9093)]),
        quorum_flag=QuorumFlag.STANDALONE,
    )
    values.update(changes)
    return FormatRequest(**values)


def test_plan_is_deterministic_for_a_seeded_rng(tmp_path):
    first = plan_format(request(tmp_path), random.Random(7))
    second = plan_format(request(tmp_path), random.Random(7))
    assert first == second
    kinds = {Path(d.path).name: d.kind for d in first.directories}
    assert kinds == {"data": "data directory", "meta": "dynamic metadata voter directory"}
    meta = next(d for d in first.directories if d.path.endswith("meta"))
    assert meta.voters is not None and meta.voters.node(1).key.directory_id == meta.meta.directory_id


@pytest.mark.parametrize(
    ("text", "level"),
    [("3.3-IV3", 7), ("3.3", 7), ("3.7", 19), ("3.9", 21), ("4.0", 25), ("4.0-IV1", 23), ("4.1", 27), (" 4.1-IV1 ", 27)],
)
def test_release_versions(text, level):
    assert parse_release_version(text) == level


@pytest.mark.parametrize("text", ["3.2", "3.3-IV2", "4.2", "4.1-IV9", "latest", ""])
def test_unknown_release_versions(text):
    with pytest.raises(FormatError, match="supported metadata.version values are 3.3-IV3 to 4.1-IV1"):
        parse_release_version(text)


def test_a_crash_before_meta_properties_leaves_an_unformatted_directory_that_formats_again(tmp_path, monkeypatch):
    def crash(*_args):
        raise OSError(28, "No space left on device")

    only_meta = request(tmp_path, log_dirs=(str(tmp_path / "meta"),))
    monkeypatch.setattr(fmt, "write_meta_properties", crash)
    with pytest.raises(OSError):
        format_directories(only_meta, lambda _line: None)
    # Everything but meta.properties was written: the directory must still count as unformatted.
    assert (tmp_path / "meta" / "bootstrap.checkpoint").exists()
    assert (tmp_path / "meta" / PARTITION_DIR / "00000000000000000000-0000000000.checkpoint").exists()
    assert not (tmp_path / "meta" / "meta.properties").exists()
    monkeypatch.undo()
    plan = format_directories(only_meta, lambda _line: None)
    meta = read_meta_properties(str(tmp_path / "meta"))
    assert meta.directory_id == next(d.meta.directory_id for d in plan.directories if d.path.endswith("meta"))
    log, _ = open_file_log(str(tmp_path / "meta"))
    with log:
        assert log.snapshot_ids() == [fmt.BOOTSTRAP_SNAPSHOT_ID]
    # The rewritten snapshot names the new directory id, not the one of the interrupted attempt.
    voters = [m for _, m in decode_file(tmp_path / "meta" / PARTITION_DIR / "00000000000000000000-0000000000.checkpoint")][2]
    assert voters.voters[0].voter_directory_id == meta.directory_id


def test_a_metadata_log_without_meta_properties_is_refused_not_deleted(tmp_path):
    log, _ = open_file_log(str(tmp_path / "meta"))
    with log:
        log.append_as_leader(encode_batch([SimpleRecord(b"x")], base_offset=0, partition_leader_epoch=1, timestamp_ms=0), 1)
        log.flush()
    segment = tmp_path / "meta" / PARTITION_DIR / "00000000000000000000.log"
    size = segment.stat().st_size
    with pytest.raises(FormatError, match="has no meta.properties but holds a metadata log"):
        format_directories(request(tmp_path), lambda _line: None)
    assert segment.stat().st_size == size


def test_a_locked_directory_is_not_formatted(tmp_path):
    (tmp_path / "meta").mkdir()
    lock = DirectoryLock(str(tmp_path / "meta"))
    try:
        with pytest.raises(LogDirectoryLockedError):
            format_directories(request(tmp_path, log_dirs=(str(tmp_path / "meta"),)), lambda _line: None)
    finally:
        lock.release()
    assert not (tmp_path / "meta" / "meta.properties").exists()


def test_bootstrap_checkpoint_layout(tmp_path):
    plan = plan_format(request(tmp_path, quorum_flag=QuorumFlag.NONE, has_static_voters=True), random.Random(1))
    records = decode_file_bytes(tmp_path, fmt.bootstrap_checkpoint_bytes(plan, now_ms=1234))
    assert [type(m).__name__ for _, m in records] == ["SnapshotHeaderRecord", "FeatureLevelRecordV0",
                                                      "FeatureLevelRecordV0", "FeatureLevelRecordV0",
                                                      "SnapshotFooterRecord"]
    assert [(m.name, int(m.feature_level)) for control, m in records if not control] == [
        ("metadata.version", 27), ("transaction.version", 1), ("group.version", 1)]  # group.version 1 from 4.0-IV0
    assert [control for control, _ in records] == [True, False, False, False, True]


def decode_file_bytes(tmp_path: Path, data: bytes):
    path = tmp_path / "bootstrap.checkpoint"
    path.write_bytes(data)
    return decode_file(path)


def test_group_version_follows_the_release_unless_given():
    def levels(**changes):
        plan = plan_format(request(Path("/nonexistent"), quorum_flag=QuorumFlag.NONE, has_static_voters=True,
                                   **changes), random.Random(1))
        return plan.group_version
    assert levels() == 1 and levels(release_version="4.0-IV0") == 1  # KIP-848 is on from 4.0 on
    assert levels(release_version="3.9") == 0
    assert levels(features=("group.version=0",)) == 0 and levels(release_version="3.9",
                                                                 features=("group.version=1",)) == 1
