"""The core task: ONE asyncio task drives the pure raft core (reference §1.1, Kafka's single raft I/O thread).

Everything that wants the core to do something (an inbound request, an answer to our request, a finished flush, a
client append, shutdown) appends a small function to `inputs` (`put`) and wakes the task; the task runs them one at
a time, polls the core when its wake-up time has come, and hands each `Ready` to `carry_out` (effects.py). The core
is therefore never re-entered, and reading its state from a request handler between inputs is safe (asyncio is
cooperative).

One shortcut (`_run_inline`): an input that arrives while the task is parked with nothing queued runs at once, in
the caller, exactly as the task would run it next; waking the task first cost a loop turn (the task's step, its
timer re-armed) on each hop of a commit (the Produce, each Fetch, each Fetch answer). The task is re-woken when the
input queued more inputs or moved the core's wake-up time earlier, and a failure goes to the task to fail the node
as before.

Time: `now_ms` is the node's clock (wall-clock, runtime.py says why) read before each input and each poll.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from pykraft.raft.effects import Ready

_log = logging.getLogger("pykraft.node")

MIN_WAIT_S = 0.001
Input = Callable[[int], Ready | None]


class CoreTask:
    """The input queue and the task that drains it. `poll(now)` polls the core; `carry_out(ready, now)` runs what
    follows every input and poll (the Ready's effects, then the node's follow-ups); `lane_failure()` is a failed
    durable write, which fails the task; `on_failed()` is started when the task fails (it stops the node)."""

    def __init__(self, clock: Callable[[], int], *, poll: Callable[[int], Ready],
                 carry_out: Callable[[Ready | None, int], None], lane_failure: Callable[[], BaseException | None],
                 on_failed: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.clock = clock
        self._poll = poll
        self._carry_out = carry_out
        self._lane_failure = lane_failure
        self._on_failed = on_failed
        self.inputs: deque[Input] = deque()
        self._wake = asyncio.Event()
        self.wakeup_ms = 0  # the core's next wake-up time, from its last Ready
        self._task: asyncio.Task[None] | None = None
        self.stopping = False  # set once: the task ends after the input it runs
        self.failure: BaseException | None = None
        self.stale_wakeups = 0  # polls that left the core's wake-up time in the past (a core timer not cleared)
        self.poll_times = (0.0, 0.0)  # (idle, busy) seconds of the core task: Kafka's poll-idle-ratio
        self._busy_since = time.perf_counter()
        self.parked_until_ms: int | None = None  # while the task waits: when its timer wakes it
        self._running_inline = False
        self._inline_failure: BaseException | None = None  # raised by the task, which fails the node
        self._inline_busy_s = 0.0  # seconds of inline inputs inside the task's waits (poll-idle-ratio)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, name: str) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=name)

    async def stop(self) -> None:
        """End the task after the input it is running (inputs still queued are dropped) and wait for it."""
        self.stopping = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def put(self, fn: Input) -> None:
        """Run `fn(now_ms)` on the core task: at once when the task is parked with nothing queued, else queued."""
        if (self.parked_until_ms is not None and not self._running_inline and not self.inputs
                and not self.stopping and self._lane_failure() is None and self._inline_failure is None):
            self._run_inline(fn)
            return
        self.inputs.append(fn)
        self._wake.set()

    def _run_inline(self, fn: Input) -> None:
        """`fn` run now, as the parked core task would run it next (see the module docstring). Inputs submitted
        meanwhile (a flush completed inside an effect, a state machine's submit) are queued for the task."""
        started = time.perf_counter()
        self._running_inline = True
        try:
            now = self.clock()
            self.apply(fn(now), now)
            self._poll_if_due()
        except BaseException as exc:  # handed to the task, which fails the node with it
            self._inline_failure = exc
        finally:
            self._running_inline = False
            self._inline_busy_s += time.perf_counter() - started
        parked_until = self.parked_until_ms
        if (self.inputs or self._inline_failure is not None
                or (parked_until is not None and self.wakeup_ms < parked_until)):
            self._wake.set()  # to run them, to fail, or to re-arm its timer for the earlier wake-up

    def apply(self, ready: Ready | None, now: int) -> None:
        """What follows an input or a poll: its Ready's wake-up time kept, then `carry_out`."""
        if ready is not None:
            self.wakeup_ms = ready.wakeup_ms
        self._carry_out(ready, now)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self.stopping:
                self._raise_failures()
                while self.inputs and not self.stopping:
                    now = self.clock()
                    self.apply(self.inputs.popleft()(now), now)
                    self._poll_if_due()
                if self.stopping:
                    break
                self._poll_if_due()
                self._wake.clear()
                if self.inputs:
                    continue
                await self._park(loop)
        except BaseException as exc:
            self.failure = exc
            _log.critical("the raft core task failed: %r", exc)
            if not isinstance(exc, asyncio.CancelledError):
                loop.create_task(self._on_failed())
            raise

    def _raise_failures(self) -> None:
        lane_failure = self._lane_failure()
        if lane_failure is not None:
            raise lane_failure
        if self._inline_failure is not None:
            raise self._inline_failure

    async def _park(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wait for an input or the core's wake-up time. At least 1 ms: a wake-up time that stays in the past after
        a poll must not starve the event loop (the network, the flusher's completions) - it only costs a poll per
        millisecond."""
        delay = max(MIN_WAIT_S, (self.wakeup_ms - self.clock()) / 1000)
        if self.wakeup_ms <= self.clock():
            self.stale_wakeups += 1
        timer = loop.call_later(delay, self._wake.set)
        waited = time.perf_counter()
        self.parked_until_ms = self.clock() + int(delay * 1000)
        try:
            await self._wake.wait()
        finally:
            self.parked_until_ms = None
        self._count_idle(waited)
        timer.cancel()

    def _count_idle(self, waited_since: float) -> None:
        """poll-idle-ratio: seconds the core task waited for input, and the seconds it worked in between."""
        now = time.perf_counter()
        idle, busy = self.poll_times
        inline, self._inline_busy_s = self._inline_busy_s, 0.0
        self.poll_times = (idle + max(0.0, now - waited_since - inline),
                           busy + max(0.0, waited_since - self._busy_since) + inline)
        self._busy_since = now

    def _poll_if_due(self) -> bool:
        now = self.clock()
        if now < self.wakeup_ms:
            return False
        self.apply(self._poll(now), now)
        return True
