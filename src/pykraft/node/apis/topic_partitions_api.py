"""DescribeTopicPartitions v0 (KIP-966): the answer built from broker/topic_partitions.py's page.

TopicAuthorizedOperations is what Kafka computes without an authorizer: every operation a topic supports
(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
"""

from __future__ import annotations

from typing import Any

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_partitions import DEFAULT_PARTITION_SIZE_LIMIT, describe
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

from pykraft.node.apis.wire_build import make, response_namespace

# Kafka's AclOperation codes READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11 as a bit field (Utils.to32BitField).
TOPIC_OPERATIONS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))


def handle(cache: MetadataCache, message: Any, size_limit: int = DEFAULT_PARTITION_SIZE_LIMIT,
           listener: str | None = None) -> Any:
    """`listener`: the one the request came in on (a broker listener; its leaders and offline replicas)."""
    ns = response_namespace(ApiKey.DESCRIBE_TOPIC_PARTITIONS, int(message.__version__))
    cursor = None if message.cursor is None else (str(message.cursor.topic_name), int(message.cursor.partition_index))
    page = describe(cache, [str(t.name) for t in message.topics], cursor, int(message.response_partition_limit),
                    size_limit, listener)
    topics = []
    for topic in page.topics:
        partitions = tuple(make(ns.DescribeTopicPartitionsResponsePartition, error_code=ErrorCode.NONE, partition_index=p.index,
                                leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=p.replicas,
                                isr_nodes=p.isr, eligible_leader_replicas=p.elr, last_known_elr=p.last_known_elr,
                                offline_replicas=p.offline)
                           for p in topic.partitions)
        topics.append(make(ns.DescribeTopicPartitionsResponseTopic, error_code=topic.error, name=topic.name,
                           topic_id=topic.topic_id, is_internal=topic.is_internal, partitions=partitions,
                           topic_authorized_operations=TOPIC_OPERATIONS))
    next_cursor = None if page.next_cursor is None else make(ns.Cursor, topic_name=page.next_cursor[0],
                                                              partition_index=page.next_cursor[1])
    return make(ns.DescribeTopicPartitionsResponse, topics=tuple(topics), next_cursor=next_cursor)
