"""What each role of a node serves: one API table per role, from which both ApiVersions (the runtime lists its
registry) and the dispatch (a request outside the registry is refused before any handler) derive.

The rows are grouped by the family of handlers that answers them (the runtime itself and the raft core, the
controller host, the handlers over the metadata image, the broker's data plane, its group and transaction
coordinators); the handler modules import their rows from here, so a version range is written once. Ranges are
Kafka 4.0's (4.1's where noted), limited to the versions kio has classes for.

- A controller serves the KRaft set and Produce to `__cluster_metadata` (`NODE_RUNTIME_APIS`), its own requests
  (`CONTROLLER_HANDLED`), the image's (`IMAGE_APIS`) and Envelope (requests brokers forward).
- A broker serves the runtime's set without the controller-only RPCs, the requests it forwards to the active
  controller (at the controller's ranges), the image's, the data plane, the coordinators' and the broker's own
  security API.
- A combined node serves each kind of listener its own table, as Kafka keeps ControllerApis and KafkaApis apart:
  its controller listener the controller's, its broker listeners the broker's; together, the union.

The runtime still trims a table to the APIs some handler answers (inbound.served_registry); the test of the tables
(tests/node/test_served_apis.py) checks that it never has to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykraft.protocol.apis import NODE_RUNTIME_APIS, ApiKey, ApiRegistry

K = ApiKey
Ranges = Mapping[int, tuple[int, int]]

# ---- the controller host's `handle` (node/roles/controller_host.py) ------------------------------------------------
CONTROLLER_HANDLED: Ranges = {
    K.CREATE_TOPICS: (2, 7), K.DELETE_TOPICS: (1, 6), K.ELECT_LEADERS: (0, 2), K.ALTER_PARTITION: (2, 3),
    K.BROKER_REGISTRATION: (0, 4), K.BROKER_HEARTBEAT: (0, 1), K.UNREGISTER_BROKER: (0, 0),
    K.CONTROLLER_REGISTRATION: (0, 0), K.UPDATE_FEATURES: (0, 2), K.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    K.ALTER_CONFIGS: (0, 2), K.CREATE_PARTITIONS: (0, 3), K.ALLOCATE_PRODUCER_IDS: (0, 0),
    K.ASSIGN_REPLICAS_TO_DIRS: (0, 0), K.ALTER_PARTITION_REASSIGNMENTS: (0, 1), K.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    K.CREATE_ACLS: (1, 3), K.DELETE_ACLS: (1, 3), K.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}
# ---- every node, from its own metadata image (node/apis/configs_api.py, security_apis.py) --------------------------
# Kafka lists the SASL APIs on every listener, and answers DescribeConfigs and DescribeAcls on brokers and
# controllers alike.
SASL_APIS: Ranges = {K.SASL_HANDSHAKE: (0, 1), K.SASL_AUTHENTICATE: (0, 2)}
IMAGE_SECURITY_APIS: Ranges = {K.DESCRIBE_ACLS: (1, 3)}
IMAGE_APIS: Ranges = {K.DESCRIBE_CONFIGS: (1, 4), **IMAGE_SECURITY_APIS, **SASL_APIS}
# ---- a broker's own --------------------------------------------------------------------------------------------
BROKER_SECURITY_APIS: Ranges = {K.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0)}
DATA_PLANE_APIS: Ranges = {  # node/roles/data_plane.py and the handlers it routes to
    K.PRODUCE: (3, 12), K.FETCH: (4, 18), K.LIST_OFFSETS: (1, 10), K.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    K.INIT_PRODUCER_ID: (0, 5), K.DELETE_RECORDS: (0, 2), K.DESCRIBE_LOG_DIRS: (1, 4), K.DESCRIBE_PRODUCERS: (0, 0),
    K.DESCRIBE_TOPIC_PARTITIONS: (0, 0), K.ALTER_REPLICA_LOG_DIRS: (1, 2),
}
# The classic group protocol (node/apis/group_api.py): Kafka 4.0's ranges (KIP-896 removed the oldest; DescribeGroups
# v6 is KIP-1043's); OffsetCommit/OffsetFetch v10 (topic ids, 4.1) are not served.
GROUP_APIS: Ranges = {
    K.FIND_COORDINATOR: (0, 6), K.JOIN_GROUP: (2, 9), K.SYNC_GROUP: (0, 5), K.HEARTBEAT: (0, 4),
    K.LEAVE_GROUP: (0, 5), K.OFFSET_COMMIT: (2, 9), K.OFFSET_FETCH: (1, 9), K.LIST_GROUPS: (0, 5),
    K.DESCRIBE_GROUPS: (0, 6), K.DELETE_GROUPS: (0, 2), K.OFFSET_DELETE: (0, 0),
}
CONSUMER_GROUP_APIS: Ranges = {K.CONSUMER_GROUP_HEARTBEAT: (0, 1), K.CONSUMER_GROUP_DESCRIBE: (0, 1)}  # KIP-848
TXN_APIS: Ranges = {  # the transaction coordinator and the partition leaders (node/apis/txn_api.py)
    K.ADD_PARTITIONS_TO_TXN: (0, 5), K.ADD_OFFSETS_TO_TXN: (0, 4), K.END_TXN: (0, 5), K.WRITE_TXN_MARKERS: (1, 1),
    K.TXN_OFFSET_COMMIT: (0, 5), K.DESCRIBE_TRANSACTIONS: (0, 0), K.LIST_TRANSACTIONS: (0, 2),
}
# What a broker forwards to the active controller (in an Envelope or as itself), served at the controller's ranges.
FORWARDED_APIS = (K.CREATE_TOPICS, K.DELETE_TOPICS, K.ELECT_LEADERS, K.UPDATE_FEATURES, K.INCREMENTAL_ALTER_CONFIGS,
                  K.ALTER_CONFIGS, K.CREATE_PARTITIONS, K.ALTER_PARTITION_REASSIGNMENTS,
                  K.LIST_PARTITION_REASSIGNMENTS, K.UNREGISTER_BROKER, K.CREATE_ACLS, K.DELETE_ACLS,
                  K.ALTER_USER_SCRAM_CREDENTIALS)
# The RPCs Kafka serves on controller listeners only (their schemas' "listeners": ["controller"]): a broker listener
# does not offer them, so a broker never takes part in an election or a voter change on a peer's behalf.
CONTROLLER_ONLY_APIS = (K.VOTE, K.BEGIN_QUORUM_EPOCH, K.END_QUORUM_EPOCH, K.FETCH_SNAPSHOT, K.UPDATE_RAFT_VOTER,
                        K.ALTER_PARTITION, K.BROKER_REGISTRATION, K.BROKER_HEARTBEAT, K.CONTROLLER_REGISTRATION)


def _with(base: ApiRegistry, *tables: Ranges) -> ApiRegistry:
    for table in tables:
        for key, (low, high) in table.items():
            base = base.with_range(ApiKey(key), low, high)
    return base


def _without(base: ApiRegistry, keys: Iterable[ApiKey]) -> ApiRegistry:
    for key in keys:
        base = base.without(key)
    return base


CONTROLLER_APIS = _with(NODE_RUNTIME_APIS, CONTROLLER_HANDLED, IMAGE_APIS, {K.ENVELOPE: (0, 0)})
BROKER_APIS = _with(_without(NODE_RUNTIME_APIS, CONTROLLER_ONLY_APIS),
                    {key: CONTROLLER_HANDLED[key] for key in FORWARDED_APIS}, DATA_PLANE_APIS, GROUP_APIS,
                    CONSUMER_GROUP_APIS, TXN_APIS, BROKER_SECURITY_APIS, IMAGE_APIS)


@dataclass(frozen=True, slots=True)
class RoleApis:
    """A role's table: what its listeners serve (every listener's, on a node of one role), and on a combined node
    what its broker listeners serve instead."""

    listeners: ApiRegistry
    broker_listeners: ApiRegistry | None = None

    @property
    def served(self) -> frozenset[ApiKey]:
        """Every API some listener of the node serves (a combined node's: the union of both tables)."""
        return frozenset(self.listeners.api_keys) | frozenset(
            self.broker_listeners.api_keys if self.broker_listeners is not None else ())


CONTROLLER = RoleApis(CONTROLLER_APIS)
BROKER = RoleApis(BROKER_APIS)
COMBINED = RoleApis(CONTROLLER_APIS, BROKER_APIS)


def role_apis(node_config: Any) -> RoleApis:
    """The table of a node's roles (process.roles)."""
    if node_config.is_controller and node_config.is_broker:
        return COMBINED
    return BROKER if node_config.is_broker else CONTROLLER
