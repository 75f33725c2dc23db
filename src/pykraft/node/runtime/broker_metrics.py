"""The broker's metric families, read from its host at scrape time (names: metric_names.py).

Nothing here runs on the Produce or Fetch paths: those only add to counters (broker/topic_stats.py, the replica
fetchers' lags, the ISR manager's counts); the gauges (partition counts, under-replicated partitions, log sizes,
groups) are computed from the host's state when Prometheus asks. The host is read duck-typed (node/runtime is
below node/hosts): `lifecycle`, `isr`, `cache`, `data_plane` (`host`, `fetchers`), `groups`, and the counters of
BrokerHost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pykraft.node.runtime.metric_names import (BROKER_TOPIC_METRICS, broker_metadata_name, broker_topic_name,
                                               group_manager_name, name_of, replica_manager_name)

# Kafka's BrokerState codes (org.apache.kafka.metadata.BrokerState); a running broker the controller fenced is
# still RUNNING to Kafka's own lifecycle manager.
BROKER_STATE_CODES = {"starting": 1, "recovery": 2, "running": 3, "fenced": 3, "pending_controlled_shutdown": 6,
                      "shutting_down": 7}
_COUNTER_FIELDS = ("messages_in", "bytes_in", "bytes_out", "bytes_rejected", "replication_bytes_in",
                   "replication_bytes_out", "total_produce_requests", "failed_produce_requests",
                   "total_fetch_requests", "failed_fetch_requests")
_GROUP_STATES = (("NumGroupsPreparingRebalance", "PreparingRebalance"),
                 ("NumGroupsCompletingRebalance", "CompletingRebalance"), ("NumGroupsStable", "Stable"),
                 ("NumGroupsDead", "Dead"), ("NumGroupsEmpty", "Empty"))
_PARTITION = "kafka.cluster:type=Partition,name={},topic=,partition="
_LOG = "kafka.log:type=Log,name={},topic=,partition="


def broker_families(broker: Any, now_ms: int) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    yield from _state_families(broker)
    yield from _metadata_families(broker, now_ms)
    isr = broker.isr.metrics
    for short, value in (("IsrShrinksPerSec", isr.isr_shrinks), ("IsrExpandsPerSec", isr.isr_expands),
                         ("FailedIsrUpdatesPerSec", isr.failed_isr_updates)):
        yield CounterMetricFamily(replica_manager_name(short).removesuffix("_total"), f"ReplicaManager {short}",
                                  value=value)
    host = broker.data_plane.host
    if host.logs is None:
        return  # the partition logs are not open yet (before RECOVERY): no replica, no traffic
    yield from _topic_families(host.topic_stats)
    yield from _replica_families(host)
    fetchers = broker.data_plane.fetchers
    lag = GaugeMetricFamily(name_of("kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId="),
                            "ReplicaFetcherManager MaxLag", labels=["clientId"])
    lag.add_metric(["Replica"], 0 if fetchers is None else fetchers.max_lag())
    yield lag
    yield from _group_families(broker.groups)
    cleaner = getattr(broker.data_plane, "cleaner", None)
    if cleaner is not None:
        yield from cleaner_families(cleaner, now_ms)


def _state_families(broker: Any) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    from pykraft.broker.actions import BrokerState

    current = broker.lifecycle.state
    yield GaugeMetricFamily(name_of("kafka.server:type=KafkaServer,name=BrokerState"), "KafkaServer BrokerState",
                            value=BROKER_STATE_CODES[current.value])
    state = GaugeMetricFamily("pykraft_broker_state", "broker lifecycle state (1 for the current one)",
                              labels=["state"])
    for each in BrokerState:
        state.add_metric([each.value], int(each is current))
    yield state
    yield GaugeMetricFamily("pykraft_broker_epoch", "broker epoch (-1 before the first registration)",
                            value=broker.lifecycle.broker_epoch)


def _metadata_families(broker: Any, now_ms: int) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    stamp = broker.last_applied_timestamp_ms
    values = {"last-applied-record-offset": broker.last_applied_offset,
              "last-applied-record-timestamp": -1 if stamp is None else stamp,
              "last-applied-record-lag-ms": -1 if stamp is None else max(0, now_ms - stamp),
              "metadata-load-error-count": broker.unloadable_records,
              # records that did not decode, and decoded records the image could not replay (MetadataCache)
              "metadata-apply-error-count": broker.undecodable_records + broker.cache.apply_errors}
    for attribute, value in values.items():
        yield GaugeMetricFamily(broker_metadata_name(attribute), f"broker-metadata-metrics {attribute}", value=value)


def _topic_families(stats: Any) -> Iterator[Any]:
    """One family per BrokerTopicMetrics meter: a series per topic, and the broker's total without a label (a
    family may mix label sets, as jmx_exporter's output of the two MBeans does)."""
    from prometheus_client.core import CounterMetricFamily

    totals = stats.totals()
    for short, field in zip(BROKER_TOPIC_METRICS, _COUNTER_FIELDS):
        family = CounterMetricFamily(broker_topic_name(short).removesuffix("_total"),
                                     f"BrokerTopicMetrics {short}PerSec", labels=["topic"])
        for topic, counters in sorted(stats.topics.items()):
            family.add_metric([topic], getattr(counters, field))
        family.add_sample(family.name + "_total", {}, getattr(totals, field))
        yield family


def _replica_families(host: Any) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    partition_gauges = {name: GaugeMetricFamily(name_of(_PARTITION.format(name)), f"Partition {name}",
                                                labels=["topic", "partition"])
                        for name in ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount",
                                     "ReplicasCount")}
    log_gauges = {name: GaugeMetricFamily(name_of(_LOG.format(name)), f"Log {name}", labels=["topic", "partition"])
                  for name in ("Size", "NumLogSegments", "LogStartOffset", "LogEndOffset")}
    counts = dict.fromkeys(("PartitionCount", "LeaderCount", "UnderReplicatedPartitions",
                            "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount", "ProducerIdCount"), 0)
    for (topic, index), replica in sorted(host.replicas.items()):
        labels = [topic, str(index)]
        log = replica.log
        for name, value in (("Size", log.size_in_bytes()), ("NumLogSegments", log.segment_count()),
                            ("LogStartOffset", log.start_offset()), ("LogEndOffset", log.end_offset())):
            log_gauges[name].add_metric(labels, value)
        counts["PartitionCount"] += 1
        counts["ProducerIdCount"] += len(replica.producers)
        flags = _leader_flags(host, replica)
        for name, value in flags.items():
            partition_gauges[name].add_metric(labels, value)
        counts["LeaderCount"] += replica.leading is not None
        counts["UnderReplicatedPartitions"] += flags["UnderReplicated"]
        counts["UnderMinIsrPartitionCount"] += flags["UnderMinIsr"]
        counts["AtMinIsrPartitionCount"] += flags["AtMinIsr"]
    for short, value in (*counts.items(), ("OfflineReplicaCount", 0)):
        yield GaugeMetricFamily(replica_manager_name(short), f"ReplicaManager {short}", value=value)
    yield from partition_gauges.values()
    yield from log_gauges.values()


def _leader_flags(host: Any, replica: Any) -> dict[str, int]:
    """Kafka's Partition gauges: about the ISR on the leader, 0 on a follower."""
    partition = host.cache.partition(*replica.tp) if replica.leading is not None else None
    if partition is None:
        return dict.fromkeys(("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount"),
                             0)
    isr, replicas, min_isr = len(partition.isr), len(partition.replicas), replica.settings.min_insync_replicas
    return {"UnderReplicated": int(isr < replicas), "UnderMinIsr": int(isr < min_isr),
            "AtMinIsr": int(isr == min_isr), "InSyncReplicasCount": isr, "ReplicasCount": replicas}


def _group_families(groups: Any) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    loaded = [group for coordinator in groups.coordinators.values() for group in coordinator.groups.values()]
    yield GaugeMetricFamily(group_manager_name("NumGroups"), "GroupMetadataManager NumGroups", value=len(loaded))
    yield GaugeMetricFamily(group_manager_name("NumOffsets"), "GroupMetadataManager NumOffsets",
                            value=sum(len(group.offsets) for group in loaded))
    for short, state in _GROUP_STATES:
        yield GaugeMetricFamily(group_manager_name(short), f"GroupMetadataManager {short}",
                                value=sum(1 for group in loaded if group.state.value == state))


_CLEANER_MANAGER_GAUGES = frozenset({"max-dirty-percent", "time-since-last-run-ms"})


def cleaner_families(cleaner: Any, now_ms: int) -> Iterator[Any]:
    """Kafka's LogCleaner and LogCleanerManager gauges; uncleanable-partitions-count per log directory (its
    `logDirectory` tag as a label)."""
    from prometheus_client.core import GaugeMetricFamily

    for name, value in cleaner.metrics(now_ms).items():
        kind = "LogCleanerManager" if name in _CLEANER_MANAGER_GAUGES else "LogCleaner"
        yield GaugeMetricFamily(name_of(f"kafka.log:type={kind},name={name}"), f"{kind} {name}", value=value)
    uncleanable = GaugeMetricFamily(
        name_of("kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count,logDirectory="),
        "LogCleanerManager uncleanable-partitions-count", labels=["logDirectory"])
    for log_dir in cleaner.manager.log_dirs:
        uncleanable.add_metric([log_dir], cleaner.manager.uncleanable_count(log_dir))
    yield uncleanable
