"""Fixtures shared by the storage tests."""

from __future__ import annotations

import pytest

import pykraft.storage.segment as segment


@pytest.fixture
def preads(monkeypatch) -> list[int]:
    """Sizes of every pread the segments make."""
    sizes: list[int] = []
    real = segment.pread_exact

    def counting(fd: int, size: int, position: int) -> bytearray:
        data = real(fd, size, position)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(segment, "pread_exact", counting)
    return sizes
