"""The pure parts of `pykraft reassign-partitions` (Kafka's ReassignPartitionsCommand): its JSON formats, Kafka's
replica placement for --generate (AdminUtils.assignReplicasToBrokers, rack-aware or not), and its texts.

JSON: a reassignment file is {"version":1,"partitions":[{"topic":T,"partition":P,"replicas":[...],
"log_dirs":[...]}]} ("log_dirs" optional, "any" or an absolute directory per replica); a topics-to-move file is
{"version":1,"topics":[{"topic":T},...]}; a missing "version" is 1, any other is refused. Output JSON is compact, as
Kafka's Jackson writes it, partitions sorted by topic then partition. A problem is a `PlanError` whose text is
Kafka's (`No such field exists: \\`topic\\``, `Partition replica list cannot be empty`, ...).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ANY_LOG_DIR = "any"
TopicPartition = tuple[str, int]
ReplicaDir = tuple[str, int, int]  # (topic, partition, broker)


class PlanError(Exception):
    """Bad input to the tool: print `Error: <text>` and exit 1, as Kafka's tool does."""


def tp_text(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _json(node: Any) -> str:
    return json.dumps(node, separators=(",", ":"), ensure_ascii=False)


# ---- reading -------------------------------------------------------------------------------------------------------
def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise PlanError(f"The input string is not a valid JSON: {exc}") from None


def _object(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise PlanError(f"Expected JSON object, received {_json(node)}")
    return node


def _array(node: Any) -> list[Any]:
    if not isinstance(node, list):
        raise PlanError(f"Expected JSON array, received {_json(node)}")
    return node


def _field(obj: dict[str, Any], name: str) -> Any:
    if name not in obj:
        raise PlanError(f"No such field exists: `{name}`")
    return obj[name]


def _int(node: Any) -> int:
    if isinstance(node, bool) or not isinstance(node, int) or not -2**31 <= node < 2**31:
        raise PlanError(f"Expected `Integer` value, received {_json(node)}")
    return node


def _str(node: Any) -> str:
    if not isinstance(node, str):
        raise PlanError(f"Expected `String` value, received {_json(node)}")
    return node


def _version(obj: dict[str, Any]) -> None:
    version = _int(obj["version"]) if "version" in obj else 1
    if version != 1:
        raise PlanError(f"Not supported version field value {version}")


def parse_reassignment(text: str) -> tuple[list[tuple[TopicPartition, list[int]]], dict[ReplicaDir, str]]:
    """The partitions with their target replicas (in file order, duplicates kept for the checks) and the replicas
    given a log directory other than "any"."""
    root = _object(_load(text))
    _version(root)
    parts: list[tuple[TopicPartition, list[int]]] = []
    dirs: dict[ReplicaDir, str] = {}
    for entry in _array(root["partitions"]) if "partitions" in root else []:
        fields = _object(entry)
        topic, index = _str(_field(fields, "topic")), _int(_field(fields, "partition"))
        replicas = [_int(b) for b in _array(_field(fields, "replicas"))]
        log_dirs = ([_str(d) for d in _array(fields["log_dirs"])] if "log_dirs" in fields
                    else [ANY_LOG_DIR] * len(replicas))
        if len(log_dirs) != len(replicas):
            raise PlanError(f"Size of replicas list {_java_list(replicas)} is different from size of log dirs list "
                            f"{_java_list(log_dirs)} for partition {topic}-{index}")
        parts.append(((topic, index), replicas))
        dirs.update({(topic, index, b): d for b, d in zip(replicas, log_dirs) if d != ANY_LOG_DIR})
    return parts, dirs


def parse_topics(text: str) -> list[str]:
    root = _object(_load(text))
    _version(root)
    return [_str(_field(_object(t), "topic")) for t in (_array(root["topics"]) if "topics" in root else [])]


def parse_broker_list(text: str) -> list[int]:
    brokers = []
    for item in text.split(","):
        try:
            brokers.append(int(item))
        except ValueError:
            raise PlanError(f'For input string: "{item}"') from None
    return brokers


def checked_execute_plan(parts: list[tuple[TopicPartition, list[int]]]) -> dict[TopicPartition, list[int]]:
    """Kafka's parseExecuteAssignmentArgs checks, in its order."""
    if not parts:
        raise PlanError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise PlanError("Partition replica list cannot be empty")
    seen = [tp for tp, _ in parts]
    repeated = _duplicates(seen)
    if repeated:
        raise PlanError("Partition reassignment contains duplicate topic partitions: "
                        + ",".join(tp_text(tp) for tp in repeated))
    repeats = [(tp, _duplicates(replicas)) for tp, replicas in parts if _duplicates(replicas)]
    if repeats:
        raise PlanError("Partition replica lists may not contain duplicate entries: " + ". ".join(
            f"{tp_text(tp)} contains multiple entries for {','.join(map(str, ids))}" for tp, ids in repeats))
    return dict(parts)


def _duplicates(items: Sequence[Any]) -> list[Any]:
    seen, repeated = set(), []
    for item in items:
        if item in seen and item not in repeated:
            repeated.append(item)
        seen.add(item)
    return repeated


def _java_list(items: Sequence[Any]) -> str:
    return "[" + ", ".join(map(str, items)) + "]"


def check_generate_args(brokers: list[int], topics: list[str]) -> None:
    if _duplicates(brokers):
        raise PlanError(f"Broker list contains duplicate entries: {_java_list(sorted(set(_duplicates(brokers))))}")
    if _duplicates(topics):
        raise PlanError(f"List of topics to reassign contains duplicate entries: "
                        f"{_java_list(sorted(set(_duplicates(topics))))}")


# ---- Kafka's replica placement (AdminUtils) --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BrokerSlot:
    broker_id: int
    rack: str | None


def assign_replicas(brokers: Sequence[BrokerSlot], partitions: int, replication_factor: int,
                    rng: random.Random) -> dict[int, list[int]]:
    """Kafka's assignReplicasToBrokers: first replicas round-robin from a random start, the others at a shift that
    grows every len(brokers) partitions; rack-aware over a rack-alternated broker list when every broker has a
    rack."""
    if partitions <= 0:
        raise PlanError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlanError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise PlanError(f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    if all(b.rack is None for b in brokers):
        return _rack_unaware([b.broker_id for b in brokers], partitions, replication_factor, rng)
    if any(b.rack is None for b in brokers):
        raise PlanError("Not all brokers have rack information for replica rack aware assignment.")
    racks = {b.broker_id: b.rack for b in brokers if b.rack is not None}  # every one (checked above)
    return _rack_aware(racks, partitions, replication_factor, rng)


def _replica_index(first: int, shift: int, index: int, n: int) -> int:
    return (first + 1 + (shift + index) % (n - 1)) % n


def _rack_unaware(ids: list[int], partitions: int, rf: int, rng: random.Random) -> dict[int, list[int]]:
    n = len(ids)
    start, shift = rng.randrange(n), rng.randrange(n)
    result = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        result[p] = [ids[first]] + [ids[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
    return result


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers taken one rack at a time, racks in name order, brokers ascending within a rack."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[r]) for r in sorted(by_rack)]
    result: list[int] = []
    while len(result) < len(racks):
        for queue in queues:
            if queue:
                result.append(queue.pop(0))
    return result


def _rack_aware(racks: Mapping[int, str], partitions: int, rf: int, rng: random.Random) -> dict[int, list[int]]:
    arranged = rack_alternated(racks)
    n, rack_count = len(arranged), len(set(racks.values()))
    start, shift = rng.randrange(n), rng.randrange(n)
    result = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        chosen, used_racks, k = [leader], {racks[leader]}, 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, shift * rack_count, k, n)]
                k += 1
                rack = racks[broker]
                if ((rack not in used_racks or len(used_racks) == rack_count)
                        and (broker not in chosen or len(chosen) == n)):
                    chosen.append(broker)
                    used_racks.add(rack)
                    break
        result[p] = chosen
    return result


# ---- texts ---------------------------------------------------------------------------------------------------------
def reassignment_json(assignments: Mapping[TopicPartition, Sequence[int]],
                      log_dirs: Mapping[ReplicaDir, str] | None = None) -> str:
    dirs = log_dirs or {}
    partitions = [{"topic": t, "partition": p, "replicas": list(assignments[(t, p)]),
                   "log_dirs": [dirs.get((t, p, b), ANY_LOG_DIR) for b in assignments[(t, p)]]}
                  for t, p in sorted(assignments)]
    return _json({"version": 1, "partitions": partitions})


def rollback_text(proposed: Mapping[TopicPartition, Any], current: Mapping[TopicPartition, Sequence[int]]) -> str:
    kept = {tp: replicas for tp, replicas in current.items() if tp in proposed}
    return (f"Current partition replica assignment\n\n{reassignment_json(kept)}\n\n"
            f"Save this to use as the --reassignment-json-file option during rollback")


@dataclass(frozen=True, slots=True)
class PartitionState:
    current: tuple[int, ...]
    target: tuple[int, ...]
    done: bool


def status_text(states: Mapping[TopicPartition, PartitionState]) -> str:
    lines = ["Status of partition reassignment:"]
    for tp in sorted(states):
        state = states[tp]
        if not state.done:
            lines.append(f"Reassignment of partition {tp_text(tp)} is still in progress.")
        elif state.current == state.target:
            lines.append(f"Reassignment of partition {tp_text(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {tp_text(tp)}, but replica set is "
                         f"{','.join(map(str, state.current))} rather than {','.join(map(str, state.target))}.")
    return "\n".join(lines)


def list_text(ongoing: Mapping[TopicPartition, Any]) -> str:
    if not ongoing:
        return "No partition reassignments found."
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        r = ongoing[tp]
        line = f"{tp_text(tp)}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding:
            line += f" adding: {','.join(map(str, r.adding))}."
        if r.removing:
            line += f" removing: {','.join(map(str, r.removing))}."
        lines.append(line)
    return "\n".join(lines)


def plural(count: int) -> str:
    return "" if count == 1 else "s"
