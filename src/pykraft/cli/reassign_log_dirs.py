"""The log-directory half of `pykraft reassign-partitions` (Kafka's executeMoves, findLogDirMoveStates and
replicaMoveStatesToString): replicas a reassignment file places in a named directory ("log_dirs" other than "any")
are moved there with AlterReplicaLogDirs, and --verify / --cancel read where they are with DescribeLogDirs.

- executeMoves: AlterReplicaLogDirs to each broker until every move has started; REPLICA_NOT_AVAILABLE (the replica
  is not on that broker yet: the partition move has to bring it first) is tried again every 100 ms up to --timeout,
  then `Timed out before log directory move(s) could be started for: ...`; any other refusal is
  `Failed to alter dir for <topic>-<partition>-<broker>`.
- A replica's state: its current directory (the non-future copy) and, while it moves, its future one: completed,
  still in progress, moving elsewhere, not being moved (cancelled), or not found on the broker.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminError
from pykraft.admin.log_admin import alter_replica_log_dirs, describe_log_dirs
from pykraft.protocol.errors import ErrorCode

from .reassign_plan import ReplicaDir, plural

RETRY_S = 0.1


class MoveError(Exception):
    """Printed as Kafka prints it: `Report` for the time-out, `Error: ...` for a refused move."""

    def __init__(self, text: str, report: bool) -> None:
        super().__init__(text)
        self.report = report


def replica_text(replica: ReplicaDir) -> str:
    topic, partition, broker = replica
    return f"{topic}-{partition}-{broker}"


def _order(replica: ReplicaDir) -> tuple[int, str, int]:
    return replica[2], replica[0], replica[1]  # Kafka's compareTopicPartitionReplicas: broker, topic, partition


async def execute_moves(admin: AdminClient, moves: dict[ReplicaDir, str], timeout_ms: int) -> None:
    pending = dict(moves)
    deadline = time.monotonic() + timeout_ms / 1000
    while pending:
        started = await _alter(admin, pending)
        for replica in sorted(started, key=_order):
            topic, partition, broker = replica
            print(f"Successfully started moving log directory to {pending[replica]} for replica {topic}-{partition} "
                  f"with broker {broker} ")
            del pending[replica]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise MoveError(f"Timed out before log directory move{plural(len(pending))} could be started for: "
                            + ",".join(replica_text(r) for r in sorted(pending, key=_order)), report=True)
        await asyncio.sleep(RETRY_S)


async def _alter(admin: AdminClient, pending: dict[ReplicaDir, str]) -> list[ReplicaDir]:
    started = []
    for broker in sorted({b for _, _, b in pending}):
        mine = {(t, p): d for (t, p, b), d in pending.items() if b == broker}
        try:
            codes = await alter_replica_log_dirs(admin, broker, mine)
        except AdminError as exc:
            if exc.code is ErrorCode.BROKER_NOT_AVAILABLE:
                continue  # not in the metadata (yet): like a replica not there yet
            raise
        for (topic, partition), code in codes.items():
            replica = (topic, partition, broker)
            if code is ErrorCode.NONE:
                started.append(replica)
            elif code is not ErrorCode.REPLICA_NOT_AVAILABLE:
                raise MoveError(f"Failed to alter dir for {replica_text(replica)} ({code.name})", report=False)
    return started


@dataclass(frozen=True, slots=True)
class MoveState:
    target: str
    current: str | None = None  # None: the replica is in no live log directory of the broker
    future: str | None = None

    @property
    def active(self) -> bool:
        return self.current is not None and self.future is not None

    @property
    def done(self) -> bool:
        return self.current is not None and self.future is None


async def move_states(admin: AdminClient, targets: dict[ReplicaDir, str]) -> dict[ReplicaDir, MoveState]:
    brokers = sorted({b for _, _, b in targets})
    dirs = await describe_log_dirs(admin, brokers) if brokers else {}
    states = {}
    for replica, target in targets.items():
        topic, partition, broker = replica
        current = future = None
        found = dirs.get(broker)
        for log_dir in () if found is None or isinstance(found, AdminError) else found:
            for r in log_dir.replicas:
                if (r.topic, r.partition) == (topic, partition):
                    if r.is_future:
                        future = log_dir.path
                    else:
                        current = log_dir.path
        states[replica] = MoveState(target, current, future)
    return states


def move_states_text(states: dict[ReplicaDir, MoveState]) -> str:
    lines = []
    for replica in sorted(states, key=_order):
        s, (topic, partition, broker) = states[replica], replica
        if s.current is None:
            lines.append(f"Partition {topic}-{partition} is not found in any live log dir on broker {broker}. "
                         f"There is likely an offline log directory on the broker.")
        elif s.future is not None and s.future == s.target:
            lines.append(f"Reassignment of replica {replica_text(replica)} is still in progress.")
        elif s.future is not None:
            lines.append(f"Partition {topic}-{partition} on broker {broker} is being moved to log dir {s.future} "
                         f"instead of {s.target}.")
        elif s.current == s.target:
            lines.append(f"Reassignment of replica {replica_text(replica)} completed successfully.")
        else:
            lines.append(f"Partition {topic}-{partition} on broker {broker} is not being moved from log dir "
                         f"{s.current} to {s.target}.")
    return "\n".join(lines)
