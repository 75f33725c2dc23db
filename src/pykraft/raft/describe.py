"""`describe_ready`: a `Ready` as readable text, one effect a line, for golden scenario files (etcd-raft's
datadriven tests: a script of inputs and the output each one produced, so that a behaviour change of the core
shows as a text diff in review: tests/raft/golden/).

Messages are rendered field by field, leaving out fields that are None, empty or the kio defaults that say
"nothing" (-1 offsets and ids are kept: they carry meaning); bytes show their length only; times in ms.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import Any


NEVER_TEXT = "never"


def describe_ready(ready: Any, never: int) -> str:
    """`ready`: a raft/effects.py Ready (this module names the effects by their class, so that effects.py, which
    calls it, is not imported back)."""
    lines = [describe_effect(effect) for effect in ready.effects]
    lines.append(f"next poll: {NEVER_TEXT if ready.wakeup_ms >= never else ready.wakeup_ms}")
    return "\n".join(lines)


def describe_effect(effect: Any) -> str:
    kind = type(effect).__name__
    if kind == "PersistElection":
        state = effect.state
        voted = None if state.voted_key is None else state.voted_key.id
        return (f"persist election: epoch {state.epoch}, leader {state.leader_id}, voted {voted} "
                f"(kraft.version {effect.kraft_version})")
    if kind == "FlushLog":
        return f"flush log to {effect.end_offset}"
    if kind == "Send":
        return f"send to {effect.destination.node_id} #{effect.correlation_id}: {describe_message(effect.request)}"
    if kind == "Respond":
        wait = "" if effect.after_log_flush else " (not waiting for the log flush)"
        return f"respond to {effect.ref}{wait}: {describe_message(effect.response)}"
    if kind == "CommitBatches":
        return f"commit offsets {effect.base_offset}..{effect.last_offset} ({len(effect.records)} bytes)"
    if kind == "LoadSnapshot":
        return f"load snapshot {effect.snapshot_id.offset}-{effect.snapshot_id.epoch}"
    if kind == "LeaderChanged":
        return f"leader changed: {effect.leader_id} in epoch {effect.epoch}"
    if kind == "ShutdownComplete":
        return f"shutdown complete (graceful {effect.graceful})"
    return repr(effect)


def describe_message(value: Any) -> str:
    """A kio message (or any value in one) on one line."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = []
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is None or (isinstance(item, (tuple, list, str, bytes)) and not item):
                continue
            parts.append(f"{f.name}={describe_message(item)}")
        return f"{type(value).__name__}({', '.join(parts)})"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(describe_message(v) for v in value) + "]"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    if isinstance(value, datetime.timedelta):
        return f"{int(value.total_seconds() * 1000)}ms"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, uuid.UUID):
        return str(value)[:8]
    return str(value)
