"""Data-path benchmark: the CPU one megabyte costs a broker's own code, in one process, no sockets.

Run: .venv/bin/python benchmarks/data_path.py [--dir DIR] [--rounds N]

One round carries one Produce of a ~1 MB batch (950 records of 1 KiB, as librdkafka builds them) through the
code the brokers run, in the order of an acks=all RF3 write:
- leader: the request frame received by `FrameReader` in reads of up to 256 KiB (uvloop's read size) into the
  buffers it hands out, decoded, the batch validated (CRC-32C) and patched, appended to a `FileLog` (kept in its
  tail cache, as a partition leader does);
- two follower Fetches: the leader reads the batch from its log and encodes a Fetch v17 answer body as its
  inbound handler does (`encode_response_body`: the batches are not copied into it);
- one follower: the answer frame received by its `FrameReader` the same way, decoded, appended to its log.
The glibc allocator is tuned as a broker's data plane tunes it (node/runtime/allocator.py). The code before
FrameReader, the tail cache and that tuning (`FrameDecoder` fed 256 KiB chunks, every read from the file) is
measured when the imported pykraft lacks them (PYTHONPATH=<an older checkout>/src), for A/B runs.
Socket sends, the event loop and the fsyncs are left out: this is the part the brokers' Python decides, measured
as thread CPU per round, so the minimum over the rounds holds on a loaded machine where throughput does not
(benchmarks/produce.py measures the whole system). No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import struct
import tempfile
import time
import uuid

from kio.schema.produce.v9 import request as produce_request
from kio.static.primitive import i32Timedelta

from pykraft.broker.produce_rules import assign_offsets, validate_batch
from pykraft.protocol.apis import ApiKey, ApiRegistry
from pykraft.protocol.codec import decode_request, decode_response, encode_request, encode_response_body
from pykraft.node.apis.wire_build import make, response_namespace
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.framing import FrameBody
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import LogConfig, open_file_log

CHUNK = 256 * 1024
EPOCH = 1


def produce_frame() -> tuple[bytes, int]:
    batch = encode_batch([SimpleRecord(value=b"r" * 1024)] * 950, base_offset=0, partition_leader_epoch=-1,
                         timestamp_ms=1)
    request = produce_request.ProduceRequest(
        transactional_id=None, acks=-1, timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(produce_request.TopicProduceData(name="t", partition_data=(
            produce_request.PartitionProduceData(index=0, records=batch),)),))
    return encode_request(request, correlation_id=1, client_id="bench"), len(batch)


KEEP = {"keep": True} if "keep" in open_file_log.__globals__["FileLog"].append_as_leader.__code__.co_varnames else {}


def fetch_answer(topic_id: uuid.UUID, records: object, high_watermark: int) -> object:
    ns = response_namespace(ApiKey.FETCH, 17)
    partition = make(ns.PartitionData, partition_index=0, error_code=ErrorCode.NONE, high_watermark=high_watermark,
                     last_stable_offset=high_watermark, log_start_offset=0, aborted_transactions=(),
                     preferred_read_replica=-1, records=records)
    return make(ns.FetchResponse, error_code=ErrorCode.NONE, session_id=0,
                responses=(make(ns.FetchableTopicResponse, topic_id=topic_id, partitions=(partition,)),))


try:
    from pykraft.node.runtime.allocator import tune_for_large_frames
    from pykraft.protocol.frame_reader import FrameReader
except ImportError:  # an older pykraft: FrameDecoder fed the chunks uvloop's data_received handed over
    from pykraft.protocol.framing import FrameDecoder  # type: ignore[attr-defined]
    FrameReader = None  # type: ignore[assignment,misc]


def fed(decoder, frame: bytes) -> memoryview:  # FrameReader or FrameDecoder
    """The frame as the socket delivers it: each read is a copy (the kernel's, or uvloop's chunk) into a buffer."""
    frames = []
    for start in range(0, len(frame), CHUNK):
        if FrameReader is None:
            frames += decoder.feed(frame[start:start + CHUNK])
            continue
        pos = start
        while pos < min(start + CHUNK, len(frame)):
            buffer = decoder.get_buffer(-1)
            n = min(len(buffer), start + CHUNK - pos, len(frame) - pos)
            buffer[:n] = memoryview(frame)[pos:pos + n]
            frames += decoder.buffer_updated(n)
            pos += n
    (body,) = frames
    return body


def on_the_wire(body: memoryview | FrameBody) -> bytes:
    """The frame the follower's socket delivers (the kernel's copy: not timed)."""
    parts = body.parts if isinstance(body, FrameBody) else (body,)
    size = body.size if isinstance(body, FrameBody) else len(body)
    return b"".join([struct.pack(">i", size), *parts])


def one_round(frame: bytes, registry: ApiRegistry, leader, follower, decoders: tuple,
              topic_id: uuid.UUID) -> float:
    """Thread CPU seconds of one round, the socket left out."""
    start = time.thread_time()
    records = decode_request(fed(decoders[0], frame), registry).message.topic_data[0].partition_data[0].records
    checked = validate_batch(records, 2 << 20)
    assert not hasattr(checked, "error"), checked
    batch = bytearray(records)
    base = leader.end_offset()
    assign_offsets(batch, base, EPOCH)
    leader.append_as_leader(batch, EPOCH, **KEEP)
    bodies = [encode_response_body(7, fetch_answer(topic_id, leader.read(base, 1 << 20).records, base))
              for _ in range(2)]
    leader_cost = time.thread_time() - start
    wire = on_the_wire(bodies[-1])
    start = time.thread_time()
    answer = decode_response(fed(decoders[1], wire), ApiKey.FETCH, 17).message
    follower.append_as_follower(answer.responses[0].partitions[0].records, EPOCH)
    return leader_cost + time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="pykraft-data-path-", dir=args.dir)
    if FrameReader is not None:
        tune_for_large_frames()  # as a broker's data plane does when it opens
    try:
        frame, batch_bytes = produce_frame()
        registry = ApiRegistry.of({ApiKey.PRODUCE: (9, 9)})
        leader, _ = open_file_log(f"{directory}/leader", LogConfig())
        follower, _ = open_file_log(f"{directory}/follower", LogConfig())
        leader.initialize_leader_epoch(EPOCH)
        reader = FrameDecoder if FrameReader is None else FrameReader
        decoders, topic_id = (reader(), reader()), uuid.uuid4()
        costs = []
        for _ in range(args.rounds):
            costs.append(one_round(frame, registry, leader, follower, decoders, topic_id))
        leader.close()
        follower.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    costs.sort()
    per_mb = (1 << 20) / batch_bytes * 1000
    print(f"{'FrameReader + tail cache' if FrameReader else 'FrameDecoder, file reads'}: "
          f"data path, {batch_bytes} B batch, {args.rounds} rounds: thread CPU per MB  min {costs[0] * per_mb:.3f} ms  "
          f"p25 {costs[len(costs) // 4] * per_mb:.3f} ms  median {costs[len(costs) // 2] * per_mb:.3f} ms")


if __name__ == "__main__":
    main()
