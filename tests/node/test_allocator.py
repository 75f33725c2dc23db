"""runtime/allocator.py: glibc's thresholds are fixed for megabyte frames, unless the operator set glibc's own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pykraft.node.runtime.allocator import release_free_heap, tune_for_large_frames

_PROBE = """
import os, sys
from pykraft.node.runtime.allocator import release_free_heap, tune_for_large_frames
print(tune_for_large_frames())
def faults():
    return int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[7])
for _ in range(3):  # warm: the first blocks are faulted in either way
    blocks = [bytearray(1 << 20) for _ in range(4)]
    del blocks
before = faults()
for _ in range(50):
    blocks = [bytearray(1 << 20) for _ in range(4)]  # a few frames in flight, then all of them freed
    del blocks
print(faults() - before)
"""


def _probe(env: dict[str, str]) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True,
                         env={k: v for k, v in {**os.environ, **env}.items() if v is not None}).stdout.split()
    return out[0], int(out[1])


def test_freed_megabyte_blocks_are_reused_without_page_faults() -> None:
    """The project runs on Linux with glibc (Debian's Python): the thresholds take effect there."""
    tuned, faults = _probe({})
    assert tuned == "True"
    # 200 MiB allocated in all: untuned, glibc gave the heap's top back each round and faulted every page in again
    # (~50,000 faults on glibc 2.36); tuned, the freed blocks are reused.
    assert faults < 2_000


def test_the_operators_own_glibc_settings_win(monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert tune_for_large_frames() is False


@pytest.mark.parametrize("confstr", [lambda name: None, lambda name: (_ for _ in ()).throw(ValueError(name))])
def test_nothing_is_set_off_glibc(monkeypatch, confstr) -> None:
    """musl answers no glibc version (or does not know the name): mallopt is never called."""
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setattr(os, "confstr", confstr)
    assert tune_for_large_frames() is False


_RELEASE = """
from pykraft.node.runtime.allocator import release_free_heap, tune_for_large_frames
def rss_kib():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS:")).split()[1])
tune_for_large_frames()
blocks = [bytearray(1 << 20) for _ in range(32)]  # 32 MiB in the heap (under the 64 MiB trim threshold)...
del blocks  # ...freed: the high threshold keeps the pages
held = rss_kib()
print(release_free_heap(), held - rss_kib())
"""


def test_release_gives_freed_heap_back_that_the_trim_threshold_keeps() -> None:
    out = subprocess.run([sys.executable, "-c", _RELEASE], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True"
    assert int(out[1]) > 16 * 1024  # KiB: most of the 32 MiB freed went back to the kernel


def test_release_does_nothing_off_glibc(monkeypatch) -> None:
    monkeypatch.setattr(os, "confstr", lambda name: None)
    assert release_free_heap() is False
