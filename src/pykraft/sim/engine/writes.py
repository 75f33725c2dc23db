"""Writes in flight on a leader: client writes, read barriers and the workload's sequence numbers.

A write is answered once the offset it was appended at commits on this node: OK when the committed value is the
one appended (this is also the moment it counts as acknowledged for the invariants), FAILED when another value
committed there (the append was truncated away, so it certainly did not happen). When this node learns of another
leader or epoch first, the write is UNKNOWN: it may still commit through the next leader. A read is a barrier
record; its answer is every client write committed before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pykraft.raft.effects import LeaderChanged
from pykraft.sim.engine.statemachine import Applied
from pykraft.sim.engine.wire import ClientRequest, ClientResponse, OpKind, OpStatus

if TYPE_CHECKING:
    from pykraft.sim.engine.network import Envelope
    from pykraft.sim.engine.node import SimNode


@dataclass(frozen=True, slots=True)
class _Pending:
    value: bytes
    epoch: int
    client: int | None  # None for the workload's own sequence appends
    client_incarnation: int
    op_id: int
    kind: OpKind


class PendingWrites:
    def __init__(self, node: SimNode) -> None:
        self.node = node
        self.pending: dict[int, _Pending] = {}

    def on_client_request(self, envelope: Envelope, request: ClientRequest) -> None:
        node = self.node
        appended = node.append([request.value])
        if appended is None:
            core = node.core
            hint = core.quorum.leader_id() if core is not None else None
            self._answer(envelope.src, envelope.src_incarnation, ClientResponse(request.op_id, OpStatus.NOT_LEADER,
                                                                                leader_hint=hint))
            return
        offset, epoch = appended
        self.pending[offset] = _Pending(request.value, epoch, envelope.src, envelope.src_incarnation, request.op_id,
                                        request.kind)

    def append_sequence(self, value: bytes) -> int | None:
        appended = self.node.append([value])
        if appended is None:
            return None
        offset, epoch = appended
        self.pending[offset] = _Pending(value, epoch, None, 0, 0, OpKind.WRITE)
        return offset

    def on_commit(self, applied: list[Applied]) -> None:
        if not self.pending:
            return
        checker = self.node.world.checker
        for record in applied:
            pending = self.pending.pop(record.offset, None)
            if pending is None:
                continue
            if record.value != pending.value:
                self._finish(pending, ClientResponse(pending.op_id, OpStatus.FAILED))
                continue
            checker.on_ack(self.node, record.offset, record.value)
            machine = self.node.machine
            if pending.kind is OpKind.READ:
                # The barrier is not a client write: the writes committed before it are exactly those with a
                # position below the count at its offset, which is the apply order.
                values = tuple(machine.writes[:self._writes_before(applied, record.offset)])
                self._finish(pending, ClientResponse(pending.op_id, OpStatus.OK, record.offset, values))
            else:
                # Clients see positions among client writes (the LogModel's offsets), not raft offsets.
                position = machine.write_position.get(record.value)
                self._finish(pending, ClientResponse(pending.op_id, OpStatus.OK, position))

    def _writes_before(self, applied: list[Applied], offset: int) -> int:
        """How many client writes precede `offset`: all applied so far minus those after it in this commit."""
        later = sum(1 for r in applied if r.offset > offset and r.value[:1] == b"w")
        return len(self.node.machine.writes) - later

    def on_leader_changed(self, change: LeaderChanged) -> None:
        if change.leader_id == self.node.node_id:
            return
        pending, self.pending = self.pending, {}
        for write in pending.values():
            self._finish(write, ClientResponse(write.op_id, OpStatus.UNKNOWN))

    def abandon(self) -> None:
        """The process died: nobody answers; clients time out."""
        self.pending = {}

    def _finish(self, pending: _Pending, response: ClientResponse) -> None:
        if pending.client is not None:
            self._answer(pending.client, pending.client_incarnation, response)

    def _answer(self, client: int, incarnation: int, response: ClientResponse) -> None:
        self.node.world.send(self.node.node_id, client, response, f"client-{response.status.value}",
                             dst_incarnation=incarnation)
