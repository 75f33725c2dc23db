"""KIP-890 part 1 on a partition leader: a transaction's first write to a partition is verified with the
transaction coordinator before it is appended, so a late write of a finished transaction (a hanging transaction)
cannot open a new one.

Kafka's VerificationGuard: the leader records a guard for the producer before it asks the coordinator
(AddPartitionsToTxn v4 with VerifyOnly), and the append goes ahead only if the guard is still the producer's one;
a marker written meanwhile removes it (producer_recovery.record_marker), and the write is then refused
INVALID_TXN_STATE. A producer whose transaction is already open in the partition with the same epoch needs no
verification. `SKIP` is the guard when transaction.partition.verification.enable is false. Produce requests
pipelined by one producer share its guard (one per producer and epoch).

Transaction version 2 (KIP-890 part 2): a Produce v12+ / TxnOffsetCommit v5+ comes from a client that sends no
AddPartitionsToTxn/AddOffsetsToTxn; the leader asks the coordinator to add the partition (AddPartitionsToTxn v5
without VerifyOnly, Kafka's `addPartition` operation) under the same guard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from .partition_host import Replica
    from .produce_rules import ProducedBatch

SKIP = object()
ADD_PARTITION_PRODUCE_VERSION = 12  # Kafka's produceRequestVersionToTransactionSupportedOperation: addPartition
ADD_PARTITION_TXN_OFFSET_COMMIT_VERSION = 5  # txnOffsetCommitRequestVersionToTransactionSupportedOperation
GENERIC_ERROR_PRODUCE_VERSION = 11  # v11+ clients handle TRANSACTION_ABORTABLE (genericErrorSupported)
# What a produce answer says for a coordinator's verification error (Kafka's ReplicaManager: errors an older client
# cannot handle become the retriable NOT_ENOUGH_REPLICAS; PRODUCER_FENCED is the partition's INVALID_PRODUCER_EPOCH;
# a partition not in the transaction makes it INVALID_TXN_STATE).
_PRODUCE_ERRORS = {ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
                   ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
                   ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
                   ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
                   ErrorCode.REQUEST_TIMED_OUT: ErrorCode.NOT_ENOUGH_REPLICAS,
                   ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH}


def needs_verification(replica: Replica, producer_id: int, epoch: int) -> bool:
    open_txns = replica.producers.open_transactions()
    return producer_id not in open_txns or replica.producers.epoch_of(producer_id) != epoch


def start(replica: Replica, producer_id: int, epoch: int) -> object:
    """The producer's guard: the one already out for this epoch (pipelined Produce requests of one transaction
    share it, as Kafka's VerificationStateEntry is shared), else a new one."""
    current = replica.verifying.get(producer_id)
    if current is not None and current[0] == epoch:
        return current[1]
    guard = object()
    replica.verifying[producer_id] = (epoch, guard)
    return guard


def admits(replica: Replica, checked: ProducedBatch, verified: object | None) -> bool:
    if verified is SKIP or not needs_verification(replica, checked.producer_id, checked.producer_epoch):
        return True
    current = replica.verifying.get(checked.producer_id)
    return verified is not None and current is not None and current[1] is verified


def produce_error(coordinator_error: ErrorCode, version: int = GENERIC_ERROR_PRODUCE_VERSION) -> ErrorCode:
    """TRANSACTION_ABORTABLE reaches Produce v11+ clients as it is; older ones get INVALID_TXN_STATE (Kafka's
    AddPartitionsToTxnManager for the `defaultError` operation)."""
    if coordinator_error is ErrorCode.TRANSACTION_ABORTABLE and version < GENERIC_ERROR_PRODUCE_VERSION:
        return ErrorCode.INVALID_TXN_STATE
    return _PRODUCE_ERRORS.get(coordinator_error, coordinator_error)
