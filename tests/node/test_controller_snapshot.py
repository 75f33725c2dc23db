"""A controller node snapshots its metadata image to disk and restarts from that file: brokers, topics, partitions
and features come back equal, and the load is counted."""

from __future__ import annotations

import pytest
from kio.schema.update_features.v1.request import FeatureUpdateKey, UpdateFeaturesRequest
from kio.static.primitive import i8, i16

from pykraft.controller.controller import BROKER_HEARTBEAT, BROKER_REGISTRATION, CREATE_TOPICS, UPDATE_FEATURES
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.storage.files import SNAPSHOT_SUFFIX
from pykraft.storage.format import FormatPlan, bootstrap_checkpoint_bytes

from .helpers import free_ports, leader_of, make_config, wait_for
from .test_controller_host import create_topic, heartbeat, registration

# A snapshot after every committed batch; no NoOpRecords, so the log stops growing once the requests are done.
EXTRA = "metadata.log.max.record.bytes.between.snapshots=1\nmetadata.max.idle.interval.ms=0"
BROKERS = (7, 8)


def host(runtime) -> ControllerHost:
    assert isinstance(runtime.state_machine, ControllerHost)
    return runtime.state_machine


def snapshot_files(tmp_path) -> list[str]:
    directory = tmp_path / "node-1" / f"{METADATA_TOPIC}-{METADATA_PARTITION}"
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(SNAPSHOT_SUFFIX))


async def started(tmp_path, ports):
    runtime = controller_runtime(make_config(tmp_path, 1, ports, extra=EXTRA))
    await runtime.start()
    await wait_for(lambda: leader_of([runtime]) is not None and host(runtime).controller.active
                   and host(runtime).controller.features.metadata_version is not None)
    return runtime


def same_image(restarted: tuple, before: tuple) -> bool:
    """The controller images equal, but for the controllers' registrations: a restarted controller registers again
    with a new incarnation id (ControllerRegistration at every start, as Kafka's controllers do)."""
    return restarted[:2] + restarted[3:] == before[:2] + before[3:]


@pytest.mark.asyncio
async def test_controller_restarts_from_its_snapshot_file_with_an_equal_image(tmp_path):
    ports = {1: free_ports(1)[0]}
    make_config(tmp_path, 1, ports)
    plan = FormatPlan(21, 0, ())  # metadata.version 3.9-IV0, upgraded below: the features are part of the image
    (tmp_path / "node-1" / "bootstrap.checkpoint").write_bytes(bootstrap_checkpoint_bytes(plan, 0))
    runtime = await started(tmp_path, ports)
    try:
        for broker_id in BROKERS:
            answer = await host(runtime).request(BROKER_REGISTRATION, registration(broker_id))
            assert answer.error_code == ErrorCode.NONE
            beat = await host(runtime).request(BROKER_HEARTBEAT, heartbeat(int(answer.broker_epoch),
                                                                           runtime.core.high_watermark, broker_id))
            assert beat.error_code == ErrorCode.NONE
        created = await host(runtime).request(CREATE_TOPICS, create_topic("snapped", 4))
        assert created.topics[0].error_code == ErrorCode.NONE
        upgraded = await host(runtime).request(UPDATE_FEATURES, UpdateFeaturesRequest(
            validate_only=False,
            feature_updates=(FeatureUpdateKey(feature="metadata.version", max_version_level=i16(27),
                                              upgrade_type=i8(1)),)))
        assert upgraded.error_code == ErrorCode.NONE
        end = runtime.core.log.end_offset()
        await wait_for(lambda: runtime.snapshots.snapshotted_end == end)  # the snapshot covers every record
        image = host(runtime).controller.image()
        assert image[0] == {"metadata.version": 27}
        registrations = host(runtime).controller.cluster
        assert all(not registrations.registration(b).fenced for b in BROKERS)
        assert len(host(runtime).controller.replication.topics_by_name) == 1
    finally:
        await runtime.stop()
    files = snapshot_files(tmp_path)
    assert files and files[-1] == f"{end:020d}-{runtime.core.quorum.epoch:010d}{SNAPSHOT_SUFFIX}"

    restarted = await started(tmp_path, ports)
    try:
        assert host(restarted).snapshots_loaded == 1
        assert same_image(host(restarted).controller.image(), image)  # brokers, topics, partitions, features
        assert host(restarted).controller.last_applied_offset >= end - 1
        assert host(restarted).undecodable_records == 0
    finally:
        await restarted.stop(graceful=False)
