"""The five actions of `pykraft reassign-partitions` over the admin client, printing Kafka's texts
(ReassignPartitionsCommand's generateAssignment, executeAssignment, verifyAssignment, cancelAssignment and
listReassignments). The flags were checked by reassign_partitions_cmd.py; failures raise `ToolError` (printed as
`Error: <text>`) or `Report` (Kafka's multi-line per-partition report, printed as it is). Replicas the file puts
in a named log directory move there too (reassign_log_dirs.py)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pykraft.admin.client import AdminClient
from pykraft.admin.connect import SettingsError, make_client, read_command_config
from pykraft.admin.errors import AdminClientError, AdminError, TopicError
from pykraft.protocol.errors import ErrorCode

from . import reassign_plan as plan
from .reassign_log_dirs import MoveError, execute_moves, move_states, move_states_text
from .reassign_plan import BrokerSlot, PartitionState, PlanError, ReplicaDir, TopicPartition, plural, tp_text

if TYPE_CHECKING:
    from .reassign_partitions_cmd import Options

T = TypeVar("T")
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use --additional to override "
                  "this and create a new partition assignment in addition to the existing one. The --additional "
                  "flag can also be used to change the throttle by resubmitting the current reassignment.")
NOT_RACK_AWARE = ("Not all brokers have rack information. Add --disable-rack-aware in command line to make replica "
                  "assignment without rack information.")


class ToolError(Exception):
    """A failure, printed as `Error: <text>`."""


class Report(ToolError):
    """Kafka's TerseException: its text is printed as it is (several lines for several partitions)."""


def read_file(path: str | None) -> str:
    try:
        return Path(str(path)).read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"{path} ({exc.strerror or exc})") from None


def run(action: str, options: Options, rng: random.Random) -> None:
    def with_admin(operation: Callable[[AdminClient], Awaitable[T]]) -> T:
        return _with_admin(options, operation)

    if action == "list":
        print(plan.list_text(with_admin(lambda a: a.list_partition_reassignments())))
    elif action == "generate":
        topics = plan.parse_topics(read_file(options.value("topics-to-move-json-file")))
        brokers = plan.parse_broker_list(str(options.value("broker-list")))
        plan.check_generate_args(brokers, topics)
        with_admin(lambda a: generate(a, topics, brokers, not options.has("disable-rack-aware"), rng))
    else:
        parts, dirs = plan.parse_reassignment(read_file(options.value("reassignment-json-file")))
        timeout_ms = options.long("timeout", 10_000)
        if action == "execute":
            proposed = plan.checked_execute_plan(parts)
            with_admin(lambda a: execute(a, proposed, dirs, options.has("additional"),
                                         not options.has("disallow-replication-factor-change"), timeout_ms))
        elif action == "verify":
            with_admin(lambda a: verify(a, parts, dirs, options.has("preserve-throttles")))
        else:
            with_admin(lambda a: cancel(a, parts, dirs, options.has("preserve-throttles"), timeout_ms))


def _with_admin(options: Options, operation: Callable[[AdminClient], Awaitable[T]]) -> T:
    try:
        config = options.value("command-config")
        props = read_command_config(None if config is None else Path(config))
        props.setdefault("client.id", "reassign-partitions-tool")
        client = make_client(options.value("bootstrap-controller"), options.value("bootstrap-server"), props)
    except SettingsError as exc:
        raise ToolError(str(exc)) from None

    async def go() -> T:
        async with client:
            return await operation(client)

    try:
        return asyncio.run(go())
    except MoveError as exc:
        raise (Report if exc.report else ToolError)(str(exc)) from None
    except TopicError as exc:
        raise ToolError(exc.message or exc.code.name) from None
    except (AdminClientError, SettingsError) as exc:
        raise ToolError(str(exc)) from None


# ---- reading the cluster -----------------------------------------------------------------------------------------
async def _current_replicas(admin: AdminClient, topics: set[str]) -> dict[TopicPartition, tuple[int, ...]]:
    """Every partition of the topics with its replicas (Metadata); an unknown topic fails the action."""
    found: dict[TopicPartition, tuple[int, ...]] = {}
    for name in sorted(topics):
        try:
            (description,) = await admin.describe_topics([name])
        except TopicError as exc:
            if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise
            raise ToolError(f"Topic {name} not found.") from None
        found.update({(name, p.partition): tuple(p.replicas) for p in description.partitions})
    return found


async def _live_brokers(admin: AdminClient) -> list[BrokerSlot]:
    """Kafka's describeCluster().nodes(): the unfenced brokers, by id."""
    return [BrokerSlot(b.broker_id, b.rack) for b in await admin.list_brokers() if not b.fenced]


# ---- the actions -------------------------------------------------------------------------------------------------
async def generate(admin: AdminClient, topics: list[str], brokers: list[int], rack_aware: bool,
                   rng: random.Random) -> None:
    current = await _current_replicas(admin, set(topics))
    wanted = set(brokers)
    slots = [BrokerSlot(b.broker_id, b.rack if rack_aware else None) for b in await _live_brokers(admin)
             if b.broker_id in wanted]
    rackless = sum(1 for b in slots if b.rack is None)
    if rack_aware and rackless not in (0, len(slots)):
        raise ToolError(NOT_RACK_AWARE)
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in sorted({t for t, _ in current}):
        parts = sorted(p for t, p in current if t == topic)
        placement = plan.assign_replicas(slots, len(parts), len(current[(topic, parts[0])]), rng)
        proposed.update({(topic, p): replicas for p, replicas in placement.items()})
    print(f"Current partition replica assignment\n{plan.reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{plan.reassignment_json(proposed)}")


async def execute(admin: AdminClient, proposed: dict[TopicPartition, list[int]], dirs: dict[ReplicaDir, str],
                  additional: bool, allow_rf_change: bool, timeout_ms: int) -> None:
    if not additional and await admin.list_partition_reassignments():
        raise Report(CANNOT_EXECUTE)
    known = {b.broker_id for b in await _live_brokers(admin)}
    unknown = next((b for replicas in proposed.values() for b in replicas if b not in known), None)
    if unknown is not None:
        raise ToolError(f"Unknown broker id {unknown}")
    current = await _current_replicas(admin, {t for t, _ in proposed})
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise ToolError("Unable to find partition: " + ", ".join(tp_text(tp) for tp in missing))
    print(plan.rollback_text(proposed, current))
    errors = await admin.alter_partition_reassignments(proposed, allow_rf_change)
    _report("Error reassigning partition(s):", errors)
    print(f"Successfully started partition reassignment{plural(len(proposed))} for "
          + ",".join(tp_text(tp) for tp in sorted(proposed)))
    if dirs:
        await execute_moves(admin, dirs, timeout_ms)


def _report(title: str, errors: dict[TopicPartition, AdminError | None]) -> None:
    failed = {tp: e for tp, e in errors.items() if e is not None}
    if failed:
        raise Report(title + "\n" + "\n".join(f"{tp_text(tp)}: {_message(e)}" for tp, e in sorted(failed.items())))


def _message(error: AdminError) -> str:
    return error.message or error.code.name


async def verify(admin: AdminClient, parts: list[tuple[TopicPartition, list[int]]], dirs: dict[ReplicaDir, str],
                 preserve: bool) -> None:
    ongoing = await admin.list_partition_reassignments()
    states: dict[TopicPartition, PartitionState] = {}
    others = {tp for tp, _ in parts if tp not in ongoing}
    current = await _current_or_empty(admin, {t for t, _ in others})
    for tp, target in parts:
        if tp in ongoing:
            states[tp] = PartitionState(ongoing[tp].replicas, tuple(target), False)
        else:
            states[tp] = PartitionState(current.get(tp, ()), tuple(target), True)
    print(plan.status_text(states))
    moves = await move_states(admin, dirs)
    print(move_states_text(moves))  # an empty line when the file names no directory, as Kafka's
    if not ongoing and all(m.done for m in moves.values()) and not preserve:
        await _clear_throttles(admin, parts)


async def _current_or_empty(admin: AdminClient, topics: set[str]) -> dict[TopicPartition, tuple[int, ...]]:
    """Kafka's --verify treats an unknown topic or partition as an empty replica set."""
    found: dict[TopicPartition, tuple[int, ...]] = {}
    for name in sorted(topics):
        try:
            found.update(await _current_replicas(admin, {name}))
        except ToolError:
            continue
    return found


async def cancel(admin: AdminClient, parts: list[tuple[TopicPartition, list[int]]], dirs: dict[ReplicaDir, str],
                 preserve: bool, timeout_ms: int) -> None:
    ongoing = await admin.list_partition_reassignments([tp for tp, _ in parts])
    # Kafka's filter, kept as it is: a reassignment that only adds replicas is not cancelled by this tool.
    cancelling = sorted(tp for tp, r in ongoing.items() if not r.adding or r.removing)
    if cancelling:
        errors = await admin.alter_partition_reassignments(dict.fromkeys(cancelling))
        _report(f"Error cancelling partition reassignment{plural(len([e for e in errors.values() if e]))} for:",
                errors)
        print(f"Successfully cancelled partition reassignment{plural(len(cancelling))} for: "
              + ",".join(tp_text(tp) for tp in cancelling))
    else:
        print("None of the specified partition reassignments are active.")
    active = {r: m.current for r, m in (await move_states(admin, dirs)).items() if m.active and m.current is not None}
    if active:
        await execute_moves(admin, active, timeout_ms)  # back where each replica is now
    else:
        print("None of the specified partition moves are active.")
    if not preserve:
        await _clear_throttles(admin, parts)


async def _clear_throttles(admin: AdminClient, parts: list[tuple[TopicPartition, Any]]) -> None:
    """Kafka's clearAllThrottles lines. pykraft sets no replication throttle, so there is nothing to delete."""
    brokers = sorted({b.broker_id for b in await _live_brokers(admin)} | {b for _, r in parts for b in r})
    topics = sorted({t for (t, _), _ in parts})
    print(f"Clearing broker-level throttles on broker{plural(len(brokers))} {','.join(map(str, brokers))}")
    print(f"Clearing topic-level throttles on topic{plural(len(topics))} {','.join(topics)}")


__all__ = ["PlanError", "Report", "ToolError", "run"]
