"""The default input partitions of `kafka-log` (layout.balanced_partitions): about TARGET_SLICES groups of equal
bytes, cut at `.index` positions, a group holding slices of one or more files, within the minimum and maximum group
sizes; every byte of every file in exactly one slice. No Spark."""

from __future__ import annotations

import struct
from pathlib import Path

from pykraft.pipeline.layout import (
    DEFAULT_SPLIT_BYTES,
    MIN_SPLIT_BYTES,
    TARGET_SLICES,
    FileSlice,
    LogFile,
    NodeIdentity,
    balanced_partitions,
)

MIB = 1024 * 1024
INDEX_EVERY = 64 * 1024  # a batch boundary (an `.index` entry) every 64 KiB


def _files(tmp_path: Path, sizes: list[int], *, indexed: bool = True) -> list[LogFile]:
    files = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"node-{i}" / f"{0:020d}.log"
        path.parent.mkdir()
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: only the size and the index matter here
        if indexed:
            entries = b"".join(struct.pack(">ii", n, pos) for n, pos in enumerate(range(0, size, INDEX_EVERY)))
            (path.parent / f"{0:020d}.index").write_bytes(entries)
        files.append(LogFile(str(path), NodeIdentity("c", i, None), "__cluster_metadata", 0, 0))
    return files


def _bytes(piece: FileSlice) -> int:
    return (Path(piece.file.path).stat().st_size if piece.end < 0 else piece.end) - piece.start


def _covers_every_byte_once(files: list[LogFile], groups: list[list[FileSlice]]) -> None:
    for file in files:
        pieces = sorted((p for g in groups for p in g if p.file == file), key=lambda p: p.start)
        assert pieces[0].start == 0 and pieces[-1].end == -1 and pieces[-1].last_slice
        assert [p.end for p in pieces[:-1]] == [p.start for p in pieces[1:]]
        assert not any(p.last_slice for p in pieces[:-1])
        assert all(p.start % INDEX_EVERY == 0 for p in pieces)  # cut where a batch starts


def test_three_large_segments_make_equal_groups_across_files(tmp_path: Path) -> None:
    files = _files(tmp_path, [84 * MIB] * 3)
    groups = balanced_partitions(files)
    assert len(groups) == TARGET_SLICES  # not 9 slices of 32, 32 and 20 MiB: a multiple of the cores
    sizes = [sum(_bytes(p) for p in g) for g in groups]
    assert max(sizes) - min(sizes) <= 2 * MIB
    assert any(len({p.file for p in g}) == 2 for g in groups)  # a group may span two files
    assert all(len({p.file for p in g}) == len(g) for g in groups)  # one slice per file in a group
    _covers_every_byte_once(files, groups)


def test_small_input_makes_fewer_groups_of_the_minimum_size(tmp_path: Path) -> None:
    files = _files(tmp_path, [10 * MIB] * 3)
    groups = balanced_partitions(files)
    assert len(groups) == 2  # 30 MiB: two groups of at most MIN_SPLIT_BYTES
    assert all(sum(_bytes(p) for p in g) <= MIN_SPLIT_BYTES for g in groups)
    _covers_every_byte_once(files, groups)
    tiny_root = tmp_path / "tiny"
    tiny_root.mkdir()
    tiny = _files(tiny_root, [1000, 0, 500])
    assert balanced_partitions(tiny) == [[FileSlice(f, 0, -1, True) for f in tiny]]


def test_an_empty_segment_at_the_end_joins_the_last_group(tmp_path: Path) -> None:
    """A running node's newest segment is often empty: it starts where every byte is already placed."""
    for name, sizes in (("one", [1000, 500, 0]), ("many", [84 * MIB, 84 * MIB, 0, 0])):
        root = tmp_path / name
        root.mkdir()
        files = _files(root, sizes)
        groups = balanced_partitions(files)
        assert groups[-1][-1] == FileSlice(files[-1], 0, -1, True)
        _covers_every_byte_once(files, groups)


def test_huge_input_keeps_the_maximum_group_size(tmp_path: Path) -> None:
    files = _files(tmp_path, [1024 * MIB] * 2)
    groups = balanced_partitions(files)
    assert len(groups) == 4 * TARGET_SLICES
    assert all(sum(_bytes(p) for p in g) <= DEFAULT_SPLIT_BYTES + MIB for g in groups)
    _covers_every_byte_once(files, groups)


def test_a_segment_without_index_stays_whole(tmp_path: Path) -> None:
    files = _files(tmp_path, [40 * MIB, 40 * MIB], indexed=False)
    groups = balanced_partitions(files)
    assert sorted((p.file.path, p.start, p.end) for g in groups for p in g) == \
        [(f.path, 0, -1) for f in files]
