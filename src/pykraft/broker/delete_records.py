"""DeleteRecords (KIP-107) on a partition leader: which new log start a request asks for, or which error.

Pure; the node's partition host (node/hosts/record_deletion.py) finds the replica, moves the log start and waits.
Kafka's order of checks (`ReplicaManager.deleteRecordsOnLocalLog`, `Partition.deleteRecordsOnLeader`,
`UnifiedLog.maybeIncrementLogStartOffset`):
1. an internal topic (`__consumer_offsets`, `__transaction_state`) -> INVALID_TOPIC_EXCEPTION;
2. the partition is unknown -> UNKNOWN_TOPIC_OR_PARTITION, not led here -> NOT_LEADER_OR_FOLLOWER (the caller);
3. a topic whose cleanup.policy lacks `delete` (compact only) -> POLICY_VIOLATION;
4. offset -1 means the high watermark; any other negative offset, or one above the high watermark ->
   OFFSET_OUT_OF_RANGE.
An offset at or below the current log start is accepted and changes nothing; the answer is then the current low
watermark at once (Kafka answers without waiting when the low watermark already reaches the offset).
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.protocol.errors import ErrorCode

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1  # DeleteRecordsResponse.INVALID_LOW_WATERMARK
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True, slots=True)
class DeletionTarget:
    """The log start a DeleteRecords partition asks for, or the error that refuses it."""

    error: ErrorCode
    offset: int = INVALID_LOW_WATERMARK
    message: str | None = None


def refuse_topic(topic: str) -> DeletionTarget | None:
    """The error for a topic whose records are never deleted by request (checked before the partition)."""
    if topic in INTERNAL_TOPICS:
        return DeletionTarget(ErrorCode.INVALID_TOPIC_EXCEPTION, message=f"Cannot delete records of internal "
                                                                         f"topic {topic}")
    return None


def deletion_target(requested: int, high_watermark: int, deletion_allowed: bool = True) -> DeletionTarget:
    """Steps 3 and 4 above, on the leader's current high watermark."""
    if not deletion_allowed:
        return DeletionTarget(ErrorCode.POLICY_VIOLATION,
                              message="records can not be deleted due to the configured cleanup.policy")
    offset = high_watermark if requested == HIGH_WATERMARK else requested
    if offset < 0:
        return DeletionTarget(ErrorCode.OFFSET_OUT_OF_RANGE, message=f"the offset {offset} is not valid")
    if offset > high_watermark:
        return DeletionTarget(ErrorCode.OFFSET_OUT_OF_RANGE,
                              message=f"cannot move the log start to {offset}: the high watermark is {high_watermark}")
    return DeletionTarget(ErrorCode.NONE, offset)


def cleanup_allows_delete(policy: str | None) -> bool:
    """Kafka's `LogConfig.delete`: cleanup.policy is a list; deletion needs `delete` in it (None: the default,
    `delete`)."""
    if policy is None:
        return True
    return "delete" in (part.strip() for part in policy.split(","))
