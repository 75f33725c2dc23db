"""What `pykraft topics` and `pykraft brokers` print, and the parsing of kafka-topics' flag values.

The topic lines are Kafka 4's kafka-topics (TopicCommand): `Created topic NAME.`, the sorted names of --list, and
for --describe one header line per topic and one tab-indented line per partition. Configs are the topic's
non-default configs (DescribeConfigs), `name=value` joined by commas, as Kafka prints them. Elr and LastKnownElr are empty: the
Metadata API carries no ELR (Kafka prints N/A only when its DescribeTopicPartitions answer lacks the field).
Everything here is pure: values in, strings out; bad flag values raise `FlagError` with Kafka's wording.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from pykraft.admin.model import BrokerInfo, PartitionInfo, TopicDescription
from pykraft.records.uuids import uuid_to_kafka_str

ERROR_PREFIX = "Error while executing topic command : "
COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                     "could collide. To avoid issues it is best to use either, but not both.")
MAX_REPLICATION_FACTOR = 32767  # Short.MAX_VALUE: the field is an int16


class FlagError(ValueError):
    """A flag value Kafka's tool refuses; `str()` is the line to print."""


def created_line(name: str) -> str:
    return f"Created topic {name}."


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


def topic_header(topic: TopicDescription, configs: Sequence[tuple[str, str | None]] = ()) -> str:
    topic_id = "" if topic.topic_id is None else f"\tTopicId: {uuid_to_kafka_str(topic.topic_id)}"
    shown = ",".join(f"{name}={value}" for name, value in configs)
    return (f"Topic: {topic.name}{topic_id}\tPartitionCount: {len(topic.partitions)}"
            f"\tReplicationFactor: {topic.replication_factor}\tConfigs: {shown}")


def partition_line(topic: str, partition: PartitionInfo) -> str:
    leader = "none" if partition.leader is None else str(partition.leader)
    return (f"\tTopic: {topic}\tPartition: {partition.partition}\tLeader: {leader}"
            f"\tReplicas: {_ids(partition.replicas)}\tIsr: {_ids(partition.isr)}\tElr: \tLastKnownElr: ")


def is_unavailable(partition: PartitionInfo, live_brokers: set[int]) -> bool:
    """Kafka's hasUnavailablePartitions: no leader, or a leader that is not a live broker."""
    return partition.leader is None or partition.leader not in live_brokers


def describe_lines(topics: Sequence[TopicDescription], live_brokers: set[int], *, under_replicated: bool = False,
                   unavailable: bool = False,
                   configs: Mapping[str, Sequence[tuple[str, str | None]]] | None = None) -> list[str]:
    """Kafka's describe: with a partition filter, only the matching partitions and no topic header lines."""
    filtered = under_replicated or unavailable
    lines = []
    for topic in topics:
        if not filtered and topic.partitions:
            lines.append(topic_header(topic, (configs or {}).get(topic.name, ())))
        for partition in topic.partitions:
            if (not filtered or (under_replicated and partition.under_replicated)
                    or (unavailable and is_unavailable(partition, live_brokers))):
                lines.append(partition_line(topic.name, partition))
    return lines


def topic_filter(pattern: str | None, exclude_internal: bool):
    """Kafka's IncludeList: a regular expression matched against the whole name (`,` separates alternatives;
    surrounding quotes are dropped), plus --exclude-internal."""
    regex = None
    if pattern is not None:
        text = pattern.strip().strip("'\"").replace(",", "|")
        try:
            regex = re.compile(text)
        except re.error as exc:
            raise FlagError(f"{ERROR_PREFIX}Invalid topic pattern {pattern!r}: {exc}") from None

    def allowed(topic: TopicDescription) -> bool:
        if exclude_internal and topic.is_internal:
            return False
        return regex is None or regex.fullmatch(topic.name) is not None

    return allowed


def parse_replica_assignment(text: str) -> list[list[int]]:
    """`1:2,2:3`: partition i gets the brokers of the i-th comma-separated item (Kafka's parseReplicaAssignment)."""
    assignment: list[list[int]] = []
    for index, item in enumerate(text.split(",")):
        brokers = []
        for part in item.split(":"):
            part = part.strip()
            if not re.fullmatch(r"[+-]?\d+", part):
                raise FlagError(f'{ERROR_PREFIX}For input string: "{part}"')
            brokers.append(int(part))
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise FlagError(f"{ERROR_PREFIX}Partition replica lists may not contain duplicate entries: "
                            f"{_ids(duplicates)}")
        assignment.append(brokers)
        if len(brokers) != len(assignment[0]):
            raise FlagError(f"{ERROR_PREFIX}Partition {index} has different replication factor: "
                            f"[{', '.join(str(b) for b in brokers)}]")
    return assignment


def parse_configs(items: Sequence[str]) -> dict[str, str]:
    configs = {}
    for item in items:
        pair = re.split(r"\s*=\s*", item)
        if len(pair) != 2:
            raise FlagError('requirement failed: Invalid topic config: all configs to be added must be in the '
                            'format "key=val".')
        configs[pair[0].strip()] = pair[1].strip()
    return configs


def broker_table(brokers: Sequence[BrokerInfo]) -> list[str]:
    rows = [("ID", "HOST", "PORT", "RACK", "STATE")] + [
        (str(b.broker_id), b.host, str(b.port), b.rack if b.rack is not None else "-",
         "fenced" if b.fenced else "unfenced") for b in sorted(brokers, key=lambda b: b.broker_id)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def broker_json(brokers: Sequence[BrokerInfo]) -> str:
    return json.dumps([{"id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack, "fenced": b.fenced}
                       for b in sorted(brokers, key=lambda b: b.broker_id)])
