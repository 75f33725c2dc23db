"""Which Kafka APIs, at which versions, a node implements: a value, not a global.

A node is built with an `ApiRegistry`; `KRAFT_NODE_APIS` is the full set. Tests build nodes with less
(`KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 1)` is a controller from before KIP-996 pre-vote) to drive
the fallback paths. The registry also answers "which kio class decodes this (api key, version)".

Start-up cost: a registry is checked against kio's *index* (a plain table of module paths), never by
importing the ~120 schema modules it names; importing them all cost about half a second per process (more
on a loaded machine), paid by every CLI call. Each class is imported on first use (`request_class`), and
tests/protocol/test_apis.py imports every class of the shipped registries, so a path kio lists but cannot
load still fails in CI rather than in front of a peer.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import MappingProxyType

import kio.index
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType
from kio.static.protocol import RequestPayload, ResponsePayload

__all__ = [
    "KRAFT_NODE_APIS",
    "NODE_RUNTIME_APIS",
    "ApiKey",
    "ApiRegistry",
    "VersionRange",
    "kio_knows",
    "kio_lists",
    "request_class",
    "response_class",
]


class ApiKey(enum.IntEnum):
    """Kafka API keys of the RPCs a pykraft node serves or sends (names as in Kafka's `ApiKeys`)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    CREATE_PARTITIONS = 37
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    SASL_AUTHENTICATE = 36
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    ENVELOPE = 58
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    ASSIGN_REPLICAS_TO_DIRS = 73
    DESCRIBE_TOPIC_PARTITIONS = 75
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of versions (API versions or feature levels)."""

    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_version <= self.max_version <= 0x7FFF:
            raise ValueError(f"invalid version range {self.min_version}-{self.max_version}")

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version

    def __str__(self) -> str:
        return f"{self.min_version}-{self.max_version}"


@lru_cache(maxsize=4096)  # bounded: peers choose the (key, version) pairs that reach this
def kio_knows(api_key: int, version: int) -> bool:
    """Whether kio has both the request and the response class of this (api key, version)."""
    try:
        kio.index.load_request_schema(api_key, version)
        kio.index.load_response_schema(api_key, version)
    except (kio.index.KioIndexError, ImportError):
        return False
    return True


def kio_lists(api_key: int, version: int) -> bool:
    """Whether kio's index names both the request and the response class of this (api key, version).

    Cheap: reads the index table only, importing no schema module (see the module docstring).
    """
    name = api_key_map.get(api_key)
    if name is None:
        return False
    entities = schema_name_map.get(name, {}).get(version, {})
    return EntityType.request in entities and EntityType.response in entities


@cache
def request_class(api_key: int, version: int) -> type[RequestPayload]:
    """kio's request class; raises `kio.index.KioIndexError` if kio has none."""
    return kio.index.load_request_schema(api_key, version)


@cache
def response_class(api_key: int, version: int) -> type[ResponsePayload]:
    """kio's response class; raises `kio.index.KioIndexError` if kio has none."""
    return kio.index.load_response_schema(api_key, version)


@dataclass(frozen=True, slots=True)
class ApiRegistry:
    """The (api key → supported version range) table of one node. Immutable; derive variants with
    `with_range` and `without`. Every listed version must be in kio's index, checked at construction
    (cheaply: `kio_lists`); the classes themselves are imported when first used.
    """

    ranges: tuple[tuple[ApiKey, VersionRange], ...]
    _index: Mapping[int, VersionRange] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys = [key for key, _ in self.ranges]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate api keys in {keys}")
        for key, versions in self.ranges:
            missing = [v for v in range(versions.min_version, versions.max_version + 1) if not kio_lists(key, v)]
            if missing:
                raise ValueError(f"kio has no classes for {ApiKey(key).name} versions {missing}")
        # Sorted by key: the ApiVersions response lists keys in this order, like Kafka's.
        ordered = tuple(sorted(((ApiKey(k), r) for k, r in self.ranges), key=lambda item: item[0]))
        object.__setattr__(self, "ranges", ordered)
        object.__setattr__(self, "_index", MappingProxyType(dict(ordered)))

    @classmethod
    def of(cls, ranges: Mapping[ApiKey, tuple[int, int]]) -> ApiRegistry:
        return cls(tuple((ApiKey(key), VersionRange(lo, hi)) for key, (lo, hi) in ranges.items()))

    def range_of(self, api_key: int) -> VersionRange | None:
        return self._index.get(api_key)

    def supports(self, api_key: int, version: int) -> bool:
        versions = self._index.get(api_key)
        return versions is not None and version in versions

    def with_range(self, api_key: ApiKey, min_version: int, max_version: int) -> ApiRegistry:
        """A copy where `api_key` supports exactly `min_version`-`max_version` (added if absent)."""
        kept = tuple(item for item in self.ranges if item[0] != api_key)
        return ApiRegistry((*kept, (api_key, VersionRange(min_version, max_version))))

    def without(self, api_key: ApiKey) -> ApiRegistry:
        return ApiRegistry(tuple(item for item in self.ranges if item[0] != api_key))

    @property
    def api_keys(self) -> tuple[ApiKey, ...]:
        return tuple(key for key, _ in self.ranges)

    def __iter__(self) -> Iterator[tuple[ApiKey, VersionRange]]:
        return iter(self.ranges)

    def __len__(self) -> int:
        return len(self.ranges)


KRAFT_NODE_APIS = ApiRegistry.of(
    {
        ApiKey.API_VERSIONS: (0, 4),
        # Fetch 13+: KRaft validates the metadata topic *id* (Uuid.METADATA_TOPIC_ID) in every Fetch
        # (RaftUtil.hasValidTopicPartition), and topic ids exist on the wire only from v13; v12 requests
        # would always fail with INVALID_REQUEST. v17 carries ReplicaDirectoryId (KIP-853) and is the top
        # version of Kafka 4.0 controllers; v18 (4.1+, KIP-1166) only adds the follower's HighWatermark as
        # a tagged field, so accepting it costs nothing and lets 4.1+ peers use their preferred version.
        ApiKey.FETCH: (13, 18),
        # Metadata: kafka-python 3.0.12 bootstraps with the highest common version; 0-12 covers every
        # client we test with, and v13 (KIP-1102) only adds a top-level error code for re-bootstrapping.
        ApiKey.METADATA: (0, 12),
        ApiKey.VOTE: (0, 2),  # v2 = PreVote (KIP-996)
        ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
        ApiKey.END_QUORUM_EPOCH: (0, 1),
        ApiKey.DESCRIBE_QUORUM: (0, 2),
        # kio (Kafka 4.1+ schemas) has only v2-3: the topic-name versions 0-1 are gone from Kafka's schema.
        ApiKey.ALTER_PARTITION: (2, 3),
        ApiKey.UPDATE_FEATURES: (0, 2),
        ApiKey.FETCH_SNAPSHOT: (0, 1),
        ApiKey.DESCRIBE_CLUSTER: (0, 2),  # v2 = IncludeFencedBrokers / IsFenced (KIP-1073)
        ApiKey.BROKER_REGISTRATION: (0, 4),
        ApiKey.BROKER_HEARTBEAT: (0, 1),
        ApiKey.CONTROLLER_REGISTRATION: (0, 0),
        ApiKey.ADD_RAFT_VOTER: (0, 1),  # v1 = AckWhenCommitted (KIP-1186)
        ApiKey.REMOVE_RAFT_VOTER: (0, 0),
        ApiKey.UPDATE_RAFT_VOTER: (0, 0),
    }
)


# What a running node (pykraft/node/runtime/runtime.py) advertises: the KRaft set plus Produce to `__cluster_metadata`
# (the quickstart's and the benchmark's write path, off unless `pykraft.produce.enable=true`). v9 is the first
# flexible version; v13 (KIP-516) names topics by id only, which the metadata topic's clients do not send.
NODE_RUNTIME_APIS = KRAFT_NODE_APIS.with_range(ApiKey.PRODUCE, 9, 12)
