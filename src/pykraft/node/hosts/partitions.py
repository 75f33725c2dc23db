"""`PartitionHost`: the node's partition host, the asyncio and storage shell over broker/partition_host.py's
`PartitionCore` (which the simulator drives too, over its simulated disk).

What the node adds to the core:
- the logs are the storage layer's `FileLog`s in `PartitionLogs` (`log.dirs`), rolled and retained by each topic's
  `LogConfig` (`log_config_for`, `_apply_log_config`);
- the idempotent state comes from Kafka's producer snapshots (producer_recovery.py) and is snapshotted at each
  roll and on clean shutdown (`close`);
- a waiting answer (acks=all, DeleteRecords) is an asyncio future; `changed` is an asyncio event set (and
  replaced) on every append and high watermark move: it wakes the Fetch long polls;
- the maintenance round (flush, retention, checkpoints; partition_maintenance.py), its fsyncs off the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from pykraft.broker.isr_rules import LeaderProgress
from pykraft.broker.metadata_cache import MetadataCache, TopicPartition
from pykraft.broker.partition_host import AppendResult, PartitionCore, Replica
from pykraft.storage import LogConfig, PartitionLogs
from pykraft.storage.segment import HEADER, LOG_OVERHEAD

from pykraft.node.hosts.producer_recovery import (
    observe_batch, open_producer_state, reload_after_truncation, snapshot_producers,
)
from pykraft.node.hosts import partition_maintenance as maintenance
from pykraft.node.hosts.replica_settings import DataPlaneSettings, TopicSettingsCache, to_log_config

__all__ = ["AppendResult", "DataPlaneSettings", "PartitionHost", "Replica", "to_log_config",
           "whole_batches_length"]


class PartitionHost(PartitionCore):
    def __init__(self, settings: DataPlaneSettings, cache: MetadataCache, logs: PartitionLogs | None, *,
                 report_progress: Callable[[Mapping[TopicPartition, LeaderProgress]], None],
                 high_watermark_of: Callable[[TopicPartition], int | None],
                 now_ms: Callable[[], int] | None = None) -> None:
        super().__init__(settings, cache, logs, report_progress=report_progress, high_watermark_of=high_watermark_of,
                         now_ms=now_ms or (lambda: int(time.time() * 1000)))
        self.changed = asyncio.Event()  # set (and replaced) on every append and HWM move: wakes long polls

    # ---- the core's hooks --------------------------------------------------------------------------------------
    def _settings_cache(self, settings: DataPlaneSettings, cache: MetadataCache) -> TopicSettingsCache:
        return TopicSettingsCache(settings, cache)

    def new_waiter(self) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().create_future()

    def finish(self, token: asyncio.Future[Any], value: Any) -> None:
        if not token.done():
            token.set_result(value)

    def waiter_done(self, token: asyncio.Future[Any]) -> bool:
        return token.done()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def _open_producers(self, replica: Replica) -> None:
        open_producer_state(replica)

    def _reload_producers(self, replica: Replica) -> None:
        reload_after_truncation(replica)

    def _observe_batch(self, replica: Replica, batch: Any) -> None:
        observe_batch(replica, batch)  # with transactions' markers and the `.txnindex`

    def _apply_log_config(self, replica: Replica) -> None:
        replica.log.config = to_log_config(replica.settings)

    def log_config_for(self, topic: str) -> LogConfig:
        """`PartitionLogs`' config source: a new or recovered log rolls by its topic's settings."""
        settings = self.topic_settings
        assert isinstance(settings, TopicSettingsCache)  # (_settings_cache made it)
        return settings.log_config_for(topic)

    # ---- storage -----------------------------------------------------------------------------------------------
    def maintain(self, now_ms: int) -> None:
        """Periodic, all on the calling thread: flush what is due, apply retention, write the checkpoint files."""
        maintenance.maintain(self, now_ms)

    async def maintain_off_loop(self, clock: Callable[[], int], run_blocking: Callable[[Callable[[], None]], Any]) -> None:
        """`maintain` with the fsyncs in a worker thread (`run_blocking`), see partition_maintenance.py."""
        await maintenance.maintain_off_loop(self, clock, run_blocking)

    def close(self) -> None:
        """Clean shutdown: a producer snapshot at each log end (synced by the logs' closing flush), so a restart
        reads no batch header at all."""
        for replica in self.replicas.values():
            snapshot_producers(replica)
        self.abandon_all()
        self.logs.close()


def whole_batches_length(view: memoryview) -> int:
    """Bytes of the whole batches at the front of a fetched buffer (a leader may cut its last batch)."""
    pos = 0
    while pos + HEADER.size <= len(view):
        length = int.from_bytes(view[pos + 8:pos + 12], "big")
        if pos + LOG_OVERHEAD + length > len(view):
            break
        pos += LOG_OVERHEAD + length
    return pos
