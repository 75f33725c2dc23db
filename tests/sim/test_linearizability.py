"""The linearizability checker: hand-written verdicts, explanations, partitioning, the memo cache on a large
concurrent history, a brute-force oracle on small random histories, and properties of generated histories."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.sim.linearizability import (
    UNKNOWN,
    CheckResult,
    KVModel,
    LogModel,
    Model,
    Operation,
    Outcome,
    check_operations,
)

Op = Operation


def put(client: int, key: str, value: Any, call: int, ret: int | None) -> Operation:
    return Op(client, ("put", key, value), call, None, ret)


def get(client: int, key: str, seen: Any, call: int, ret: int | None) -> Operation:
    return Op(client, ("get", key), call, seen, ret)


def cas(client: int, key: str, expected: Any, new: Any, swapped: Any, call: int, ret: int | None) -> Operation:
    return Op(client, ("cas", key, expected, new), call, swapped, ret)


def append(client: int, value: Any, offset: int | None, call: int, ret: int | None) -> Operation:
    return Op(client, ("append", value), call, offset, ret)


def read(client: int, values: Sequence[Any], call: int, ret: int | None) -> Operation:
    return Op(client, ("read",), call, tuple(values), ret)


def precedes(a: Operation, b: Operation) -> bool:
    """Real-time order: a returned strictly before b was called (touching intervals are concurrent)."""
    return a.return_time is not None and a.return_time < b.call


def replays(model: Model, order: Sequence[Operation]) -> bool:
    state = model.init()
    for op in order:
        ok, state = model.step(state, op.input, UNKNOWN if op.return_time is None else op.output)
        if not ok:
            return False
    return True


def assert_valid_witness(model: Model, history: Sequence[Operation], result: CheckResult) -> None:
    """An OK verdict must come with orders that cover the history, respect real time and replay."""
    assert result.outcome is Outcome.OK
    assert sorted(map(id, itertools.chain.from_iterable(result.witness))) == sorted(map(id, history))
    for order in result.witness:
        assert replays(model, order)
        position = {id(op): n for n, op in enumerate(order)}
        for a, b in itertools.permutations(order, 2):
            if precedes(a, b):
                assert position[id(a)] < position[id(b)]


def assert_illegal(model: Model, history: Sequence[Operation], *names: str) -> CheckResult:
    result = check_operations(model, history)
    assert result.outcome is Outcome.ILLEGAL
    text = result.explain()
    assert text.startswith("not linearizable")
    assert len(text.splitlines()) == 2
    for name in names:
        assert name in text
    # The reported prefix really is linearizable and, with the rest, makes up the failing partition.
    assert replays(model, result.linearized)
    assert sorted(map(id, result.linearized + result.not_linearized)) == sorted(map(id, result.partition))
    assert result.blocking in result.not_linearized
    return result


# --- linearizable by hand -------------------------------------------------------------------------------------


def test_sequential_register_history_is_ok_in_program_order() -> None:
    history = [put(0, "x", 1, 0, 1), get(1, "x", 1, 2, 3), put(0, "x", 2, 4, 5), get(1, "x", 2, 6, 7)]
    result = check_operations(KVModel(), history)
    assert result.ok
    assert result.witness == (tuple(history),)
    assert result.explain() == "linearizable: 4 operations in 1 partition(s)"


def test_read_of_absent_key_is_none() -> None:
    assert check_operations(KVModel(), [get(0, "x", None, 0, 1)]).ok
    assert check_operations(KVModel(), [get(0, "x", 0, 0, 1)]).outcome is Outcome.ILLEGAL


def test_concurrent_writes_may_take_effect_in_either_order() -> None:
    writes = [put(0, "x", 1, 0, 10), put(1, "x", 2, 1, 9)]
    for last in (1, 2):
        history = writes + [get(2, "x", last, 11, 12)]
        result = check_operations(KVModel(), history)
        assert_valid_witness(KVModel(), history, result)
        assert result.witness[0][1].input == ("put", "x", last)


def test_read_overlapping_a_write_may_see_old_or_new() -> None:
    for seen in (None, 1):
        assert check_operations(KVModel(), [put(0, "x", 1, 0, 10), get(1, "x", seen, 5, 6)]).ok


def test_touching_intervals_count_as_concurrent() -> None:
    # The read is called at the instant the write returns: calls sort before returns, so either order is fine.
    assert check_operations(KVModel(), [put(0, "x", 1, 0, 5), get(1, "x", None, 5, 6)]).ok
    assert check_operations(KVModel(), [put(0, "x", 1, 0, 5), get(1, "x", None, 6, 7)]).outcome is Outcome.ILLEGAL


def test_unknown_put_may_take_effect() -> None:
    history = [put(0, "x", 1, 0, None), get(1, "x", 1, 5, 6)]
    assert_valid_witness(KVModel(), history, check_operations(KVModel(), history))


def test_unknown_put_may_not_take_effect() -> None:
    history = [put(0, "x", 1, 0, None), get(1, "x", None, 5, 6), get(1, "x", None, 7, 8)]
    result = check_operations(KVModel(), history)
    assert_valid_witness(KVModel(), history, result)
    assert result.witness[0][-1] is history[0]  # placed after everything, where nothing observes it


def test_unknown_put_cannot_be_undone_once_observed() -> None:
    history = [put(0, "x", 1, 0, None), get(1, "x", 1, 5, 6), get(1, "x", None, 7, 8)]
    assert_illegal(KVModel(), history, "get('x') -> None [7..8]")


def test_unknown_put_cannot_take_effect_before_its_call() -> None:
    history = [get(1, "x", 1, 0, 1), put(0, "x", 1, 2, None)]
    assert_illegal(KVModel(), history, "get('x') -> 1 [0..1]", "put('x', 1) [2..?]")


def test_recorded_output_of_an_unknown_operation_is_ignored() -> None:
    history = [put(0, "x", 1, 0, 1), get(1, "x", "garbage", 2, None), cas(2, "x", 5, 6, True, 3, None)]
    result = check_operations(KVModel(), history)
    assert result.ok
    # The unknown cas cannot have swapped (x was never 5), whatever it recorded.
    assert_illegal(KVModel(), history + [get(3, "x", 6, 9, 10)], "get('x') -> 6 [9..10]")


def test_compare_and_set_outcomes() -> None:
    model = KVModel()
    assert check_operations(model, [put(0, "x", 1, 0, 1), cas(1, "x", 1, 2, True, 2, 3), get(0, "x", 2, 4, 5)]).ok
    assert check_operations(model, [put(0, "x", 1, 0, 1), cas(1, "x", 7, 2, False, 2, 3), get(0, "x", 1, 4, 5)]).ok
    # cas answered None means the client never learnt the outcome: it may have swapped.
    assert check_operations(model, [put(0, "x", 1, 0, 1), cas(1, "x", 1, 2, None, 2, 3), get(0, "x", 2, 4, 5)]).ok
    assert_illegal(model, [put(0, "x", 1, 0, 1), cas(1, "x", 1, 2, False, 2, 3)], "cas('x', 1, 2) -> False")
    assert_illegal(model, [put(0, "x", 1, 0, 1), cas(1, "x", 3, 2, True, 2, 3)], "cas('x', 3, 2) -> True")


def test_put_of_none_deletes() -> None:
    history = [put(0, "x", 1, 0, 1), put(0, "x", None, 2, 3), get(1, "x", None, 4, 5)]
    assert check_operations(KVModel(), history).ok


def test_sequential_log_history_is_ok() -> None:
    history = [append(0, "a", 0, 0, 1), read(1, ["a"], 2, 3), append(0, "b", 1, 4, 5), read(1, ["a", "b"], 6, 7)]
    result = check_operations(LogModel(), history)
    assert result.witness == (tuple(history),)


def test_log_read_of_a_shorter_prefix_linearizes_before_the_missing_append() -> None:
    history = [append(0, "a", 0, 0, 1), append(1, "b", 1, 2, 10), read(2, ["a"], 3, 4), read(2, ["a", "b"], 5, 6)]
    assert_valid_witness(LogModel(), history, check_operations(LogModel(), history))


def test_log_append_with_unknown_outcome_both_ways() -> None:
    took_effect = [append(0, "a", None, 0, None), append(1, "b", 1, 2, 3), read(1, ["a", "b"], 4, 5)]
    assert check_operations(LogModel(), took_effect).ok
    lost = [append(0, "a", None, 0, None), append(1, "b", 0, 2, 3), read(1, ["b"], 4, 5)]
    assert check_operations(LogModel(), lost).ok
    # An answered append without an offset may sit at any offset, but it must take effect before it returns.
    answered = [append(0, "a", None, 0, 1), read(1, [], 2, 3)]
    assert_illegal(LogModel(), answered, "read() -> []")


def test_same_value_appended_twice_is_two_entries() -> None:
    history = [append(0, "v", 0, 0, 1), append(1, "v", 1, 0, 1), read(2, ["v", "v"], 2, 3)]
    assert check_operations(LogModel(), history).ok
    assert_illegal(LogModel(), history[:2] + [read(2, ["v"], 2, 3)], "read() -> ['v']")
    assert_illegal(LogModel(), history[:2] + [read(2, ["v", "v", "v"], 2, 3)], "read() -> ['v', 'v', 'v']")


def test_empty_history_is_ok() -> None:
    assert check_operations(KVModel(), []).ok
    assert check_operations(LogModel(), [], timeout_s=0).ok
