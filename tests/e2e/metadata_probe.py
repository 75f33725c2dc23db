"""Looking at a running cluster's metadata from outside: one raw request to a node, and the image a node's log holds.

`ask` sends one kio request over a fresh connection (what a test needs for a request no tool sends, e.g. an
AlterPartition that names a fenced broker). `log_records` reads a node's `__cluster_metadata-0` segments straight
from disk (read-only, while the node runs): every metadata record up to the last whole batch, in offset order.
`image_of` replays them into the broker's MetadataCache, i.e. the same classes every controller replays into.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pykraft.admin.transport import DirectTransport
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.node.local_cluster import LocalNode
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.records import RecordsError, iter_batches
from pykraft.records.metadata.frame import decode_metadata_record

SIZE_PREFIX = 4


def ask(node: LocalNode, message: Any, timeout_ms: int = 10_000) -> Any:
    key, version = int(message.__api_key__), int(message.__version__)

    async def exchange() -> Any:
        transport = DirectTransport()
        try:
            payload = await transport.request(
                "127.0.0.1", node.port,
                lambda cid: encode_request(message, correlation_id=cid, client_id="e2e-probe")[SIZE_PREFIX:],
                timeout_ms=timeout_ms)
        finally:
            await transport.close()
        return decode_response(payload, key, version).message

    return asyncio.run(exchange())


def log_records(node: LocalNode) -> list[tuple[int, Any]]:
    records = []
    for segment in sorted((node.data_dir / "__cluster_metadata-0").glob("*.log")):
        data = Path(segment).read_bytes()
        try:
            for batch in iter_batches(data):
                if batch.is_control:
                    continue
                records.extend((r.offset, decode_metadata_record(bytes(r.value or b""))) for r in batch.records())
        except RecordsError:
            pass  # a batch being written right now: everything before it is whole
    return records


def image_of(node: LocalNode) -> MetadataCache:
    cache = MetadataCache()
    cache.replay_all(log_records(node))
    return cache
