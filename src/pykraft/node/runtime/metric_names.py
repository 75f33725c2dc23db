"""The name of every metric a node exports: Kafka's JMX name, rendered the way Prometheus' jmx_exporter renders it.

Dashboards built for Kafka (Strimzi's `kafka-metrics.yaml` rules and its Grafana dashboards, Confluent's
jmx-monitoring-stacks) read the names jmx_exporter makes of Kafka's MBeans with `lowercaseOutputName: true`. Their
rules come down to these shapes, which `render` applies (tests/node/test_metric_names.py checks each against the
names those dashboards query):

- a Yammer meter `kafka.<d>:type=<T>,name=<N>PerSec[,k=v...]`, attribute Count -> `kafka_<d>_<t>_<n>_total`, the
  other keys as labels (`kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t` ->
  `kafka_server_brokertopicmetrics_bytesin_total{topic="t"}`);
- a Yammer gauge, attribute Value -> `kafka_<d>_<t>_<n>` (`kafka.server:type=ReplicaManager,name=LeaderCount` ->
  `kafka_server_replicamanager_leadercount`); `kafka.coordinator.group` keeps both parts
  (`kafka_coordinator_group_groupmetadatamanager_numgroups`);
- a Kafka-metrics group `kafka.server:type=<group>` attribute `<attr>` -> `kafka_server_<group without dashes>_<attr
  with dashes as underscores>` (`raft-metrics` `current-epoch` -> `kafka_server_raftmetrics_current_epoch`); the
  one string attribute dashboards read, raft-metrics' current-state, is a label of the same name with the value 1.
- jmx_exporter renders a Yammer timer (`...TimeMs`) as quantiles; here it is a Prometheus histogram in seconds, the
  name without `Ms` plus `_seconds` (`kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce` ->
  `kafka_network_requestmetrics_totaltime_seconds{request="Produce"}`), Prometheus' convention for durations.

`METRICS` is the table (README.md "Metrics" lists it: a test keeps the two equal); the exporters look their names
up here by Kafka's name, so a name cannot drift from the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from pykraft.controller.metrics import KAFKA_HELP, KAFKA_NAMES

_DOMAIN = re.compile(r"kafka\.(?P<domain>[a-z.]+):type=(?P<type>[^,]+)(?:,name=(?P<name>[^,]+))?(?P<tags>(?:,[^,=]+=[^,]*)*)")


@dataclass(frozen=True, slots=True)
class Metric:
    """One exported metric. `kafka`: the JMX MBean (`domain:type=T,name=N`, labels as `,key=...`) and, for a
    Kafka-metrics group, `/attribute`; `kind`: counter, gauge or histogram (seconds); `roles`: broker, controller
    or both (every node); `help`: what it counts, in pykraft's terms."""

    kafka: str
    kind: str
    roles: str
    help: str
    extra_labels: tuple[str, ...] = ()  # labels that are not MBean keys (a string attribute's value)

    @property
    def name(self) -> str:
        return render(self.kafka, self.kind)

    @property
    def labels(self) -> tuple[str, ...]:
        mbean = self.kafka.split("/")[0]
        keys = tuple(part.split("=")[0] for part in mbean.split(",")[2 if ",name=" in mbean else 1:])
        return keys + self.extra_labels


def render(kafka: str, kind: str) -> str:
    """jmx_exporter's name for a Kafka metric (see the module docstring); `kind` picks the attribute's rule."""
    mbean, _, attribute = kafka.partition("/")
    match = _DOMAIN.fullmatch(mbean)
    if match is None:
        raise ValueError(f"not a Kafka MBean name: {kafka}")
    domain = match["domain"].replace(".", "_")
    type_ = match["type"].replace("-", "").lower()
    if attribute:  # a Kafka-metrics group: the attribute is the name
        base = f"kafka_{domain}_{type_}_{attribute.replace('-', '_')}"
        suffix = {"counter": "_total", "histogram": "_seconds"}.get(kind, "")
        return base if base.endswith(suffix) else base + suffix
    name = (match["name"] or "").replace("-", "_")  # jmx_exporter turns characters Prometheus refuses into "_"
    if kind == "counter":
        return f"kafka_{domain}_{type_}_{name.removesuffix('PerSec').lower()}_total"
    if kind == "histogram":
        return f"kafka_{domain}_{type_}_{name.removesuffix('Ms').lower()}_seconds"
    return f"kafka_{domain}_{type_}_{name.lower()}"


def _m(kafka: str, kind: str, roles: str, help_: str, *labels: str) -> Metric:
    return Metric(kafka, kind, roles, help_, labels)


_BTM = "kafka.server:type=BrokerTopicMetrics,name="
_RM = "kafka.server:type=ReplicaManager,name="
_RAFT = "kafka.server:type=raft-metrics/"
_GMM = "kafka.coordinator.group:type=GroupMetadataManager,name="
_BMM = "kafka.server:type=broker-metadata-metrics/"
_TOPIC_HELP = " (one series per topic with `topic`, and the broker's total without it)"

TABLE: tuple[Metric, ...] = (
    # ---- BrokerTopicMetrics: counted per batch on the Produce and Fetch paths --------------------------------
    _m(_BTM + "MessagesInPerSec,topic=", "counter", "broker", "records appended as leader" + _TOPIC_HELP),
    _m(_BTM + "BytesInPerSec,topic=", "counter", "broker", "bytes of batches appended as leader" + _TOPIC_HELP),
    _m(_BTM + "BytesOutPerSec,topic=", "counter", "broker", "bytes of records sent to consumers" + _TOPIC_HELP),
    _m(_BTM + "BytesRejectedPerSec,topic=", "counter", "broker",
       "bytes of batches refused as too large" + _TOPIC_HELP),
    _m(_BTM + "ReplicationBytesInPerSec,topic=", "counter", "broker",
       "bytes appended as follower (replica fetchers)" + _TOPIC_HELP),
    _m(_BTM + "ReplicationBytesOutPerSec,topic=", "counter", "broker",
       "bytes of records sent to follower replicas" + _TOPIC_HELP),
    _m(_BTM + "TotalProduceRequestsPerSec,topic=", "counter", "broker",
       "partition appends asked of this broker (one per partition of a Produce)" + _TOPIC_HELP),
    _m(_BTM + "FailedProduceRequestsPerSec,topic=", "counter", "broker",
       "appends failed for a reason Kafka counts (not leader, unknown partition, too large and corrupt are not)"
       + _TOPIC_HELP),
    _m(_BTM + "TotalFetchRequestsPerSec,topic=", "counter", "broker",
       "partition reads (one per partition of a Fetch, consumers and followers)" + _TOPIC_HELP),
    _m(_BTM + "FailedFetchRequestsPerSec,topic=", "counter", "broker",
       "partition reads of a Fetch whose handling failed unexpectedly" + _TOPIC_HELP),
    # ---- ReplicaManager ----------------------------------------------------------------------------------------
    _m(_RM + "PartitionCount", "gauge", "broker", "partition replicas hosted"),
    _m(_RM + "LeaderCount", "gauge", "broker", "partitions led"),
    _m(_RM + "UnderReplicatedPartitions", "gauge", "broker", "led partitions whose ISR is smaller than the replicas"),
    _m(_RM + "UnderMinIsrPartitionCount", "gauge", "broker", "led partitions whose ISR is below min.insync.replicas"),
    _m(_RM + "AtMinIsrPartitionCount", "gauge", "broker", "led partitions whose ISR is at min.insync.replicas"),
    _m(_RM + "OfflineReplicaCount", "gauge", "broker", "replicas in an offline log directory (always 0: a log "
                                                       "directory failure stops the broker)"),
    _m(_RM + "ProducerIdCount", "gauge", "broker", "idempotent producers remembered over the hosted replicas"),
    _m(_RM + "IsrShrinksPerSec", "counter", "broker", "ISR shrinks of led partitions accepted by the controller"),
    _m(_RM + "IsrExpandsPerSec", "counter", "broker", "ISR expansions of led partitions accepted by the controller"),
    _m(_RM + "FailedIsrUpdatesPerSec", "counter", "broker", "ISR changes the controller refused"),
    _m("kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=", "gauge", "broker",
       "largest lag in records of a followed partition behind its leader's high watermark (clientId \"Replica\")"),
    # ---- per partition ----------------------------------------------------------------------------------------
    _m("kafka.log:type=Log,name=Size,topic=,partition=", "gauge", "broker", "bytes of the partition's segments"),
    _m("kafka.log:type=Log,name=NumLogSegments,topic=,partition=", "gauge", "broker", "segments of the partition"),
    _m("kafka.log:type=Log,name=LogStartOffset,topic=,partition=", "gauge", "broker", "log start offset"),
    _m("kafka.log:type=Log,name=LogEndOffset,topic=,partition=", "gauge", "broker", "log end offset"),
    _m("kafka.cluster:type=Partition,name=UnderReplicated,topic=,partition=", "gauge", "broker",
       "1 when led here and the ISR is smaller than the replicas"),
    _m("kafka.cluster:type=Partition,name=UnderMinIsr,topic=,partition=", "gauge", "broker",
       "1 when led here and the ISR is below min.insync.replicas"),
    _m("kafka.cluster:type=Partition,name=AtMinIsr,topic=,partition=", "gauge", "broker",
       "1 when led here and the ISR is at min.insync.replicas"),
    _m("kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=,partition=", "gauge", "broker",
       "ISR size when led here, else 0"),
    _m("kafka.cluster:type=Partition,name=ReplicasCount,topic=,partition=", "gauge", "broker",
       "replicas when led here, else 0"),
    # ---- the log cleaner (node/hosts/log_cleaner.py) -----------------------------------------------------------
    _m("kafka.log:type=LogCleaner,name=max-clean-time-secs", "gauge", "broker", "longest pass of the last round (s)"),
    _m("kafka.log:type=LogCleaner,name=cleaner-recopy-percent", "gauge", "broker",
       "bytes written as a share of bytes read, last round"),
    _m("kafka.log:type=LogCleaner,name=max-buffer-utilization-percent", "gauge", "broker",
       "fullest offset map of the last round"),
    _m("kafka.log:type=LogCleaner,name=max-compaction-delay-secs", "gauge", "broker",
       "longest wait past max.compaction.lag.ms of the last round (s)"),
    _m("kafka.log:type=LogCleaner,name=DeadThreadCount", "gauge", "broker", "cleaner threads stopped by an error"),
    _m("kafka.log:type=LogCleanerManager,name=max-dirty-percent", "gauge", "broker", "dirty ratio of the dirtiest log"),
    _m("kafka.log:type=LogCleanerManager,name=time-since-last-run-ms", "gauge", "broker", "ms since the last pass"),
    _m("kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count,logDirectory=", "gauge", "broker",
       "partitions a pass failed on, per log directory"),
    # ---- the classic group coordinator (on the leaders of __consumer_offsets) ----------------------------------
    _m(_GMM + "NumGroups", "gauge", "broker", "groups of the coordinated __consumer_offsets partitions"),
    _m(_GMM + "NumOffsets", "gauge", "broker", "committed offsets held"),
    _m(_GMM + "NumGroupsPreparingRebalance", "gauge", "broker", "groups in PreparingRebalance"),
    _m(_GMM + "NumGroupsCompletingRebalance", "gauge", "broker", "groups in CompletingRebalance"),
    _m(_GMM + "NumGroupsStable", "gauge", "broker", "groups in Stable"),
    _m(_GMM + "NumGroupsDead", "gauge", "broker", "groups in Dead"),
    _m(_GMM + "NumGroupsEmpty", "gauge", "broker", "groups in Empty"),
    # ---- the broker's metadata and state ----------------------------------------------------------------------
    _m(_BMM + "last-applied-record-offset", "gauge", "broker", "offset of the last metadata record replayed"),
    _m(_BMM + "last-applied-record-timestamp", "gauge", "broker", "append time (ms) of the last replayed batch"),
    _m(_BMM + "last-applied-record-lag-ms", "gauge", "broker", "now minus that append time (ms)"),
    _m(_BMM + "metadata-load-error-count", "gauge", "broker", "metadata snapshots that could not be loaded"),
    _m(_BMM + "metadata-apply-error-count", "gauge", "broker", "metadata records that could not be replayed"),
    _m("kafka.server:type=KafkaServer,name=BrokerState", "gauge", "broker",
       "Kafka's BrokerState code: 1 starting, 2 recovery, 3 running, 6 pending controlled shutdown, 7 shutting down "
       "(a running broker the controller fenced still says 3, as Kafka's; `pykraft_broker_state` tells it apart)"),
    # ---- requests, on every listener of every node -------------------------------------------------------------
    _m("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=,version=", "counter", "both",
       "requests answered, per API (Kafka's names: Produce, FetchConsumer, FetchFollower, ...) and version"),
    _m("kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=,error=", "counter", "both",
       "error codes in the answers, per API and error name (NONE included), as Kafka's errorCounts"),
    _m("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=", "histogram", "both",
       "time from the request's frame read to its answer encoded"),
    # ---- raft-metrics (every node: controllers vote, brokers observe) ------------------------------------------
    _m(_RAFT + "current-state", "gauge", "both",
       "1, labelled with the state: leader, candidate, voted, follower, unattached, observer, prospective, resigned",
       "current_state"),
    _m(_RAFT + "current-leader", "gauge", "both", "leader id (-1 unknown)"),
    _m(_RAFT + "current-vote", "gauge", "both", "voted-for id (-1 none)"),
    _m(_RAFT + "current-vote-directory-id", "gauge", "both", "1, labelled with the vote's directory id (Kafka's zero "
                                                              "UUID when none)", "directory_id"),
    _m(_RAFT + "current-epoch", "gauge", "both", "epoch"),
    _m(_RAFT + "high-watermark", "gauge", "both", "high watermark (-1 unknown)"),
    _m(_RAFT + "log-end-offset", "gauge", "both", "log end offset"),
    _m(_RAFT + "log-end-epoch", "gauge", "both", "epoch of the last batch"),
    _m(_RAFT + "number-of-voters", "gauge", "both", "voters"),
    _m(_RAFT + "number-of-observers", "gauge", "both", "observers the leader knows (0 elsewhere)"),
    _m(_RAFT + "uncommitted-voter-change", "gauge", "both", "1 while a voter change is not committed"),
    _m(_RAFT + "number-unknown-voter-connections", "gauge", "both", "voters without an endpoint"),
    _m(_RAFT + "poll-idle-ratio-avg", "gauge", "both", "share of time the core task waited, since the last scrape"),
    _m(_RAFT + "commit-latency-avg", "gauge", "both", "ms from a leader append to its commit, avg over Kafka's "
                                                       "window (2 samples of 30 s)"),
    _m(_RAFT + "commit-latency-max", "gauge", "both", "the same, max"),
    _m(_RAFT + "election-latency-avg", "gauge", "both", "ms from losing a leader to knowing one, avg over the window"),
    _m(_RAFT + "election-latency-max", "gauge", "both", "the same, max"),
    _m(_RAFT + "append-records-rate", "gauge", "both", "records appended per second as leader, over the window"),
    _m(_RAFT + "fetch-records-rate", "gauge", "both", "records fetched per second as follower, over the window"),
    _m(_RAFT + "append-records", "counter", "both", "records appended as leader (the counter behind the rate)"),
    _m(_RAFT + "fetch-records", "counter", "both", "records fetched as follower"),
    _m(_RAFT + "commit-latency", "histogram", "both", "the commit latencies behind -avg and -max"),
    _m(_RAFT + "election-latency", "histogram", "both", "the election latencies behind -avg and -max"),
    # What the raft core counted and dropped or refused (pykraft's own attributes in Kafka's group: Kafka's raft
    # client logs these cases and counts none of them).
    *(_m(_RAFT + attribute, "counter", "both", help_) for attribute, help_ in (
        ("dropped-responses", "peer responses to no request in flight (late, duplicated or unknown), dropped"),
        ("bad-control-records", "control records in the log or a snapshot that did not decode, skipped"),
        ("conflicting-leader-claims", "messages naming another leader of the epoch this node leads"),
        ("rejected-snapshot-chunks", "FetchSnapshot answers that did not continue the download"),
        ("unsupported-requests", "requests for APIs the raft core does not serve, counted and not answered"),
        ("refused-epochs", "peer messages naming an epoch above the highest one accepted, ignored"),
        ("leader-unreachable", "refused or reset connections to the leader a voter followed (hasten a pre-vote)"),
        ("skipped-snapshot-loads", "snapshots the state machine was not given (an older one than it has)"),
        ("ignored-api-versions", "late or unexpected ApiVersions answers to an add-voter probe, ignored"),
        ("failed-probes", "add-voter probes of the new voter that failed"),
    )),
    # ---- the controller (controllers only; the active one's figures are the cluster's) -------------------------
    _m("kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs", "histogram", "controller",
       "time a controller event waited on the core task"),
    _m("kafka.controller:type=ControllerEventManager,name=EventQueueProcessingTimeMs", "histogram", "controller",
       "time a controller event ran"),
)

# The KafkaController gauges: the pure controller's (controller/metrics.py) and those its node host adds.
CONTROLLER_GAUGES: tuple[tuple[str, str], ...] = (
    *((name, KAFKA_HELP[name]) for name in KAFKA_NAMES.values()),
    ("LastCommittedRecordOffset", "offset of the last committed metadata record replayed"),
    ("LastAppliedRecordTimestamp", "append time (ms) of the last committed batch (-1 before any)"),
    ("LastAppliedRecordLagMs", "now minus that append time (-1 before any)"),
    ("EventQueueOperationsStartedCount", "controller events run on the core task"),
    ("EventQueueOperationsTimedOutCount", "requests whose caller gave up before they ran"),
    ("IsObserver", "1 on a controller that is not a voter"),
)
_KC = "kafka.controller:type=KafkaController,name="
TABLE += tuple(_m(_KC + name, "gauge", "controller", help_) for name, help_ in CONTROLLER_GAUGES)

METRICS = MappingProxyType({metric.kafka: metric for metric in TABLE})


def name_of(kafka: str) -> str:
    """The exported name of a metric in the table, by its Kafka name (KeyError for one that is not there)."""
    return METRICS[kafka].name


BROKER_TOPIC_METRICS = ("MessagesIn", "BytesIn", "BytesOut", "BytesRejected", "ReplicationBytesIn",
                        "ReplicationBytesOut", "TotalProduceRequests", "FailedProduceRequests", "TotalFetchRequests",
                        "FailedFetchRequests")


def broker_topic_name(short: str) -> str:
    """`kafka_server_brokertopicmetrics_<short>_total` from the table (e.g. "BytesIn")."""
    return name_of(f"{_BTM}{short}PerSec,topic=")


def controller_name(kafka_name: str) -> str:
    """`kafka_controller_kafkacontroller_<name lowercased>` for a KafkaController gauge of the table."""
    return name_of(_KC + kafka_name)


def raft_name(attribute: str) -> str:
    return name_of(_RAFT + attribute)


def replica_manager_name(short: str) -> str:
    return name_of(_RM + short)


def group_manager_name(short: str) -> str:
    return name_of(_GMM + short)


def broker_metadata_name(attribute: str) -> str:
    return name_of(_BMM + attribute)


def markdown_table() -> str:
    """The README's table: one row per metric (labels, kind, roles, Kafka's name, meaning)."""
    rows = ["| Prometheus name | labels | kind | nodes | Kafka's JMX name | what it says |",
            "|---|---|---|---|---|---|"]
    for metric in TABLE:
        labels = ", ".join(f"`{label}`" for label in metric.labels) or "-"
        kafka = metric.kafka.replace("=,", "=*,") + ("*" if metric.kafka.endswith("=") else "")
        rows.append(f"| `{metric.name}` | {labels} | {metric.kind} | {metric.roles} | `{kafka}` | {metric.help} |")
    return "\n".join(rows)
