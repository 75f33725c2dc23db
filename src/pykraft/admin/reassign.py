"""`metadata-quorum reassign`: a thin client of quorum reassignment as KIP-642 designs it. The raft leader records
the target voter set in its log and moves the quorum there one voter change at a time, resuming after a failover
(raft/handlers/reassign_voters.py); this only sends the target, then reports progress until the voters are it.

1. Send AlterPartitionReassignments naming `__cluster_metadata-0` with the target ids (or null to cancel), with a
   short TimeoutMs: a refusal comes at once (INVALID_REPLICA_ASSIGNMENT and its reason, ...); NONE means the
   voters already are the target; REQUEST_TIMED_OUT means accepted and in progress.
2. Poll ListPartitionReassignments (voters now, adding, removing) and report each change, until no reassignment
   is in progress. Then the voters (DescribeQuorum) are the target: done; or they are not: someone cancelled it
   or sent another target, which is an error here.
3. The target is sent again only while this client has seen no reassignment in progress at all (its record lost
   with a leader whose successor's log lacks it); once one was seen, it is never sent again, so another operator's
   newer target or cancellation is not undone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pykraft.protocol.errors import ErrorCode

from .client import AdminClient
from .errors import AdminClientError

__all__ = ["ReassignAccepted", "ReassignDone", "ReassignError", "ReassignProgress", "parse_target_ids", "reassign"]

# TimeoutMs of each AlterPartitionReassignments this client sends: the answer says accepted or refused quickly.
ACCEPT_TIMEOUT_MS = 2000


class ReassignError(AdminClientError):
    """The reassignment did not reach the target (refused, cancelled or replaced, or out of time)."""


@dataclass(frozen=True, slots=True)
class ReassignAccepted:
    target: tuple[int, ...] | None  # None: a cancellation


@dataclass(frozen=True, slots=True)
class ReassignProgress:
    voters: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReassignDone:
    voters: tuple[int, ...]


ReassignEvent = ReassignAccepted | ReassignProgress | ReassignDone


def parse_target_ids(text: str) -> tuple[int, ...]:
    """`ID,ID,...`; an `ID@HOST:PORT:DIRECTORY_ID` item (the --initial-controllers syntax, which earlier versions
    of this tool took) counts by its id: the leader takes endpoints and directory ids from what it knows."""
    ids: list[int] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        node_id = item.partition("@")[0].strip()
        if not node_id.isdigit():
            raise ReassignError(f"invalid voter {item!r}: expected a node id (ID, or ID@HOST:PORT:DIRECTORY_ID)")
        if int(node_id) in ids:
            raise ReassignError(f"voter id {node_id} appears more than once in the target")
        ids.append(int(node_id))
    if not ids:
        raise ReassignError("the target voter set is empty")
    return tuple(ids)


async def reassign(client: AdminClient, target: Sequence[int] | None, *, poll_ms: int = 500,
                   deadline_ms: int = 600_000, clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> AsyncIterator[ReassignEvent]:
    """Send `target` (None: cancel), then yield progress until done. Raises ReassignError or the client's errors."""
    wanted = None if target is None else tuple(target)
    outcome = await client.alter_quorum_reassignment(wanted, ACCEPT_TIMEOUT_MS)
    if outcome.code not in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT):
        raise ReassignError(outcome.message or outcome.code.name)
    yield ReassignAccepted(wanted)
    seen = outcome.code == ErrorCode.NONE or wanted is None
    last: ReassignProgress | None = None
    deadline = clock() + deadline_ms / 1000
    while True:
        ongoing = await client.list_quorum_reassignment()
        if ongoing is None:
            voters = tuple(sorted(s.replica_id for s in (await client.describe_quorum()).voters))
            if wanted is None or sorted(wanted) == list(voters):
                yield ReassignDone(voters)
                return
            if seen:
                raise ReassignError(f"the reassignment was cancelled or replaced by another target: the voters are "
                                    f"now {list(voters)}")
            await client.alter_quorum_reassignment(wanted, ACCEPT_TIMEOUT_MS)  # its record may have been lost
        else:
            seen = True  # ours, or a newer one that replaced it: never send ours again
            progress = ReassignProgress(ongoing.voters, ongoing.adding, ongoing.removing)
            if progress != last:
                last = progress
                yield progress
        if clock() + poll_ms / 1000 > deadline:
            raise ReassignError(f"the voters did not become the target within {deadline_ms} ms; the leader goes on "
                                "(check with `reassign --status`)")
        await sleep(poll_ms / 1000)


async def status(client: AdminClient) -> ReassignProgress | None:
    """The quorum reassignment in progress, or None."""
    ongoing = await client.list_quorum_reassignment()
    return None if ongoing is None else ReassignProgress(ongoing.voters, ongoing.adding, ongoing.removing)
