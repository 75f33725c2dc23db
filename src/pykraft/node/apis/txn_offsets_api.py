"""TxnOffsetCommit (v0-5) on a group coordinator: a consumer's offsets committed inside the producer's transaction
(KafkaProducer.sendOffsetsToTransaction), pending until the transaction's marker reaches `__consumer_offsets`.

Checks in Kafka's order (GroupCoordinator.handleTxnCommitOffsets): the group's coordinator; a group unknown here is
created empty; a dead group is COORDINATOR_NOT_AVAILABLE; v3+ (KIP-447) a static member with another member id is
FENCED_INSTANCE_ID, a member id the group does not have UNKNOWN_MEMBER_ID, a generation other than the group's
ILLEGAL_GENERATION (only when given: -1 and "" skip them). The offsets partition must be in the transaction
(AddOffsetsToTxn): the write is verified like any transactional write (KIP-890). v5 comes from a client of
transaction version 2, which sends no AddOffsetsToTxn: the offsets partition is added to the transaction here
(KIP-890 part 2). v4+ clients get TRANSACTION_ABORTABLE as it is, older ones INVALID_TXN_STATE. Metadata longer than
offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE for its partition only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykraft.broker.group_state import Group, GroupState, OffsetEntry
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.group_records import partition_for

from pykraft.node.apis.wire_build import make, response_namespace
from pykraft.broker import txn_verification
from pykraft.node.hosts.group_host import OFFSETS_TOPIC, GroupHost

if TYPE_CHECKING:
    from pykraft.node.apis.produce_api import Verifier

MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes
GENERIC_ERROR_VERSION = 4  # Kafka's genericErrorSupported operation for TxnOffsetCommit v4+
# A verification error as a TxnOffsetCommit answer (the Java producer retries COORDINATOR_NOT_AVAILABLE).
_VERIFY_ERRORS = {ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
                  ErrorCode.TRANSACTION_ABORTABLE: ErrorCode.INVALID_TXN_STATE,
                  ErrorCode.INVALID_PRODUCER_ID_MAPPING: ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                  ErrorCode.INVALID_TXN_STATE: ErrorCode.INVALID_TXN_STATE}


def _member_error(groups: GroupHost, m: Any) -> ErrorCode:
    coordinator = groups.coordinator_of(m.group_id)
    if isinstance(coordinator, ErrorCode):
        return coordinator
    consumers = groups.consumer_of(m.group_id)
    if not isinstance(consumers, ErrorCode) and m.group_id in consumers.groups:
        # A KIP-848 group: its member epoch, as an OffsetCommit (a transactional one is not held to v9+).
        return consumers.check_commit(m.group_id, getattr(m, "member_id", ""), int(getattr(m, "generation_id", -1)),
                                      9)
    group = coordinator.groups.get(m.group_id)
    if group is None:
        coordinator.groups[m.group_id] = Group(m.group_id)
        return ErrorCode.NONE
    member_id, generation = getattr(m, "member_id", ""), int(getattr(m, "generation_id", -1))
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if coordinator.fenced(m.group_id, member_id, getattr(m, "group_instance_id", None)):
        return ErrorCode.FENCED_INSTANCE_ID
    if member_id and member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if generation >= 0 and generation != group.generation:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


async def _verify(groups: GroupHost, verifier: Verifier | None, m: Any,
                  adder: Verifier | None = None) -> tuple[ErrorCode, object]:
    count = groups.partition_count()
    replica = None if not count else groups.host.replicas.get((OFFSETS_TOPIC, partition_for(m.group_id, count)))
    if replica is None or replica.leading is None:
        return ErrorCode.NOT_COORDINATOR, None
    pid, epoch = int(m.producer_id), int(m.producer_epoch)
    version = int(m.__version__)
    if version >= txn_verification.ADD_PARTITION_TXN_OFFSET_COMMIT_VERSION and adder is not None:
        verifier = adder
    if verifier is None:
        return ErrorCode.NONE, txn_verification.SKIP
    if not txn_verification.needs_verification(replica, pid, epoch):
        return ErrorCode.NONE, None
    guard = txn_verification.start(replica, pid, epoch)
    errors = await verifier(m.transactional_id, pid, epoch, [(OFFSETS_TOPIC, replica.partition)])
    error = errors.get((OFFSETS_TOPIC, replica.partition), ErrorCode.UNKNOWN_SERVER_ERROR)
    if error is ErrorCode.NONE:
        return error, guard
    if error is ErrorCode.TRANSACTION_ABORTABLE and version >= GENERIC_ERROR_VERSION:
        return error, None
    return _VERIFY_ERRORS.get(error, ErrorCode.COORDINATOR_NOT_AVAILABLE), None


async def handle(groups: GroupHost, verifier: Verifier | None, message: Any, now_ms: int,
                 adder: Verifier | None = None) -> Any:
    m = message
    ns = response_namespace(ApiKey.TXN_OFFSET_COMMIT, int(m.__version__))
    error = _member_error(groups, m)
    errors: dict[tuple[str, int], ErrorCode] = {}
    offsets: dict[tuple[str, int], OffsetEntry] = {}
    for t in m.topics:
        for p in t.partitions:
            key = (t.name, int(p.partition_index))
            metadata = p.committed_metadata or ""
            if len(metadata.encode()) > MAX_METADATA_BYTES:
                errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            offsets[key] = OffsetEntry(int(p.committed_offset), int(getattr(p, "committed_leader_epoch", -1)),
                                       metadata, now_ms)
    if error is ErrorCode.NONE and offsets:
        error, guard = await _verify(groups, verifier, m, adder)
        if error is ErrorCode.NONE:
            error = await groups.commit_txn_offsets(m.group_id, int(m.producer_id), int(m.producer_epoch), offsets,
                                                    guard)
    return make(ns.TxnOffsetCommitResponse, throttle_time=ZERO_THROTTLE, topics=tuple(
        make(ns.TxnOffsetCommitResponseTopic, name=t.name, partitions=tuple(
            make(ns.TxnOffsetCommitResponsePartition, partition_index=p.partition_index,
                 error_code=errors.get((t.name, int(p.partition_index)), error))
            for p in t.partitions)) for t in m.topics))
