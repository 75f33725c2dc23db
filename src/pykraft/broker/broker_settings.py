"""A broker's own settings that Kafka lets change without a restart, resolved with Kafka's precedence (pure).

Kafka's order for a broker setting, highest first: the broker's own dynamic config (BROKER resource named by its
id), the cluster-wide dynamic default (BROKER resource with the empty name), server.properties, Kafka's default.
`dynamic_int` reads one integer setting through the two dynamic levels of the metadata image and falls back to the
value the node started with (server.properties or Kafka's default, already checked at start). A dynamic value was
checked by the controller when it was written; one that does not parse is passed over, never raised.

`fetcher_id` is Kafka's choice of the replica fetcher thread a partition uses among `num.replica.fetchers`
(AbstractFetcherManager.getFetcherId): Java's String.hashCode of the topic, times 31, plus the partition, in 32-bit
arithmetic, made non-negative, modulo the count.
"""

from __future__ import annotations

from collections.abc import Mapping


def dynamic_int(key: str, broker_dynamic: Mapping[str, str], cluster_dynamic: Mapping[str, str], started_with: int,
                minimum: int | None = None) -> int:
    for level in (broker_dynamic, cluster_dynamic):
        text = level.get(key)
        if text is None:
            continue
        try:
            value = int(str(text).strip())
        except ValueError:
            continue
        if minimum is None or value >= minimum:
            return value
    return started_with


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units)."""
    result = 0
    encoded = text.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        result = _int32(31 * result + (encoded[i] << 8 | encoded[i + 1]))
    return result


def fetcher_id(topic: str, partition: int, fetchers: int) -> int:
    value = _int32(31 * java_string_hash(topic) + partition)
    non_negative = 0 if value == -(1 << 31) else abs(value)  # Kafka's Utils.abs
    return non_negative % max(fetchers, 1)
