"""Linearizability checking of recorded client histories: Porcupine's algorithm, written for Python.

The search is Lowe's refinement of Wing & Gong, with the P-compositional split of Horn & Kroening:
  1. The model splits the history into partitions (e.g. one per key); the whole is linearizable iff each is.
  2. Per partition, every operation becomes a call event and a return event, sorted by time with calls before
     returns on ties (so touching intervals count as concurrent), threaded on a doubly linked list.
  3. Walk the list from the head. At a call, try to make that operation take effect now: if the model accepts
     its output and `(linearized set + it, new state)` has not been explored before, push it, unlink ("lift")
     its call and return, and restart from the head. At a return, the operation whose return it is had to take
     effect already and every candidate failed: pop the last choice, re-link it, and try the node after it.
  4. An empty list is a linearization (the stack is the witness); backtracking from an empty stack is a proof
     that none exists. The memo cache of (bitset as an int, state) is what keeps concurrent histories tractable.

An operation with `return_time=None` (outcome unknown) returns after every other event, so it may take effect
anywhere after its call, including after everything else, where it is indistinguishable from never happening.
Its recorded output is ignored: the model sees `UNKNOWN`. Such operations are what make the search expensive,
so before it `Model.prepare` may leave out the ones that constrain nothing and narrow the others' intervals.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pykraft.sim.checks.models import UNKNOWN, KVModel, LogModel, Model

__all__ = [
    "UNKNOWN",
    "CheckResult",
    "KVModel",
    "LogModel",
    "Model",
    "Operation",
    "Outcome",
    "check_operations",
]

_HEAD = 0
_DEADLINE_EVERY = 1024  # loop iterations between clock reads; a clock read costs more than a model step


@dataclass(frozen=True, slots=True)
class Operation:
    """One client operation: invoked at `call`, answered at `return_time` (None: never answered)."""

    client_id: int
    input: Any
    call: int
    output: Any
    return_time: int | None

    def __post_init__(self) -> None:
        if self.return_time is not None and self.return_time < self.call:
            raise ValueError(f"operation returns at {self.return_time} before its call at {self.call}")


class Outcome(enum.Enum):
    OK = "ok"
    ILLEGAL = "illegal"
    UNKNOWN = "unknown"  # the timeout expired before a verdict


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict. For ILLEGAL: the failing partition (the operations searched; those `Model.prepare` left out
    because they constrain nothing are not in it), the longest linearizable prefix the search found, the
    operation that had to take effect next and could not (`blocking`) and the state it faced. For OK: a witness
    order per partition, with the left-out operations last."""

    outcome: Outcome
    partitions: int = 0
    partitions_checked: int = 0
    partition_index: int | None = None
    partition: tuple[Operation, ...] = ()
    linearized: tuple[Operation, ...] = ()
    not_linearized: tuple[Operation, ...] = ()
    blocking: Operation | None = None
    state: str = ""
    mismatch: str = ""  # the model's account of why `blocking` fails in that state, when it has one
    # Operations the model narrowed before the search (see `Model.prepare`), as (recorded, searched) pairs:
    # the explanation shows both, because the verdict about them rests on the narrowed interval.
    narrowed: tuple[tuple[Operation, Operation], ...] = ()
    witness: tuple[tuple[Operation, ...], ...] = ()  # OK: one linearization order per partition
    model: Model | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    def explain(self) -> str:
        if self.outcome is Outcome.OK:
            ops = sum(len(w) for w in self.witness)
            return f"linearizable: {ops} operations in {self.partitions} partition(s)"
        if self.outcome is Outcome.UNKNOWN:
            return (
                f"unknown: timed out after {self.partitions_checked} of {self.partitions} partition(s) "
                "were fully checked"
            )
        return self._explain_illegal()

    def _explain_illegal(self) -> str:
        assert self.blocking is not None and self.partition_index is not None
        where = f"partition {self.partition_index + 1}/{self.partitions}" if self.partitions > 1 else "history"
        prefix = f"{len(self.linearized)} of {len(self.partition)} operations"
        if self.linearized:
            prefix += f", last {self._describe(self.linearized[-1])}"
        state = f"{self.state} ({self.mismatch})" if self.mismatch else self.state
        first = (
            f"not linearizable ({where}): {self._describe(self.blocking)} cannot take effect in state {state}, "
            f"reached by the longest linearizable prefix ({prefix}); no other pending operation can go first"
        )
        shown = [self._describe(op) for op in self.not_linearized[:4]]
        if len(self.not_linearized) > 4:
            shown.append(f"... {len(self.not_linearized) - 4} more")
        return f"{first}\nnot linearized: " + "; ".join(shown)

    def _describe(self, op: Operation) -> str:
        model = self.model if self.model is not None else Model()
        output = UNKNOWN if op.return_time is None else op.output
        text = f"client {op.client_id} {model.describe_operation(op.input, output)} {_interval(op)}"
        for recorded, searched in self.narrowed:
            if recorded is op:
                text += f" searched as {_interval(searched)}"
        return text


def _interval(op: Operation) -> str:
    return f"[{op.call}..{'?' if op.return_time is None else op.return_time}]"


class _Timeout(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Failure:
    prefix: tuple[int, ...]  # indexes into the partition, in linearization order
    blocking: int
    state: Any


class _Events:
    """The call/return events of one partition on a doubly linked list held in flat arrays (node 0 is the head,
    the last node a tail sentinel), which keeps lift/unlift to a handful of list stores."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        n = len(ops)
        order = sorted(
            [(op.call, 0, i) for i, op in enumerate(ops)]
            + [(math.inf if op.return_time is None else op.return_time, 1, i) for i, op in enumerate(ops)]
        )
        size = 2 * n + 2
        self.tail = size - 1
        self.next = list(range(1, size + 1))
        self.prev = list(range(-1, size - 1))
        self.op = [-1] * size
        self.is_call = [False] * size
        self.call_node = [0] * n
        self.return_node = [0] * n
        for position, (_, kind, i) in enumerate(order, start=1):
            self.op[position] = i
            if kind == 0:
                self.is_call[position] = True
                self.call_node[i] = position
            else:
                self.return_node[i] = position

    def lift(self, i: int) -> None:
        nxt, prv = self.next, self.prev
        for node in (self.call_node[i], self.return_node[i]):
            nxt[prv[node]] = nxt[node]
            prv[nxt[node]] = prv[node]

    def unlift(self, i: int) -> None:
        # Reverse order of lift: the return node's neighbours are only right once the call node is back.
        nxt, prv = self.next, self.prev
        for node in (self.return_node[i], self.call_node[i]):
            nxt[prv[node]] = node
            prv[nxt[node]] = node


def _make_cache(model: Model) -> tuple[Any, Any]:
    """Returns (seen, remember) over (linearized bitset, state) pairs."""
    if type(model).equal is Model.equal:
        plain: set[tuple[int, Any]] = set()
        return (lambda bits, s: (bits, model.key(s)) in plain), (lambda bits, s: plain.add((bits, model.key(s))))
    buckets: dict[tuple[int, Any], list[Any]] = {}

    def seen(bits: int, s: Any) -> bool:
        return any(model.equal(s, other) for other in buckets.get((bits, model.key(s)), ()))

    def remember(bits: int, s: Any) -> None:
        buckets.setdefault((bits, model.key(s)), []).append(s)

    return seen, remember


def _search(model: Model, ops: Sequence[Operation], deadline: float | None) -> tuple[int, ...] | _Failure:
    """The DFS of one partition: a linearization order, or the deepest point where it got stuck."""
    events = _Events(ops)
    inputs = [op.input for op in ops]
    outputs = [UNKNOWN if op.return_time is None else op.output for op in ops]
    nxt, is_call, node_op = events.next, events.is_call, events.op
    seen, remember = _make_cache(model)
    state = model.init()
    linearized = 0
    stack: list[tuple[int, Any]] = []
    failure: _Failure | None = None
    entry = nxt[_HEAD]
    iterations = 0
    while nxt[_HEAD] != events.tail:
        iterations += 1
        if deadline is not None and iterations % _DEADLINE_EVERY == 0 and time.monotonic() >= deadline:
            raise _Timeout
        i = node_op[entry]
        if is_call[entry]:
            ok, new_state = model.step(state, inputs[i], outputs[i])
            if ok:
                bits = linearized | (1 << i)
                if not seen(bits, new_state):
                    remember(bits, new_state)
                    stack.append((i, state))
                    state, linearized = new_state, bits
                    events.lift(i)
                    entry = nxt[_HEAD]
                    continue
            entry = nxt[entry]
            continue
        # A return: operation i had to take effect by now. The deepest such dead end explains the failure best:
        # there no candidate was rejected by the cache (anything cached deeper would have been reached), so
        # every pending operation, i included, is impossible in this state.
        if failure is None or len(stack) > len(failure.prefix):
            failure = _Failure(tuple(j for j, _ in stack), i, state)
        if not stack:
            return failure
        i, state = stack.pop()
        linearized &= ~(1 << i)
        events.unlift(i)
        entry = nxt[events.call_node[i]]
    return tuple(j for j, _ in stack)


def check_operations(model: Model, history: Sequence[Operation], timeout_s: float | None = None) -> CheckResult:
    """Check `history` against `model`. Raises ValueError for a malformed history (an operation the model does
    not know); a history that merely is not linearizable is an ILLEGAL result, never an exception."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    partitions = [p for p in model.partition(history) if p]
    witness: list[tuple[Operation, ...]] = []
    for index, ops in enumerate(partitions):
        prepared = model.prepare(ops)
        kept = [n for n, op in enumerate(prepared) if op is not None]
        searched = [op for op in prepared if op is not None]
        try:
            if deadline is not None and time.monotonic() >= deadline:
                raise _Timeout
            found = _search(model, searched, deadline)
        except _Timeout:
            return CheckResult(Outcome.UNKNOWN, len(partitions), index, model=model)
        # Report in terms of the recorded operations, not the narrowed copies the search ran on.
        originals = [ops[n] for n in kept]
        if isinstance(found, _Failure):
            return _illegal(model, originals, searched, len(partitions), index, found)
        left_out = tuple(op for op, p in zip(ops, prepared) if p is None)
        witness.append(tuple(originals[i] for i in found) + left_out)
    return CheckResult(Outcome.OK, len(partitions), len(partitions), witness=tuple(witness), model=model)


def _illegal(
    model: Model, ops: list[Operation], searched: list[Operation], partitions: int, index: int, failure: _Failure
) -> CheckResult:
    """`ops` are the recorded operations the search ran on, `searched` the same after `Model.prepare`."""
    in_prefix = set(failure.prefix)
    blocking = searched[failure.blocking]
    output = UNKNOWN if blocking.return_time is None else blocking.output
    return CheckResult(
        Outcome.ILLEGAL,
        partitions=partitions,
        partitions_checked=index + 1,
        partition_index=index,
        partition=tuple(ops),
        linearized=tuple(ops[i] for i in failure.prefix),
        not_linearized=tuple(sorted((op for i, op in enumerate(ops) if i not in in_prefix), key=lambda o: o.call)),
        blocking=ops[failure.blocking],
        state=model.describe_state(failure.state),
        mismatch=model.describe_mismatch(failure.state, blocking.input, output) or "",
        narrowed=tuple((a, b) for a, b in zip(ops, searched) if a is not b),
        model=model,
    )
