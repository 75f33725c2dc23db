"""`BrokerComponents`: the sans-I/O host of the broker's pure parts (the lifecycle and the ISR manager), which the
node (node/roles/broker_host.py: asyncio tasks and timers, the connection pool) and the simulator
(sim/hosts/brokers.py: scheduler events, simulated messages) both drive, as controller/host.py is for the
controller.

What is decided here, once for both hosts:
- the action runner: each component's `Ready` is carried out action by action, by type, through the host's
  `BrokerSink` (send to the controller, a state change, the end of a shutdown, an ISR change to log, forget the
  controller);
- the timers: one per component; the host is asked to (re)schedule it only when the wake-up time changes (most
  progress reports leave the next look where it was) and the poll it fires goes to that component;
- controller routing: requests go to the active controller, which is the raft leader the broker's observer knows
  (`controller_for`: looked up at every send, so a failover needs no extra step); the answer (or the failure) of
  a request goes back to the component that made it, by name.
What stays in the hosts: how a request travels and how long it may take, how timers fire, what a state change
opens (the partition logs, the client listeners) and the logging.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .actions import FindController, IsrChange, Ready, SendToController, ShutdownComplete, StateChanged

LIFECYCLE = "lifecycle"
ISR = "isr"


class BrokerSink(Protocol):
    def send_to_controller(self, component: str, send: SendToController) -> None: ...

    def state_changed(self, change: StateChanged) -> None: ...

    def shutdown_complete(self, done: ShutdownComplete) -> None: ...

    def isr_change(self, change: IsrChange) -> None: ...

    def find_controller(self, component: str) -> None: ...

    def schedule(self, component: str, wakeup_ms: int | None) -> None: ...


_DISPATCH: dict[type, Callable[[BrokerSink, str, Any], None]] = {
    SendToController: lambda sink, name, action: sink.send_to_controller(name, action),
    StateChanged: lambda sink, name, action: sink.state_changed(action),
    ShutdownComplete: lambda sink, name, action: sink.shutdown_complete(action),
    IsrChange: lambda sink, name, action: sink.isr_change(action),
    FindController: lambda sink, name, action: sink.find_controller(name),
}


class BrokerComponents:
    def __init__(self, components: Mapping[str, Any], sink: BrokerSink) -> None:
        self.components = dict(components)
        self.sink = sink
        self.wakeups: dict[str, int | None] = {name: None for name in components}

    def replace(self, name: str, component: Any) -> None:
        """A new process's component (the simulator builds new ones at each start): its timer starts unset."""
        self.components[name] = component
        self.wakeups[name] = None

    def run(self, name: str, ready: Ready) -> None:
        """Carry out a component's actions in order, then its next wake-up."""
        for action in ready.actions:
            handler = _DISPATCH.get(type(action))
            if handler is not None:
                handler(self.sink, name, action)
        if ready.wakeup_ms != self.wakeups.get(name):
            self.wakeups[name] = ready.wakeup_ms
            self.sink.schedule(name, ready.wakeup_ms)

    def poll(self, name: str, now_ms: int) -> None:
        """The component's timer fired."""
        self.wakeups[name] = None
        self.run(name, self.components[name].poll(now_ms))

    def answer(self, name: str, request_id: int, response: Any, now_ms: int) -> None:
        """The controller's answer to a request of `name`."""
        self.run(name, self.components[name].handle_response(request_id, response, now_ms))

    def failed(self, name: str, request_id: int, now_ms: int) -> None:
        """A request of `name` that got no answer (no controller known, the connection failed)."""
        self.run(name, self.components[name].handle_failure(request_id, now_ms))


def controller_for(leader_id: int | None, controllers: Mapping[int, Any]) -> Any:
    """Where a controller request goes: the raft leader's entry in `controllers` (its address, or its node id),
    or None when no leader is known (the request fails at once; the component backs off)."""
    return None if leader_id is None else controllers.get(leader_id)
