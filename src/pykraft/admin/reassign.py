"""Move the controller quorum to a target voter set, one single-voter change at a time (`metadata-quorum reassign`).

The loop: read the quorum (DescribeQuorum), ask the planner (`raft.reassignment.next_step`) for the next step,
send it (AddRaftVoter / RemoveRaftVoter), then poll DescribeQuorum until the voter list shows the step before
planning again, so every step is sent exactly once. The leader answers a voter change only after the new voter set
is committed, so a NONE answer plus the changed voter list means the step is done. Progress is yielded as events.

Removing the leader: Kafka has no admin request that makes the leader resign, so the planner's `ResignLeaderStep`
is carried out as a RemoveRaftVoter of the leader's own key. The leader commits its removal, then resigns, and the
remaining voters elect a successor (KIP-853; the raft core implements it).

Resume and cancel: at the start the voter set is written to a JSON state file (default
`pykraft-reassign.json` in the current directory, or the path given) together with the target. Running again
with the same target resumes from whatever the quorum shows; a different target is refused while the file exists.
`cancel` drives the quorum back to the recorded voters and deletes the file; a completed reassignment deletes it.

Limits, honestly:
- Rolling back re-adds removed voters with their recorded directory ids and endpoints. That only works while those
  nodes still run, still have that metadata directory (not reformatted), and catch up with the leader; otherwise
  the add times out (REQUEST_TIMED_OUT until the deadline) and the cancel stops with an error.
- DescribeQuorum v2 cannot tell whether the listed voter set is committed. After a voter change whose outcome is
  unknown the driver waits until the list shows the change; if that set were still uncommitted, the next step is
  refused by the leader with REQUEST_TIMED_OUT and retried by the client, so safety holds, only time is spent.
- Two operators reassigning at once are not detected beyond the state file of one working directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.raft.reassignment import AddVoterStep, Blocked, RemoveVoterStep, ResignLeaderStep, Step, next_step
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, VoterNode, VoterSet
from pykraft.records.uuids import kafka_str_to_uuid, uuid_to_kafka_str

from .client import AdminClient
from .errors import AdminClientError, OutcomeUnknownError
from .model import QuorumInfo

__all__ = ["DEFAULT_STATE_FILE", "ReassignDone", "ReassignError", "StepCommitted", "StepStarted", "cancel",
           "parse_target_voters", "reassign"]

DEFAULT_STATE_FILE = Path("pykraft-reassign.json")
_STATE_VERSION = 1


class ReassignError(AdminClientError):
    """The reassignment cannot go on (blocked, a step never showed up, a conflicting state file)."""


@dataclass(frozen=True, slots=True)
class StepStarted:
    step: Step


@dataclass(frozen=True, slots=True)
class StepCommitted:
    step: Step
    voters: frozenset[ReplicaKey]
    # Set when the request itself ended in doubt (OutcomeUnknownError) and the change was then seen in the
    # quorum: the step is done, though possibly by an earlier attempt of the same request.
    unknown_outcome: str | None = None


@dataclass(frozen=True, slots=True)
class ReassignDone:
    voters: frozenset[ReplicaKey]


ReassignEvent = StepStarted | StepCommitted | ReassignDone


def parse_target_voters(text: str, listener_name: str = "CONTROLLER") -> VoterSet:
    """`ID@HOST:PORT:DIRID[,...]` (the --initial-controllers syntax); IPv6 hosts in brackets."""
    nodes: dict[int, VoterNode] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        node_id, at, rest = item.partition("@")
        address, colon, directory = rest.rpartition(":")
        host, colon2, port = address.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not (at and colon and colon2 and host and node_id.isdigit() and port.isdigit()):
            raise ReassignError(f"invalid voter {item!r}: expected ID@HOST:PORT:DIRECTORY_ID")
        try:
            directory_id = kafka_str_to_uuid(directory)
        except ValueError as exc:
            raise ReassignError(f"invalid voter {item!r}: {exc}") from None
        if int(node_id) in nodes:
            raise ReassignError(f"voter id {node_id} appears more than once in the target")
        nodes[int(node_id)] = VoterNode(ReplicaKey.of(int(node_id), directory_id),
                                        Endpoints.of([Endpoint(listener_name, host, int(port))]))
    if not nodes:
        raise ReassignError("the target voter set is empty")
    return VoterSet.of(nodes.values())


# ---- the state file ----------------------------------------------------------------------------------------------
def _voters_to_json(voters: VoterSet) -> list[dict[str, Any]]:
    return [{"id": n.key.id, "directoryId": uuid_to_kafka_str(n.key.directory_id),
             "endpoints": [[e.name, e.host, e.port] for e in n.endpoints.items]} for n in voters.voters.values()]


def _voters_from_json(items: list[dict[str, Any]]) -> VoterSet:
    return VoterSet.of(VoterNode(ReplicaKey.of(int(i["id"]), kafka_str_to_uuid(i["directoryId"])),
                                 Endpoints.of(Endpoint(str(n), str(h), int(p)) for n, h, p in i["endpoints"]))
                       for i in items)


def read_state(path: Path) -> tuple[VoterSet, VoterSet] | None:
    """(original voters, target) recorded in `path`, or None when there is no file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != _STATE_VERSION:
            raise ValueError(f"unknown version {data.get('version')!r}")
        return _voters_from_json(data["original"]), _voters_from_json(data["target"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as exc:
        raise ReassignError(f"cannot read the reassignment state file {path}: {exc}") from None


def write_state(path: Path, original: VoterSet, target: VoterSet) -> None:
    text = json.dumps({"version": _STATE_VERSION, "original": _voters_to_json(original),
                       "target": _voters_to_json(target)}, indent=2)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    os.replace(temporary, path)


# ---- the driver --------------------------------------------------------------------------------------------------
def _after(keys: frozenset[ReplicaKey], step: Step) -> frozenset[ReplicaKey]:
    if isinstance(step, AddVoterStep):
        return keys | {step.node.key}
    assert isinstance(step, (RemoveVoterStep, ResignLeaderStep)), step
    return keys - {step.key}


async def _send(client: AdminClient, step: Step) -> None:
    if isinstance(step, AddVoterStep):
        await client.add_voter(step.node.key.id, step.node.key.directory_id, step.node.endpoints)
    else:
        assert isinstance(step, (RemoveVoterStep, ResignLeaderStep)), step
        await client.remove_voter(step.key.id, step.key.directory_id)


async def _wait_until(client: AdminClient, expected: frozenset[ReplicaKey], timeout_ms: int, poll_ms: int,
                      clock: Callable[[], float], sleep: Callable[[float], Awaitable[Any]]) -> QuorumInfo:
    deadline = clock() + timeout_ms / 1000
    while True:
        info = await client.describe_quorum()
        if info.voter_keys() == expected:
            return info
        if clock() + poll_ms / 1000 > deadline:
            shown = ", ".join(str(k) for k in sorted(info.voter_keys()))
            raise ReassignError(f"the voter set did not become the expected one within {timeout_ms} ms "
                                f"(the leader shows [{shown}]); check with `describe --status` and run again")
        await sleep(poll_ms / 1000)


async def drive(client: AdminClient, target: VoterSet, *, commit_timeout_ms: int = 60_000, poll_ms: int = 500,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> AsyncIterator[ReassignEvent]:
    """Step the quorum to `target`, yielding progress. Raises ReassignError or the client's errors."""
    info = await client.describe_quorum()
    while True:
        step = next_step(info.voter_set(), target, info.leader_id)
        if step is None:
            yield ReassignDone(info.voter_keys())
            return
        if isinstance(step, Blocked):
            raise ReassignError(f"cannot reach the target: {step.reason}")
        yield StepStarted(step)
        unknown = None
        try:
            await _send(client, step)
        except OutcomeUnknownError as exc:
            unknown = exc.detail  # the step may still land: watch for it instead of sending it again
        info = await _wait_until(client, _after(info.voter_keys(), step), commit_timeout_ms, poll_ms, clock, sleep)
        yield StepCommitted(step, info.voter_keys(), unknown)


async def reassign(client: AdminClient, target: VoterSet, state_file: Path = DEFAULT_STATE_FILE,
                   **options: Any) -> AsyncIterator[ReassignEvent]:
    """`drive` to `target`, recording the starting voters in `state_file` first (see the module docstring)."""
    recorded = read_state(state_file)
    if recorded is not None and recorded[1].keys() != target.keys():
        raise ReassignError(f"{state_file} records a reassignment to another target: run it again with that "
                            "target, or cancel it first")
    if recorded is None:
        write_state(state_file, (await client.describe_quorum()).voter_set(), target)
    async for event in drive(client, target, **options):
        if isinstance(event, ReassignDone):
            state_file.unlink(missing_ok=True)
        yield event


async def cancel(client: AdminClient, state_file: Path = DEFAULT_STATE_FILE,
                 **options: Any) -> AsyncIterator[ReassignEvent]:
    """Drive back to the voters recorded when the reassignment started, then delete the state file."""
    recorded = read_state(state_file)
    if recorded is None:
        raise ReassignError(f"no reassignment is recorded in {state_file}")
    async for event in drive(client, recorded[0], **options):
        if isinstance(event, ReassignDone):
            state_file.unlink(missing_ok=True)
        yield event
