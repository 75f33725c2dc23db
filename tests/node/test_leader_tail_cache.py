"""A leader's metadata log keeps what the raft core appends in memory for the followers' fetches (disk.py), and
the runtime trims it to what every other voter has not fetched yet (runtime.release_read)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pykraft.node.runtime.effects import release_read
from pykraft.node.runtime.runtime import NodeRuntime

from .helpers import free_ports, leader_of, make_config, wait_for


class _Log:
    def __init__(self) -> None:
        self.released: list[int] = []

    def release_cached_below(self, offset: int) -> None:
        self.released.append(offset)


def _leader(local: int, ends: dict[int, int | None]) -> SimpleNamespace:
    progress = {node_id: SimpleNamespace(end_offset=end) for node_id, end in ends.items()}
    return SimpleNamespace(local_key=SimpleNamespace(id=local), voter_progress=progress)


def test_release_below_the_slowest_other_voter():
    log = _Log()
    release_read(log, _leader(1, {1: 50, 2: 40, 3: 45}), 48)  # the leader's own end does not count
    assert log.released == [40]


@pytest.mark.parametrize("ends", [{1: 50, 2: 40, 3: None}, {1: 50}], ids=["a-voter-never-fetched", "alone"])
def test_nothing_is_released_without_every_other_voters_end(ends):
    log = _Log()
    release_read(log, _leader(1, ends), 48)
    assert log.released == []


def test_a_follower_releases_below_the_high_watermark_its_replay_has_read():
    log = _Log()
    release_read(log, None, 48)
    release_read(log, None, None)  # no high watermark known yet: nothing read
    assert log.released == [48]


def test_a_follower_keeps_what_its_replay_has_not_read_yet():
    """A follower's core lists newly committed records when its flush completes, after the high watermark moved:
    they stay in memory until the replay has read them."""
    log = _Log()
    release_read(log, None, 48, replayed=47)
    release_read(log, None, 48, replayed=48)
    assert log.released == [47, 48]


@pytest.mark.asyncio
async def test_a_node_keeps_its_appends(tmp_path):
    runtime = NodeRuntime(make_config(tmp_path, 1, {1: free_ports(1)[0]}))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        assert runtime.core.log.keep_appends
    finally:
        await runtime.stop()
