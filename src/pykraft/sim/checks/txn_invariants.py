"""The invariants of transactions (issue 31), over what a simulated run recorded (sim/hosts/txn_world.py):

1. no read_committed reader ever sees a record of an aborted transaction, nor one of a transaction still open;
2. a committed transaction is atomic across partitions: every record it wrote is visible read_committed once its
   markers are written, in every partition it wrote to;
3. offsets committed inside a transaction (TxnOffsetCommit) are the group's committed offsets iff it committed;
4. a record written by a producer after it was fenced (its epoch older than the coordinator's at that moment)
   never commits.
Each check returns the violations as lines (empty: the invariant holds). Pure: no engine, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WrittenRecord:
    """A transactional record the harness appended: which transaction (id, producer id, epoch, attempt number)."""

    record_id: str
    partition: int
    txn: tuple[str, int, int, int]  # (transactional id, producer id, epoch, transaction number of that producer)
    fenced_when_written: bool


def visible_violations(visible: Mapping[int, list[str]], outcome_of: Mapping[str, str],
                       records: Mapping[str, WrittenRecord]) -> list[str]:
    """Invariant 1: every record a read_committed reader saw belongs to a committed transaction (or none)."""
    found = []
    for partition, seen in visible.items():
        for record_id in seen:
            record = records.get(record_id)
            if record is None:
                continue  # a plain (non-transactional) record
            outcome = outcome_of.get(record_id)
            if outcome != "commit":
                found.append(f"partition {partition}: read_committed saw {record_id} of a transaction that is "
                             f"{outcome or 'open'}")
    return found


def atomicity_violations(visible: Mapping[int, list[str]], outcome_of: Mapping[str, str],
                         records: Mapping[str, WrittenRecord]) -> list[str]:
    """Invariant 2: after every marker, a committed transaction's records are all visible, in every partition."""
    seen = {record_id for ids in visible.values() for record_id in ids}
    return [f"{record_id} of committed transaction {records[record_id].txn} is missing from partition "
            f"{records[record_id].partition}" for record_id, outcome in sorted(outcome_of.items())
            if outcome == "commit" and record_id in records and record_id not in seen]


def offset_violations(committed_offsets: Mapping[tuple[str, int], int],
                      txn_offsets: Iterable[tuple[tuple[str, int], int, str]]) -> list[str]:
    """Invariant 3: each (partition, offset, outcome) committed in a transaction is the group's offset iff its
    transaction committed (later commits of the same partition win: only the last one of each is checked)."""
    last: dict[tuple[str, int], tuple[int, str]] = {}
    for tp, offset, outcome in txn_offsets:
        if outcome == "commit" or tp not in last:
            last[tp] = (offset, outcome)
    found = []
    for tp, (offset, outcome) in sorted(last.items()):
        present = committed_offsets.get(tp) == offset
        if outcome == "commit" and not present:
            found.append(f"{tp}: offset {offset} committed in a committed transaction is not the group's "
                         f"({committed_offsets.get(tp)})")
    aborted_only = {tp for tp, (_, outcome) in last.items() if outcome != "commit"}
    for tp in sorted(aborted_only):
        if tp in committed_offsets:
            found.append(f"{tp}: offset {committed_offsets[tp]} of an aborted transaction became the group's")
    return found


def fencing_violations(outcome_of: Mapping[str, str], records: Mapping[str, WrittenRecord]) -> list[str]:
    """Invariant 4: nothing written after its producer was fenced commits."""
    return [f"{record_id} was written by a fenced producer {record.txn} and committed"
            for record_id, record in sorted(records.items())
            if record.fenced_when_written and outcome_of.get(record_id) == "commit"]
