"""Sequential specifications for the linearizability checker (`linearizability.py`).

A model says what one operation does to a state when it takes effect atomically: `step(state, input, output)`
returns whether that output is possible from that state, and the state afterwards. Steps must be pure and states
immutable, because the checker backtracks to old states and memoises `(linearized set, state)` pairs.

Operations whose outcome is unknown (the client timed out or crashed) reach `step` with `output` set to the
`UNKNOWN` sentinel, whatever the history recorded: the model must then accept any outcome the input could have
had. Whether such an operation took effect at all is the checker's business (it may linearize it after
everything else, where nothing observes it), not the model's.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.sim.checks.linearizability import Operation


class _Unknown(enum.Enum):
    # An enum member rather than a bare object(): it is a singleton that survives copy/pickle and prints nicely.
    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown.UNKNOWN


class Model:
    """Base class: subclasses implement `init` and `step`; everything else has a sensible default."""

    def init(self) -> Any:
        raise NotImplementedError

    def step(self, state: Any, input: Any, output: Any) -> tuple[bool, Any]:
        raise NotImplementedError

    def partition(self, history: Sequence[Operation]) -> list[list[Operation]]:
        """Split into independently checkable sub-histories (P-compositionality). Default: no split."""
        return [list(history)]

    def read_only(self, input: Any) -> bool:
        """True if the operation never changes the state. Such an operation with an unknown outcome constrains
        nothing (it may take effect last and see anything), so `prepare` leaves it out of the search, where it
        would only multiply the orders to try."""
        return False

    def prepare(self, ops: Sequence[Operation]) -> list[Operation | None]:
        """Per operation of one partition: the operation to search with, or None to leave it out because it can
        always be linearized last. A model may also narrow an interval it proves the operation cannot take
        effect outside of; that must never change the verdict, only the time to reach it. A narrowed operation
        whose outcome was unknown must keep an output its `step` reads as unknown."""
        return [None if op.return_time is None and self.read_only(op.input) else op for op in ops]

    def key(self, state: Any) -> Hashable:
        """Hash bucket of a state for the memo cache; states in one bucket are told apart by `equal`."""
        return state

    def equal(self, a: Any, b: Any) -> bool:
        return bool(a == b)

    def describe_operation(self, input: Any, output: Any) -> str:
        return f"{input!r} -> {output!r}"

    def describe_state(self, state: Any) -> str:
        return repr(state)

    def describe_mismatch(self, state: Any, input: Any, output: Any) -> str | None:
        """Why `step` rejects this output in this state, when the two descriptions alone would not show it."""
        return None


def _partition_by(history: Sequence[Operation], label: Any) -> list[list[Operation]]:
    groups: dict[Any, list[Operation]] = {}
    for op in history:
        groups.setdefault(label(op), []).append(op)
    return list(groups.values())


class KVModel(Model):
    """A key-value store of registers.

    Inputs: `("put", key, value)` (output ignored: a put's reply says nothing about the state; putting None
    deletes), `("get", key)` (output: the value, None when absent), `("cas", key, expected, new)` (output: True if
    it swapped, False if not, None when the client never learnt which). The state is a frozenset of `(key, value)`
    pairs, so the model is also correct unpartitioned; partitioned by key it holds at most one pair.
    """

    def __init__(self, partitioned: bool = True) -> None:
        self._partitioned = partitioned

    def init(self) -> frozenset[tuple[Any, Any]]:
        return frozenset()

    def partition(self, history: Sequence[Operation]) -> list[list[Operation]]:
        if not self._partitioned:
            return [list(history)]
        return _partition_by(history, _key_of)

    def read_only(self, input: Any) -> bool:
        return bool(input[0] == "get")

    def step(self, state: frozenset[tuple[Any, Any]], input: Any, output: Any) -> tuple[bool, Any]:
        kind, key = input[0], input[1]
        current = _lookup(state, key)
        if kind == "get":
            return (output is UNKNOWN or output == current), state
        if kind == "put":
            return True, _store(state, key, current, input[2])
        if kind == "cas":
            expected, new = input[2], input[3]
            matches = current == expected
            if output is UNKNOWN or output is None:
                return True, (_store(state, key, current, new) if matches else state)
            if output is True:
                return matches, _store(state, key, current, new)
            return (output is False and not matches), state
        raise ValueError(f"KVModel: unknown operation {input!r}")

    def describe_operation(self, input: Any, output: Any) -> str:
        kind, key = input[0], input[1]
        if kind == "put":
            return f"put({key!r}, {input[2]!r})"
        if kind == "get":
            return f"get({key!r}) -> {output!r}"
        if kind == "cas":
            return f"cas({key!r}, {input[2]!r}, {input[3]!r}) -> {output!r}"
        return super().describe_operation(input, output)

    def describe_state(self, state: frozenset[tuple[Any, Any]]) -> str:
        if not state:
            return "{}"
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in state) + "}"


def _key_of(op: Operation) -> Any:
    if not isinstance(op.input, tuple) or len(op.input) < 2:
        raise ValueError(f"KVModel: operation without a key {op.input!r}")
    return op.input[1]


def _lookup(state: frozenset[tuple[Any, Any]], key: Any) -> Any:
    # Partitioned by key the set holds at most one pair, so a scan beats building a dict per step.
    for k, v in state:
        if k == key:
            return v
    return None


def _store(state: frozenset[tuple[Any, Any]], key: Any, current: Any, value: Any) -> frozenset[tuple[Any, Any]]:
    if current is not None:
        state = state - {(key, current)}
    return state if value is None else state | {(key, value)}


class LogModel(Model):
    """An append-only log, the simulator's client view of the replicated log.

    Inputs: `("append", value)` with output the offset it was given (None or UNKNOWN when the client never
    learnt it: any offset is then possible), and `("read",)` with output the sequence of committed values seen.
    A read takes effect at one instant, so its output must be the whole log at that instant; a read that saw a
    shorter prefix linearizes earlier, before the appends it missed. The state is the tuple of values, so the
    same value appended twice is two entries.
    """

    def init(self) -> tuple[Any, ...]:
        return ()

    def read_only(self, input: Any) -> bool:
        return bool(input[0] == "read")

    def step(self, state: tuple[Any, ...], input: Any, output: Any) -> tuple[bool, Any]:
        kind = input[0]
        if kind == "append":
            ok = output is UNKNOWN or output is None or output == len(state)
            return ok, state + (input[1],)
        if kind == "read":
            if output is UNKNOWN:
                return True, state
            return (len(output) == len(state) and tuple(output) == state), state
        raise ValueError(f"LogModel: unknown operation {input!r}")

    def prepare(self, ops: Sequence[Operation]) -> list[Operation | None]:
        """Narrow appends whose outcome is unknown, using what the reads saw. Without this every such append may
        go anywhere after its call, and proving a history illegal means trying all those placements.
        - A value no read saw: any read after the append would have seen it, so the append takes effect after
          every read, at a position p at least as long as the longest read. An acknowledged offset after it
          would be above p; if there is none that high, nothing observes the append and it is left out.
          Otherwise it cannot take effect before the last read was called.
        - A value appended once and seen by reads: the append took effect before the first of those reads
          returned."""
        prepared = super().prepare(ops)
        reads = [op for op in ops if op.input[0] == "read" and op.return_time is not None]
        if not reads:
            return prepared
        last_read_call = max(r.call for r in reads)
        longest_read = max(len(r.output) for r in reads)
        acknowledged = [op.output for op in ops if op.input[0] == "append" and _known_offset(op)]
        unobserved_is_invisible = max(acknowledged, default=-1) <= longest_read
        appends_per_value = Counter(op.input[1] for op in ops if op.input[0] == "append")
        first_seen: dict[Any, Any] = {}
        for r in reads:
            for value in set(r.output):
                if value not in first_seen or r.return_time < first_seen[value]:
                    first_seen[value] = r.return_time
        for n, op in enumerate(prepared):
            if op is None or op.input[0] != "append" or op.return_time is not None:
                continue
            value = op.input[1]
            if value not in first_seen:
                invisible = unobserved_is_invisible
                prepared[n] = None if invisible else replace(op, call=max(op.call, last_read_call), output=None)
            elif appends_per_value[value] == 1:
                # max(): a read that saw the value before the append was called is illegal anyway, and the
                # search reports it; the interval only has to stay well formed.
                prepared[n] = replace(op, output=None, return_time=max(op.call, first_seen[value]))
        return prepared

    def describe_operation(self, input: Any, output: Any) -> str:
        if input[0] == "append":
            where = "offset ?" if output is None or output is UNKNOWN else f"offset {output!r}"
            return f"append({input[1]!r}) -> {where}"
        if input[0] == "read" and output is not UNKNOWN:
            return f"read() -> {_describe_values(tuple(output))}"
        return super().describe_operation(input, output)

    def describe_state(self, state: tuple[Any, ...]) -> str:
        return _describe_values(state)

    def describe_mismatch(self, state: tuple[Any, ...], input: Any, output: Any) -> str | None:
        # Both sides are abbreviated to their tails, so point at the first offset where they part.
        if input[0] != "read" or output is UNKNOWN:
            return None
        seen = tuple(output)
        for offset, (got, want) in enumerate(zip(seen, state)):
            if got != want:
                return f"the read has {got!r} at offset {offset} where the log has {want!r}"
        return f"the read has {len(seen)} values, the log {len(state)}"


def _known_offset(op: Operation) -> bool:
    return op.return_time is not None and isinstance(op.output, int)


def _describe_values(values: tuple[Any, ...]) -> str:
    # Logs get long; the tail is what disagrees in practice, so show the length and the last few values.
    if len(values) <= 4:
        return repr(list(values))
    tail = ", ".join(repr(v) for v in values[-3:])
    return f"{len(values)} values [..., {tail}]"
