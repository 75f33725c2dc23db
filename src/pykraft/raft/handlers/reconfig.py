"""AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter: not implemented yet; requests get an error response."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def handle_other_request(core: RaftCore, ref: Hashable, request: Any, now_ms: int) -> None:
    from pykraft.raft.handlers.fetch_snapshot import handle_fetch_snapshot_request, is_fetch_snapshot_request

    if is_fetch_snapshot_request(request):
        return handle_fetch_snapshot_request(core, ref, request, now_ms)
    core.unsupported_requests = getattr(core, "unsupported_requests", 0) + 1  # counted drop


def handle_other_response(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    from pykraft.raft.handlers.fetch_snapshot import handle_fetch_snapshot_response, is_fetch_snapshot_response

    if is_fetch_snapshot_response(response):
        handle_fetch_snapshot_response(core, source_id, response, now_ms)


def on_high_watermark(core: RaftCore, now_ms: int) -> None:
    """Hook for reconfiguration handlers waiting on commit (none yet)."""
