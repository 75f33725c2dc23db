"""The version Kafka writes each metadata record at, given the finalized metadata.version.

A schema's validVersions is what Kafka can read, not what it writes: Kafka's controller picks a record's version
from the cluster's metadata.version (`MetadataVersion.partitionRecordVersion()`, `registerBrokerRecordVersion()`,
...) and, for BrokerRegistrationChangeRecord, from the kind of change (ReplicationControlManager: fencing and
unfencing at 0, controlled shutdown at 1, log directories at 2). pykraft's controller builds records at the newest
version it models; `as_written` lowers each one to Kafka's choice before it is encoded into the log or a snapshot,
so the bytes are the ones a Kafka controller at the same metadata.version writes. Fields the lower version lacks
are dropped, as Kafka never sets them at that metadata.version (directories before 3.7-IV2, ELR before 4.0-IV1).
Every other record type is written at version 0 by Kafka and built at 0 here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pykraft.protocol.message_versions import convert

from .registry import record_class
from .schema import MetadataRecordType

# metadata.version feature levels of the gates that change a record's version (Kafka's MetadataVersion).
IBP_3_3_IV3 = 7  # isInControlledShutdownStateSupported: RegisterBrokerRecord v1
IBP_3_4_IV0 = 8  # isMigrationSupported: RegisterBrokerRecord v2 (isMigratingZkBroker)
IBP_3_7_IV2 = 17  # isDirectoryAssignmentSupported: Partition(Change)Record v1, RegisterBrokerRecord v3 (logDirs)
IBP_4_0_IV1 = 23  # isElrSupported: Partition(Change)Record v2

_BY_LEVEL: dict[int, tuple[tuple[int, int], ...]] = {  # api key -> ((lowest level, version), ...) highest first
    MetadataRecordType.PARTITION_RECORD: ((IBP_4_0_IV1, 2), (IBP_3_7_IV2, 1), (0, 0)),
    MetadataRecordType.PARTITION_CHANGE_RECORD: ((IBP_4_0_IV1, 2), (IBP_3_7_IV2, 1), (0, 0)),
    MetadataRecordType.REGISTER_BROKER_RECORD: ((IBP_3_7_IV2, 3), (IBP_3_4_IV0, 2), (IBP_3_3_IV3, 1), (0, 0)),
}


def written_version(record: Any, metadata_version: int) -> int:
    """The version a Kafka controller at `metadata_version` writes `record` at."""
    key = int(record.__api_key__)
    if key == MetadataRecordType.BROKER_REGISTRATION_CHANGE_RECORD:
        return _broker_change_version(record)
    for level, version in _BY_LEVEL.get(key, ()):
        if metadata_version >= level:
            return version
    return int(record.__version__)


def _broker_change_version(record: Any) -> int:
    if getattr(record, "log_dirs", ()):
        return 2
    if getattr(record, "in_controlled_shutdown", 0):
        return 1
    return 0


def as_written(record: Any, metadata_version: int) -> Any:
    """`record` at the version Kafka writes it at `metadata_version` (the same object when it already is)."""
    version = written_version(record, metadata_version)
    if version == int(record.__version__):
        return record
    return convert(record, record_class(int(record.__api_key__), version))


def each_as_written(records: Iterable[Any], metadata_version: int | None) -> Iterator[Any]:
    """`as_written` of every record; unchanged when the metadata.version is not known (no image yet)."""
    if metadata_version is None:
        yield from records
    else:
        for record in records:
            yield as_written(record, metadata_version)
