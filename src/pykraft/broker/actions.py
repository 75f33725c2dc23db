"""What the broker's pure parts ask the runtime to do: the same contract as the raft core
(docs/ARCHITECTURE.md, section 3).

Every input of `BrokerLifecycle` and `IsrManager` returns a `Ready`: actions in the order the runtime must carry
them out, and the time (ms) by which it must call `poll` again (None: nothing is scheduled, wait for an input).

Requests to the controller carry a `request_id` chosen by the component that made them; the runtime hands the
answer back with the same id (`handle_response`) or reports that none will come (`handle_failure`: disconnect,
no controller known). A component ignores answers to ids it no longer waits for, so a late answer to a request
it already gave up on (its deadline passed) cannot be applied twice.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import Any

from pykraft.protocol.errors import ErrorCode


class BrokerState(enum.Enum):
    """The broker process's lifecycle states (Kafka's BrokerState, plus FENCED for a running broker the
    controller fenced, e.g. after its session expired)."""

    STARTING = "starting"
    RECOVERY = "recovery"
    RUNNING = "running"
    FENCED = "fenced"
    PENDING_CONTROLLED_SHUTDOWN = "pending_controlled_shutdown"
    SHUTTING_DOWN = "shutting_down"


@dataclass(frozen=True, slots=True)
class SendToController:
    """Send `request` (a kio request object of api `api_key`) to the active controller. The component treats it
    as lost at `deadline_ms` if no answer came by then (the runtime may also cancel it at that time)."""

    request_id: int
    api_key: int
    request: Any
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class FindController:
    """The controller we talked to is not the active one (NOT_CONTROLLER, or a request timed out): forget it and
    look for the active controller again before the next send."""


@dataclass(frozen=True, slots=True)
class StateChanged:
    old: BrokerState
    new: BrokerState


@dataclass(frozen=True, slots=True)
class ShutdownComplete:
    """The lifecycle is over: `clean` after the controller allowed the shutdown (or there was nothing to hand
    over); not clean when the broker gave up, `reason` says why in words an operator can act on."""

    clean: bool
    reason: str


@dataclass(frozen=True, slots=True)
class IsrChange:
    """A change of the ISR of a partition this broker leads, for the runtime to log (the counts are the ISR
    manager's `metrics`): `proposed` (first sent to the controller, not on retries), `accepted` (the controller
    applied it: `partition_epoch` is the new one) or `refused` (for good, with `error`: back to the committed ISR
    or waiting for metadata)."""

    topic_id: uuid.UUID
    partition: int
    kind: str  # "shrink", "expand" or "recover" (reported RECOVERED after an unclean election, ISR unchanged)
    old_isr: tuple[int, ...]
    new_isr: tuple[int, ...]
    outcome: str  # "proposed", "accepted" or "refused"
    partition_epoch: int = -1
    error: ErrorCode | None = None


Action = SendToController | FindController | StateChanged | ShutdownComplete | IsrChange


@dataclass(frozen=True, slots=True)
class Ready:
    actions: tuple[Action, ...]
    wakeup_ms: int | None

    @property
    def sends(self) -> tuple[SendToController, ...]:
        return tuple(a for a in self.actions if isinstance(a, SendToController))


def earliest(*times: int | None) -> int | None:
    """The earliest of the given times, ignoring None (None when all are None)."""
    present = [t for t in times if t is not None]
    return min(present) if present else None
