"""The storage side of a topic's settings (`to_log_config`), beside the settings themselves, which are pure and
live in broker/replica_settings.py (`DataPlaneSettings`, `TopicSettingsCache`, re-exported here)."""

from __future__ import annotations

from pykraft.broker.replica_settings import DataPlaneSettings
from pykraft.broker.replica_settings import TopicSettingsCache as _TopicSettingsCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.storage import LogConfig


class TopicSettingsCache(_TopicSettingsCache):
    def log_config_for(self, topic: str) -> LogConfig:
        """`PartitionLogs`' config source: a new or recovered log rolls by its topic's settings."""
        return to_log_config(self.of(topic))


def to_log_config(settings: TopicSettings) -> LogConfig:
    """The storage side of a topic's settings (segment rolls, by max.compaction.lag.ms too on a compacted topic;
    retention is applied by the maintenance round, compaction by the log cleaner)."""
    return LogConfig(segment_bytes=settings.segment_bytes, segment_ms=settings.roll_ms,
                     retention_bytes=settings.retention_bytes, retention_ms=settings.retention_ms,
                     allow_offset_gaps=True)


__all__ = ["DataPlaneSettings", "TopicSettingsCache", "to_log_config"]
