"""The log lines of a broker's partition leadership changes: one INFO line per kind of change and metadata update,
not one per partition (Kafka's ReplicaManager says "Transitioning N partition(s) to local leaders"), at most ten
partitions named in it; each partition on a DEBUG line of its own."""

from __future__ import annotations

import logging
from typing import Any

_log = logging.getLogger("pykraft.node.partitions")


def role_text(replica: Any) -> str:
    """A replica after a role change: `t-0 (leader epoch 5, from offset 120)` or `t-0 (leader 4, epoch 5)`."""
    if replica.leading is not None:
        return (f"{replica.topic}-{replica.partition} (leader epoch {replica.leader_epoch}, from offset "
                f"{replica.leading.epoch_start_offset})")
    leader = "no leader" if replica.leader_id < 0 else f"leader {replica.leader_id}"
    return f"{replica.topic}-{replica.partition} ({leader}, epoch {replica.leader_epoch})"


def log_role_changes(broker_id: int, changes: dict[bool, list[str]], removed: list[tuple[str, int]]) -> None:
    """`changes`: role_text of the replicas that became leaders (True) and followers (False) in one metadata
    update; `removed`: the partitions whose logs went."""
    prefix = f"[ReplicaManager broker={broker_id}] "
    for leading, what in ((True, "leaders"), (False, "followers")):
        if changes[leading]:
            _log.info("%sTransitioned %d partition(s) to local %s: %s", prefix, len(changes[leading]), what,
                      first(changes[leading]))
            for text in changes[leading]:
                _log.debug("%s%s of %s", prefix, what[:-1], text)
    if removed:
        _log.info("%sDeleted the logs of %d partition(s) no longer assigned to this broker: %s", prefix,
                  len(removed), first([f"{t}-{i}" for t, i in removed]))


def first(items: list[str], limit: int = 10) -> str:
    """At most `limit` items of a log line, and how many more there are."""
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")
