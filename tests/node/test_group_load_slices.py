"""Loading a `__consumer_offsets` partition's groups (node/hosts/group_host.py) happens in slices between event-loop
turns: requests are answered (COORDINATOR_LOAD_IN_PROGRESS for its groups) while a large partition loads, and the
groups loaded are those a one-pass replay of the whole partition gives."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from pykraft.broker import group_log
from pykraft.broker.group_coordinator import GroupConfig
from pykraft.broker.group_state import Group
from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.node.apis.group_api import GroupApi
from pykraft.node.hosts.group_host import OFFSETS_TOPIC, GroupHost, _apply_record
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.group_records import (
    GroupKey, GroupValue, MemberValue, OffsetKey, OffsetValue, encode_group_value, encode_key, encode_offset_value,
)
from pykraft.storage import PartitionLogs

from broker.records import partition, register, topic

NOW = 1_000
GROUPS = 40


def _leader_of_offsets(tmp_path) -> PartitionHost:
    cache = MetadataCache()
    cache.replay_all(enumerate([register(1, 11), topic(OFFSETS_TOPIC), partition(0, [1], [1], 1)]))
    isr_manager = IsrManager(IsrManagerConfig(1), cache)
    isr_manager.sync_metadata(NOW)
    host = PartitionHost(DataPlaneSettings(1, TopicSettings(segment_bytes=64 * 1024)), cache, None,
                         report_progress=lambda p: isr_manager.update_progress(p, NOW),
                         high_watermark_of=isr_manager.high_watermark, now_ms=lambda: NOW)
    host.logs = PartitionLogs((str(tmp_path / "b1"),), host.log_config_for)
    host.sync_metadata(NOW)
    return host


def _fill(host: PartitionHost) -> None:
    """Commits of GROUPS groups over 3 rounds (later ones win), a deleted offset, a deleted group, and members."""
    for round_ in range(3):
        for g in range(GROUPS):
            records = [SimpleRecord(encode_offset_value(OffsetValue(round_ * 1000 + p, 3, f"m{round_}", NOW + round_)),
                                    encode_key(OffsetKey(f"g{g}", "orders", p))) for p in range(30)]
            member = MemberValue(f"m-{g}", None, "client", "/127.0.0.1", 30000, 10000, b"sub", b"assign")
            records.append(SimpleRecord(encode_group_value(GroupValue("consumer", round_ + 1, "range", f"m-{g}",
                                                                      NOW, (member,))), encode_key(GroupKey(f"g{g}"))))
            batch = encode_batch(records, base_offset=0, partition_leader_epoch=0, timestamp_ms=NOW)
            assert host.append_as_leader(OFFSETS_TOPIC, 0, batch, acks=1).error is ErrorCode.NONE
    tombstones = [SimpleRecord(None, encode_key(OffsetKey("g1", "orders", 7))), SimpleRecord(None, encode_key(GroupKey("g2")))]
    host.append_as_leader(OFFSETS_TOPIC, 0, encode_batch(tombstones, base_offset=0, partition_leader_epoch=0,
                                                         timestamp_ms=NOW), acks=1)


def _replay_in_one_pass(log) -> dict[str, Group]:
    groups: dict[str, Group] = {}
    for batch in iter_batches(log.read(log.start_offset(), 1 << 30).records):
        for r in batch.records():
            _apply_record(groups, bytes(r.key), None if r.value is None else bytes(r.value))
    return groups


def _heartbeat(api: GroupApi, group_id: str):
    from pykraft.protocol.apis import request_class

    message = request_class(ApiKey.HEARTBEAT, 4)(group_id=group_id, generation_id=1, member_id="x",
                                                   group_instance_id=None)
    return api.heartbeat(SimpleNamespace(message=message, client_id="c", api_key=ApiKey.HEARTBEAT))


def test_requests_are_answered_while_a_large_partition_loads_and_the_groups_are_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(group_log, "LOAD_SLICE_BYTES", 16 * 1024)  # many slices from a test-sized partition

    async def scenario() -> None:
        host = _leader_of_offsets(tmp_path)
        _fill(host)
        log = host.replicas[(OFFSETS_TOPIC, 0)].log
        assert log.size_in_bytes() > 10 * 16 * 1024
        groups = GroupHost(host, GroupConfig(), clock=lambda: NOW)
        api = GroupApi(SimpleNamespace(cache=host.cache, _now=lambda: NOW), groups)  # type: ignore[arg-type]
        groups.sync_leadership()
        answers_while_loading = []
        while groups.loading:
            answers_while_loading.append((await _heartbeat(api, "g5")).error_code)
            await asyncio.sleep(0)
        assert len(answers_while_loading) >= 10  # the loop served requests between slices
        assert set(answers_while_loading) == {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        assert (await _heartbeat(api, "g5")).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # loaded: a real answer

        loaded = groups.coordinators[0].groups
        expected = _replay_in_one_pass(log)
        assert set(loaded) == set(expected) == {f"g{g}" for g in range(GROUPS)} - {"g2"}
        for name, group in expected.items():
            assert loaded[name].offsets == group.offsets
            assert (loaded[name].generation, loaded[name].leader, set(loaded[name].members)) == \
                (group.generation, group.leader, set(group.members))
        assert ("orders", 7) not in loaded["g1"].offsets and loaded["g3"].offsets[("orders", 29)].offset == 2029
        groups.close()
        host.close()

    asyncio.run(scenario())


def test_a_load_is_abandoned_when_the_leadership_moves_during_it(tmp_path, monkeypatch):
    monkeypatch.setattr(group_log, "LOAD_SLICE_BYTES", 16 * 1024)

    async def scenario() -> None:
        host = _leader_of_offsets(tmp_path)
        _fill(host)
        groups = GroupHost(host, GroupConfig(), clock=lambda: NOW)
        groups.sync_leadership()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert groups.loading
        task = groups.loading[0]
        host.replicas[(OFFSETS_TOPIC, 0)].leading = None  # the data plane followed a leader change
        groups.sync_leadership()
        assert not groups.loading and not groups.coordinators
        await asyncio.sleep(0)
        assert task.cancelled()
        assert groups.coordinator_of("g5") is ErrorCode.NOT_COORDINATOR
        groups.close()
        host.close()

    asyncio.run(scenario())
