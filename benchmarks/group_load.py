"""Loading a large `__consumer_offsets` partition: how long the event loop stalls, sliced (node/hosts/group_host.py)
against one synchronous replay of the whole partition (what the load did before), on the same log in the same run.

Run: .venv/bin/python benchmarks/group_load.py [--groups G] [--partitions P] [--rounds R] [--slice-kib K] [--dir D]

G groups each commit P partitions' offsets R times (R x G batches of P records). The sliced load runs as the
broker runs it, while a ticker coroutine measures the longest gap between its turns (the longest a request could
wait); the synchronous replay's stall is its whole duration. No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pykraft.broker.group_coordinator import GroupConfig
from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.node.hosts import group_host
from pykraft.node.hosts.group_host import OFFSETS_TOPIC, GroupHost, _replay_slice
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.group_records import OffsetKey, OffsetValue, encode_key, encode_offset_value
from pykraft.storage import PartitionLogs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the broker tests' metadata records

from broker.records import partition, register, topic

NOW = 1_700_000_000_000


def leader_host(root: str) -> PartitionHost:
    cache = MetadataCache()
    cache.replay_all(enumerate([register(1, 11), topic(OFFSETS_TOPIC), partition(0, [1], [1], 1)]))
    isr = IsrManager(IsrManagerConfig(1), cache)
    isr.sync_metadata(NOW)
    host = PartitionHost(DataPlaneSettings(1, TopicSettings()), cache, None,
                         report_progress=lambda p: isr.update_progress(p, NOW), high_watermark_of=isr.high_watermark,
                         now_ms=lambda: NOW)
    host.logs = PartitionLogs((root,), host.log_config_for)
    host.sync_metadata(NOW)
    return host


def fill(host: PartitionHost, groups: int, partitions: int, rounds: int) -> int:
    records = 0
    for r in range(rounds):
        for g in range(groups):
            batch = encode_batch([SimpleRecord(encode_offset_value(OffsetValue(r * 100 + p, 1, "", NOW)),
                                               encode_key(OffsetKey(f"group-{g}", "orders", p)))
                                  for p in range(partitions)], base_offset=0, partition_leader_epoch=0, timestamp_ms=NOW)
            host.append_as_leader(OFFSETS_TOPIC, 0, batch, acks=1)
            records += partitions
    return records


async def sliced_load(host: PartitionHost) -> tuple[float, list[float]]:
    """The load's duration and the gaps between the ticker's turns (sorted)."""
    groups = GroupHost(host, GroupConfig(), clock=lambda: NOW)
    gaps = []
    started = last = time.perf_counter()
    groups.sync_leadership()
    while groups.loading:
        await asyncio.sleep(0)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    total = time.perf_counter() - started
    assert groups.coordinators, "the load did not finish"
    groups.close()
    return total, sorted(gaps)


def one_pass(host: PartitionHost) -> float:
    log = host.replicas[(OFFSETS_TOPIC, 0)].log
    started = time.perf_counter()
    offset, found = log.start_offset(), {}
    while offset < log.end_offset():
        offset = _replay_slice(log, offset, found)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--slice-kib", type=int, default=None, help="override group_host.LOAD_SLICE_BYTES")
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    if args.slice_kib:
        group_host.LOAD_SLICE_BYTES = args.slice_kib * 1024
    root = tempfile.mkdtemp(prefix="pykraft-group-load-", dir=args.dir)

    async def run() -> None:
        host = leader_host(root)
        records = fill(host, args.groups, args.partitions, args.rounds)
        size = host.replicas[(OFFSETS_TOPIC, 0)].log.size_in_bytes()
        stall = one_pass(host)
        total, gaps = await sliced_load(host)
        host.close()
        print(f"__consumer_offsets-0: {records} records, {size / 1e6:.1f} MB, {args.groups} groups")
        print(f"one synchronous replay (before): loop stalled {stall * 1000:8.1f} ms")
        print(f"sliced load (now):               {total * 1000:8.1f} ms in {len(gaps)} loop turns; stall between "
              f"turns p50 {gaps[len(gaps) // 2] * 1000:.1f} ms, p99 {gaps[len(gaps) * 99 // 100] * 1000:.1f} ms, "
              f"max {gaps[-1] * 1000:.1f} ms")

    try:
        asyncio.run(run())
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
