"""FetchSnapshot: NOT IMPLEMENTED YET. A Fetch answer carrying SnapshotId is recorded but no download starts,
and FetchSnapshot requests are counted and dropped."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from kio.schema.fetch_snapshot.v1 import request as fs_req
from kio.schema.fetch_snapshot.v1 import response as fs_resp

from pykraft.raft.log import SnapshotId
from pykraft.raft.states import FollowerState

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def is_fetch_snapshot_request(request: Any) -> bool:
    return isinstance(request, fs_req.FetchSnapshotRequest)


def is_fetch_snapshot_response(response: Any) -> bool:
    return isinstance(response, fs_resp.FetchSnapshotResponse)


def handle_fetch_snapshot_request(core: RaftCore, ref: Hashable, request: Any, now_ms: int) -> None:
    core.unsupported_requests = getattr(core, "unsupported_requests", 0) + 1


def handle_fetch_snapshot_response(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    pass


def start_snapshot_download(core: RaftCore, state: FollowerState, snapshot_id: SnapshotId, now_ms: int) -> None:
    core.pending_snapshot_id = snapshot_id  # type: ignore[attr-defined]
