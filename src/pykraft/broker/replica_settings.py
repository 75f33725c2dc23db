"""The settings a broker's partition replicas run with: the broker's own (`DataPlaneSettings`, from
server.properties) and each topic's (`TopicSettingsCache`), split from the partition host along that seam.
The storage side (a topic's `LogConfig`) is the node's: node/hosts/replica_settings.py.

A topic's settings follow Kafka's precedence (broker/topic_settings.py: the topic's ConfigRecords > the broker's
dynamic config > the cluster's dynamic default > server.properties), read from the metadata image and cached
until the next metadata change (`clear`). A dynamic value that does not parse is skipped and logged once. The
broker's own dynamic settings (producer.id.expiration.ms, num.replica.fetchers) are read the same way
(`broker_int`, broker/broker_settings.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykraft.broker.broker_settings import dynamic_int
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings, static_settings, topic_settings
from pykraft.controller.configs import BROKER, TOPIC

_log = logging.getLogger("pykraft.node.partitions")


@dataclass(frozen=True, slots=True)
class DataPlaneSettings:
    broker_id: int
    topic_defaults: TopicSettings = TopicSettings()  # the static broker config's log settings (server.properties)
    replica_fetch_max_bytes: int = 1 << 20  # replica.fetch.max.bytes
    replica_fetch_wait_max_ms: int = 500  # replica.fetch.wait.max.ms
    replica_fetch_backoff_ms: int = 1000  # replica.fetch.backoff.ms
    producer_id_expiration_ms: int = 86_400_000  # producer.id.expiration.ms (dynamic: TopicSettingsCache.broker_int)
    num_replica_fetchers: int = 1  # num.replica.fetchers (dynamic)

    @classmethod
    def of(cls, broker_id: int, raw: Mapping[str, Any]) -> DataPlaneSettings:
        """From server.properties; ValueError names a setting that is not a number."""
        values: dict[str, int] = {}
        for name, key in (("replica_fetch_max_bytes", "replica.fetch.max.bytes"),
                          ("replica_fetch_wait_max_ms", "replica.fetch.wait.max.ms"),
                          ("replica_fetch_backoff_ms", "replica.fetch.backoff.ms"),
                          ("producer_id_expiration_ms", "producer.id.expiration.ms"),
                          ("num_replica_fetchers", "num.replica.fetchers")):
            text = str(raw.get(key, "")).strip()
            if text:
                try:
                    values[name] = int(text)
                except ValueError:
                    raise ValueError(f"{key}: {text!r} is not an integer") from None
        return cls(broker_id, static_settings(raw), **values)


class TopicSettingsCache:
    """Each topic's resolved settings, from the metadata image, until the next metadata change."""

    def __init__(self, settings: DataPlaneSettings, cache: MetadataCache) -> None:
        self._defaults = settings.topic_defaults
        self._broker = str(settings.broker_id)
        self._cache = cache
        self._resolved: dict[str, TopicSettings] = {}
        self._reported: set[str] = set()  # unusable dynamic config values already logged

    def clear(self) -> None:
        """Configs may have changed with new metadata: resolve again on the next use."""
        self._resolved.clear()

    def of(self, topic: str) -> TopicSettings:
        found = self._resolved.get(topic)
        if found is None:
            configs = self._cache.configs.configs
            found, problems = topic_settings(self._defaults, configs.get((TOPIC, topic), {}),
                                             configs.get((BROKER, self._broker), {}), configs.get((BROKER, ""), {}))
            for problem in problems:
                if problem not in self._reported:
                    self._reported.add(problem)
                    _log.warning("dynamic config ignored (the next level applies): %s", problem)
            self._resolved[topic] = found
        return found

    def broker_int(self, key: str, started_with: int, minimum: int | None = None) -> int:
        """A broker setting Kafka changes without a restart (producer.id.expiration.ms, num.replica.fetchers):
        this broker's dynamic value, else the cluster default's, else `started_with` (server.properties)."""
        configs = self._cache.configs.configs
        return dynamic_int(key, configs.get((BROKER, self._broker), {}), configs.get((BROKER, ""), {}), started_with,
                           minimum)
