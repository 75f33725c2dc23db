"""DeleteRecords on the partitions this broker leads: the rules and waits are pure and live in
broker/record_deletion.py (the node's partition host and the simulator's both run them); re-exported here for the
node's API handler."""

from __future__ import annotations

from pykraft.broker.record_deletion import (DeletionStarted, abandon_deletions, adopt_leader_log_start,
                                            delete_records, low_watermark, release_deletions)

__all__ = ["DeletionStarted", "abandon_deletions", "adopt_leader_log_start", "delete_records", "low_watermark",
           "release_deletions"]
