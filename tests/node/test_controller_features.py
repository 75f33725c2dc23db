"""UpdateFeatures through the controller host: metadata.version as a FeatureLevelRecord answered once committed,
kraft.version through the raft core in the same request, validate_only, and every refusal (downgrade, unknown
feature, level out of range, raft refusal, not the active controller) with nothing written."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.update_features.v1.request import FeatureUpdateKey, UpdateFeaturesRequest
from kio.schema.update_features.v2 import request as uf_v2
from kio.static.primitive import i8, i16

from pykraft.admin.client import AdminClient
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_change import KRaftVersionUpgradeError
from pykraft.records import iter_batches
from pykraft.records.metadata.frame import decode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.storage.format import FormatPlan, bootstrap_checkpoint_bytes

from .helpers import call, free_ports, leader_of, make_config, wait_for

UPGRADE, SAFE_DOWNGRADE = 1, 2
BOOTSTRAP_METADATA_VERSION = 21  # 3.9-IV0: below the latest (27), so there is an upgrade to make


def update(*updates: tuple[str, int, int], validate_only: bool = False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(validate_only=validate_only, feature_updates=tuple(
        FeatureUpdateKey(feature=name, max_version_level=i16(level), upgrade_type=i8(kind))
        for name, level, kind in updates))


def host(runtime: NodeRuntime) -> ControllerHost:
    assert isinstance(runtime.state_machine, ControllerHost)
    return runtime.state_machine


def bootstrapped_config(tmp_path, node_id: int, ports: dict[int, int]):
    config = make_config(tmp_path, node_id, ports)
    plan = FormatPlan(BOOTSTRAP_METADATA_VERSION, 0, ())
    (tmp_path / f"node-{node_id}" / "bootstrap.checkpoint").write_bytes(bootstrap_checkpoint_bytes(plan, 0))
    return config


async def start(tmp_path, ids: tuple[int, ...] = (1,)) -> tuple[dict[int, int], dict[int, NodeRuntime]]:
    ports = dict(zip(ids, free_ports(len(ids))))
    runtimes = {i: controller_runtime(bootstrapped_config(tmp_path, i, ports)) for i in ids}
    for runtime in runtimes.values():
        await runtime.start()

    def active() -> bool:
        leader = leader_of(list(runtimes.values()))
        return leader is not None and host(leader).controller.active and all(
            host(r).controller.features.metadata_version == BOOTSTRAP_METADATA_VERSION for r in runtimes.values())
    await wait_for(active)
    return ports, runtimes


async def stop(runtimes: dict[int, NodeRuntime]) -> None:
    for runtime in runtimes.values():
        await runtime.stop(graceful=False)


def feature_records(runtime: NodeRuntime) -> list[tuple[int, str, int]]:
    """(offset, name, level) of every committed-or-not FeatureLevelRecord in the log."""
    found = []
    for batch in iter_batches(runtime.core.log.read(0, 2**62).records, verify_crc=False):
        if batch.is_control:
            continue
        for record in batch.records():
            decoded = decode_metadata_record(bytes(record.value or b""))
            if isinstance(decoded, FeatureLevelRecordV0):
                found.append((record.offset, decoded.name, int(decoded.feature_level)))
    return found


def kraft_control_offsets(runtime: NodeRuntime) -> list[int]:
    """Base offsets of the control batches that hold a KRaftVersionRecord (control type 5)."""
    offsets = []
    for batch in iter_batches(runtime.core.log.read(0, 2**62).records, verify_crc=False):
        if batch.is_control and any(bytes(r.key or b"")[2:4] == b"\x00\x05" for r in batch.records()):
            offsets.append(batch.base_offset)
    return offsets


def errors(response) -> tuple[ErrorCode, dict[str, ErrorCode]]:
    return ErrorCode(response.error_code), {r.feature: ErrorCode(r.error_code) for r in response.results}


@pytest.mark.asyncio
async def test_metadata_version_upgrade_is_a_feature_level_record_answered_after_it_commits(tmp_path):
    ports, runtimes = await start(tmp_path)
    runtime = runtimes[1]
    try:
        response = await call(ports[1], update(("metadata.version", 27, UPGRADE)))
        assert errors(response) == (ErrorCode.NONE, {"metadata.version": ErrorCode.NONE})
        offset, name, level = feature_records(runtime)[-1]
        assert (name, level) == ("metadata.version", 27)
        assert runtime.core.high_watermark > offset  # answered only once committed
        assert host(runtime).controller.features.metadata_version == 27
        again = await call(ports[1], update(("metadata.version", 27, UPGRADE)))  # already there: nothing written
        assert errors(again)[0] == ErrorCode.NONE and len(feature_records(runtime)) == 2
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
async def test_metadata_and_kraft_version_in_one_request_both_commit_kraft_through_the_raft_core(tmp_path):
    ports, runtimes = await start(tmp_path)
    runtime = runtimes[1]
    try:
        assert runtime.core.kraft_version() == 0 and kraft_control_offsets(runtime) == []
        response = await call(ports[1], update(("metadata.version", 27, UPGRADE), ("kraft.version", 1, UPGRADE)))
        assert errors(response) == (ErrorCode.NONE, {"metadata.version": ErrorCode.NONE,
                                                     "kraft.version": ErrorCode.NONE})
        [control] = kraft_control_offsets(runtime)
        level_offset = feature_records(runtime)[-1][0]
        assert control < level_offset < runtime.core.high_watermark  # the control batch first, both committed
        assert runtime.core.kraft_version() == 1 and host(runtime).controller.features.kraft_version == 1
        assert host(runtime).controller.features.metadata_version == 27
        # kraft.version alone: the answer waits for nothing new, and a downgrade is the controller's refusal.
        down = await call(ports[1], update(("kraft.version", 0, SAFE_DOWNGRADE)))
        assert errors(down)[0] == ErrorCode.INVALID_UPDATE_VERSION
        assert "does not support downgrading kraft.version" in down.error_message
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
async def test_kraft_version_alone_is_answered_once_its_control_batch_commits(tmp_path):
    ports, runtimes = await start(tmp_path)
    runtime = runtimes[1]
    try:
        response = await call(ports[1], update(("kraft.version", 1, UPGRADE)))
        assert errors(response)[0] == ErrorCode.NONE
        [control] = kraft_control_offsets(runtime)
        assert runtime.core.high_watermark > control and runtime.core.kraft_version() == 1
        assert [r[1:] for r in feature_records(runtime)] == [("metadata.version", BOOTSTRAP_METADATA_VERSION)]
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
async def test_validate_only_answers_the_verdict_and_writes_nothing(tmp_path):
    ports, runtimes = await start(tmp_path)
    runtime = runtimes[1]
    try:
        end = runtime.core.log.end_offset()
        ok = await call(ports[1], update(("metadata.version", 27, UPGRADE), ("kraft.version", 1, UPGRADE),
                                         validate_only=True))
        assert errors(ok)[0] == ErrorCode.NONE
        refused = await call(ports[1], update(("metadata.version", 99, UPGRADE), validate_only=True))
        assert errors(refused)[0] == ErrorCode.INVALID_UPDATE_VERSION
        assert len(feature_records(runtime)) == 1 and kraft_control_offsets(runtime) == []
        assert runtime.core.kraft_version() == 0
        assert host(runtime).controller.features.metadata_version == BOOTSTRAP_METADATA_VERSION
        assert runtime.core.log.end_offset() - end <= 1  # at most a tick's NoOpRecord went in meanwhile
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
@pytest.mark.parametrize(("updates", "reason"), [
    ((("metadata.version", 20, SAFE_DOWNGRADE),), "does not support downgrading metadata.version from 21"),
    ((("metadata.version", 20, UPGRADE),), "Can't downgrade the version of this feature"),
    ((("foo.version", 1, UPGRADE),), "Local controller 1 does not support this feature."),
    ((("metadata.version", 99, UPGRADE),), "Local controller 1 only supports versions 7-27."),
    ((("kraft.version", 2, UPGRADE),), "Local controller 1 only supports versions 0-1."),
    ((("metadata.version", 27, UPGRADE), ("foo.version", 1, UPGRADE)), "foo.version"),  # atomic: none written
], ids=["downgrade", "downgrade-as-upgrade", "unknown-feature", "level-above-range", "kraft-above-range",
        "one-bad-update-fails-all"])
async def test_refused_updates_are_invalid_update_version_and_write_nothing(tmp_path, updates, reason):
    ports, runtimes = await start(tmp_path)
    runtime = runtimes[1]
    try:
        response = await call(ports[1], update(*updates))
        top, per_feature = errors(response)
        assert top == ErrorCode.INVALID_UPDATE_VERSION
        assert set(per_feature.values()) == {ErrorCode.INVALID_UPDATE_VERSION}
        assert reason in response.error_message
        assert len(feature_records(runtime)) == 1 and kraft_control_offsets(runtime) == []
        assert host(runtime).controller.features.metadata_version == BOOTSTRAP_METADATA_VERSION
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
async def test_raft_refusing_kraft_version_answers_its_text_and_drops_the_metadata_version_record(tmp_path,
                                                                                                  monkeypatch):
    ports, runtimes = await start(tmp_path)
    runtime = runtimes[1]
    try:
        def refuse(*_args, **_kwargs):
            raise KRaftVersionUpgradeError("voters [2] have not reported their supported kraft.version")

        monkeypatch.setattr(runtime.core, "upgrade_kraft_version", refuse)
        request = uf_v2.UpdateFeaturesRequest(validate_only=False, feature_updates=(
            uf_v2.FeatureUpdateKey(feature="metadata.version", max_version_level=i16(27), upgrade_type=i8(UPGRADE)),
            uf_v2.FeatureUpdateKey(feature="kraft.version", max_version_level=i16(1), upgrade_type=i8(UPGRADE))))
        response = await call(ports[1], request)  # v2: the top-level error is the whole answer
        assert response.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert response.error_message == "voters [2] have not reported their supported kraft.version"
        assert len(feature_records(runtime)) == 1
        assert host(runtime).controller.features.metadata_version == BOOTSTRAP_METADATA_VERSION
        assert runtime.failure is None
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
async def test_a_follower_answers_not_controller_and_the_admin_client_retries_on_the_leader(tmp_path):
    ports, runtimes = await start(tmp_path, (1, 2, 3))
    try:
        leader = leader_of(list(runtimes.values()))
        follower_id = next(i for i in runtimes if i != leader.config.node_id)
        refused = await call(ports[follower_id], update(("metadata.version", 27, UPGRADE)))
        assert errors(refused) == (ErrorCode.NOT_CONTROLLER, {"metadata.version": ErrorCode.NOT_CONTROLLER})
        assert host(runtimes[follower_id]).not_controller_answers == 1
        client = AdminClient([("127.0.0.1", ports[follower_id])], deadline_ms=10_000, request_timeout_ms=2000,
                             retry_backoff_ms=20)
        try:
            assert await client.update_features({"metadata.version": 27}) == {"metadata.version": None}
        finally:
            await client.close()
        await wait_for(lambda: all(host(r).controller.features.metadata_version == 27 for r in runtimes.values()))
    finally:
        await stop(runtimes)


@pytest.mark.asyncio
async def test_a_raft_only_node_does_not_offer_update_features(tmp_path):
    """Only the controller decides features; a node without a controller host (tests, benchmarks) neither
    advertises UpdateFeatures nor keeps a second copy of the rules."""
    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports))
    await runtime.start()
    try:
        versions = await call(ports[1], ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert 57 not in {int(k.api_key) for k in versions.api_keys}
    finally:
        await runtime.stop()
    controller = controller_runtime(make_config(tmp_path / "c", 1, ports))
    await controller.start()
    try:
        versions = await call(ports[1], ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys}[57] == (0, 2)
    finally:
        await controller.stop()
