"""The QuorumController inside three in-process runtimes: registration over the wire, the image on every replica,
unfencing, topic placement, NOT_CONTROLLER on a follower and on lost leadership, fail-over keeping the image."""

from __future__ import annotations

import asyncio
import datetime
import uuid

import pytest
from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.broker_registration.v4 import request as reg_v4
from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32, i32Timedelta, i64, u16

from pykraft.controller.controller import CREATE_TOPICS
from pykraft.controller.features import LATEST_METADATA_VERSION
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime, read_bootstrap_records
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.metadata.frame import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.no_op_record import NoOpRecordV0
from pykraft.records.metadata.schema.register_broker_record import RegisterBrokerRecordV3

from .helpers import CLUSTER_ID, call, free_ports, leader_of, make_config, produce_request, wait_for

IDS = (1, 2, 3)
BROKER = 7


def registration(broker_id: int = BROKER, cluster_id: str = CLUSTER_ID) -> reg_v4.BrokerRegistrationRequest:
    return reg_v4.BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id), cluster_id=cluster_id, incarnation_id=uuid.UUID(int=broker_id << 64 | 1),
        listeners=(reg_v4.Listener(name="PLAINTEXT", host="localhost", port=u16(9092), security_protocol=i16(0)),),
        features=(reg_v4.Feature(name="metadata.version", min_supported_version=i16(7),
                                 max_supported_version=i16(LATEST_METADATA_VERSION)),),
        rack=None, log_dirs=(uuid.UUID(int=(7 << 96) | broker_id),))


def heartbeat(epoch: int, offset: int, broker_id: int = BROKER) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=BrokerId(broker_id), broker_epoch=i64(epoch),
                                  current_metadata_offset=i64(offset), want_fence=False, want_shut_down=False)


def create_topic(name: str, partitions: int) -> ct_req.CreateTopicsRequest:
    topic = ct_req.CreatableTopic(name=TopicName(name), num_partitions=i32(partitions),
                                  replication_factor=i16(1), assignments=(), configs=())
    return ct_req.CreateTopicsRequest(topics=(topic,), timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
                                      validate_only=False)


def host(runtime: NodeRuntime) -> ControllerHost:
    assert isinstance(runtime.state_machine, ControllerHost)
    return runtime.state_machine


async def start_cluster(tmp_path, extra: str = "") -> tuple[dict[int, int], dict[int, NodeRuntime]]:
    ports = dict(zip(IDS, free_ports(len(IDS))))
    runtimes = {i: controller_runtime(make_config(tmp_path, i, ports, extra=extra)) for i in IDS}
    for runtime in runtimes.values():
        await runtime.start()
    return ports, runtimes


async def active_controller(running: dict[int, NodeRuntime]) -> NodeRuntime:
    def ready() -> bool:
        leader = leader_of(list(running.values()))
        return leader is not None and host(leader).controller.active and host(leader).controller.features.finalized
    await wait_for(ready)
    leader = leader_of(list(running.values()))
    assert leader is not None
    return leader


def register_broker_offset(runtime: NodeRuntime, broker_id: int) -> int:
    """The offset of the last RegisterBrokerRecord of `broker_id` in `runtime`'s log."""
    found = -1
    for batch in iter_batches(runtime.core.log.read(0, 2**62).records, verify_crc=False):
        if batch.is_control:
            continue
        for record in batch.records():
            try:
                decoded = decode_metadata_record(bytes(record.value or b""))
            except ValueError:
                continue
            if isinstance(decoded, RegisterBrokerRecordV3) and int(decoded.broker_id) == broker_id:
                found = record.offset
    return found


async def stop_all(running: dict[int, NodeRuntime]) -> None:
    await asyncio.gather(*(runtime.stop(graceful=False) for runtime in running.values()))


def same_image(restarted: tuple, before: tuple) -> bool:
    """The controller images equal, but for the controllers' registrations: a restarted controller registers again
    with a new incarnation id (ControllerRegistration at every start, as Kafka's controllers do)."""
    return restarted[:2] + restarted[3:] == before[:2] + before[3:]


@pytest.mark.asyncio
async def test_registration_heartbeat_topics_follower_refusal_and_fail_over(tmp_path):
    ports, runtimes = await start_cluster(tmp_path)
    running = dict(runtimes)
    try:
        leader = await active_controller(running)
        leader_id = leader.config.node_id
        follower_id = next(i for i in IDS if i != leader_id)

        refused = await call(ports[follower_id], registration())
        assert refused.error_code == ErrorCode.NOT_CONTROLLER

        answer = await call(ports[leader_id], registration())
        assert answer.error_code == ErrorCode.NONE
        assert answer.broker_epoch == register_broker_offset(leader, BROKER) >= 0
        await wait_for(lambda: all(host(r).controller.cluster.registration(BROKER) is not None
                                   for r in running.values()))
        assert all(host(r).controller.cluster.registration(BROKER).fenced for r in running.values())

        beat = await call(ports[leader_id], heartbeat(int(answer.broker_epoch), leader.core.high_watermark))
        assert beat.error_code == ErrorCode.NONE and beat.is_caught_up and not beat.is_fenced
        await wait_for(lambda: all(not host(r).controller.cluster.registration(BROKER).fenced
                                   for r in running.values()))
        assert (await call(ports[follower_id], heartbeat(int(answer.broker_epoch), 0))).error_code \
            == ErrorCode.NOT_CONTROLLER

        # CreateTopics is not in the wire registry yet (ApiKey lacks it): served through the host in-process.
        created = await host(leader).request(CREATE_TOPICS, create_topic("orders", 3))
        assert created.topics[0].error_code == ErrorCode.NONE and created.topics[0].num_partitions == 3
        refused_topic = await host(running[follower_id]).request(CREATE_TOPICS, create_topic("other", 1))
        assert refused_topic.topics[0].error_code == ErrorCode.NOT_CONTROLLER
        await wait_for(lambda: all("orders" in host(r).controller.replication.topics_by_name
                                   for r in running.values()))
        for runtime in running.values():
            topic = host(runtime).controller.replication.topics[created.topics[0].topic_id]
            assert sorted(topic.partitions) == [0, 1, 2]
            assert all(list(p.replicas) == [BROKER] and p.leader == BROKER for p in topic.partitions.values())

        # The quickstart's raw Produce values are not metadata records: skipped and counted, never fatal.
        produced = (await call(ports[leader_id], produce_request([b"hello", b"world"]))).responses[0]
        assert produced.partition_responses[0].error_code == ErrorCode.NONE
        await wait_for(lambda: all(host(r).undecodable_records == 2 for r in running.values()))

        image = host(leader).controller.image()
        await wait_for(lambda: all(host(r).controller.image() == image for r in running.values()))
        await leader.stop()
        del running[leader_id]
        new_leader = await active_controller(running)
        assert new_leader.config.node_id != leader_id
        assert host(new_leader).controller.image() == image
        beat = await call(ports[new_leader.config.node_id], heartbeat(int(answer.broker_epoch),
                                                                      new_leader.core.high_watermark))
        assert beat.error_code == ErrorCode.NONE and not beat.is_fenced
    finally:
        await stop_all(running)


@pytest.mark.asyncio
async def test_leadership_lost_before_commit_answers_not_controller_and_drops_the_uncommitted_replay(tmp_path):
    ports, runtimes = await start_cluster(tmp_path)
    running = dict(runtimes)
    try:
        leader = await active_controller(running)
        leader_id = leader.config.node_id
        assert (await call(ports[leader_id], produce_request([b"raw"]))).responses[0].partition_responses[0] \
            .error_code == ErrorCode.NONE
        await wait_for(lambda: host(leader).undecodable_records == 1)
        for node_id in [i for i in IDS if i != leader_id]:  # no majority: nothing the leader writes can commit
            await running.pop(node_id).stop(graceful=False)
        pending = asyncio.ensure_future(call(ports[leader_id], registration(), timeout_ms=15_000))
        await wait_for(lambda: host(leader).controller.cluster.registration(BROKER) is not None)  # replayed at once
        snapshot = [decode_metadata_record(v) for v in host(leader).snapshot_records()]
        assert snapshot and not any(isinstance(r, RegisterBrokerRecordV3) for r in snapshot)  # committed image only
        answer = await pending  # check-quorum makes the leader resign: the write cannot commit
        assert answer.error_code == ErrorCode.NOT_CONTROLLER
        assert not host(leader).controller.active
        assert host(leader).controller.cluster.registration(BROKER) is None  # rebuilt from committed state
        assert host(leader).rebuilds == 1
        assert host(leader).undecodable_records == 1  # the rebuild read the raw value again without counting it
    finally:
        await stop_all(running)


def test_bootstrap_checkpoint_records_are_read_and_a_missing_file_means_none(tmp_path):
    from pykraft.storage.format import FormatPlan, bootstrap_checkpoint_bytes

    assert read_bootstrap_records(str(tmp_path)) == ()
    (tmp_path / "bootstrap.checkpoint").write_bytes(bootstrap_checkpoint_bytes(FormatPlan(21, 1, ()), 0))
    records = read_bootstrap_records(str(tmp_path))
    assert [(r.name, int(r.feature_level)) for r in records] == [("metadata.version", 21), ("kraft.version", 1)]


def test_apply_skips_and_counts_values_that_are_not_metadata_records():
    from pykraft.controller.controller import ControllerConfig

    controller_host = ControllerHost(ControllerConfig(node_id=1, cluster_id=CLUSTER_ID))
    good = encode_metadata_record(FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21)))
    batch = encode_batch([SimpleRecord(value=b"raw"), SimpleRecord(value=good), SimpleRecord(value=good[:-1])],
                         base_offset=10, partition_leader_epoch=1, timestamp_ms=0)
    controller_host.apply(memoryview(batch), 10, 12)
    assert controller_host.undecodable_records == 2
    assert controller_host.controller.features.finalized == {"metadata.version": 21}
    assert controller_host.committed_offset == 12


def noop_records(runtime: NodeRuntime) -> int:
    count = 0
    for batch in iter_batches(runtime.core.log.read(0, 2**62).records, verify_crc=False):
        if not batch.is_control:
            count += sum(1 for r in batch.records() if bytes(r.value or b"")[:3] == _NOOP_FRAME)
    return count


_NOOP_FRAME = encode_metadata_record(NoOpRecordV0())[:3]


@pytest.mark.asyncio
async def test_ticks_write_noop_records_and_fence_a_broker_whose_session_expired(tmp_path):
    ports = dict(zip((1,), free_ports(1)))
    runtime = controller_runtime(make_config(tmp_path, 1, ports, extra="broker.session.timeout.ms=400\n"
                                                                        "metadata.max.idle.interval.ms=50"))
    await runtime.start()
    try:
        leader = await active_controller({1: runtime})
        answer = await call(ports[1], registration())
        beat = await call(ports[1], heartbeat(int(answer.broker_epoch), leader.core.high_watermark))
        assert not beat.is_fenced
        hwm = runtime.core.high_watermark
        await wait_for(lambda: noop_records(runtime) >= 2 and runtime.core.high_watermark > hwm)
        # No more heartbeats: the session expires and a tick fences the broker.
        await wait_for(lambda: host(runtime).controller.cluster.registration(BROKER).fenced)
        assert host(runtime).controller.heartbeats.timed_out_heartbeats >= 1
    finally:
        await runtime.stop(graceful=False)


@pytest.mark.asyncio
async def test_snapshot_of_the_controller_image_is_loaded_at_restart(tmp_path):
    ports = dict(zip((1,), free_ports(1)))
    extra = "metadata.log.max.record.bytes.between.snapshots=1\nmetadata.max.idle.interval.ms=0"
    runtime = controller_runtime(make_config(tmp_path, 1, ports, extra=extra))
    await runtime.start()
    try:
        leader = await active_controller({1: runtime})
        answer = await call(ports[1], registration())
        await call(ports[1], heartbeat(int(answer.broker_epoch), leader.core.high_watermark))
        created = await host(runtime).request(CREATE_TOPICS, create_topic("snap", 2))
        assert created.topics[0].error_code == ErrorCode.NONE
        await wait_for(lambda: runtime.snapshots.snapshotted_end > host(runtime).controller.last_applied_offset)
        image = host(runtime).controller.image()
    finally:
        await runtime.stop()
    restarted = controller_runtime(make_config(tmp_path, 1, ports, extra=extra))
    await restarted.start()
    try:
        await active_controller({1: restarted})
        assert host(restarted).snapshots_loaded == 1  # started from the snapshot, not only from the log
        assert same_image(host(restarted).controller.image(), image)
        assert host(restarted).undecodable_records == 0
    finally:
        await restarted.stop(graceful=False)


@pytest.mark.asyncio
async def test_bad_requests_get_error_codes_and_the_node_keeps_serving(tmp_path, monkeypatch):
    ports = dict(zip((1,), free_ports(1)))
    runtime = controller_runtime(make_config(tmp_path, 1, ports))
    await runtime.start()
    try:
        await active_controller({1: runtime})
        foreign = await call(ports[1], registration(cluster_id="AAAAAAAAAAAAAAAAAAAAAA"))
        assert foreign.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID  # the cluster id came from meta.properties
        stale = await call(ports[1], heartbeat(12345, 0))
        assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH

        def broken(*_args, **_kwargs):
            raise KeyError("a controller bug")

        monkeypatch.setattr(host(runtime).controller, "handle", broken)
        failed = await call(ports[1], registration())
        assert failed.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        monkeypatch.undo()
        assert runtime.failure is None
        answer = await call(ports[1], registration())
        assert answer.error_code == ErrorCode.NONE and answer.broker_epoch == register_broker_offset(runtime, BROKER)
    finally:
        await runtime.stop(graceful=False)


@pytest.mark.parametrize("problem", ["bootstrap", "setting"])
def test_server_start_refuses_a_corrupt_bootstrap_file_or_a_bad_controller_setting(tmp_path, capsys, problem):
    import logging

    from pykraft.node.serve import run_server

    from .helpers import config_text

    port = free_ports(1)[0]
    make_config(tmp_path, 1, {1: port})
    data = tmp_path / "node-1"
    extra = "leader.imbalance.check.interval.seconds=soon" if problem == "setting" else ""
    if problem == "bootstrap":
        (data / "bootstrap.checkpoint").write_bytes(b"\x00" * 10)
    path = tmp_path / "server.properties"
    path.write_text(config_text(1, {1: port}, data, extra=extra))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        assert run_server(path) == 1
    finally:
        root.handlers, root.level = handlers, level
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("pykraft server: ")
    assert ("bootstrap.checkpoint" if problem == "bootstrap" else "leader.imbalance.check.interval.seconds") \
        in lines[-1]


@pytest.mark.asyncio
async def test_create_topics_over_the_wire_reaches_the_active_controller(tmp_path):
    """CreateTopics is advertised and served over TCP, not only in-process: a follower answers NOT_CONTROLLER for
    the topic, the leader answers the controller's own verdict (no broker is registered: INVALID_REPLICATION_FACTOR)."""
    ports, runtimes = await start_cluster(tmp_path)
    try:
        leader = await active_controller(runtimes)
        follower_id = next(i for i in runtimes if i != leader.config.node_id)
        request = create_topic("t", 1)
        from_follower = (await call(ports[follower_id], request)).topics[0]
        assert from_follower.error_code == ErrorCode.NOT_CONTROLLER
        from_leader = (await call(ports[leader.config.node_id], request)).topics[0]
        assert from_leader.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    finally:
        await stop_all(runtimes)
