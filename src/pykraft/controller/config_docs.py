"""DescribeConfigs' documentation of a config key (includeDocumentation), in pykraft's own words.

The keys pykraft honours are described here, one line each; any other key gets a line saying what pykraft does
with it (config_table.py's status). Kafka's own documentation of a key is on Kafka's site.
"""

from __future__ import annotations

from .config_defs import DEFAULT_ONLY, IGNORED, LIVE, REFUSED, ConfigDef

_DOCS = {
    # ---- topics (and the broker keys that give their defaults)
    "cleanup.policy": "How old log segments are discarded: delete (retention), compact (keep the last record of "
                      "each key) or both.",
    "compression.gzip.level": "The gzip level Kafka would recompress with; no effect with compression.type=producer.",
    "compression.lz4.level": "The lz4 level Kafka would recompress with; no effect with compression.type=producer.",
    "compression.zstd.level": "The zstd level Kafka would recompress with; no effect with compression.type=producer.",
    "delete.retention.ms": "How long a tombstone stays in a compacted log after cleaning.",
    "flush.messages": "Force an fsync of a partition after this many messages (default: never, replication is "
                      "the durability).",
    "flush.ms": "Force an fsync of a partition after this many milliseconds (default: never).",
    "max.compaction.lag.ms": "The longest a record may stay uncompacted.",
    "max.message.bytes": "The largest record batch a producer may write to the topic.",
    "message.timestamp.type": "CreateTime keeps the producer's timestamps, LogAppendTime stamps the broker's time.",
    "min.cleanable.dirty.ratio": "The share of a log that must be uncleaned before the cleaner compacts it.",
    "min.compaction.lag.ms": "The shortest a record stays uncompacted.",
    "min.insync.replicas": "The fewest in-sync replicas with which an acks=all write is accepted.",
    "retention.bytes": "The size a partition's log is trimmed to by deleting its oldest segments (-1: no limit).",
    "retention.ms": "How long a segment is kept after its newest record (-1: forever).",
    "segment.bytes": "The size at which a partition's active segment is rolled.",
    "segment.ms": "The age at which a partition's active segment is rolled.",
    "unclean.leader.election.enable": "Let the controller elect a replica outside the ISR when no ISR member is "
                                      "alive (data may be lost).",
    # ---- brokers
    "log.cleanup.policy": "The default cleanup.policy of topics.",
    "log.cleaner.delete.retention.ms": "The default delete.retention.ms of topics.",
    "log.cleaner.min.compaction.lag.ms": "The default min.compaction.lag.ms of topics.",
    "log.cleaner.max.compaction.lag.ms": "The default max.compaction.lag.ms of topics.",
    "log.cleaner.min.cleanable.ratio": "The default min.cleanable.dirty.ratio of topics.",
    "log.cleaner.enable": "Run the log cleaner (compacted topics are cleaned only when it runs).",
    "log.cleaner.threads": "How many cleaner threads compact logs.",
    "log.cleaner.dedupe.buffer.size": "The memory the cleaners' key-to-offset maps may use in total.",
    "log.cleaner.io.max.bytes.per.second": "The cleaners' read plus write throughput limit.",
    "log.cleaner.backoff.ms": "How long a cleaner sleeps when no log needs cleaning.",
    "log.flush.interval.messages": "The default flush.messages of topics.",
    "log.flush.interval.ms": "The default flush.ms of topics.",
    "log.message.timestamp.type": "The default message.timestamp.type of topics.",
    "log.retention.bytes": "The default retention.bytes of topics.",
    "log.retention.ms": "The default retention.ms of topics (over log.retention.minutes and .hours).",
    "log.retention.minutes": "The default retention of topics in minutes (when log.retention.ms is not set).",
    "log.retention.hours": "The default retention of topics in hours (when neither .ms nor .minutes is set).",
    "log.roll.ms": "The default segment.ms of topics (over log.roll.hours).",
    "log.roll.hours": "The default segment.ms of topics in hours (when log.roll.ms is not set).",
    "log.segment.bytes": "The default segment.bytes of topics.",
    "message.max.bytes": "The default max.message.bytes of topics.",
    "num.replica.fetchers": "Fetcher tasks per source broker; a partition's fetcher is chosen by a hash of its "
                            "topic and partition.",
    "producer.id.expiration.ms": "How long a silent idempotent producer's state is kept.",
    "replica.fetch.max.bytes": "The bytes a follower asks per partition in one fetch.",
    "replica.fetch.wait.max.ms": "How long a follower's fetch waits at the leader for new records.",
    "replica.fetch.backoff.ms": "How long a follower waits after a failed fetch.",
    "replica.lag.time.max.ms": "How long a follower may lag before the leader drops it from the ISR.",
    "auto.create.topics.enable": "Create a topic that Metadata asks for and does not exist.",
    "num.partitions": "The partitions of a topic created without a count.",
    "default.replication.factor": "The replication factor of a topic created without one.",
    "offsets.topic.num.partitions": "The partitions of __consumer_offsets.",
    "offsets.topic.replication.factor": "The replication factor of __consumer_offsets.",
    "group.initial.rebalance.delay.ms": "How long a new classic group waits for more members before its first "
                                        "rebalance.",
    "group.min.session.timeout.ms": "The shortest session timeout a group member may ask for.",
    "group.max.session.timeout.ms": "The longest session timeout a group member may ask for.",
    "process.roles": "broker, controller, or both (combined mode).",
    "node.id": "This node's id, unique in the cluster.",
    "listeners": "The addresses this node listens on, as NAME://host:port.",
    "advertised.listeners": "The addresses other nodes and clients are told to use.",
    "controller.listener.names": "The listeners the controllers are reached on.",
    "listener.security.protocol.map": "The security protocol of each listener name.",
    "inter.broker.listener.name": "The listener brokers replicate over.",
    "log.dir": "Where partition logs live when log.dirs is not set.",
    "log.dirs": "Where partition logs live.",
    "metadata.log.dir": "Where the metadata log lives (default: the first log directory).",
}


def documentation(definition: ConfigDef | None, name: str) -> str:
    """One line about `name` (a broker or topic key, or an unknown one)."""
    if definition is None:
        return f"{name} is not a Kafka config; pykraft ignores it."
    known = _DOCS.get(name)
    if definition.status == LIVE:
        return f"{known or name}. pykraft applies a change without a restart."
    if definition.status == IGNORED:
        return f"Kafka's {name}; pykraft does not implement it and ignores it."
    if definition.status == REFUSED:
        return f"Kafka's {name}; pykraft does not enforce it and refuses to start with it."
    if definition.status == DEFAULT_ONLY:
        return f"Kafka's {name}; pykraft does not implement it and accepts only its default value."
    return known or f"Kafka's {name}, read when the node starts."
