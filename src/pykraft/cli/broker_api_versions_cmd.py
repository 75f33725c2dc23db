"""`pykraft broker-api-versions`: Kafka's kafka-broker-api-versions: for every broker the cluster's Metadata lists,
its ApiVersions answer in Kafka's NodeApiVersions format:

    127.0.0.1:9092 (id: 1 rack: null) -> (
    	Produce(0): 3 to 12 [usable: 12],
    	...
    	UpdateRaftVoter(82): UNSUPPORTED
    )

"usable" is the highest version both the broker and this client know; this client knows the versions of kio's
schemas (Kafka 4.x's), and an API of those the broker does not list is UNSUPPORTED. A broker that does not answer
is printed as `host:port (id: N rack: r) -> ERROR: <why>`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import cache

from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from pykraft.admin.brokers import BrokerClient, BrokerNode, Retry
from pykraft.admin.model import error_code_of
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.reconfig_messages import api_versions_request

from .broker_tool import read_properties, run_with_client
from .kafka_args import REQUIRED, Flag, Options, ToolError, require, run_tool

PROG = "pykraft broker-api-versions"
DESCRIPTION = "This tool helps to retrieve broker version information."
FLAGS = (
    Flag("command-config", "A property file containing configs to be passed to Admin Client.", REQUIRED,
         "command config property file"),
    Flag("bootstrap-server", "REQUIRED: The server to connect to.", REQUIRED, "server(s) to use for bootstrapping"),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


@cache
def client_apis() -> dict[int, tuple[str, int, int]]:
    """api key -> (Kafka's name, oldest, latest version this client knows), from kio's index."""
    found = {}
    for key, schema in api_key_map.items():
        versions = schema_name_map[schema]
        request = versions[max(versions)].get(EntityType.request, "")
        name = request.rpartition(":")[2].removesuffix("Request")
        if name:
            found[int(key)] = (name, min(versions), max(versions))
    return found


def version_text(key: int, low: int, high: int) -> str:
    known = client_apis().get(key)
    name = f"{known[0]}({key})" if known else f"UNKNOWN({key})"
    text = f"{name}: {low}" if low == high else f"{name}: {low} to {high}"
    if known is None:
        return text
    _, oldest, latest = known
    if latest < low:
        return text + " [unusable: node too new]"
    if high < oldest:
        return text + " [unusable: node too old]"
    return text + f" [usable: {min(latest, high)}]"


def node_versions_text(ranges: Mapping[int, tuple[int, int]]) -> str:
    """Kafka's NodeApiVersions.toString(true)."""
    lines = {key: version_text(key, low, high) for key, (low, high) in ranges.items()}
    for key, (name, _, _) in client_apis().items():
        lines.setdefault(key, f"{name}({key}): UNSUPPORTED")
    return "(\n\t" + ",\n\t".join(lines[k] for k in sorted(lines)) + "\n)"


def node_text(node: BrokerNode) -> str:
    return f"{node.host}:{node.port} (id: {node.node_id} rack: {node.rack if node.rack is not None else 'null'})"


async def describe(client: BrokerClient) -> list[str]:
    metadata = await client.metadata([])
    nodes = sorted(metadata.brokers.values(), key=lambda n: n.node_id)

    async def one(node: BrokerNode) -> str:
        try:
            answer = await client.exchange(node.address, api_versions_request())
        except Retry as retry:
            return f"{node_text(node)} -> ERROR: {retry.reason}"
        code = error_code_of(answer.error_code)
        if code != ErrorCode.NONE:
            return f"{node_text(node)} -> ERROR: {code.name}"
        ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}
        return f"{node_text(node)} -> {node_versions_text(ranges)}"

    return list(await asyncio.gather(*(one(node) for node in nodes)))


def main(options: Options) -> int:
    require(options, "bootstrap-server")
    props = read_properties(options.get("command-config"))
    for block in run_with_client(PROG, options.get("bootstrap-server"), props, describe, ToolError):
        print(block)
    return 0
