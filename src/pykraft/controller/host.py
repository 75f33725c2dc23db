"""HostedController: the sans-I/O part of running a QuorumController on a raft quorum, shared by the node
(node/roles/controller_host.py: asyncio futures and timers) and the simulator (sim/hosts/controller_node.py: scheduler
events and simulated replies), the way the broker's pure parts live in broker/ and both hosts drive them.

What is decided here, once for both hosts:
- Every replica replays the committed records (`replay_committed`, `load_snapshot`); the active controller's own
  writes were replayed when appended, so the committed replay skips those offsets (`ReplayedAhead`).
- The raft leader's replica becomes the active controller once its host reports the leadership (`activate`).
- A request (`accept`) is answered by the active controller of the current leader epoch only: `handle` gets the
  offset the next record will have; `write` appends the result's records as ONE batch with the active epoch
  (`core.append`) and replays them at once. A host answers after the high watermark passes `last_offset`; a
  result without records waits for this controller's earlier writes (`unfinished_write`).
- After every input a host asks `lost_leadership`; on `resign` the controller with uncommitted replays is rebuilt
  from the latest snapshot plus the committed log.
What stays in the hosts: how answers wait and travel, when ticks fire, metrics, and (the node only) kraft.version
upgrades. The `quorum` argument is the raft core (`leader_state`, `append`, `kraft_version`,
`shutdown_deadline_ms`, `log`), or None while the host has none.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.accumulator import RecordBatchTooLargeError
from pykraft.raft.client import NotLeaderError
from pykraft.raft.effects import Ready
from pykraft.records.metadata.errors import MetadataRecordError
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.records.metadata.written_versions import each_as_written

from .controller import (UPDATE_FEATURES, ControllerConfig, NotActiveControllerError, QuorumController,
                         UnsupportedControllerApiError)
from .features import FeatureUpdateError, update_features_response
from .log_replay import ReplayedAhead, load_committed
from .result import ControllerResult


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the controller does not run: answer every part of it with `error`."""
    error: ErrorCode
    text: str


@dataclass(frozen=True, slots=True)
class Written:
    """A result's records appended at first_offset..last_offset and replayed (last_offset None: nothing to write).
    `ready` is the core's output of the append, for the host to run."""
    first_offset: int
    last_offset: int | None
    ready: Ready | None
    expected_last: int | None = None  # where the records should have ended: a host checks `offsets_match`

    @property
    def offsets_match(self) -> bool:
        return self.last_offset == self.expected_last


class HostedController:
    def __init__(self, config: ControllerConfig, rng: random.Random) -> None:
        self.config = config
        self.controller = QuorumController(config, rng)
        self.rebuilds = 0  # resignations that had to drop uncommitted replays
        self.restart(self.controller)

    def restart(self, controller: QuorumController) -> None:
        """A fresh process: a new controller, nothing committed or written yet (the counters stay)."""
        self.controller = controller
        self.committed_offset = -1  # last offset replayed as committed (or contained in the loaded snapshot)
        self.active_epoch: int | None = None
        self.ahead = ReplayedAhead()  # offsets replayed when appended, before they commit
        self.last_written = -1

    # ---- committed replay ------------------------------------------------------------------------------------
    def replay_committed(self, records: Iterable[tuple[int, Any]], last_offset: int, quorum: Any) -> None:
        """Replay committed (offset, record) pairs up to `last_offset`, skipping what was replayed when written."""
        for offset, record in records:
            if not self.ahead.covers(offset):
                self.controller.replay(record, offset)
        self.committed_offset = max(self.committed_offset, last_offset)
        if quorum is not None:
            self.controller.note_kraft_version(quorum.kraft_version())

    def load_snapshot(self, records: list[Any], last_contained: int) -> None:
        self.ahead.clear()
        self.controller.load_snapshot(records, last_contained)
        self.committed_offset = last_contained

    def committed_records(self, log: Any) -> list[Any]:
        """The records of the committed image (a snapshot must not hold replays that may never commit): with
        uncommitted replays, a second controller is built from the last snapshot plus the committed log."""
        source = self.controller
        if self.ahead:
            source = QuorumController(self.config, random.Random(0))
            load_committed(source, log, self.committed_offset)
        return list(source.snapshot_records())

    # ---- the active controller -------------------------------------------------------------------------------
    def active_leader(self, quorum: Any) -> Any:
        """The core's leader state when this replica is the active controller of the current leader epoch."""
        leader = None if quorum is None else quorum.leader_state()
        if not self.controller.active or leader is None or leader.epoch != self.active_epoch:
            return None
        return leader

    def accept(self, quorum: Any, api_key: int, message: Any, now: int) -> tuple[ControllerResult, int] | Refusal:
        """Run `message` through the active controller: its result and the offset its first record gets. Any
        exception other than the two refusals below is a controller bug: the host decides what it fails."""
        leader = self.active_leader(quorum)
        if leader is None:
            return Refusal(ErrorCode.NOT_CONTROLLER, f"node {self.config.node_id} is not the active controller")
        next_offset = leader.accumulator.next_offset
        try:
            return self.controller.handle(api_key, message, now, next_offset), next_offset
        except NotActiveControllerError as exc:
            return Refusal(ErrorCode.NOT_CONTROLLER, str(exc))
        except UnsupportedControllerApiError as exc:
            return Refusal(ErrorCode.UNSUPPORTED_VERSION, str(exc))

    def write(self, quorum: Any, result: ControllerResult, now: int, next_offset: int) -> Written | Refusal:
        """Append `result.records` as one batch with the active epoch and replay them at once."""
        epoch = self.active_epoch
        assert quorum is not None and epoch is not None, "only the active controller writes"
        if not result.records:
            return Written(next_offset, None, None)
        try:
            metadata_version = self.controller.features.metadata_version
            values = [encode_metadata_record(r) for r in each_as_written(result.records, metadata_version)]
            last, ready = quorum.append(values, now, epoch)
        except NotLeaderError as exc:
            return Refusal(ErrorCode.NOT_CONTROLLER, str(exc))
        except (RecordBatchTooLargeError, MetadataRecordError) as exc:
            return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        for index, record in enumerate(result.records):
            self.controller.replay(record, next_offset + index)
        self.ahead.add(next_offset, last)
        self.last_written = last
        return Written(next_offset, last, ready, next_offset + len(values) - 1)

    def unfinished_write(self) -> int | None:
        """The last offset this controller wrote if it has not committed yet: an answer without records of its
        own waits for it (the answer may reveal those writes)."""
        return self.last_written if self.last_written > self.committed_offset else None

    def activate(self, quorum: Any, epoch: int, now: int) -> tuple[ControllerResult, Written | Refusal] | None:
        """Become the active controller of `epoch` if this replica still leads it; write the activation records."""
        leader = quorum.leader_state()
        if leader is None or leader.epoch != epoch or self.controller.active:
            return None
        self.active_epoch = epoch
        self.controller.note_kraft_version(quorum.kraft_version())
        result = self.controller.activate(now)
        return result, self.write(quorum, result, now, leader.accumulator.next_offset)

    def tick(self, quorum: Any, now: int) -> tuple[ControllerResult, Written | Refusal] | None:
        """The periodic work (session fencing, NoOpRecord, preferred leaders) of the active controller."""
        leader = self.active_leader(quorum)
        if leader is None:
            return None
        next_offset = leader.accumulator.next_offset
        result = self.controller.tick(now, next_offset)
        return result, self.write(quorum, result, now, next_offset)

    def lost_leadership(self, quorum: Any) -> bool:
        """After every input: an active controller whose leader resigned, stepped down or is shutting down."""
        if not self.controller.active:
            return False
        leader = None if quorum is None else quorum.leader_state()
        return leader is None or leader.epoch != self.active_epoch or quorum.shutdown_deadline_ms is not None

    def resign(self, log: Any) -> None:
        self.controller.deactivate()
        self.active_epoch = None
        if self.ahead:  # replays that may never commit: back to the committed image
            assert log is not None, "a rebuild needs the log"
            load_committed(self.controller, log, self.committed_offset)
            self.ahead.clear()
            self.rebuilds += 1
        self.last_written = -1


class ControllerHostView:
    """What a host shows of its HostedController (`self.hosted`) to metrics, checkers and tests."""
    hosted: HostedController

    @property
    def controller(self) -> QuorumController:
        return self.hosted.controller

    @property
    def committed_offset(self) -> int:
        return self.hosted.committed_offset

    @property
    def active_epoch(self) -> int | None:
        return self.hosted.active_epoch

    @property
    def rebuilds(self) -> int:
        return self.hosted.rebuilds


def error_reply(api_key: int, message: Any, error: ErrorCode, text: str) -> Any:
    """`error` for every part of `message`, at the request's version: per feature for UpdateFeatures (as the
    controller answers its own refusals), otherwise as protocol/error_responses.py builds it (per topic for
    CreateTopics / DeleteTopics, per partition for ElectLeaders, and at the top level where there is one)."""
    if api_key == UPDATE_FEATURES:
        return update_features_response(int(message.__version__), [u.feature for u in message.feature_updates],
                                        FeatureUpdateError(error, text))
    return error_response_for(message, error, error_message=text)
