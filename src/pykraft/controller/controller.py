"""QuorumController: the metadata state machine every controller replica runs (reference §8.1).

It composes the registrations image (cluster.py), the finalized features (features.py), the topics and partitions
(replication.py) and, on the active controller only, the broker sessions (heartbeats.py). The runtime drives it:

- `replay(record, offset)` on every replica, for every committed metadata record in log order. The active
  controller also replays the records of its own results at once, before they commit, as Kafka does; if it loses
  leadership first, the runtime rebuilds it with `load_snapshot` + the committed log, discarding those replays.
- `activate(now_ms)` when this replica becomes the active controller (raft leader): bootstrap records if the image
  is empty, and a fresh session clock for every registered broker (KAFKA-18138). `deactivate()` when it stops.
- `handle(api_key, request, now_ms, next_offset)` on the active controller: a ControllerResult whose records the
  runtime appends as one batch (`next_offset` is the offset the first of them will get: a broker's epoch is the
  offset of its RegisterBrokerRecord) and whose response it sends once they commit.
- `tick(now_ms, next_offset)` on the active controller, at least by `next_wakeup_ms()`: fence one broker whose
  session expired, else move leaders back to preferred replicas (every leader_imbalance_check_interval_ms), and a
  NoOpRecord every max_idle_interval_ms so the high watermark keeps moving (KAFKA-13959).
- `snapshot_records()` / `load_snapshot(records, last_contained_offset)`.

No I/O, clock or global randomness here: time comes in as `now_ms`, randomness from the `random.Random` given.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.static.primitive import i16

from pykraft.records.metadata.schema import RECORD_CLASSES
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.no_op_record import NoOpRecordV0
from pykraft.records.metadata.written_versions import each_as_written

from . import cluster as cluster_records
from .acl_control import ACL_RECORD, REMOVE_ACL_RECORD, AclControl, AclReplayError
from .acl_requests import create_acls, delete_acls
from .broker_lifecycle import BrokerLifecycle, handle_controller_registration
from .cluster import ClusterControl, ReplayError
from .config_schema import effective_topic_configs
from .configs import BROKER as BROKER_RESOURCE
from .configs import ConfigControl
from .create_partitions import create_partitions
from .features import (
    DEFAULT_SUPPORTED_FEATURES,
    FEATURE_LEVEL_RECORD,
    METADATA_VERSION,
    FeatureControl,
    handle_update_features,
)
from .heartbeats import HeartbeatManager
from .metrics import ControllerMetrics
from .partitions import PartitionRecordError
from .producer_ids import PRODUCER_IDS_RECORD, ProducerIdControl
from .reassignments import ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS
from .replication import MetadataReplayError, ReplicationControl
from .dir_assignment import assign_replicas_to_dirs
from .result import ControllerResult
from .scram_control import REMOVE_SCRAM_RECORD, SCRAM_RECORD, ScramControl, ScramReplayError

CREATE_TOPICS = 19
DELETE_TOPICS = 20
ELECT_LEADERS = 43
ALTER_PARTITION = 56
UPDATE_FEATURES = 57
BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63
UNREGISTER_BROKER = 64
CONTROLLER_REGISTRATION = 70
ALTER_CONFIGS = 33
CREATE_PARTITIONS = 37
INCREMENTAL_ALTER_CONFIGS = 44
ALLOCATE_PRODUCER_IDS = 67
ASSIGN_REPLICAS_TO_DIRS = 73
CREATE_ACLS = 30
DELETE_ACLS = 31
ALTER_USER_SCRAM_CREDENTIALS = 51
HANDLED_APIS = frozenset({CREATE_TOPICS, DELETE_TOPICS, ELECT_LEADERS, ALTER_PARTITION, UPDATE_FEATURES,
                          BROKER_REGISTRATION, BROKER_HEARTBEAT, UNREGISTER_BROKER, CONTROLLER_REGISTRATION,
                          ALTER_CONFIGS, CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS, ALLOCATE_PRODUCER_IDS,
                          ASSIGN_REPLICAS_TO_DIRS, ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS,
                          CREATE_ACLS, DELETE_ACLS, ALTER_USER_SCRAM_CREDENTIALS})

# Which part of the image replays which metadata record type (api key); ConfigRecords (and the configs of a removed
# topic) go to ConfigControl.replay_side, ProducerIdsRecords to ProducerIdControl. Types not listed (quotas, ACLs,
# SCRAM, delegation tokens, transactions markers, ZK migration) are not modelled and are skipped; NoOpRecord changes
# nothing by definition.
REPLICATION_RECORDS = frozenset({2, 3, 5, 9})  # Topic, Partition, PartitionChange, RemoveTopic
NO_OP_RECORD = 20
_REPLAY_ERRORS = (ReplayError, MetadataReplayError, PartitionRecordError, AclReplayError, ScramReplayError)
SECURITY_RECORDS = frozenset({ACL_RECORD, REMOVE_ACL_RECORD, SCRAM_RECORD, REMOVE_SCRAM_RECORD})
# Versions of the broker-side APIs this controller answers (the partition side checks its own).
SUPPORTED_VERSIONS = {BROKER_REGISTRATION: range(0, 5), BROKER_HEARTBEAT: range(0, 3), UNREGISTER_BROKER: range(0, 1),
                      CONTROLLER_REGISTRATION: range(0, 1), UPDATE_FEATURES: range(0, 3),
                      ALTER_PARTITION_REASSIGNMENTS: range(0, 2), LIST_PARTITION_REASSIGNMENTS: range(0, 1)}
_METADATA_RECORD_CLASSES = frozenset(RECORD_CLASSES.values())


class ControllerError(Exception):
    """Base of the errors `handle` raises instead of answering (the runtime maps them to an error response)."""


class NotActiveControllerError(ControllerError):
    """A request reached a replica that is not the active controller: answer NOT_CONTROLLER."""


class UnsupportedControllerApiError(ControllerError):
    """An API key the controller does not serve: answer UNSUPPORTED_VERSION."""


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    node_id: int
    cluster_id: str
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    max_idle_interval_ms: int = 500  # metadata.max.idle.interval.ms; 0 disables the NoOpRecord
    auto_leader_rebalance: bool = True  # auto.leader.rebalance.enable
    leader_imbalance_check_interval_ms: int = 300_000  # leader.imbalance.check.interval.seconds * 1000
    max_elections_per_balance: int = 1000
    # Kafka's periodic election of leaderless partitions whose topic allows unclean elections (5 minutes; 0: never)
    unclean_check_interval_ms: int = 300_000
    supported_features: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_SUPPORTED_FEATURES))
    # The metadata records of bootstrap.checkpoint (FeatureLevelRecord metadata.version, ...), written on the
    # first activation of an empty cluster.
    bootstrap_records: tuple[Any, ...] = ()
    # Builds the partition side; a test or the simulator may pass its own (e.g. with other defaults).
    replication_factory: Callable[[random.Random], ReplicationControl] = ReplicationControl
    # This node's server.properties: the lowest level of the topic configs it resolves (CreateTopics' answer,
    # unclean.leader.election.enable), below the dynamic configs of the image.
    static_configs: Mapping[str, str] = field(default_factory=dict)


class QuorumController:
    def __init__(self, config: ControllerConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self.active = False
        self.new_active_controllers = 0
        self.next_noop_ms = 0
        self.next_balance_ms = 0
        self.next_unclean_check_ms = 0
        self.metadata_errors = 0  # kept across rebuilds: MetadataErrorCount only grows
        self._reset_image()

    def _reset_image(self) -> None:
        config = self.config
        self.cluster = ClusterControl()
        self.features = FeatureControl(config.node_id, config.supported_features)
        self.replication = config.replication_factory(self.rng)
        self.configs = ConfigControl()
        self.replication.unclean_election_enabled = lambda topic: self.configs.unclean_election_enabled(
            topic, config.node_id, config.static_configs)
        self.producer_ids = ProducerIdControl()
        self.acls = AclControl()
        self.scram = ScramControl()
        self.heartbeats = HeartbeatManager(config.session_timeout_ms)
        self.lifecycle = BrokerLifecycle(config.cluster_id, self.cluster, self.heartbeats, self.features,
                                         self.replication)
        self.last_applied_offset = -1

    def _effective_topic_configs(self, own: Mapping[str, str]) -> list[tuple[str, str | None, int, bool]]:
        node = self.configs.of(BROKER_RESOURCE, str(self.config.node_id))
        return effective_topic_configs(own, node, self.configs.of(BROKER_RESOURCE, ""), self.config.static_configs)

    # ---- replay (every replica) --------------------------------------------------------------------------------
    def replay(self, record: Any, offset: int) -> None:
        """Apply one metadata record. A record that does not fit the image is counted (MetadataErrorCount) and
        leaves the image as it was; it never raises."""
        key = int(record.__api_key__)
        try:
            self.configs.replay_side(key, record, self.replication)
            if key in cluster_records.RECORD_TYPES:
                self.cluster.replay(record, offset)
            elif key in REPLICATION_RECORDS:
                self.replication.replay(record)
            elif key == FEATURE_LEVEL_RECORD:
                self.features.replay(record)
            elif key == PRODUCER_IDS_RECORD:
                self.producer_ids.replay(record)
            elif key in SECURITY_RECORDS:
                replay_security(self.acls, self.scram, key, record)
        except _REPLAY_ERRORS:
            self.metadata_errors += 1
        self.last_applied_offset = max(self.last_applied_offset, offset)

    def snapshot_records(self) -> Iterator[Any]:
        """Features first (metadata.version leads: readers need it for what follows), then registrations, then
        topics and partitions, then configs (a topic's after the topic), producer ids, SCRAM credentials, ACLs."""
        records = itertools.chain(self.features.snapshot_records(), self.cluster.snapshot_records(),
                                  self.replication.snapshot_records(), self.configs.snapshot_records(),
                                  self.producer_ids.snapshot_records(), self.scram.snapshot_records(),
                                  self.acls.snapshot_records())
        yield from each_as_written(records, self.features.metadata_version)  # Kafka's versions, as in the log

    def load_snapshot(self, records: Iterable[Any], last_contained_offset: int = -1) -> None:
        """Replace the whole image with the snapshot's. Soft state goes too: a loaded replica is not active."""
        self._reset_image()
        self.active = False
        for record in records:
            self.replay(record, last_contained_offset)
        self.last_applied_offset = last_contained_offset

    def image(self) -> tuple[Any, ...]:
        """Everything replay builds, in comparable form (two replicas that replayed the same records agree)."""
        replication = self.replication
        return (dict(self.features.finalized), *self.cluster.image(), dict(replication.topics_by_name),
                {topic_id: (t.name, dict(t.partitions)) for topic_id, t in replication.topics.items()},
                {resource: dict(values) for resource, values in self.configs.configs.items()},
                self.producer_ids.next_producer_id, dict(self.scram.credentials), dict(self.acls.by_id))

    # ---- activation --------------------------------------------------------------------------------------------
    def activate(self, now_ms: int) -> ControllerResult:
        """Become the active controller. Bootstrap an empty image; restart every broker's session clock."""
        self.active = True
        self.new_active_controllers += 1
        shutting_down = [(b, self.last_applied_offset) for b, r in self.cluster.brokers.items()
                         if r.in_controlled_shutdown and not r.fenced]
        self.heartbeats.reseed(((b, r.fenced) for b, r in self.cluster.brokers.items()), now_ms, shutting_down)
        self.next_noop_ms = now_ms + self.config.max_idle_interval_ms
        self.next_balance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
        self.next_unclean_check_ms = now_ms + self.config.unclean_check_interval_ms
        if self.features.metadata_version is not None:
            return ControllerResult()
        return ControllerResult(self._bootstrap_records())

    def _bootstrap_records(self) -> tuple[Any, ...]:
        """The metadata records of the bootstrap checkpoint (its control records belong to raft), with
        metadata.version first; the highest supported metadata.version when the bootstrap names none."""
        records = [r for r in self.config.bootstrap_records if type(r) in _METADATA_RECORD_CLASSES]
        levels = [r for r in records if int(r.__api_key__) == FEATURE_LEVEL_RECORD and r.name == METADATA_VERSION]
        if not levels:
            supported = self.config.supported_features[METADATA_VERSION]
            levels = [FeatureLevelRecordV0(name=METADATA_VERSION, feature_level=i16(supported.max_version))]
        return (*levels, *(r for r in records if r not in levels))

    def deactivate(self) -> None:
        self.active = False
        self.heartbeats.sessions.clear()

    # ---- requests (active controller) --------------------------------------------------------------------------
    def handle(self, api_key: int, request: Any, now_ms: int, next_offset: int) -> ControllerResult:
        if not self.active:
            raise NotActiveControllerError(f"controller {self.config.node_id} is not active")
        versions = SUPPORTED_VERSIONS.get(api_key)
        if versions is not None and int(request.__version__) not in versions:
            raise UnsupportedControllerApiError(f"api key {api_key} version {request.__version__} is not supported")
        if api_key == BROKER_HEARTBEAT:
            return self.lifecycle.handle_heartbeat(request, now_ms, next_offset)
        if api_key == BROKER_REGISTRATION:
            return self.lifecycle.handle_registration(request, now_ms, next_offset)
        if api_key == UNREGISTER_BROKER:
            return self.lifecycle.handle_unregister(request)
        if api_key == CONTROLLER_REGISTRATION:
            return handle_controller_registration(request, self.features)
        if api_key == UPDATE_FEATURES:
            return handle_update_features(self.features, request, self.cluster)
        if api_key == ALTER_PARTITION:
            return self.replication.handle_alter_partition(request, int(request.__version__), self.cluster)
        if api_key == CREATE_TOPICS:
            return self.replication.handle_create_topics(request, self.cluster, now_ms, self._effective_topic_configs)
        if api_key == DELETE_TOPICS:
            return self.replication.handle_delete_topics(request, now_ms)
        if api_key == ELECT_LEADERS:
            return self.replication.handle_elect_leaders(request, self.cluster, now_ms)
        if api_key == INCREMENTAL_ALTER_CONFIGS:
            return self.configs.incremental_alter(request, self.replication)
        if api_key == ALTER_CONFIGS:
            return self.configs.alter(request, self.replication)
        if api_key == CREATE_PARTITIONS:
            return create_partitions(self.replication, request, self.cluster)
        if api_key == ALLOCATE_PRODUCER_IDS:
            return self.producer_ids.handle_allocate(request, self.cluster)
        if api_key == ASSIGN_REPLICAS_TO_DIRS:
            return assign_replicas_to_dirs(self.replication, self.cluster, request, self.features.metadata_version)
        if api_key == ALTER_PARTITION_REASSIGNMENTS:
            return self.replication.handle_alter_reassignments(request, self.cluster)
        if api_key == LIST_PARTITION_REASSIGNMENTS:
            return self.replication.handle_list_reassignments(request)
        if api_key == CREATE_ACLS:
            return create_acls(self.acls, request, lambda: uuid.UUID(int=self.rng.getrandbits(128), version=4))
        if api_key == DELETE_ACLS:
            return delete_acls(self.acls, request)
        if api_key == ALTER_USER_SCRAM_CREDENTIALS:
            return self.scram.alter(request, self.features.metadata_version)
        raise UnsupportedControllerApiError(f"the controller does not handle api key {api_key}")

    def note_kraft_version(self, version: int) -> None:
        """The runtime reports the kraft.version of the raft log (registrations must support it)."""
        self.features.kraft_version = version

    # ---- periodic work (active controller) ---------------------------------------------------------------------
    def tick(self, now_ms: int, next_offset: int) -> ControllerResult:
        """Fence at most one stale broker; otherwise, when due, preferred-leader balancing and the unclean
        election of leaderless partitions whose topic allows it; and a NoOpRecord when due. Balancing is skipped in a tick that fences, because its elections would be built against an image
        where the broker being fenced still looks eligible."""
        if not self.active:
            return ControllerResult()
        fenced = self.lifecycle.maybe_fence_one_stale_broker(now_ms)
        records = list(fenced.records)
        if self.config.auto_leader_rebalance and now_ms >= self.next_balance_ms and not records:
            records += self.replication.records_for_preferred_balance(self.cluster,
                                                                      self.config.max_elections_per_balance)
            self.next_balance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
        if self.config.unclean_check_interval_ms > 0 and now_ms >= self.next_unclean_check_ms and not records:
            records += self.replication.records_for_unclean_recovery(self.cluster)
            self.next_unclean_check_ms = now_ms + self.config.unclean_check_interval_ms
        if self.config.max_idle_interval_ms > 0 and now_ms >= self.next_noop_ms:
            records.append(NoOpRecordV0())
            self.next_noop_ms = now_ms + self.config.max_idle_interval_ms
        return ControllerResult(tuple(records), notes=fenced.notes)

    def next_wakeup_ms(self) -> int | None:
        """The earliest time `tick` has something to do (None when inactive)."""
        if not self.active:
            return None
        times = [self.next_balance_ms] if self.config.auto_leader_rebalance else []
        if self.config.unclean_check_interval_ms > 0:
            times.append(self.next_unclean_check_ms)
        if self.config.max_idle_interval_ms > 0:
            times.append(self.next_noop_ms)
        session_check = self.heartbeats.next_check_ms()
        if session_check is not None:
            times.append(session_check)
        return min(times) if times else None

    # ---- metrics -----------------------------------------------------------------------------------------------
    def metrics(self) -> ControllerMetrics:
        replication = self.replication
        return ControllerMetrics(
            active_controller_count=1 if self.active else 0,
            fenced_broker_count=self.cluster.fenced_broker_count(),
            active_broker_count=self.cluster.active_broker_count(),
            global_topic_count=replication.topic_count(),
            global_partition_count=replication.partition_count(),
            offline_partitions_count=replication.offline_partition_count(),
            preferred_replica_imbalance_count=replication.preferred_replica_imbalance_count(),
            metadata_error_count=self.metadata_errors,
            last_applied_record_offset=self.last_applied_offset,
            timed_out_broker_heartbeat_count=self.heartbeats.timed_out_heartbeats,
            new_active_controllers_count=self.new_active_controllers)


def replay_security(acls: AclControl, scram: ScramControl, key: int, record: Any) -> None:
    """An ACL or SCRAM record into its part of the image (the controller's and the broker's replay share this)."""
    if key in (ACL_RECORD, REMOVE_ACL_RECORD):
        acls.replay(record)
    else:
        scram.replay(record)
