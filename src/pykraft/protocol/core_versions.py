"""Moving kio messages between versions of the same API.

The raft core speaks one version per RPC (Fetch v17, Vote v2, DescribeQuorum v2, ...: `CORE_VERSIONS`), while
peers and tools send whatever version both sides support (a Kafka 4.1 peer sends Fetch v18, an older admin tool
DescribeQuorum v0). The runtime lifts each inbound request to the core's version and lowers the core's answer to
the version the request came in at, like Kafka's generated code does when it writes a message at an older
version: fields the target version does not have are dropped, fields the source did not have get the schema
default (or Kafka's zero value when the schema has none).

The conversion itself is protocol/message_versions.py's (fields matched by name, nested structs rebuilt).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pykraft.protocol.apis import ApiKey, request_class, response_class
from pykraft.protocol.message_versions import convert

__all__ = ["CORE_VERSIONS", "convert", "to_core_request", "to_request_version"]

# The request versions the raft core builds and reads (see pykraft/raft/messages.py and reconfig_messages.py).
CORE_VERSIONS: dict[int, int] = {
    ApiKey.FETCH: 17,
    ApiKey.VOTE: 2,
    ApiKey.BEGIN_QUORUM_EPOCH: 1,
    ApiKey.END_QUORUM_EPOCH: 1,
    ApiKey.DESCRIBE_QUORUM: 2,
    ApiKey.FETCH_SNAPSHOT: 1,
    ApiKey.ADD_RAFT_VOTER: 1,
    ApiKey.REMOVE_RAFT_VOTER: 0,
    ApiKey.UPDATE_RAFT_VOTER: 0,
}

def to_core_request(message: Any) -> Any:
    """The request lifted to the version the core reads (unchanged when it already is, or the API is not one
    the core serves)."""
    key = int(message.__api_key__)
    target = CORE_VERSIONS.get(key)
    if target is None or int(message.__version__) == target:
        return message
    lifted = convert(message, request_class(key, target))
    if key == ApiKey.FETCH and hasattr(message, "replica_id") and hasattr(lifted, "replica_state"):
        # Fetch v15 moved the top-level ReplicaId into ReplicaState (KIP-903); carry it over.
        state = type(lifted.replica_state)(replica_id=message.replica_id, replica_epoch=lifted.replica_state.replica_epoch)
        lifted = dataclasses.replace(lifted, replica_state=state)
    return lifted


def to_request_version(response: Any, version: int) -> Any:
    """The core's response lowered (or lifted) to the version of the request it answers."""
    if int(response.__version__) == version:
        return response
    return convert(response, response_class(int(response.__api_key__), version))
