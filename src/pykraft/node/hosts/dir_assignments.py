"""A broker telling the controller where a replica lives (AssignReplicasToDirs v0, KIP-858): the directory id (the
`directory.id` of that log directory's meta.properties) goes to the active controller, which records it in the
partition's `directories`. The data plane reports after AlterReplicaLogDirs moved a replica (replica_move.py) and,
on a broker with several log directories, whenever the metadata names another directory than the one holding a
replica (a new replica is recorded UNASSIGNED: Kafka's AssignmentsManager reports it the same way). A broker with
one log directory reports only moves (it has none to make).

Retried (with a doubling backoff, a few times) while the controller is unreachable or answers a retriable error;
UNSUPPORTED_VERSION (a metadata.version before 3.7-IV2, which has no directory assignment) ends it quietly, as
Kafka's broker then does not assign directories at all.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.types import BrokerId
from kio.static.primitive import i32, i64

from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.errors import ErrorCode
from pykraft.storage import StorageError, read_meta_properties

ar_req = schema_module("kio.schema.assign_replicas_to_dirs.v0.request")  # loaded at the first assignment sent

_log = logging.getLogger("pykraft.node.partitions")
ATTEMPTS = 6
FIRST_BACKOFF_S = 0.2


def directory_id(log_dir: str) -> uuid.UUID | None:
    try:
        return read_meta_properties(log_dir).directory_id
    except StorageError:
        return None


def assignment_request(broker_id: int, broker_epoch: int, dir_id: uuid.UUID, topic_id: uuid.UUID,
                       partition: int) -> Any:
    return ar_req.AssignReplicasToDirsRequest(
        broker_id=BrokerId(broker_id), broker_epoch=i64(broker_epoch),
        directories=(ar_req.DirectoryData(id_=dir_id, topics=(ar_req.TopicData(
            topic_id=topic_id, partitions=(ar_req.PartitionData(partition_index=i32(partition)),)),)),))


async def report(ask: Callable[[Any], Awaitable[Any | None]], build: Callable[[], Any], what: str) -> bool | None:
    """Send `build()` (rebuilt each attempt: the broker epoch may change) until it is accepted. Returns whether
    the controller recorded it, None when its metadata.version has no directory assignment."""
    backoff = FIRST_BACKOFF_S
    for _ in range(ATTEMPTS):
        response = await ask(build())
        if response is not None:
            top = ErrorCode.of(int(response.error_code))
            codes = [ErrorCode.of(int(p.error_code)) for d in response.directories for t in d.topics
                     for p in t.partitions]
            if top is ErrorCode.UNSUPPORTED_VERSION:
                return None
            if top is ErrorCode.NONE and all(c is ErrorCode.NONE for c in codes):
                _log.info("the controller recorded %s", what)
                return True
            if top is ErrorCode.NONE and not any(c.retriable for c in codes):
                _log.warning("the controller refused %s: %s", what, [c.name for c in codes])
                return False
        await asyncio.sleep(backoff)
        backoff *= 2
    _log.warning("could not tell the controller %s", what)
    return False
