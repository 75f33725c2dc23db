"""What `pykraft consumer-groups` prints, as Kafka 4's kafka-consumer-groups (ConsumerGroupCommand) prints it.

Kafka writes its tables with printf: every column left-aligned to a width (`%-15s`, widened to the longest value
for the group, topic, consumer-id and host columns), one space between columns, the last column unpadded, "-"
for a missing value, and each table preceded by an empty line (its format strings begin with a line separator).
Everything here is pure: rows in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MISSING = "-"
TopicPartition = tuple[str, int]
# Kafka's GroupState names for consumer-type groups, as --list --state accepts and prints them.
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
GROUP_TYPES = ("classic", "consumer")
ONE_ACTION = ("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
              "--delete-offsets")
NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing.In a future major release, the default "
    "behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. "
    "You should add the --dry-run option explicitly if you are scripting this command and want to keep the current "
    "default behavior without prompting.")


@dataclass(frozen=True, slots=True)
class OffsetRow:
    """One line of `--describe --offsets`: a partition of the group (or a member without partitions)."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str
    host: str
    client_id: str
    leader_epoch: int | None = None

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


@dataclass(frozen=True, slots=True)
class MemberRow:
    group: str
    consumer_id: str
    instance_id: str
    host: str
    client_id: str
    assignment: tuple[TopicPartition, ...]
    current_epoch: int | None = None  # the epochs and target: consumer (KIP-848) groups only, "-" otherwise
    target_epoch: int | None = None
    target_assignment: tuple[TopicPartition, ...] | None = None


def _text(value: object) -> str:
    return MISSING if value is None else str(value)


def _row(widths: Sequence[int], cells: Sequence[object]) -> str:
    """printf of `%-w1s %-w2s ... %s`: the last cell is not padded."""
    padded = [f"{_text(c):<{w}}" for c, w in zip(cells, widths)]
    return " ".join(padded + [_text(cells[len(widths)])]) if len(cells) > len(widths) else " ".join(padded)


def state_message(group: str, state: str | None, rows: int | None) -> tuple[str | None, str | None, bool]:
    """Kafka's shouldPrintMemberState: (stdout error line, stderr notice, print the table?)."""
    if rows is None:
        return f"\nError: The consumer group '{group}' does not exist.", None, False
    if state == "Dead":
        return f"\nError: Consumer group '{group}' does not exist.", None, False
    if state == "Empty":
        return None, f"\nConsumer group '{group}' has no active members.", rows > 0
    if state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        return None, f"\nWarning: Consumer group '{group}' is rebalancing.", rows > 0
    return None, None, rows > 0


def offsets_table(rows: Sequence[OffsetRow], verbose: bool = False) -> str:
    widths = [max([15] + [len(r.group) for r in rows]), max([15] + [len(_text(r.topic)) for r in rows]), 10]
    tail = [max([15] + [len(r.consumer_id) for r in rows]), max([15] + [len(r.host) for r in rows])]
    if verbose:
        widths += [15, 15, 15, 15] + tail
        header = ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID"]
        lines = [_row(widths, header)] + [_row(widths, [
            r.group, r.topic, r.partition, r.leader_epoch, r.offset, r.log_end_offset, r.lag, r.consumer_id, r.host,
            r.client_id]) for r in rows]
    else:
        widths += [15, 15, 15] + tail
        header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID"]
        lines = [_row(widths, header)] + [_row(widths, [
            r.group, r.topic, r.partition, r.offset, r.log_end_offset, r.lag, r.consumer_id, r.host, r.client_id])
            for r in rows]
    return "\n" + "\n".join(lines)


def assignment_text(assignment: Sequence[TopicPartition]) -> str:
    """`topic:0,1;other:2`, topics sorted, as Kafka's getAssignmentString."""
    if not assignment:
        return MISSING
    grouped: dict[str, list[int]] = {}
    for topic, index in assignment:
        grouped.setdefault(topic, []).append(index)
    return ";".join(sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in grouped.items()))


def members_table(group: str, rows: Sequence[MemberRow], verbose: bool = False) -> str:
    with_instance = any(r.instance_id for r in rows)
    widths = [max([15] + [len(r.group) for r in rows]), max([15] + [len(r.consumer_id) for r in rows])]
    if with_instance:
        widths.append(max([17] + [len(r.instance_id) for r in rows]))
    widths += [max([15] + [len(r.host) for r in rows]), max([15] + [len(r.client_id) for r in rows]), 15]
    header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else []) + [
        "HOST", "CLIENT-ID", "#PARTITIONS"]
    current = max([20] + [len(assignment_text(r.assignment)) for r in rows])
    tail_widths = [15, current, 15, 20]

    def line(cells: Sequence[object], extra: Sequence[object]) -> str:
        text = _row(widths, cells) + " "
        return text + (_row(tail_widths, extra) if verbose else "")

    lines = [line(header, ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"])]
    for r in rows:
        cells = [r.group, r.consumer_id] + ([r.instance_id] if with_instance else []) + [
            r.host, r.client_id, len(r.assignment)]
        target = MISSING if r.target_assignment is None else assignment_text(r.target_assignment)
        lines.append(line(cells, [_text(r.current_epoch), assignment_text(r.assignment), _text(r.target_epoch),
                                  target]))
    return "\n" + "\n".join(lines)


def state_table(group: str, coordinator: str, assignor: str, state: str, members: int, verbose: bool = False,
                epochs: tuple[int | None, int | None] = (None, None)) -> str:
    group_width, coordinator_width = max(15, len(group)), max(25, len(coordinator))
    strategy = assignor or MISSING
    if verbose:
        widths = [group_width, coordinator_width, 20, 20, 15, 25]
        header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                  "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
        values = [group, coordinator, strategy, state, _text(epochs[0]), _text(epochs[1]), members]
    else:
        widths = [group_width, coordinator_width, 20, 20]
        header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        values = [group, coordinator, strategy, state, members]
    return "\n" + _row(widths, header) + "\n" + _row(widths, values)


def coordinator_text(host: str, port: int, node_id: int) -> str:
    return f"{host}:{port}  ({node_id})"


def listing_table(listings: Sequence[tuple[str, str, str]], include_type: bool, include_state: bool) -> list[str]:
    """`--list --state` / `--type`: (group, type, state) rows under GROUP [TYPE] [STATE]."""
    group_width = max([15] + [len(g) for g, _, _ in listings]) + 10
    widths = [group_width] + ([20] if include_type else []) + ([20] if include_state else [])

    def line(group: str, kind: str, state: str) -> str:
        cells = [group] + ([kind] if include_type else []) + ([state] if include_state else [])
        return " ".join(f"{c:<{w}}" for c, w in zip(cells, widths))

    return [line("GROUP", "TYPE", "STATE")] + [line(*item) for item in listings]


def reset_table(plan: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """The dry-run / execute result: GROUP TOPIC PARTITION NEW-OFFSET (Kafka's printOffsetsToReset)."""
    group_width = max([15] + [len(g) for g in plan])
    topic_width = max([15] + [len(t) for offsets in plan.values() for t, _ in offsets])
    widths = [group_width, topic_width, 10]
    lines = [""]
    if plan:
        lines.append(_row(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for group, offsets in plan.items():
        for (topic, index), offset in sorted(offsets.items()):
            lines.append(_row(widths, [group, topic, index, offset]))
    return "\n".join(lines) + "\n"


def export_csv(plan: Mapping[str, Mapping[TopicPartition, int]], single_group: bool) -> str:
    """--export: `topic,partition,offset` lines (with the group first when several groups were asked for)."""
    lines = []
    for group, offsets in plan.items():
        for (topic, index), offset in sorted(offsets.items()):
            lines.append(f"{topic},{index},{offset}" if single_group else f"{group},{topic},{index},{offset}")
    return "".join(line + "\n" for line in lines)


def delete_offsets_table(results: Mapping[TopicPartition, str | None]) -> str:
    """TOPIC PARTITION STATUS after --delete-offsets (None = Successful, else the error's text)."""
    width = max([15] + [len(t) for t, _ in results])
    widths = [width, 10, 15]
    lines = ["", " ".join(f"{h:<{w}}" for h, w in zip(("TOPIC", "PARTITION", "STATUS"), widths))]
    for (topic, index), error in sorted(results.items(), key=lambda item: item[0][0] + str(item[0][1])):
        status = "Successful" if error is None else f"Error: {error}"
        lines.append(" ".join(f"{str(c):<{w}}" for c, w in zip((topic, index if index >= 0 else MISSING, status),
                                                               widths)))
    return "\n".join(lines) + "\n"
