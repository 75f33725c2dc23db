"""Metadata records for the broker tests, built through the controller's own record classes."""

from __future__ import annotations

import uuid

from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from pykraft.controller.cluster import BrokerRegistration
from pykraft.controller.partitions import new_partition
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2
from pykraft.records.metadata.schema.topic_record import TopicRecordV0
from pykraft.records.metadata.schema.unregister_broker_record import UnregisterBrokerRecordV0

TOPIC_ID = uuid.UUID(int=0x1234)


def register(broker_id: int, epoch: int, *, fenced: bool = False, shutting_down: bool = False,
             incarnation: int = 1):
    return BrokerRegistration(broker_id=broker_id, epoch=epoch, incarnation_id=uuid.UUID(int=incarnation),
                              listeners=(), features=(), rack=None, fenced=fenced,
                              in_controlled_shutdown=shutting_down).to_record()


def change(broker_id: int, epoch: int, *, fenced: int = 0, shutting_down: int = 0):
    return BrokerRegistrationChangeRecordV2(broker_id=BrokerId(broker_id), broker_epoch=i64(epoch),
                                            fenced=i8(fenced), in_controlled_shutdown=i8(shutting_down))


def unregister(broker_id: int, epoch: int):
    return UnregisterBrokerRecordV0(broker_id=BrokerId(broker_id), broker_epoch=i64(epoch))


def topic(name: str = "t", topic_id: uuid.UUID = TOPIC_ID):
    return TopicRecordV0(name=name, topic_id=topic_id)


def partition(partition_id: int, replicas: list[int], isr: list[int], leader: int,
              topic_id: uuid.UUID = TOPIC_ID):
    return new_partition(replicas, isr, leader).to_record(topic_id, partition_id)


def isr_change(partition_id: int, isr: list[int], topic_id: uuid.UUID = TOPIC_ID, leader: int | None = None):
    """A PartitionChangeRecord setting the ISR (and the leader when given, which bumps the leader epoch)."""
    return PartitionChangeRecordV2(partition_id=i32(partition_id), topic_id=topic_id,
                                   isr=tuple(BrokerId(b) for b in isr),
                                   leader=BrokerId(-2 if leader is None else leader))


def config(name: str, value: str | None, resource: str = "t", resource_type: int = 2):
    """A ConfigRecord: a topic's config by default (resource type 2), a broker's with resource_type=4."""
    from pykraft.records.metadata.schema.config_record import ConfigRecordV0

    return ConfigRecordV0(resource_type=i8(resource_type), resource_name=resource, name=name, value=value)
