"""What a controller operation produces: records to append, and the answer to give once they commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KRaftVersionUpgrade:
    """An accepted UpdateFeatures for kraft.version: the raft layer, not a FeatureLevelRecord, finalizes it.

    The runtime calls `RaftCore.upgrade_kraft_version(version, now_ms, validate_only)`; on
    `KRaftVersionUpgradeError` it answers the UpdateFeatures request with INVALID_UPDATE_VERSION and the error's
    text instead of `response`; otherwise it sends `response` once the high watermark passes both the returned
    offset (if any) and this result's records."""

    version: int
    validate_only: bool


@dataclass(frozen=True, slots=True)
class ControllerResult:
    """`records` are metadata record objects (pykraft.records.metadata.schema), appended as one atomic batch.
    `response` is the kio response to send after they commit (None when the operation has no caller), or a
    callable taking the offset of the first record and returning that response.
    `kraft_version_upgrade` is set only by UpdateFeatures (see KRaftVersionUpgrade).
    `notes` say in words what the operation decided and why (a broker fenced because its session timed out, ...):
    the node's host logs them, as Kafka's controller logs its decisions; the simulator ignores them."""

    records: tuple[Any, ...] = ()
    response: Any = None
    kraft_version_upgrade: KRaftVersionUpgrade | None = None
    notes: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.records and self.response is None and self.kraft_version_upgrade is None
