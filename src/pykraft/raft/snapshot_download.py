"""A follower's snapshot download (KIP-630), the state kept between FetchSnapshot round trips.

1. A Fetch answer carries SnapshotId: the leader no longer has the log from our fetch position. `start` opens an
   unchecked writer for that snapshot and stores it in `FollowerState.fetching_snapshot`; from then on the
   follower sends FetchSnapshot (never Fetch) to the leader, with Position = bytes received so far.
2. Each answer must name the same snapshot and start exactly at our size (else it is dropped and counted).
3. When our size reaches the announced size: freeze, truncate the log to the snapshot (log start = end = HWM =
   snapshot end), reload the voter history from the snapshot, and adopt the snapshot end as high watermark.
   The listener then gets a LoadSnapshot (listener.py).
4. SNAPSHOT_NOT_FOUND or a negative snapshot id: the leader dropped that snapshot; discard the partial copy and
   Fetch again, which will name the leader's newer snapshot.
5. A Fetch answered with records or a divergence (an observer's discovery Fetch, sent while the leader connection
   backs off) means the leader serves our log from where it is: the download is discarded, else it would freeze
   behind a log start that has moved on (handlers/fetch.py).

Leaving Follower discards the partial snapshot (QuorumState closes it), and so does a change of leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.fetch_snapshot.v1 import request as fs_req

from pykraft.raft import messages
from pykraft.raft.log import RawSnapshotWriter, SnapshotId
from pykraft.raft.states import FollowerState

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def start(core: RaftCore, state: FollowerState, snapshot_id: SnapshotId, now_ms: int) -> None:
    """Step 1: pause fetching and open a writer for the leader's snapshot."""
    abandon(state)
    writer = core.log.create_new_snapshot_unchecked(snapshot_id)
    if writer is None:
        # Already frozen locally (e.g. a crash between freeze and truncation): finish the install instead.
        install(core, state)
        return
    state.fetching_snapshot = writer


def writer_of(state: FollowerState) -> RawSnapshotWriter | None:
    return state.fetching_snapshot


def request(core: RaftCore, state: FollowerState) -> fs_req.FetchSnapshotRequest:
    writer = writer_of(state)
    assert writer is not None
    return messages.fetch_snapshot_request(core.local.cluster_id, core.local.key, state.epoch, writer.snapshot_id,
                                           writer.size_in_bytes(), core.config.max_fetch_size_bytes)


def abandon(state: FollowerState) -> None:
    """Step 4: discard a partial download (an unfrozen writer leaves nothing behind)."""
    writer = writer_of(state)
    if writer is not None:
        writer.close()
        state.fetching_snapshot = None


def append_chunk(core: RaftCore, state: FollowerState, snapshot_id: SnapshotId, size: int, position: int,
                 chunk: bytes | memoryview) -> bool:
    """Steps 2-3 for one answer. Returns False when the chunk does not continue our copy (dropped)."""
    writer = writer_of(state)
    assert writer is not None
    if snapshot_id != writer.snapshot_id or position != writer.size_in_bytes() or size <= 0 \
            or position + len(chunk) > size or not chunk:
        return False
    writer.append(chunk)
    if writer.size_in_bytes() == size:
        writer.freeze()
        writer.close()
        state.fetching_snapshot = None
        core.log.on_snapshot_frozen(snapshot_id)
        install(core, state)
    return True


def install(core: RaftCore, state: FollowerState) -> bool:
    """Step 3 after freezing: the log restarts at the snapshot when the snapshot is ahead of it."""
    if not core.log.truncate_to_latest_snapshot():
        return False
    core.reload_history()
    hwm = core.log.start_offset()  # the snapshot's end offset: everything in it is committed
    core.log.update_high_watermark(hwm)
    core.quorum.update_high_watermark(hwm)
    return True
