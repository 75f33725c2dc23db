"""The raft RPCs between the core and its peers, as core-task inputs: a peer's request handed to the core and its
answer awaited (`request`, answered by the core's `Respond` effect: `answer`), the answers to the core's own
requests handed back (`deliver`, outbound.py calls it), and a peer found unreachable (`peer_unreachable`).

Each input run on behalf of ONE request or response is contained (handler_errors.py): its exception fails that
request, or is recorded for a response nobody waits for, and the core task goes on with the next input. With the
commit probe on (net/commit_probe.py) the leader's side of a commit is stamped here: a Fetch in, its answer out,
a peer's answer run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

from pykraft.net.commit_probe import PROBE
from pykraft.protocol.apis import ApiKey
from pykraft.raft.client import RaftCore
from pykraft.raft.effects import Ready, Respond

from pykraft.node.runtime.core_task import Input
from pykraft.node.runtime.handler_errors import HandlerErrors, contained, fail_answer, recorder
from pykraft.node.runtime.outbound import probe_fetch_offset


class RaftRpcs:
    """`put` queues an input on the core task; `stopping()` says the node stops; `check_refusal(request, answer)`
    looks at the core's answer to a peer (cluster_ids.py: a peer of another cluster is logged)."""

    def __init__(self, core: RaftCore, put: Callable[[Input], None], stopping: Callable[[], bool],
                 handler_errors: HandlerErrors, check_refusal: Callable[[Any, Any], None]) -> None:
        self._core = core
        self._put = put
        self._stopping = stopping
        self._handler_errors = handler_errors
        self._check_refusal = check_refusal
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}  # the core's request refs
        self._next_ref = 0
        self._probe_fetches: dict[int, tuple[int, int]] = {}  # with PROBE only: ref -> (fetch offset, replica)

    async def request(self, request: Any) -> Any | None:
        """Hand a raft request to the core; the answer, or None if the node stopped first."""
        if self._stopping():
            return None
        self._next_ref += 1
        ref = self._next_ref
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ref] = future
        if PROBE is not None:
            self._probe_fetch_in(ref, request)
        core = self._core
        self._put(contained(lambda now: core.handle_request(ref, request, now),
                            fail_answer(future, recorder(self._handler_errors, request, "request"))))
        try:
            response = await future
        finally:
            self._pending.pop(ref, None)
        if response is not None:
            self._check_refusal(request, response)
        return response

    def answer(self, respond: Respond) -> None:
        """The core's answer to a request `request` handed it (the `Respond` effect)."""
        if PROBE is not None and respond.ref in self._probe_fetches:
            PROBE.stamp("fetch_answer", *self._probe_fetches.pop(respond.ref))
        future = self._pending.pop(respond.ref, None)
        if future is not None and not future.done():
            future.set_result(respond.response)

    def release_all(self) -> None:
        """The node stopped: every request still waiting for the core gets None (its connection closes)."""
        for future in self._pending.values():
            if not future.done():
                future.set_result(None)
        self._pending.clear()

    def deliver(self, source_id: int, correlation_id: int, response: Any) -> None:
        """A peer's answer to the core's request `correlation_id`."""
        if self._stopping():
            return
        core = self._core
        handle = core.handle_response if PROBE is None else self._probe_handle_response
        self._put(contained(lambda now: handle(source_id, correlation_id, response, now),
                            recorder(self._handler_errors, response, f"response from node {source_id}")))

    def peer_unreachable(self, node_id: int) -> None:
        """A raft request's connection to `node_id` was refused or reset: the core may start a pre-vote at once."""
        if not self._stopping():
            core = self._core
            self._put(lambda now: core.on_peer_unreachable(node_id, now))

    def _probe_handle_response(self, source_id: int, correlation_id: int, response: Any, now: int) -> Ready:
        assert PROBE is not None
        core = self._core
        PROBE.stamp("resp_run", core.log.end_offset(), source_id)
        ready = core.handle_response(source_id, correlation_id, response, now)
        PROBE.stamp("resp_done", core.log.end_offset(), source_id)
        return ready

    def _probe_fetch_in(self, ref: int, request: Any) -> None:
        """PROBE: a Fetch reached the leader (its fetch offset, from which replica)."""
        assert PROBE is not None
        if int(request.__api_key__) == ApiKey.FETCH and (offset := probe_fetch_offset(request)) >= 0:
            fetch = (offset, int(request.replica_state.replica_id))
            self._probe_fetches[ref] = fetch
            PROBE.stamp("fetch_in", *fetch)
