"""The default split size of `kafka-log` (layout.balanced_split_bytes): about TARGET_SLICES slices in all, so that a
few large segments still give every core work, within the minimum and maximum slice sizes. No Spark."""

from __future__ import annotations

from pathlib import Path

from pykraft.pipeline.layout import (
    DEFAULT_SPLIT_BYTES,
    MIN_SPLIT_BYTES,
    TARGET_SLICES,
    LogFile,
    NodeIdentity,
    balanced_split_bytes,
)

MIB = 1024 * 1024


def _files(tmp_path: Path, sizes: list[int]) -> list[LogFile]:
    files = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"{i:020d}.log"
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: only the size matters here
        files.append(LogFile(str(path), NodeIdentity("c", i, None), "__cluster_metadata", 0, 0))
    return files


def test_three_large_segments_are_cut_into_about_target_slices(tmp_path: Path) -> None:
    split = balanced_split_bytes(_files(tmp_path, [84 * MIB] * 3))
    assert split == 3 * 84 * MIB // TARGET_SLICES
    assert split < 84 * MIB // 2  # each segment gives several slices, not one or two


def test_small_input_keeps_the_minimum_slice(tmp_path: Path) -> None:
    assert balanced_split_bytes(_files(tmp_path, [10 * MIB] * 3)) == MIN_SPLIT_BYTES
    assert balanced_split_bytes(_files(tmp_path, [1000])) == MIN_SPLIT_BYTES


def test_huge_input_keeps_the_maximum_slice(tmp_path: Path) -> None:
    assert balanced_split_bytes(_files(tmp_path, [1024 * MIB] * 2)) == DEFAULT_SPLIT_BYTES
