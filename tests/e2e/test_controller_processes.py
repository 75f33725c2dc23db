"""Issue 7's multi-process checks: 3 controllers and 3 brokers as real processes on 127.0.0.1.

What the cluster decided is read from the controllers' metadata logs on disk (tests/e2e/metadata_probe.py replays
them into the same image classes the controller uses), so the assertions are about committed records, not about
what one process happens to print. Waits are bounded by deadlines and never assert durations.
"""

from __future__ import annotations

import json
import signal

import pytest
from kio.schema.alter_partition.v3 import request as ap
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from pykraft.node.local_cluster import LocalCluster
from pykraft.protocol.errors import ErrorCode

from .helpers import FAST_TIMEOUTS, leader_status, wait_for
from .metadata_probe import ask, image_of, log_records

SESSION_MS = 3000
BROKER_TIMING = {
    **FAST_TIMEOUTS,
    "broker.session.timeout.ms": str(SESSION_MS),
    "broker.heartbeat.interval.ms": "300",
}
TOPIC = "orders"
PARTITIONS = 6
# Fencing waits up to a session timeout after the last heartbeat, then the fencing record must commit; the rest
# of the margin absorbs a loaded CI machine. Not a performance bound: the test only fails if it never happens.
FENCE_DEADLINE_S = 30.0


@pytest.fixture
def cluster(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=3, brokers=3, properties=BROKER_TIMING)
    cluster.format_all()
    cluster.start_all()
    yield cluster
    cluster.stop_all(timeout=20)


def _leader_image(cluster: LocalCluster):
    status = leader_status(cluster, cluster.controller_ids)
    assert status is not None
    return image_of(cluster.nodes[int(status["LeaderId"])])


def _all_unfenced(cluster: LocalCluster, brokers: list[int]):
    image = _leader_image(cluster)
    return image if all(image.is_active(b) for b in brokers) else None


def _create_topic(cluster: LocalCluster, through: int) -> None:
    """Through a broker: it forwards CreateTopics to the active controller."""
    result = cluster.cli("topics", "create", "--bootstrap-server", f"127.0.0.1:{cluster.nodes[through].port}",
                         "--topic", TOPIC, "--partitions", str(PARTITIONS), "--replication-factor", "3")
    assert result.stdout.strip() == f"Created topic {TOPIC}."


def _brokers_listed(cluster: LocalCluster) -> dict[int, bool]:
    """`pykraft brokers list --json` against the controllers: broker id -> fenced."""
    result = cluster.cli("brokers", "list", "--json", "--bootstrap-controller", _controllers_arg(cluster))
    return {int(b["id"]): b["fenced"] for b in json.loads(result.stdout)}


def _described(cluster: LocalCluster, broker: int) -> list[str] | None:
    result = cluster.cli("topics", "describe", "--topic", TOPIC, "--bootstrap-server",
                         f"127.0.0.1:{cluster.nodes[broker].port}", check=False)
    return result.stdout.splitlines() if result.returncode == 0 else None


def _controllers_arg(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[c].port}" for c in cluster.controller_ids if cluster.nodes[c].is_running())


def _partitions(image):
    topic_id = image.topic_id(TOPIC)
    assert topic_id is not None
    return {pid: image.partition(topic_id, pid) for pid in range(PARTITIONS)}


def _kip841_holds(image, broker: int) -> bool:
    """`broker` (fenced or shutting down) leads nothing and is in no ISR, except as the sole member of a
    leaderless partition (the controller keeps the last ISR member: controller/partition_change.py)."""
    for partition in _partitions(image).values():
        if partition.leader == broker:
            return False
        if broker in partition.isr and partition.isr != (broker,):
            return False
    return True


def _fenced_and_out(cluster: LocalCluster, broker: int):
    image = _leader_image(cluster)
    registration = image.registration(broker)
    return image if registration is not None and registration.fenced and _kip841_holds(image, broker) else None


def test_brokers_are_fenced_shut_down_and_refused_by_kip_841_on_a_running_cluster(cluster):
    brokers = cluster.broker_ids
    wait_for(lambda: _all_unfenced(cluster, brokers), "every broker registered and unfenced")
    _create_topic(cluster, through=brokers[0])
    image = wait_for(lambda: _leader_image(cluster) if _leader_image(cluster).topic_id(TOPIC) else None,
                     "the topic in the committed image")
    for partition in _partitions(image).values():
        assert sorted(partition.replicas) == brokers and sorted(partition.isr) == brokers
        assert partition.leader in brokers
    # The broker that forwarded the creation describes the topic from its own metadata cache, Kafka's format.
    described = wait_for(lambda: _described(cluster, brokers[0]), "the topic in the broker's metadata cache")
    assert described[0].startswith(f"Topic: {TOPIC}\tTopicId: ") and f"PartitionCount: {PARTITIONS}" in described[0]
    assert len(described) == 1 + PARTITIONS

    # SIGKILL a broker: no more heartbeats, the active controller fences it and takes it out of every ISR.
    victim, survivor, graceful = brokers
    cluster.kill(victim)
    image = wait_for(lambda: _fenced_and_out(cluster, victim), f"broker {victim} fenced and out of the ISRs",
                     timeout=FENCE_DEADLINE_S)
    assert all(p.leader in (survivor, graceful) for p in _partitions(image).values())
    assert _brokers_listed(cluster) == {victim: True, survivor: False, graceful: False}

    # An AlterPartition that names the fenced broker is refused with INELIGIBLE_REPLICA (KIP-841 invariant 1),
    # even though it is sent by the genuine leader with its current epochs.
    topic_id = image.topic_id(TOPIC)
    pid, partition = next((pid, p) for pid, p in _partitions(image).items() if p.leader == survivor)
    survivor_epoch = image.broker_epoch(survivor)
    request = ap.AlterPartitionRequest(broker_id=BrokerId(survivor), broker_epoch=i64(survivor_epoch), topics=(
        ap.TopicData(topic_id=topic_id, partitions=(ap.PartitionData(
            partition_index=i32(pid), leader_epoch=i32(partition.leader_epoch),
            new_isr_with_epochs=tuple(ap.BrokerState(broker_id=BrokerId(b), broker_epoch=i64(image.broker_epoch(b)))
                                      for b in (*partition.isr, victim)),
            leader_recovery_state=i8(0), partition_epoch=i32(partition.partition_epoch)),)),))
    leader_id = int(leader_status(cluster, cluster.controller_ids)["LeaderId"])
    response = ask(cluster.nodes[leader_id], request)
    assert response.error_code == ErrorCode.NONE
    assert response.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    assert victim not in _partitions(_leader_image(cluster))[pid].isr

    # SIGTERM a broker: controlled shutdown moves its leaderships away, then the controller lets it exit.
    led_before = [pid for pid, p in _partitions(_leader_image(cluster)).items() if p.leader == graceful]
    assert led_before, "the survivors share the leaderships, so the broker shutting down leads some"
    cluster.signal(graceful, signal.SIGTERM)
    assert cluster.nodes[graceful].process.wait(timeout=60) == 0
    assert "controlled shutdown done" in cluster.server_log(graceful)
    leader_id = int(leader_status(cluster, cluster.controller_ids)["LeaderId"])
    records = log_records(cluster.nodes[leader_id])
    shut_down_at = _first_offset(records, lambda r: _registration_change(r, graceful, "in_controlled_shutdown"))
    moved_at = [_first_offset(records, lambda r, pid=pid: _leader_moved_off(r, pid, graceful), after=shut_down_at)
                for pid in led_before]
    fenced_at = _first_offset(records, lambda r: _registration_change(r, graceful, "fenced"), after=shut_down_at)
    assert shut_down_at is not None and None not in moved_at and fenced_at is not None
    assert max(moved_at) < fenced_at, "every leadership moved before the broker was let go"
    assert _kip841_holds(_leader_image(cluster), graceful)

    # A broker that comes back registers anew, is unfenced, and its leader puts it back into the ISRs through
    # AlterPartition (the KIP-497 path, fed by MetadataOnlyProgress until the data plane exists).
    cluster.start(victim)
    wait_for(lambda: all(victim in p.isr for p in _partitions(_leader_image(cluster)).values()),
             f"broker {victim} back in every ISR", timeout=60)


def test_a_new_active_controller_keeps_fencing(cluster):
    brokers = cluster.broker_ids
    wait_for(lambda: _all_unfenced(cluster, brokers), "every broker registered and unfenced")
    _create_topic(cluster, through=brokers[1])
    old_leader = int(wait_for(lambda: leader_status(cluster, cluster.controller_ids), "a leader")["LeaderId"])
    cluster.kill(old_leader)
    remaining = [c for c in cluster.controller_ids if c != old_leader]
    wait_for(lambda: (s := leader_status(cluster, remaining)) and int(s["LeaderId"]) != old_leader,
             "a new active controller")
    # The brokers find it through the metadata log and keep their sessions: none is fenced by the failover.
    wait_for(lambda: _all_unfenced(cluster, brokers), "every broker unfenced under the new controller")
    victim = brokers[2]
    cluster.kill(victim)
    image = wait_for(lambda: _fenced_and_out(cluster, victim), f"broker {victim} fenced by the new controller",
                     timeout=FENCE_DEADLINE_S)
    assert all(image.is_active(b) for b in brokers if b != victim)


def _first_offset(records, match, after: int | None = None) -> int | None:
    return next((offset for offset, record in records if (after is None or offset > after) and match(record)), None)


def _registration_change(record, broker: int, what: str) -> bool:
    """A BrokerRegistrationChangeRecord (type 17) for `broker` that sets `what`: "fenced" (Fenced=1) or
    "in_controlled_shutdown" (InControlledShutdown=1)."""
    if int(record.__api_key__) != 17 or int(record.broker_id) != broker:
        return False
    return int(getattr(record, "fenced", 0)) == 1 if what == "fenced" else int(
        getattr(record, "in_controlled_shutdown", 0)) == 1


def _leader_moved_off(record, partition_id: int, broker: int) -> bool:
    """A PartitionChangeRecord (type 5) of `partition_id` that names a new leader other than `broker`."""
    return (int(record.__api_key__) == 5 and int(record.partition_id) == partition_id
            and int(record.leader) not in (-2, broker))
