"""Brokers (MetadataCache + BrokerLifecycle + IsrManager) wired to one real QuorumController in one process.

Time moves in fixed steps. Each step: the controller ticks; every broker replays the log it has not seen yet
(unless its metadata is paused), reports the offset, lets its ISR manager follow, polls, and gets data-plane
progress from a toy replication model; then every request is handled by the controller, its records appended
(committed at once: there is one controller and no raft here) and the answer handed back.

The toy data plane: every partition's leader appends one record per step; a follower copies the leader's log
end at once unless it is `lagging` (frozen) or its broker is stopped. A follower's Fetch carries its broker's
current epoch.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from pykraft.broker.actions import BrokerState, Ready, SendToController, ShutdownComplete, StateChanged
from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.isr_rules import FollowerProgress, LeaderProgress
from pykraft.broker.lifecycle import BrokerLifecycle, LifecycleConfig
from pykraft.broker.metadata_cache import MetadataCache, TopicPartition
from pykraft.controller.cluster import Endpoint, FeatureRange
from pykraft.controller.controller import CREATE_TOPICS, ControllerConfig, QuorumController
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
MV = 27
SESSION_MS = 3000
HEARTBEAT_MS = 500
LAG_MS = 2000
STEP_MS = 50


@dataclass
class BrokerNode:
    broker_id: int
    cache: MetadataCache
    lifecycle: BrokerLifecycle
    isr: IsrManager
    applied: int = 0
    follow_metadata: bool = True
    heartbeats_reach_controller: bool = True
    stopped: bool = False
    shutdown: ShutdownComplete | None = None
    outbox: list[tuple[str, SendToController]] = field(default_factory=list)
    states: list[BrokerState] = field(default_factory=list)


class Cluster:
    def __init__(self, broker_ids: list[int]) -> None:
        config = ControllerConfig(node_id=3000, cluster_id=CLUSTER_ID, session_timeout_ms=SESSION_MS,
                                  bootstrap_records=(FeatureLevelRecordV0(name="metadata.version",
                                                                          feature_level=i16(MV)),))
        self.controller = QuorumController(config, random.Random(7))
        self.log: list[Any] = []
        self.now = 0
        self.leo: dict[TopicPartition, int] = {}
        self.follower_leo: dict[tuple[TopicPartition, int], tuple[int, int]] = {}  # -> (leo, last caught up)
        self.lagging: set[int] = set()
        self.ineligible_answers = 0
        self.append(self.controller.activate(self.now).records)
        self.brokers = {b: self._node(b) for b in broker_ids}
        for node in self.brokers.values():
            self.collect(node, "lifecycle", node.lifecycle.start(self.now))

    def _node(self, broker_id: int) -> BrokerNode:
        cache = MetadataCache()
        lifecycle = BrokerLifecycle(LifecycleConfig(
            node_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=uuid.UUID(int=(broker_id << 64) | 1),
            listeners=(Endpoint("PLAINTEXT", "localhost", 9090 + broker_id, 0),),
            features={"metadata.version": FeatureRange(7, MV)}, log_dirs=(uuid.UUID(int=(9 << 96) | broker_id),),
            heartbeat_interval_ms=HEARTBEAT_MS, session_timeout_ms=SESSION_MS))
        isr = IsrManager(IsrManagerConfig(broker_id, replica_lag_time_max_ms=LAG_MS), cache)
        return BrokerNode(broker_id, cache, lifecycle, isr)

    # ---- the log -----------------------------------------------------------------------------------------------
    def append(self, records: tuple[Any, ...]) -> int:
        first = len(self.log)
        for record in records:
            self.controller.replay(record, len(self.log))
            self.log.append(record)
        return first

    def request(self, api_key: int, request: Any) -> Any:
        result = self.controller.handle(api_key, request, self.now, len(self.log))
        first = self.append(result.records)
        return result.response(first) if callable(result.response) else result.response

    def create_topic(self, name: str, partitions: int, replication: int) -> uuid.UUID:
        topic = ct_req.CreatableTopic(name=TopicName(name), num_partitions=i32(partitions),
                                      replication_factor=i16(replication), assignments=(), configs=())
        response = self.request(CREATE_TOPICS, ct_req.CreateTopicsRequest(topics=(topic,)))
        assert response.topics[0].error_code == 0, response
        return response.topics[0].topic_id

    # ---- stepping ----------------------------------------------------------------------------------------------
    def run(self, duration_ms: int) -> None:
        end = self.now + duration_ms
        while self.now < end:
            self.now += STEP_MS
            self.step()

    def run_until(self, condition, limit_ms: int = 60_000) -> None:
        end = self.now + limit_ms
        while not condition():
            assert self.now < end, "condition not reached in time"
            self.now += STEP_MS
            self.step()

    def step(self) -> None:
        self.append(self.controller.tick(self.now, len(self.log)).records)
        live = [n for n in self.brokers.values() if not n.stopped]
        for node in live:
            self._catch_up(node)
            self.collect(node, "lifecycle", node.lifecycle.poll(self.now))
            self.collect(node, "isr", node.isr.poll(self.now))
        self._replicate()
        for node in live:
            self.collect(node, "isr", node.isr.update_progress(self._progress(node), self.now))
        for node in live:
            self._deliver(node)

    def _catch_up(self, node: BrokerNode) -> None:
        if not node.follow_metadata or node.applied == len(self.log):
            return
        for offset in range(node.applied, len(self.log)):
            node.cache.replay(self.log[offset], offset)
        node.applied = len(self.log)
        node.lifecycle.note_metadata_offset(node.cache.last_applied_offset)
        self.collect(node, "isr", node.isr.sync_metadata(self.now))

    def collect(self, node: BrokerNode, component: str, ready: Ready) -> None:
        for action in ready.actions:
            if isinstance(action, SendToController):
                node.outbox.append((component, action))
            elif isinstance(action, StateChanged):
                node.states.append(action.new)
                if action.new is BrokerState.RECOVERY:  # nothing of its own to recover: ready at once
                    self.collect(node, "lifecycle", node.lifecycle.set_ready_to_unfence(self.now))
            elif isinstance(action, ShutdownComplete):
                node.shutdown = action
                node.stopped = True

    def _deliver(self, node: BrokerNode) -> None:
        while node.outbox:
            component, send = node.outbox.pop(0)
            target = node.lifecycle if component == "lifecycle" else node.isr
            if component == "lifecycle" and not node.heartbeats_reach_controller:
                self.collect(node, component, target.handle_failure(send.request_id, self.now))
                continue
            response = self.request(send.api_key, send.request)
            if getattr(response, "error_code", 0) == 0 and component == "isr":
                codes = [int(p.error_code) for t in response.topics for p in t.partitions]
                self.ineligible_answers += codes.count(107)
            self.collect(node, component, target.handle_response(send.request_id, response, self.now))

    # ---- toy data plane ----------------------------------------------------------------------------------------
    def _replicate(self) -> None:
        image = self.controller.replication
        for topic in image.topics.values():
            for pid, p in topic.partitions.items():
                tp = (topic.topic_id, pid)
                leo = self.leo[tp] = self.leo.get(tp, 0) + 1
                for replica in p.replicas:
                    behind = replica in self.lagging or self.brokers[replica].stopped
                    if replica != p.leader and not behind:
                        self.follower_leo[(tp, replica)] = (leo, self.now)

    def _progress(self, node: BrokerNode) -> dict[TopicPartition, LeaderProgress]:
        progress = {}
        for tp, p in node.cache.partitions_led_by(node.broker_id).items():
            followers = []
            for replica in p.replicas:
                known = self.follower_leo.get((tp, replica))
                if replica != node.broker_id and known is not None:
                    epoch = self.brokers[replica].lifecycle.broker_epoch
                    followers.append(FollowerProgress(replica, known[0], known[1], epoch))
            progress[tp] = LeaderProgress(p.leader_epoch, self.leo.get(tp, 0), 0, tuple(followers))
        return progress

    # ---- views ---------------------------------------------------------------------------------------------
    def partitions(self) -> dict[TopicPartition, Any]:
        return {(t.topic_id, pid): p for t in self.controller.replication.topics.values()
                for pid, p in t.partitions.items()}
