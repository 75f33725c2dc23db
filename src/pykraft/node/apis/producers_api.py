"""DescribeProducers v0 (KIP-664): the idempotent producers a partition leader knows, from its producer state.

As Kafka's `ReplicaManager.activeProducerState`: UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not
have, NOT_LEADER_OR_FOLLOWER where this broker does not lead it; else each producer's id, epoch, last sequence and
last timestamp (the max timestamp of its last batch), the coordinator epoch of its last marker (-1: none) and
CurrentTxnStartOffset, the first offset of its transaction open in the partition (-1: none), which is what
`kafka-transactions.sh find-hanging` looks for.
"""

from __future__ import annotations

from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

from pykraft.node.hosts.partitions import PartitionHost
from pykraft.node.apis.wire_build import make, response_namespace


def handle(host: PartitionHost, message: Any) -> Any:
    ns = response_namespace(ApiKey.DESCRIBE_PRODUCERS, int(message.__version__))
    topics = []
    for topic in message.topics:
        parts = []
        for index in topic.partition_indexes:
            found = host.leader_replica(str(topic.name), int(index))
            if isinstance(found, ErrorCode):
                parts.append(make(ns.PartitionResponse, partition_index=int(index), error_code=found,
                                  error_message=None, active_producers=()))
                continue
            producers = tuple(make(ns.ProducerState, producer_id=pid, producer_epoch=epoch, last_sequence=seq,
                                   last_timestamp=timestamp, coordinator_epoch=coordinator_epoch,
                                   current_txn_start_offset=txn_start)
                              for pid, epoch, seq, timestamp, coordinator_epoch, txn_start
                              in found.producers.active())
            parts.append(make(ns.PartitionResponse, partition_index=int(index), error_code=ErrorCode.NONE,
                              error_message=None, active_producers=producers))
        topics.append(make(ns.TopicResponse, name=str(topic.name), partitions=tuple(parts)))
    return make(ns.DescribeProducersResponse, topics=tuple(topics))
