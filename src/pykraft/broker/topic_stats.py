"""Kafka's BrokerTopicMetrics as counts: per topic, and the broker's totals (the series without a `topic` label).

Counted per partition of a request (one batch for a Produce from Kafka's clients), never per record, on the data
plane's paths (node/hosts/partitions.py, node/apis/fetch_api.py). What Kafka counts, and so what is counted here:
- TotalProduceRequests: every partition append asked of the broker for a topic it knows (KafkaApis answers an
  unknown topic before ReplicaManager counts anything); MessagesIn/BytesIn: records and bytes appended as leader;
- FailedProduceRequests: appends that failed for any reason but the ones Kafka leaves out as "expected"
  (`NOT_COUNTED_PRODUCE_ERRORS`: not the leader, unknown partition, too large, corrupt, storage); BytesRejected:
  the bytes of batches refused as too large;
- TotalFetchRequests: every partition read of a Fetch (consumer or follower); BytesOut / ReplicationBytesOut: the
  record bytes answered to consumers / to followers; ReplicationBytesIn: bytes a follower appended;
- FailedFetchRequests: partition reads whose handling failed unexpectedly (known errors such as
  NOT_LEADER_OR_FOLLOWER or OFFSET_OUT_OF_RANGE are not counted, as in Kafka).
A deleted topic's counts are folded into `retired`, so the broker's totals never go down (a Prometheus counter).
"""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode

NOT_COUNTED_PRODUCE_ERRORS = frozenset({
    ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.KAFKA_STORAGE_ERROR})
TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


class TopicCounters:
    """The counts of one topic (or of the whole broker)."""

    __slots__ = ("messages_in", "bytes_in", "bytes_out", "bytes_rejected", "replication_bytes_in",
                 "replication_bytes_out", "total_produce_requests", "failed_produce_requests",
                 "total_fetch_requests", "failed_fetch_requests")
    messages_in: int
    bytes_in: int
    bytes_out: int
    bytes_rejected: int
    replication_bytes_in: int
    replication_bytes_out: int
    total_produce_requests: int
    failed_produce_requests: int
    total_fetch_requests: int
    failed_fetch_requests: int

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def add(self, other: TopicCounters) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def produce_failed(self, error: ErrorCode, size: int) -> None:
        """An append that failed with `error` (`size`: the bytes it carried)."""
        if error in TOO_LARGE:
            self.bytes_rejected += size
        if error not in NOT_COUNTED_PRODUCE_ERRORS:
            self.failed_produce_requests += 1


class BrokerTopicStats:
    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.retired = TopicCounters()  # the counts of topics deleted since the broker started

    def of(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    def retire(self, topic: str) -> None:
        """The topic was deleted: its series go, its counts stay in the totals."""
        counters = self.topics.pop(topic, None)
        if counters is not None:
            self.retired.add(counters)

    def totals(self) -> TopicCounters:
        total = TopicCounters()
        total.add(self.retired)
        for counters in self.topics.values():
            total.add(counters)
        return total
