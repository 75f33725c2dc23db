"""Prometheus metrics of a node (`pykraft.metrics.port`), named as Prometheus' jmx_exporter renders Kafka's JMX
beans: the names, the Kafka bean each one stands for and the rendering rules are in metric_names.py (and README.md
"Metrics"). Each runtime has its own registry, so several nodes can live in one process (tests).

What every node exports:
- raft-metrics as `kafka_server_raftmetrics_*`, read from the core at scrape time (state, leader, vote, epoch, high
  watermark, log end, voters, observers, ...), and the sensors Kafka samples: commit and election latency (`-avg`,
  `-max` over Kafka's window, and the histograms `..._seconds`), append and fetch records (`-rate`, and the counters
  `..._total`); `current-state` is a label (Strimzi's rule: `kafka_server_raftmetrics_current_state{current_state=
  "leader"} 1`). Commit latency runs from the leader's append of a write until the high watermark covers it, for
  every write the leader appends (Produce, the controller's own records, control records); election latency from
  the loss of a known leader until a leader is known again;
- Kafka's RequestMetrics per API (request_metrics.py), on every listener;
- the process collectors of prometheus_client (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
  `process_open_fds`, ...) and its `python_*` ones;
- pykraft's own counters: `pykraft_fsyncs_total`, `pykraft_flush_requests_total` (their ratio shows group commit),
  `pykraft_bad_frames_total`, `pykraft_outbound_failures_total`, `pykraft_snapshots_total`,
  `pykraft_stale_wakeups_total`, `pykraft_request_handler_errors_total{api="ELECT_LEADERS"}` (requests and peer
  responses whose handling raised, contained at their boundary: handler_errors.py), and what the raft core counts
  and drops, in the raft-metrics group of metric_names.py (`kafka_server_raftmetrics_dropped_responses_total`,
  ..._bad_control_records, ..._conflicting_leader_claims, ..._rejected_snapshot_chunks, ..._unsupported_requests,
  ..._refused_epochs, ..._leader_unreachable, ..._skipped_snapshot_loads, ..._ignored_api_versions,
  ..._failed_probes).
A controller adds the KafkaController gauges (controller/metrics.py, plus the host's LastCommittedRecordOffset,
LastAppliedRecord*, EventQueueOperations*Count, IsObserver), the ControllerEventManager histograms and the host's
counters `pykraft_controller_*`. A broker adds BrokerTopicMetrics, ReplicaManager, ReplicaFetcherManager, Log and
Partition gauges, the log cleaner's (LogCleaner, LogCleanerManager), the group coordinator's and
broker-metadata-metrics (broker_metrics.py).

prometheus_client is imported only when something reads the metrics (the registry, the HTTP endpoint, a scrape):
its package imports http.server, urllib.request, email and ssl (which maps OpenSSL's libcrypto), ~6 MiB of a
node's idle RSS (benchmarks/quorum.py) that a node without `pykraft.metrics.port` never uses. Until then every
statistic is a plain object (metric_stats.py).
"""

from __future__ import annotations

import collections
import importlib
import sys
import time
import uuid
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pykraft.raft.states import Role
from pykraft.records.uuids import uuid_to_kafka_str

from pykraft.node.runtime.metric_names import controller_name, raft_name
from pykraft.node.runtime.metric_stats import EventQueueStats, Histogram, WindowedStat
from pykraft.node.runtime.request_metrics import error_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from prometheus_client import CollectorRegistry

    from pykraft.raft.client import RaftCore

    from pykraft.node.runtime.runtime import NodeRuntime

__all__ = ["EventQueueStats", "NodeMetrics", "controller_metric_name", "prometheus_client"]
STATES = ("leader", "candidate", "voted", "follower", "unattached", "observer", "prospective", "resigned")
# What the raft core counts and drops, by its raft-metrics attribute in metric_names.TABLE (exported as
# kafka_server_raftmetrics_<attribute>_total).
RAFT_CORE_COUNTERS: dict[str, Callable[[RaftCore], int]] = {
    "dropped-responses": lambda core: core.dropped_responses,
    "bad-control-records": lambda core: core.bad_control_records,
    "conflicting-leader-claims": lambda core: core.conflicting_leader_claims,
    "rejected-snapshot-chunks": lambda core: core.rejected_snapshot_chunks,
    "unsupported-requests": lambda core: core.unsupported_requests,
    "refused-epochs": lambda core: core.refused_epochs,
    "leader-unreachable": lambda core: core.leader_unreachable,
    "skipped-snapshot-loads": lambda core: core.listener.skipped_snapshot_loads,
    "ignored-api-versions": lambda core: core.reconfig.ignored_api_versions,
    "failed-probes": lambda core: core.reconfig.failed_probes,
}


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


def controller_metric_name(kafka_name: str) -> str:
    """The exported name of `kafka.controller:type=KafkaController,name=<kafka_name>`."""
    return controller_name(kafka_name)


class NodeMetrics:
    def __init__(self, runtime: NodeRuntime) -> None:
        self.runtime = runtime
        self._registry: CollectorRegistry | None = None
        created = time.time()  # the `_created` sample a prometheus_client Histogram has
        self.commit_latency = Histogram(created=created)  # observed in ms, exposed in seconds
        self.election_latency = Histogram(created=created)
        self.commit_window, self.election_window = WindowedStat(), WindowedStat()  # Kafka's -avg and -max
        self.append_window, self.fetch_window = WindowedStat(), WindowedStat()  # Kafka's -rate
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
        """This node's registry, made (and prometheus_client imported) on first use, with the process collectors
        prometheus_client's default registry has (process_*, python_*, python_gc_*)."""
        if self._registry is None:
            client = prometheus_client()
            self._registry = client.CollectorRegistry(auto_describe=True)
            self._registry.register(self)
            client.ProcessCollector(registry=self._registry)
            client.PlatformCollector(registry=self._registry)
            client.GCCollector(registry=self._registry)
        return self._registry

    def serve(self, port: int, host: str = "0.0.0.0") -> None:
        server = prometheus_client().start_http_server(port, addr=host, registry=self.registry)
        self._server = server[0] if isinstance(server, tuple) else server

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    # ---- after every input of the core task ------------------------------------------------------------------
    def observe(self, core: Any, now_ms: int) -> None:
        """Election latency, follower log growth and the leader's writes (the rest is read at scrape time)."""
        leader = core.quorum.leader_id()
        if leader is None and self._leaderless_since is None:
            self._leaderless_since = now_ms
        elif leader is not None and self._leaderless_since is not None:
            took = max(0, now_ms - self._leaderless_since)
            self.election_latency.observe(took)
            self.election_window.record(took, now_ms)
            self._leaderless_since = None
        end = core.log.end_offset()
        if self._log_end is not None and end > self._log_end and core.quorum.role is Role.FOLLOWER:
            self.fetch_records += end - self._log_end
            self.fetch_window.record(end - self._log_end, now_ms)
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
            self.append_window.record(appended - self._appended_end, now_ms)
            self._uncommitted.append((appended - 1, now_ms))
        self._appended_end = appended
        hwm = core.high_watermark
        while self._uncommitted and hwm is not None and self._uncommitted[0][0] < hwm:
            took = max(0, now_ms - self._uncommitted.popleft()[1])
            self.commit_latency.observe(took)
            self.commit_window.record(took, now_ms)

    # ---- a scrape ---------------------------------------------------------------------------------------------
    def collect(self) -> Any:
        runtime = self.runtime
        now = runtime.clock()
        yield from self._raft_sensor_families(now)
        yield from _request_families(runtime.request_stats)
        core = runtime.started_core
        if core is None:
            return
        yield from self._raft_state_families(core)
        yield from self._pykraft_counter_families(core)
        controller, broker = runtime.controller_host, runtime.broker_host
        if controller is not None:
            yield from _controller_families(controller, now)
        if broker is not None:
            from pykraft.node.runtime.broker_metrics import broker_families

            yield from broker_families(broker, now)

    def _raft_sensor_families(self, now_ms: int) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        yield self.commit_latency.family(raft_name("commit-latency"), "leader append to commit (s)")
        yield self.election_latency.family(raft_name("election-latency"), "leader unknown to leader known (s)")
        sampled = {"commit-latency-avg": self.commit_window.avg(now_ms),
                   "commit-latency-max": self.commit_window.max(now_ms),
                   "election-latency-avg": self.election_window.avg(now_ms),
                   "election-latency-max": self.election_window.max(now_ms),
                   "append-records-rate": self.append_window.rate(now_ms),
                   "fetch-records-rate": self.fetch_window.rate(now_ms),
                   "poll-idle-ratio-avg": self._poll_idle_ratio()}
        for attribute, value in sampled.items():
            yield GaugeMetricFamily(raft_name(attribute), f"raft-metrics {attribute}", value=value)
        for attribute, value in (("append-records", self.append_records), ("fetch-records", self.fetch_records)):
            yield CounterMetricFamily(raft_name(attribute).removesuffix("_total"), f"raft-metrics {attribute}",
                                      value=value)

    def _raft_state_families(self, core: Any) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        state = GaugeMetricFamily(raft_name("current-state"), "raft-metrics current-state",
                                  labels=["current_state"])
        state.add_metric([state_name(core)], 1)
        yield state
        election = core.quorum.election()
        leader = core.leader_state()
        values = {
            "current-leader": _or_minus_one(core.quorum.leader_id()),
            "current-vote": -1 if election.voted_key is None else election.voted_key.id,
            "current-epoch": core.quorum.epoch,
            "high-watermark": _or_minus_one(core.high_watermark),
            "log-end-offset": core.log.end_offset(),
            "log-end-epoch": core.log.last_fetched_epoch(),
            "number-of-voters": len(core.voters().ids()),
            "number-of-observers": len(leader.observer_progress) if leader is not None else 0,
            "uncommitted-voter-change": int(_uncommitted_change(core)),
            "number-unknown-voter-connections": _unknown_voters(core),
        }
        for attribute, value in values.items():
            yield GaugeMetricFamily(raft_name(attribute), f"raft-metrics {attribute}", value=value)
        vote = GaugeMetricFamily(raft_name("current-vote-directory-id"), "raft-metrics current-vote-directory-id",
                                 labels=["directory_id"])
        voted = election.voted_key.directory_id if election.voted_key is not None else None
        vote.add_metric([uuid_to_kafka_str(voted or uuid.UUID(int=0))], 1)
        yield vote

    def _pykraft_counter_families(self, core: Any) -> Any:
        from prometheus_client.core import CounterMetricFamily

        runtime = self.runtime
        lane, inbound, outbound = runtime.lane.stats, runtime.inbound, runtime.outbound.stats
        counters = {
            "pykraft_fsyncs": lane.fsyncs,
            "pykraft_flush_requests": lane.flush_requests,
            "pykraft_bad_frames": inbound.bad_frames,
            "pykraft_outbound_failures": outbound.failures,
            "pykraft_snapshots": runtime.snapshots.snapshots_taken,
            "pykraft_stale_wakeups": runtime.task.stale_wakeups,
            **{raft_name(attribute).removesuffix("_total"): count(core)
               for attribute, count in RAFT_CORE_COUNTERS.items()},
        }
        for key, value in counters.items():
            yield CounterMetricFamily(key, key.replace("_", " "), value=value)
        handler_errors = CounterMetricFamily("pykraft_request_handler_errors",
                                             "requests and responses whose handling raised, per API", labels=["api"])
        for api, count in sorted(runtime.handler_errors.by_api.items()):
            handler_errors.add_metric([api], count)
        yield handler_errors

    def _poll_idle_ratio(self) -> float:
        idle, busy = self.runtime.task.poll_times
        last_idle, last_busy = self._idle_seen
        self._idle_seen = (idle, busy)
        total = (idle - last_idle) + (busy - last_busy)
        return (idle - last_idle) / total if total > 0 else 1.0

    def describe(self) -> list:
        return []  # collected on demand: nothing to describe up front (and no scrape at registration)


def _request_families(stats: Any) -> Any:
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    from pykraft.node.runtime.metric_names import name_of

    base = "kafka.network:type=RequestMetrics,name="
    requests = CounterMetricFamily(name_of(base + "RequestsPerSec,request=,version=").removesuffix("_total"),
                                   "RequestMetrics RequestsPerSec", labels=["request", "version"])
    errors = CounterMetricFamily(name_of(base + "ErrorsPerSec,request=,error=").removesuffix("_total"),
                                 "RequestMetrics ErrorsPerSec", labels=["request", "error"])
    times = HistogramMetricFamily(name_of(base + "TotalTimeMs,request="), "RequestMetrics TotalTimeMs (s)",
                                  labels=["request"])
    for name, api in sorted(stats.by_name.items()):
        for version, count in sorted(api.versions.items()):
            requests.add_metric([name, str(version)], count)
        for code, count in sorted(api.errors.items()):
            errors.add_metric([name, error_name(code)], count)
        api.time.add_to(times, {"request": name})
    yield requests
    yield errors
    yield times


def _controller_families(state_machine: Any, now_ms: int) -> Any:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from pykraft.node.runtime.metric_names import name_of

    values = state_machine.controller.metrics().by_kafka_name()
    stamp = state_machine.last_applied_timestamp_ms
    values["LastCommittedRecordOffset"] = state_machine.committed_offset
    values["LastAppliedRecordTimestamp"] = -1 if stamp is None else stamp
    values["LastAppliedRecordLagMs"] = -1 if stamp is None else max(0, now_ms - stamp)
    queue = state_machine.event_queue
    values["EventQueueOperationsStartedCount"] = queue.started
    values["EventQueueOperationsTimedOutCount"] = queue.timed_out
    values["IsObserver"] = int(state_machine.is_observer())
    events = "kafka.controller:type=ControllerEventManager,name="
    yield queue.queue_time_ms.family(name_of(events + "EventQueueTimeMs"), "ControllerEventManager EventQueueTimeMs")
    yield queue.processing_time_ms.family(name_of(events + "EventQueueProcessingTimeMs"),
                                          "ControllerEventManager EventQueueProcessingTimeMs")
    for kafka_name, value in values.items():
        yield GaugeMetricFamily(controller_name(kafka_name), f"KafkaController {kafka_name}", value=value)
    counters = {"undecodable_records": state_machine.undecodable_records, "rebuilds": state_machine.rebuilds,
                "not_controller_answers": state_machine.not_controller_answers,
                "snapshots_loaded": state_machine.snapshots_loaded}
    for key, value in counters.items():
        yield CounterMetricFamily(f"pykraft_controller_{key}", f"controller host {key.replace('_', ' ')}",
                                  value=value)


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
