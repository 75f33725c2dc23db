"""Producer-state load on a broker restart: the whole-log rebuild (before producer snapshots) against the latest
snapshot plus the batches after it (node/hosts/producer_recovery.py), on the same partition log in the same run.

Run: .venv/bin/python benchmarks/producer_state.py [--batches N] [--producers P] [--segment-mib M] [--dir DIR]

Builds one partition log of N idempotent batches (10 records of 100 bytes, P producers taking turns) with segments
of M MiB, so a snapshot is written at each roll. Then it loads the state three ways and prints the time and the
batch headers read: the whole log (what `rebuild_producers` did), after a crash (snapshot of the last roll + the
active segment), after a clean shutdown (snapshot at the log end). It checks the three states are equal.
No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import shutil
import struct
import tempfile
import time
import uuid

from pykraft.broker.producer_state import ProducerStates
from pykraft.node.hosts.partitions import Replica
from pykraft.node.hosts.producer_recovery import open_producer_state, replay_batches, snapshot_producers
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.crc import crc32c
from pykraft.storage import LogConfig, open_file_log

TOPIC_ID = uuid.UUID(int=7)


def idempotent_batch(base: int, producer_id: int, sequence: int) -> bytes:
    data = bytearray(encode_batch([SimpleRecord(value=b"r" * 100)] * 10, base_offset=base, partition_leader_epoch=1,
                                  timestamp_ms=1_700_000_000_000 + base))
    struct.pack_into(">qhi", data, 43, producer_id, 0, sequence)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def open_replica(directory: str, segment_bytes: int) -> Replica:
    log, _ = open_file_log(directory, LogConfig(segment_bytes=segment_bytes), topic="bench", partition=0,
                           topic_id=TOPIC_ID)
    return Replica("bench", 0, TOPIC_ID, log)


def build(directory: str, batches: int, producers: int, segment_bytes: int) -> None:
    replica = open_replica(directory, segment_bytes)
    open_producer_state(replica)
    sequences = [0] * producers
    for i in range(batches):
        pid = 1000 + i % producers
        base = replica.log.end_offset()
        replica.log.append_as_leader(idempotent_batch(base, pid, sequences[i % producers]), 1)
        replica.producers.observe(pid, 0, sequences[i % producers], sequences[i % producers] + 9, base, base + 9,
                                  1_700_000_000_000 + base)
        sequences[i % producers] += 10
    replica.log.close()  # a "crash" after the last flush: no shutdown snapshot


def timed_load(directory: str, segment_bytes: int, whole_log: bool) -> tuple[float, int, Replica]:
    replica = open_replica(directory, segment_bytes)
    started = time.perf_counter()
    if whole_log:
        replica.producers = ProducerStates()
        read = replay_batches(replica, replica.log.start_offset())
    else:
        read = open_producer_state(replica)
    return time.perf_counter() - started, read, replica


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=100_000)
    parser.add_argument("--producers", type=int, default=50)
    parser.add_argument("--segment-mib", type=int, default=16)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="pykraft-producer-state-", dir=args.dir)
    segment_bytes = args.segment_mib << 20
    try:
        build(root, args.batches, args.producers, segment_bytes)
        results = {}
        for label, whole in (("whole log (before)", True), ("after a crash", False)):
            seconds, read, replica = timed_load(root, segment_bytes, whole)
            results[label] = replica.producers.entries()
            if not whole:
                snapshot_producers(replica)  # what a clean shutdown writes
                segments = len(replica.log.segment_base_offsets())
            replica.log.close()
            print(f"{label:22s} {seconds * 1000:9.1f} ms  {read:8d} batch headers read")
        seconds, read, replica = timed_load(root, segment_bytes, False)
        results["after a clean shutdown"] = replica.producers.entries()
        replica.log.close()
        print(f"{'after a clean shutdown':22s} {seconds * 1000:9.1f} ms  {read:8d} batch headers read")
        print(f"log: {args.batches} batches in {segments} segments, {args.producers} producers")
        assert len({tuple(v) for v in results.values()}) == 1, "the three loads disagree"
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
