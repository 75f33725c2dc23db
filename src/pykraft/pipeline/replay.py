"""One cluster's committed metadata records replayed by the controller's own state machine (QuorumController,
the replay every controller replica and `controller/log_replay.py` run), turned into rows: the image at the
stop offset, the history of every partition and broker, and the KIP-841 violations at each committed offset.

No Spark here: `replay_cluster` takes the records of one cluster (snapshot records first, then log records in
offset order) and returns plain dict rows; jobs.py runs it per cluster with `applyInPandas`, so clusters replay
in parallel on the executors and nothing is collected to the driver.

KIP-841 uses the controller's eligibility rule (`ClusterControl.is_active`: registered, unfenced, not in
controlled shutdown) with its one exception (partition_change.py): the last ISR member of a partition is kept as
its SOLE member, leaderless (leader -1), when it is fenced or shutting down.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pykraft.controller.controller import ControllerConfig, QuorumController
from pykraft.controller.log_replay import decode_value
from pykraft.records.uuids import uuid_to_kafka_str

MECHANISM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}

PARTITION_TYPES = frozenset({2, 3, 5, 9})  # Topic, Partition, PartitionChange, RemoveTopic
BROKER_TYPES = frozenset({0, 1, 7, 8, 17})  # Register, Unregister, Fence, Unfence, BrokerRegistrationChange

REPLAY_COLUMNS: list[tuple[str, str]] = [
    ("cluster_id", "string"), ("kind", "string"), ("offset", "bigint"), ("timestamp", "bigint"),
    ("topic", "string"), ("topic_id", "string"), ("partition", "int"), ("broker_id", "int"), ("leader", "int"),
    ("isr", "array<int>"), ("replicas", "array<int>"), ("adding_replicas", "array<int>"),
    ("removing_replicas", "array<int>"), ("leader_epoch", "int"), ("partition_epoch", "int"),
    ("broker_epoch", "bigint"), ("fenced", "boolean"), ("in_controlled_shutdown", "boolean"), ("state", "string"),
    ("name", "string"), ("level", "int"), ("detail", "string"),
]
REPLAY_DDL = ", ".join(f"`{n}` {t}" for n, t in REPLAY_COLUMNS)


@dataclass(frozen=True, slots=True)
class InputRecord:
    offset: int
    base_offset: int
    timestamp: int
    value: bytes | None
    from_snapshot: bool


def new_controller(cluster_id: str) -> QuorumController:
    return QuorumController(ControllerConfig(node_id=-1, cluster_id=cluster_id), random.Random(0))


def broker_state(registration: Any) -> str:
    if registration is None:
        return "UNREGISTERED"
    if registration.in_controlled_shutdown:
        return "CONTROLLED_SHUTDOWN"
    return "FENCED" if registration.fenced else "UNFENCED"


def replay_cluster(cluster_id: str, records: Iterable[InputRecord], stop_offset: int) -> Iterator[dict[str, Any]]:
    """Rows of kinds: partition / broker (history, one per change), kip841 (violations), replay_error, and
    image_broker / image_partition / image_feature / image_user / image_acl (the image after every record up to
    `stop_offset`).

    KIP-841 is checked where the log commits, at batch ends: the controller writes a broker's fencing and the
    ISR shrinks it causes in one batch, so the image between two records of a batch is never visible."""
    controller = new_controller(cluster_id)
    snapshot = [r for r in records if r.from_snapshot]
    log = [r for r in records if not r.from_snapshot]
    if snapshot:
        loaded = [d for d in (decode_value(r.value) for r in snapshot) if d is not None]
        controller.load_snapshot(loaded, snapshot[0].offset)
    base = {"cluster_id": cluster_id}
    batch = _BatchChanges()
    for record in sorted(log, key=lambda r: r.offset):
        if record.offset > stop_offset:
            break
        if record.base_offset != batch.base_offset:
            yield from batch.check(controller)
            batch = _BatchChanges(record.base_offset)
        decoded = decode_value(record.value)
        if decoded is None:
            continue
        errors = controller.metadata_errors
        controller.replay(decoded, record.offset)
        at = dict(base, offset=record.offset, timestamp=record.timestamp)
        batch.at = at
        if controller.metadata_errors != errors:
            yield dict(at, kind="replay_error", detail=f"{type(decoded).__name__} does not apply to the image")
            continue
        yield from _changes(controller, decoded, at, batch)
    yield from batch.check(controller)
    yield from image_rows(controller, dict(base, offset=stop_offset))


class _BatchChanges:
    """What the records of one batch touched, checked against KIP-841 once the batch is applied."""

    def __init__(self, base_offset: int = -1) -> None:
        self.base_offset = base_offset
        self.at: dict[str, Any] = {}
        self.partitions: set[tuple[Any, int]] = set()
        self.brokers: set[int] = set()

    def check(self, controller: QuorumController) -> Iterator[dict[str, Any]]:
        topics = controller.replication.topics
        touched = set(self.partitions)
        if self.brokers:
            for topic in topics.values():
                for pid, p in topic.partitions.items():
                    if p.leader in self.brokers or self.brokers.intersection(p.isr):
                        touched.add((topic.topic_id, pid))
        for topic_id, pid in sorted(touched, key=lambda t: (str(t[0]), t[1])):
            info = topics.get(topic_id)
            if info is not None and pid in info.partitions:
                yield from _kip841(controller, info.name, pid, info.partitions[pid], self.at)


def _changes(controller: QuorumController, record: Any, at: dict[str, Any],
             batch: _BatchChanges) -> Iterator[dict[str, Any]]:
    key = int(record.__api_key__)
    if key in BROKER_TYPES:
        broker_id = int(getattr(record, "broker_id", getattr(record, "id", -1)))
        registration = controller.cluster.brokers.get(broker_id)
        batch.brokers.add(broker_id)
        yield dict(at, **_broker_columns(broker_id, registration), kind="broker", detail=type(record).__name__)
    elif key in (3, 5):  # Partition, PartitionChange
        topic = controller.replication.topics.get(record.topic_id)
        if topic is None or int(record.partition_id) not in topic.partitions:
            return
        pid = int(record.partition_id)
        batch.partitions.add((topic.topic_id, pid))
        yield dict(at, **_partition_columns(topic, pid, topic.partitions[pid]), kind="partition",
                   detail=type(record).__name__)


def kip841_problem(cluster: Any, partition: Any) -> str | None:
    """Why `partition` breaks KIP-841 under the registrations `cluster`, None when it does not."""
    if partition.leader != -1 and not cluster.is_active(partition.leader):
        return f"leader {partition.leader} is {broker_state(cluster.brokers.get(partition.leader)).lower()}"
    barred = [b for b in partition.isr if not cluster.is_active(b)]
    if not barred or (len(partition.isr) == 1 and partition.leader == -1):
        return None  # the sole-member exception: the last ISR member kept, leaderless
    return (f"isr {list(partition.isr)} (leader {partition.leader}) holds "
            f"{broker_state(cluster.brokers.get(barred[0])).lower()} broker {barred[0]}")


def _kip841(controller: QuorumController, topic: str, pid: int, p: Any, at: dict[str, Any]) -> Iterator[dict]:
    problem = kip841_problem(controller.cluster, p)
    if problem is not None:
        yield dict(at, kind="kip841", topic=topic, partition=pid, leader=p.leader, isr=list(p.isr), detail=problem)


def _broker_columns(broker_id: int, registration: Any) -> dict[str, Any]:
    if registration is None:
        return {"broker_id": broker_id, "state": "UNREGISTERED"}
    return {"broker_id": broker_id, "broker_epoch": registration.epoch, "fenced": registration.fenced,
            "in_controlled_shutdown": registration.in_controlled_shutdown, "state": broker_state(registration)}


def _partition_columns(topic: Any, pid: int, p: Any) -> dict[str, Any]:
    return {"topic": topic.name, "topic_id": uuid_to_kafka_str(topic.topic_id), "partition": pid,
            "leader": p.leader, "isr": list(p.isr), "replicas": list(p.replicas),
            "adding_replicas": list(p.adding_replicas), "removing_replicas": list(p.removing_replicas),
            "leader_epoch": p.leader_epoch,
            "partition_epoch": p.partition_epoch}


def image_rows(controller: QuorumController, at: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for broker_id, registration in sorted(controller.cluster.brokers.items()):
        yield dict(at, **_broker_columns(broker_id, registration), kind="image_broker")
    for topic in sorted(controller.replication.topics.values(), key=lambda t: t.name):
        for pid, p in sorted(topic.partitions.items()):
            yield dict(at, **_partition_columns(topic, pid, p), kind="image_partition")
    for name, level in sorted(controller.features.finalized.items()):
        yield dict(at, kind="image_feature", name=name, level=int(level))
    yield from security_rows(controller, at)


def security_rows(controller: QuorumController, at: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The users with SCRAM credentials (name; mechanisms and iterations in `detail`, never a salt or a key) and the
    ACLs (principal in `name`, ALLOW/DENY in `state`, the pattern and operation in `detail`, kafka-acls.sh's words)."""
    for user, infos in controller.scram.users().items():
        mechanisms = ", ".join(f"{MECHANISM_NAMES.get(m, m)}=iterations={i}" for m, i in infos)
        yield dict(at, kind="image_user", name=user, detail=mechanisms)
    for acl in controller.acls.acls():
        yield dict(at, kind="image_acl", name=acl.principal, state=acl.permission.name,
                   detail=f"{acl.pattern_text()} host={acl.host} operation={acl.operation.name}")
