"""`<metadata.log.dir>/pykraft-trace.jsonl`: one JSON object per line for every state transition of the node.

This file is the input of the analysis pipeline, so its shape is a contract: every line has `ts_ms` (wall
clock), `node_id` and `event`, plus event fields. Events:
- `recovered` (start-up: segments, bytes_validated, torn_tail, rebuilt_indexes, removed_files, log_end_offset);
- `became_leader|follower|candidate|prospective|unattached|resigned` (epoch, leader_id, role);
- `voters_changed` (voters: sorted ids);
- `hwm_advanced` (hwm), at most once every 100 ms (the last value of a burst is written when the next one is due);
- `snapshot_taken` (offset, epoch, bytes);
- `log_truncated` (from_end_offset, to_end_offset): the log end went backwards (divergence with a new leader);
- `stopped` (graceful);
- a broker's: `broker_state` (old, new, broker_epoch) and `isr_view` (topic, partition, leader_epoch,
  partition_epoch, isr, metadata_offset, reason: the ISR a partition leader uses or proposes, hosts/isr_trace.py).
Lines are written (not fsynced) as they happen: the trace is diagnostics, never needed for correctness.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

TRACE_FILE = "pykraft-trace.jsonl"
HWM_INTERVAL_MS = 100


class TraceWriter:
    def __init__(self, directory: str, node_id: int) -> None:
        self.path = os.path.join(directory, TRACE_FILE)
        self.node_id = node_id
        self._file: IO[str] | None = open(self.path, "a", encoding="utf-8", buffering=1)
        self._state: tuple[str, int, int | None] | None = None
        self._voters: tuple[int, ...] | None = None
        self._hwm: int | None = None
        self._hwm_written_ms = -HWM_INTERVAL_MS
        self._log_end: int | None = None

    def event(self, now_ms: int, event: str, **fields: Any) -> None:
        if self._file is None:
            return
        line = {"ts_ms": now_ms, "node_id": self.node_id, "event": event, **fields}
        self._file.write(json.dumps(line, separators=(",", ":"), default=str) + "\n")

    def observe(self, core: Any, now_ms: int) -> None:
        """Compare the core's state with what was last written; called after every input."""
        self.observe_state(core, now_ms)
        voters = tuple(sorted(core.voters().ids()))
        if voters != self._voters:
            if self._voters is not None:
                self.event(now_ms, "voters_changed", voters=list(voters))
            self._voters = voters
        end = core.log.end_offset()
        if self._log_end is not None and end < self._log_end:
            self.event(now_ms, "log_truncated", from_end_offset=self._log_end, to_end_offset=end)
        self._log_end = end
        hwm = core.high_watermark
        if hwm is not None and hwm != self._hwm and now_ms - self._hwm_written_ms >= HWM_INTERVAL_MS:
            self._hwm = hwm
            self._hwm_written_ms = now_ms
            self.event(now_ms, "hwm_advanced", hwm=hwm)

    def observe_state(self, core: Any, now_ms: int) -> None:
        role = core.quorum.role.value.lower()
        state = (role, core.quorum.epoch, core.quorum.leader_id())
        if state != self._state:
            self._state = state
            self.event(now_ms, f"became_{role}", role=role, epoch=state[1], leader_id=state[2])

    def flush_pending(self, core: Any, now_ms: int) -> None:
        """Write a high watermark held back by the rate limit (at stop)."""
        hwm = core.high_watermark
        if hwm is not None and hwm != self._hwm:
            self._hwm = hwm
            self.event(now_ms, "hwm_advanced", hwm=hwm)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
