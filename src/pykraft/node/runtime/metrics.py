"""Prometheus metrics of a node, named after Kafka's `raft-metrics` group (reference §7.1).

Mapping (Kafka JMX `kafka.server:type=raft-metrics,name=X` -> Prometheus `kafka_raft_X` with dashes as underscores):
- gauges read from the core at scrape time: `kafka_raft_current_state` (an enum: leader, candidate, voted, follower,
  unattached, observer, prospective, resigned; "voted" is Unattached with a vote, "observer" a non-voter that
  follows), `kafka_raft_current_leader` (-1), `kafka_raft_current_vote` (-1), `kafka_raft_current_epoch`,
  `kafka_raft_high_watermark` (-1), `kafka_raft_log_end_offset`, `kafka_raft_log_end_epoch`,
  `kafka_raft_number_of_voters`, `kafka_raft_number_of_observers` (leader only, else 0),
  `kafka_raft_uncommitted_voter_change` (0/1), `kafka_raft_number_unknown_voter_connections` (voters other than
  this node without an endpoint on the raft listener), `kafka_raft_poll_idle_ratio` (the share of time the core task
  waited for input since the previous scrape), `kafka_raft_current_vote_directory_id{directory_id="..."} 1` (Kafka's
  string gauge as a label: the voted-for replica's directory id, Kafka's zero UUID string when none);
- histograms (Kafka reports avg/max; Prometheus derives both and more from a histogram):
  `kafka_raft_commit_latency_ms` (from the leader's append of a write until the high watermark covers it, for every
  write the leader appends: Produce, the controller's own records, control records), `kafka_raft_election_latency_ms`
  (from the loss of a known leader until a leader is known again);
- counters (Kafka's *-rate sensors are `rate()` over these): `kafka_raft_append_records_total` (every record
  appended by this node as leader), `kafka_raft_fetch_records_total` (log growth through fetches as a follower);
- pykraft's own: `pykraft_fsyncs_total`, `pykraft_flush_requests_total` (their ratio shows group commit),
  `pykraft_bad_frames_total`, `pykraft_outbound_failures_total`, `pykraft_snapshots_total`, and
  `pykraft_request_handler_errors_total{api="ELECT_LEADERS"}`: requests and peer responses whose handling raised,
  per API (`ApiKey` names), each contained at its boundary (handler_errors.py).

Controller metrics (reference §7.2), only when the state machine is a ControllerHost: every value of
`QuorumController.metrics()` as a gauge named the way Prometheus' JMX exporter names a Kafka MBean with
`lowercaseOutputName: true`: `kafka.controller:type=KafkaController,name=X` -> `kafka_controller_kafkacontroller_`
+ X lowercased (domain, type and name joined by "_", dots as "_"), e.g. ActiveControllerCount ->
`kafka_controller_kafkacontroller_activecontrollercount`. The host adds LastCommittedRecordOffset,
LastAppliedRecordTimestamp and LastAppliedRecordLagMs (now minus the append time of the last committed batch; -1
before any), and its own counters `pykraft_controller_undecodable_records_total`, `..._rebuilds_total`,
`..._not_controller_answers_total`, `..._snapshots_loaded_total`. The event-queue metrics of Kafka's
QuorumController, over the requests and timer events the host runs on the core task: EventQueueOperationsStartedCount,
EventQueueOperationsTimedOutCount (requests whose caller gave up before they ran) as KafkaController gauges, and the
histograms `kafka_controller_controllereventmanager_eventqueuetimems` (submit to start) and
`..._eventqueueprocessingtimems` (start to end); IsObserver (1 on a controller that is not a voter).
Broker metrics, when the node runs a broker (alone or combined): `pykraft_broker_state` (state set of the lifecycle
states), `pykraft_broker_epoch`, `pykraft_broker_isr_shrinks_total`, `..._isr_expands_total`,
`..._failed_isr_updates_total`; the log cleaner's gauges named the same way as the controller's,
`kafka.log:type=LogCleaner,name=max-clean-time-secs` -> `kafka_log_logcleaner_max_clean_time_secs` (also
cleaner-recopy-percent, max-buffer-utilization-percent, max-compaction-delay-secs, DeadThreadCount) and
`kafka.log:type=LogCleanerManager,...` -> `kafka_log_logcleanermanager_max_dirty_percent`,
`..._time_since_last_run_ms`, `..._uncleanable_partitions_count{logDirectory="..."}`.
Each runtime has its own registry, so several nodes can live in one process (tests).

prometheus_client is imported only when something reads the metrics (the registry, the HTTP endpoint, a scrape):
its package imports http.server, urllib.request, email and ssl (which maps OpenSSL's libcrypto), ~6 MiB of a
node's idle RSS (benchmarks/quorum.py) that a node without `pykraft.metrics.port` never uses. Until then the two
raft histograms are plain MsHistograms; their exposition is the same as a prometheus_client Histogram's.
"""

from __future__ import annotations

import collections
import importlib
import sys
import time
import uuid
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pykraft.records.uuids import uuid_to_kafka_str

from pykraft.raft.states import Role

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import HistogramMetricFamily

    from pykraft.node.runtime.runtime import NodeRuntime

STATES = ("leader", "candidate", "voted", "follower", "unattached", "observer", "prospective", "resigned")
_LATENCY_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)


def prometheus_client() -> ModuleType:
    """prometheus_client, imported on first use; python-snappy, which its `exposition` imports for a push-gateway
    option a node does not use (~2 MiB), is hidden while it loads unless something imported it already (pykraft's
    record codec imports snappy itself when a snappy batch arrives)."""
    if "prometheus_client" in sys.modules:
        return sys.modules["prometheus_client"]
    hide_snappy = "snappy" not in sys.modules
    if hide_snappy:
        sys.modules["snappy"] = None  # type: ignore[assignment]  # makes `import snappy` raise ImportError
    try:
        return importlib.import_module("prometheus_client")
    finally:
        if hide_snappy:
            del sys.modules["snappy"]


def state_name(core: Any) -> str:
    role = core.quorum.role
    key = core.local.key
    is_voter = key is not None and core.voters().is_voter(key)
    if role is Role.FOLLOWER and not is_voter:
        return "observer"
    if role is Role.UNATTACHED and core.quorum.election().voted_key is not None:
        return "voted"
    return role.value.lower()


class NodeMetrics:
    def __init__(self, runtime: NodeRuntime) -> None:
        self.runtime = runtime
        self._registry: CollectorRegistry | None = None
        # labelled like prometheus_client's Histogram ("1.0"), with its `_created` sample
        self.commit_latency = MsHistogram(float_labels=True, created=time.time())
        self.election_latency = MsHistogram(float_labels=True, created=time.time())
        self.append_records = 0
        self.fetch_records = 0
        self._leaderless_since: int | None = runtime.clock()  # a node starts without a known leader
        self._log_end: int | None = None
        self._appended_end: int | None = None  # the leader's appended end offset at the previous input
        self._uncommitted: collections.deque[tuple[int, int]] = collections.deque()  # (last offset, append ms)
        self._idle_seen = (0.0, 0.0)  # the core task's (idle, busy) seconds at the previous scrape
        self._server: Any = None

    @property
    def registry(self) -> CollectorRegistry:
        """This node's registry, made (and prometheus_client imported) on first use."""
        if self._registry is None:
            self._registry = prometheus_client().CollectorRegistry(auto_describe=True)
            self._registry.register(self)
        return self._registry

    def serve(self, port: int, host: str = "0.0.0.0") -> None:
        server = prometheus_client().start_http_server(port, addr=host, registry=self.registry)
        self._server = server[0] if isinstance(server, tuple) else server

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    def observe(self, core: Any, now_ms: int) -> None:
        """After every input: election latency and follower log growth (the rest is read at scrape time)."""
        leader = core.quorum.leader_id()
        if leader is None and self._leaderless_since is None:
            self._leaderless_since = now_ms
        elif leader is not None and self._leaderless_since is not None:
            self.election_latency.observe(max(0, now_ms - self._leaderless_since))
            self._leaderless_since = None
        end = core.log.end_offset()
        if self._log_end is not None and end > self._log_end and core.quorum.role is Role.FOLLOWER:
            self.fetch_records += end - self._log_end
        self._log_end = end
        self._observe_leader_writes(core, now_ms)

    def _observe_leader_writes(self, core: Any, now_ms: int) -> None:
        """Kafka's append-records and commit-latency over every write the leader appends (its accumulator's next
        offset grows at the append), committed when the high watermark passes its last offset."""
        leader = core.leader_state()
        if leader is None:
            self._appended_end = None
            self._uncommitted.clear()
            return
        appended = max(leader.accumulator.next_offset, core.log.end_offset())
        if self._appended_end is not None and appended > self._appended_end:
            self.append_records += appended - self._appended_end
            self._uncommitted.append((appended - 1, now_ms))
        self._appended_end = appended
        hwm = core.high_watermark
        while self._uncommitted and hwm is not None and self._uncommitted[0][0] < hwm:
            self.commit_latency.observe(max(0, now_ms - self._uncommitted.popleft()[1]))

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, StateSetMetricFamily

        yield self.commit_latency.family("kafka_raft_commit_latency_ms", "Client append to commit (ms)")
        yield self.election_latency.family("kafka_raft_election_latency_ms", "Leader unknown to leader known (ms)")
        runtime = self.runtime
        core = runtime.core
        if core is None:
            return
        name = state_name(core)
        yield StateSetMetricFamily("kafka_raft_current_state", "The raft role of this node",
                                   value={state: state == name for state in STATES})
        election = core.quorum.election()
        leader = core.leader_state()
        values = {
            "current_leader": _or_minus_one(core.quorum.leader_id()),
            "current_vote": -1 if election.voted_key is None else election.voted_key.id,
            "current_epoch": core.quorum.epoch,
            "high_watermark": _or_minus_one(core.high_watermark),
            "log_end_offset": core.log.end_offset(),
            "log_end_epoch": core.log.last_fetched_epoch(),
            "number_of_voters": len(core.voters().ids()),
            "number_of_observers": len(leader.observer_progress) if leader is not None else 0,
            "uncommitted_voter_change": int(_uncommitted_change(core)),
            "number_unknown_voter_connections": _unknown_voters(core),
            "poll_idle_ratio": self._poll_idle_ratio(),
        }
        for key, value in values.items():
            yield GaugeMetricFamily(f"kafka_raft_{key}", f"raft-metrics {key.replace('_', '-')}", value=value)
        vote = GaugeMetricFamily("kafka_raft_current_vote_directory_id", "raft-metrics current-vote-directory-id",
                                 labels=["directory_id"])
        voted = election.voted_key.directory_id if election.voted_key is not None else None
        vote.add_metric([uuid_to_kafka_str(voted or uuid.UUID(int=0))], 1)
        yield vote
        lane, inbound, outbound = runtime.lane.stats, runtime.inbound, runtime.outbound.stats
        counters = {
            "kafka_raft_append_records": self.append_records,
            "kafka_raft_fetch_records": self.fetch_records,
            "pykraft_fsyncs": lane.fsyncs,
            "pykraft_flush_requests": lane.flush_requests,
            "pykraft_bad_frames": inbound.bad_frames,
            "pykraft_outbound_failures": outbound.failures,
            "pykraft_snapshots": runtime.snapshots.snapshots_taken,
            "pykraft_stale_wakeups": runtime.stale_wakeups,
        }
        for key, value in counters.items():
            yield CounterMetricFamily(key, key.replace("_", " "), value=value)
        handler_errors = CounterMetricFamily("pykraft_request_handler_errors",
                                             "requests and responses whose handling raised, per API", labels=["api"])
        for api, count in sorted(runtime.handler_errors.by_api.items()):
            handler_errors.add_metric([api], count)
        yield handler_errors
        controller, broker = runtime.controller_host, runtime.broker_host
        if controller is not None:
            yield from _controller_families(controller, runtime.clock())
        if broker is not None:
            yield from _broker_families(broker)

    def _poll_idle_ratio(self) -> float:
        idle, busy = self.runtime.poll_times
        last_idle, last_busy = self._idle_seen
        self._idle_seen = (idle, busy)
        total = (idle - last_idle) + (busy - last_busy)
        return (idle - last_idle) / total if total > 0 else 1.0

    def describe(self) -> list:
        return []  # collected on demand: nothing to describe up front (and no scrape at registration)


CONTROLLER_PREFIX = "kafka_controller_kafkacontroller_"


def controller_metric_name(kafka_name: str) -> str:
    """The JMX exporter's name for `kafka.controller:type=KafkaController,name=<kafka_name>` (lowercased)."""
    return CONTROLLER_PREFIX + kafka_name.lower()


def _controller_families(state_machine: Any, now_ms: int) -> Any:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    values = state_machine.controller.metrics().by_kafka_name()
    stamp = state_machine.last_applied_timestamp_ms
    values["LastCommittedRecordOffset"] = state_machine.committed_offset
    values["LastAppliedRecordTimestamp"] = -1 if stamp is None else stamp
    values["LastAppliedRecordLagMs"] = -1 if stamp is None else max(0, now_ms - stamp)
    queue = state_machine.event_queue
    values["EventQueueOperationsStartedCount"] = queue.started
    values["EventQueueOperationsTimedOutCount"] = queue.timed_out
    values["IsObserver"] = int(state_machine.is_observer())
    yield queue.queue_time_ms.family("kafka_controller_controllereventmanager_eventqueuetimems",
                                     "ControllerEventManager EventQueueTimeMs")
    yield queue.processing_time_ms.family("kafka_controller_controllereventmanager_eventqueueprocessingtimems",
                                          "ControllerEventManager EventQueueProcessingTimeMs")
    for kafka_name, value in values.items():
        yield GaugeMetricFamily(controller_metric_name(kafka_name), f"KafkaController {kafka_name}", value=value)
    counters = {"undecodable_records": state_machine.undecodable_records, "rebuilds": state_machine.rebuilds,
                "not_controller_answers": state_machine.not_controller_answers,
                "snapshots_loaded": state_machine.snapshots_loaded}
    for key, value in counters.items():
        yield CounterMetricFamily(f"pykraft_controller_{key}", f"controller host {key.replace('_', ' ')}",
                                  value=value)


def _broker_families(broker: Any) -> Any:
    """`pykraft_broker_state` (the lifecycle state as a state set), `pykraft_broker_epoch` (-1 before the first
    registration) and the ISR manager's counters (Kafka's ReplicaManager IsrShrinks/IsrExpands/FailedIsrUpdates)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, StateSetMetricFamily

    from pykraft.broker.actions import BrokerState

    current = broker.lifecycle.state
    yield StateSetMetricFamily("pykraft_broker_state", "broker lifecycle state",
                               value={state.value: state is current for state in BrokerState})
    yield GaugeMetricFamily("pykraft_broker_epoch", "broker epoch", value=broker.lifecycle.broker_epoch)
    isr = broker.isr.metrics
    for key, value in (("isr_shrinks", isr.isr_shrinks), ("isr_expands", isr.isr_expands),
                       ("failed_isr_updates", isr.failed_isr_updates)):
        yield CounterMetricFamily(f"pykraft_broker_{key}", f"broker {key.replace('_', ' ')}", value=value)
    cleaner = getattr(broker.data_plane, "cleaner", None)
    if cleaner is not None:
        yield from _cleaner_families(cleaner, broker._now())  # noqa: SLF001


_MANAGER_GAUGES = frozenset({"max-dirty-percent", "time-since-last-run-ms"})


def cleaner_metric_name(kafka_type: str, kafka_name: str) -> str:
    """The JMX exporter's name for `kafka.log:type=<kafka_type>,name=<kafka_name>` (lowercased, "-" -> "_")."""
    return f"kafka_log_{kafka_type}_{kafka_name}".lower().replace("-", "_")


def _cleaner_families(cleaner: Any, now_ms: int) -> Any:
    """Kafka's log cleaner gauges: kafka.log:type=LogCleaner,name=max-clean-time-secs ->
    kafka_log_logcleaner_max_clean_time_secs, and LogCleanerManager's, uncleanable-partitions-count per log
    directory with its `logDirectory` tag as a label."""
    from prometheus_client.core import GaugeMetricFamily

    for name, value in cleaner.metrics(now_ms).items():
        kind = "LogCleanerManager" if name in _MANAGER_GAUGES else "LogCleaner"
        yield GaugeMetricFamily(cleaner_metric_name(kind, name), f"{kind} {name}", value=value)
    uncleanable = GaugeMetricFamily(cleaner_metric_name("LogCleanerManager", "uncleanable-partitions-count"),
                                    "LogCleanerManager uncleanable-partitions-count", labels=["logDirectory"])
    for log_dir in cleaner.manager.log_dirs:
        uncleanable.add_metric([log_dir], cleaner.manager.uncleanable_count(log_dir))
    yield uncleanable


def _unknown_voters(core: Any) -> int:
    """Voters other than this node that have no endpoint on the raft listener (this node cannot reach them)."""
    listener = core.local.listener_name
    voters = core.voters()
    return sum(1 for node in voters.voters.values()
               if node.key.id != core.local.node_id and node.endpoints.address(listener) is None)


def _uncommitted_change(core: Any) -> bool:
    pending = core.reconfig.pending
    return core.leader_state() is not None and pending is not None and pending.record_offset is not None \
        and not pending.is_committed(core.high_watermark)


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else value


class MsHistogram:
    """A histogram of milliseconds kept without a registry (collected by NodeMetrics). `float_labels` and `created`
    (seconds since the epoch) make its exposition that of a prometheus_client Histogram: le="1.0" and `_created`."""

    def __init__(self, buckets: tuple[int, ...] = _LATENCY_BUCKETS_MS, *, float_labels: bool = False,
                 created: float | None = None) -> None:
        self.bounds = buckets
        self.labels = (*(str(float(b)) if float_labels else str(b) for b in buckets), "+Inf")
        self.counts = [0] * (len(buckets) + 1)
        self.total = 0.0
        self.created = created

    @property
    def count(self) -> int:
        return sum(self.counts)

    def observe(self, value_ms: float) -> None:
        index = next((i for i, bound in enumerate(self.bounds) if value_ms <= bound), len(self.bounds))
        self.counts[index] += 1
        self.total += value_ms

    def family(self, name: str, documentation: str) -> HistogramMetricFamily:
        from prometheus_client.core import HistogramMetricFamily

        cumulative, running = [], 0
        for label, count in zip(self.labels, self.counts):
            running += count
            cumulative.append((label, running))
        family = HistogramMetricFamily(name, documentation, buckets=cumulative, sum_value=self.total)
        if self.created is not None:
            family.add_sample(f"{name}_created", {}, self.created)
        return family


class EventQueueStats:
    """Kafka's QuorumController event-queue metrics, kept by the controller host."""

    def __init__(self) -> None:
        self.started = 0
        self.timed_out = 0
        self.queue_time_ms = MsHistogram()
        self.processing_time_ms = MsHistogram()
