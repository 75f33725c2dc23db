"""ControllerNode: a simulated voter that hosts a QuorumController through the same HostedController
(controller/host.py) as node/roles/controller_host.py; this module adds the simulator's events, waiters and checks.

- Every replica replays the committed records into its active-controller object (`controller`); the machine
  (metadata_machine.py) keeps a second, never-activated image fed only committed records for the invariants.
- The raft leader's replica becomes the active controller when the core reports its leadership (the listener
  has replayed everything before its epoch): an `activate` event right after, as the runtime's `submit`.
- A controller request (a ControllerRequest message) runs as ONE input: `handle` with the offset the next record
  gets, append the records as one batch (`core.append` with the active epoch), replay them at once, remember the
  range as pending. The answer is sent once the high watermark passes the records (a result without records
  waits for this controller's earlier writes); on leadership loss the caller gets NOT_CONTROLLER.
- After every input: a leader that lost its epoch (resigned, stepped down, shutting down) deactivates, and if it
  held uncommitted replays the controller is rebuilt from the latest snapshot plus the committed log.
- The committed replay skips offsets replayed already (pending ranges).
- Ticks (session fencing, NoOpRecord, preferred-leader balancing) run as scheduler events at
  `next_wakeup_ms()`, rescheduled after every request and tick.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pykraft.raft.purgatory import ThresholdPurgatory
from pykraft.controller.controller import ControllerConfig, QuorumController
from pykraft.controller.host import ControllerHostView, HostedController, Refusal, Written, error_reply
from pykraft.controller.result import ControllerResult
from pykraft.protocol.errors import ErrorCode
from pykraft.sim.hosts.metadata_machine import Decoded, MetadataMachine
from pykraft.sim.hosts.metadata_wire import ControllerRequest, ControllerResponse, ReplyTo
from pykraft.sim.engine.node import SimNode, Status

PAUSED_RETRY_MS = 10  # a paused process runs its timers late: look again after this


@dataclass(frozen=True, slots=True)
class _Waiter:
    """A controller answer in the purgatory (threshold: its last offset + 1, its active epoch)."""
    reply: ReplyTo
    api_key: int
    request: Any
    response: Any  # the response, or a callable of the first offset
    first_offset: int


class ControllerNode(ControllerHostView, SimNode):
    def __init__(self, *args: Any, controller_config: ControllerConfig, **kwargs: Any) -> None:
        self.controller_config = controller_config
        self.hosted = HostedController(controller_config, random.Random(0))
        self._reset_host()
        self.activations = 0
        self.not_controller_answers = 0
        self.written: dict[str, int] = {}  # record type -> how many this node appended as active controller
        super().__init__(*args, **kwargs)

    def _reset_host(self) -> None:
        self.waiters: ThresholdPurgatory[_Waiter] = ThresholdPurgatory()
        self.tick_generation = getattr(self, "tick_generation", 0) + 1

    def new_machine(self) -> MetadataMachine:
        rng = random.Random(self.world.stream(f"controller-{self.node_id}-{self.starts}").getrandbits(64))
        self.hosted.restart(QuorumController(self.controller_config, rng))
        self._reset_host()
        image = QuorumController(self.controller_config, random.Random(0))
        checker = getattr(self.world, "metadata_checker", None)
        return MetadataMachine(image, self._replay_committed, self._snapshot_loaded,
                               None if checker is None else lambda m, offset: checker.on_image(self, m, offset))

    @property
    def committed_image(self) -> QuorumController:
        assert isinstance(self.machine, MetadataMachine)  # new_machine() above
        return self.machine.image

    # ---- committed replay ------------------------------------------------------------------------------------
    def _replay_committed(self, records: Decoded, last_offset: int) -> None:
        self.hosted.replay_committed(records, last_offset, self.core)

    def _snapshot_loaded(self, records: list[Any], last_contained: int) -> None:
        self.hosted.load_snapshot(records, last_contained)

    def _commit(self, effect: Any) -> None:
        super()._commit(effect)
        checker = getattr(self.world, "metadata_checker", None)
        # Everything this controller wrote has committed (then, in a correct host, nothing is pending): its image
        # must be the committed one.
        if checker is not None and self.hosted.unfinished_write() is None:
            checker.on_controller_settled(self)

    # ---- every input -----------------------------------------------------------------------------------------
    def _run(self, ready: Any) -> None:
        super()._run(ready)
        self._after_input()

    def _after_input(self) -> None:
        if self.hosted.lost_leadership(self.core):
            self._resign()
        if self.waiters:
            self._complete_waiters()

    def _complete_waiters(self) -> None:
        core = self.core
        hwm = None if core is None else core.high_watermark
        leader = None if core is None else core.leader_state()
        epoch = self.active_epoch if leader is not None and leader.epoch == self.active_epoch else None
        failed, completed = self.waiters.check(hwm, epoch)
        for waiter in failed:
            self._refuse(waiter.reply, waiter.api_key, waiter.request,
                         Refusal(ErrorCode.NOT_CONTROLLER, "leadership lost before the records committed"))
        for waiter in completed:
            response = waiter.response
            self._reply(waiter.reply, response(waiter.first_offset) if callable(response) else response)

    def _stop(self, status: Status) -> None:
        self.waiters.drain()  # the connections close with the process: callers time out
        self.controller.deactivate()
        self.tick_generation += 1
        super()._stop(status)

    # ---- requests ----------------------------------------------------------------------------------------------
    def _on_controller_request(self, envelope: Any) -> None:
        payload = envelope.payload
        reply = ReplyTo(envelope.src, envelope.src_incarnation, payload.request_id, payload.component)
        now = self.now()
        try:
            accepted = self.hosted.accept(self.core, payload.api_key, payload.request, now)
        except Exception as exc:  # a controller bug met by a peer's request is a finding
            self.world.checker.violation("ControllerRequestCrash", self, f"api {payload.api_key}: {exc!r}")
            accepted = Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, repr(exc))
        if isinstance(accepted, Refusal):
            self._refuse(reply, payload.api_key, payload.request, accepted)
            return
        result, next_offset = accepted
        self._write(result, now, next_offset, (reply, payload.api_key, payload.request))
        self._schedule_tick()

    PAYLOAD_HANDLERS: ClassVar[dict[type, Callable[[Any, Any], None]]] = {
        **SimNode.PAYLOAD_HANDLERS, ControllerRequest: _on_controller_request,
    }

    def _write(self, result: ControllerResult, now: int, next_offset: int,
               caller: tuple[ReplyTo, int, Any] | None) -> bool:
        """HostedController.write, then queue the answer and run the core's output. True when written."""
        return self._after_write(result, self.hosted.write(self.core, result, now, next_offset), next_offset, caller)

    def _after_write(self, result: ControllerResult, written: Written | Refusal, next_offset: int,
                     caller: tuple[ReplyTo, int, Any] | None) -> bool:
        epoch = self.active_epoch
        if isinstance(written, Refusal):
            if written.error == ErrorCode.UNKNOWN_SERVER_ERROR:
                self.world.checker.violation("ControllerWrite", self, written.text)
            if caller is not None:
                self._refuse(*caller, written)
            return False
        if written.last_offset is None:
            if caller is not None:
                self._answer_without_records(caller, result.response, next_offset)
            return False
        self._note_written(written, result)
        if caller is not None:
            self.waiters.add(written.last_offset + 1, _Waiter(*caller, result.response, next_offset), epoch)
        self._run(written.ready)
        return True

    def _answer_without_records(self, caller: tuple[ReplyTo, int, Any], response: Any, next_offset: int) -> None:
        unfinished = self.hosted.unfinished_write()
        if unfinished is not None:
            self.waiters.add(unfinished + 1, _Waiter(*caller, response, next_offset), self.active_epoch)
            self._complete_waiters()
        else:
            self._reply(caller[0], response(next_offset) if callable(response) else response)

    def _note_written(self, written: Written, result: ControllerResult) -> None:
        if not written.offsets_match:
            self.world.checker.violation("ControllerOffsets", self,
                                         f"records at {written.first_offset}.. got last {written.last_offset}")
        for record in result.records:
            name = type(record).__name__
            self.written[name] = self.written.get(name, 0) + 1

    def _reply(self, reply: ReplyTo, response: Any) -> None:
        payload = ControllerResponse(reply.request_id, reply.component, response)
        self.world.send(self.node_id, reply.src, payload, type(response).__name__,
                        dst_incarnation=reply.src_incarnation)

    def _refuse(self, reply: ReplyTo, api_key: int, request: Any, refusal: Refusal) -> None:
        self.not_controller_answers += refusal.error == ErrorCode.NOT_CONTROLLER
        self._reply(reply, error_reply(api_key, request, refusal.error, refusal.text))

    # ---- activation, ticks, resignation ------------------------------------------------------------------------
    def _leader_changed(self, effect: Any) -> None:
        super()._leader_changed(effect)
        if effect.leader_id == self.node_id:
            self.world.scheduler.after(0, self._activate_event, self.incarnation, effect.epoch)
        elif self.controller.active:
            self._resign()

    def _activate_event(self, incarnation: int, epoch: int) -> Any:
        if incarnation != self.incarnation or self.core is None:
            return None
        if self.status is Status.PAUSED:
            self.world.scheduler.after(PAUSED_RETRY_MS, self._activate_event, incarnation, epoch)
            return None
        activated = self.hosted.activate(self.core, epoch, self.now())
        if activated is None:
            return None
        self.activations += 1
        result, written = activated
        self._after_write(result, written, written.first_offset if isinstance(written, Written) else -1, None)
        self._schedule_tick()
        return self.node_id, "activate", f"active controller of epoch {epoch}"

    def _schedule_tick(self) -> None:
        self.tick_generation += 1
        wakeup = self.controller.next_wakeup_ms()
        if wakeup is None or self.core is None:
            return
        scheduler = self.world.scheduler
        when = max(self.clock.to_global(wakeup), scheduler.now_ms + 1)
        scheduler.at(when, self._tick_event, self.incarnation, self.tick_generation)

    def _tick_event(self, incarnation: int, generation: int) -> Any:
        if incarnation != self.incarnation or generation != self.tick_generation or self.core is None:
            return None
        if self.status is Status.PAUSED:
            self.world.scheduler.after(PAUSED_RETRY_MS, self._tick_event, incarnation, generation)
            return None
        ticked = self.hosted.tick(self.core, self.now())
        if ticked is None:
            return None
        result, written = ticked
        wrote = self._after_write(result, written, written.first_offset if isinstance(written, Written) else -1, None)
        if self.controller.active:
            self._schedule_tick()
        if not wrote:
            return None
        kinds = ",".join(sorted({type(r).__name__.removesuffix("Record").split("RecordV")[0] for r in result.records}))
        return self.node_id, "ctl-tick", kinds

    def _resign(self) -> None:
        self.tick_generation += 1
        self.hosted.resign(None if self.core is None else self.core.log)
