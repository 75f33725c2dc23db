"""The transaction coordinator's settings from server.properties (Kafka's TransactionStateManagerConfigs and
TransactionLogConfigs), pure: a bad value raises ValueError naming the key, so a broker refuses to start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRANSACTION_TOPIC = "__transaction_state"
TRANSACTION_VERSION = "transaction.version"

# (field, key, default, minimum)
_KEYS = (
    ("partitions", "transaction.state.log.num.partitions", 50, 1),
    ("replication_factor", "transaction.state.log.replication.factor", 3, 1),
    ("min_isr", "transaction.state.log.min.isr", 2, 1),
    ("segment_bytes", "transaction.state.log.segment.bytes", 104857600, 1),
    ("load_buffer_bytes", "transaction.state.log.load.buffer.size", 5242880, 1),
    ("max_timeout_ms", "transaction.max.timeout.ms", 900000, 1),
    ("id_expiration_ms", "transactional.id.expiration.ms", 604800000, 1),
    ("abort_interval_ms", "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000, 1),
    ("expire_interval_ms", "transaction.remove.expired.transaction.cleanup.interval.ms", 3600000, 1),
)


@dataclass(frozen=True, slots=True)
class TxnSettings:
    partitions: int = 50
    replication_factor: int = 3
    min_isr: int = 2
    segment_bytes: int = 104857600
    load_buffer_bytes: int = 5242880
    max_timeout_ms: int = 900000
    id_expiration_ms: int = 604800000
    abort_interval_ms: int = 10000
    expire_interval_ms: int = 3600000
    verification: bool = True  # transaction.partition.verification.enable

    def topic_configs(self) -> dict[str, str]:
        """The configs Kafka creates __transaction_state with (TransactionStateManager.transactionTopicConfigs),
        but compression.type: pykraft keeps the producer's compression, and the coordinator writes uncompressed."""
        return {"cleanup.policy": "compact", "unclean.leader.election.enable": "false",
                "min.insync.replicas": str(self.min_isr), "segment.bytes": str(self.segment_bytes)}


def txn_settings(raw: Any) -> TxnSettings:
    values: dict[str, Any] = {}
    for name, key, _default, minimum in _KEYS:
        text = str(raw.get(key, "")).strip()
        if not text:
            continue
        if not text.lstrip("-").isdigit() or int(text) < minimum:
            raise ValueError(f"Invalid value {text} for configuration {key}: Value must be at least {minimum}")
        values[name] = int(text)
    flag = str(raw.get("transaction.partition.verification.enable", "true")).strip().lower()
    if flag not in ("true", "false"):
        raise ValueError(f"Invalid value {flag} for configuration transaction.partition.verification.enable: "
                         "Expected value to be either true or false")
    values["verification"] = flag == "true"
    return TxnSettings(**values)
