"""Topic configs on the controller: Kafka's names, types and messages; ConfigRecords written, replayed, described;
(Incremental)AlterConfigs; CreatePartitions."""

import dataclasses
import datetime
import random

import pytest
from kio.schema.alter_configs.v2 import request as ac
from kio.schema.create_partitions.v3 import request as cp
from kio.schema.create_topics.v7 import request as ct
from kio.schema.describe_configs.v4 import request as dc
from kio.schema.incremental_alter_configs.v1 import request as iac
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from pykraft.controller.config_defs import TOPIC_CONFIGS, check_topic_configs
from pykraft.controller.describe_configs import NodeView, describe_configs
from pykraft.controller.controller import QuorumController
from pykraft.controller.create_partitions import create_partitions
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata.schema.remove_topic_record import RemoveTopicRecordV0

from .controller_cluster import config
from .partition_helpers import brokers, creatable, create_request, new_control

FIVE = brokers(1, 2, 3, 4, 5)
TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))


@pytest.mark.parametrize(("configs", "message"), [
    ({"foo.bar": "1"}, "Unknown topic config name: foo.bar"),
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"retention.ms": "-5"}, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ({"segment.bytes": "1000"}, "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
    ({"segment.bytes": "3000000000"},
     "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"),
    ({"min.cleanable.dirty.ratio": "1.5"},
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ({"message.timestamp.type": "Now"}, "Invalid value Now for configuration message.timestamp.type: "
                                         "String must be one of: CreateTime, LogAppendTime"),
    ({"cleanup.policy": "compact,forever"}, "Invalid value compact,forever for configuration cleanup.policy: "
                                            "String must be one of: compact, delete"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
])
def test_bad_topic_configs_get_kafkas_message(configs, message):
    assert check_topic_configs(configs) == message


def test_every_default_is_a_valid_value():
    assert check_topic_configs({name: d.default for name, d in TOPIC_CONFIGS.items()}) is None


def with_configs(name, **configs):
    topic = creatable(name, 2, 1)
    return dataclasses.replace(topic, configs=tuple(
        ct.CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()))


def controller_with_topic(**configs):
    controller = QuorumController(config(3000), random.Random(1))
    controller.replication = new_control()
    result = controller.replication.handle_create_topics(create_request(with_configs("t", **configs)), FIVE)
    for offset, record in enumerate(result.records):
        controller.replay(record, offset)
    return controller, result


def test_create_topics_writes_config_records_after_the_topic_before_its_partitions():
    controller, result = controller_with_topic(retention_ms="1000")
    assert [type(r).__name__ for r in result.records] == ["TopicRecordV0", "ConfigRecordV0", "PartitionRecordV2",
                                                          "PartitionRecordV2"]
    assert controller.configs.of(2, "t") == {"retention.ms": "1000"}


def test_create_topics_refuses_an_unknown_config_and_writes_nothing():
    control = new_control()
    result = control.handle_create_topics(create_request(with_configs("t", foo_bar="1")), FIVE)
    (answer,) = result.response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_CONFIG, "Unknown topic config name: foo.bar")
    assert result.records == ()


def describe(controller, kind, name, keys=None, node_id=3000):
    request = dc.DescribeConfigsRequest(resources=(dc.DescribeConfigsResource(
        resource_type=i8(kind), resource_name=name, configuration_keys=keys),))
    response = describe_configs(controller.configs, lambda t: t in controller.replication.topics_by_name, request,
                                NodeView(node_id))
    encode_response(1, response)
    (result,) = response.results
    return result


def test_describe_shows_overrides_as_topic_config_and_the_rest_as_defaults():
    controller, _ = controller_with_topic(retention_ms="1000")
    result = describe(controller, 2, "t")
    values = {c.name: (c.value, int(c.config_source)) for c in result.configs}
    assert values["retention.ms"] == ("1000", 1) and values["segment.bytes"] == ("1073741824", 5)
    assert set(values) == set(TOPIC_CONFIGS)
    only = describe(controller, 2, "t", keys=("retention.ms",))
    assert [c.name for c in only.configs] == ["retention.ms"]
    missing = describe(controller, 2, "nope")
    assert (missing.error_code, missing.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)


def incremental(controller, kind, name, *ops, validate_only=False):
    request = iac.IncrementalAlterConfigsRequest(resources=(iac.AlterConfigsResource(
        resource_type=i8(kind), resource_name=name, configs=tuple(
            iac.AlterableConfig(name=k, config_operation=i8(op), value=v) for k, op, v in ops)),),
        validate_only=validate_only)
    result = controller.configs.incremental_alter(request, controller.replication)
    encode_response(1, result.response)
    return result


def replay_all(controller, result):
    for record in result.records:
        controller.replay(record, controller.last_applied_offset + 1)


def test_incremental_alter_sets_deletes_appends_and_refuses_bad_values():
    controller, _ = controller_with_topic(retention_ms="1000")
    result = incremental(controller, 2, "t", ("retention.ms", 1, None), ("segment.ms", 0, "5000"),
                         ("cleanup.policy", 2, "compact"))
    replay_all(controller, result)
    assert controller.configs.of(2, "t") == {"segment.ms": "5000", "cleanup.policy": "delete,compact"}
    bad = incremental(controller, 2, "t", ("retention.ms", 0, "x"))
    assert bad.records == () and bad.response.responses[0].error_code == ErrorCode.INVALID_CONFIG
    not_list = incremental(controller, 2, "t", ("retention.ms", 2, "1"))
    assert not_list.response.responses[0].error_message == "Config value append is not allowed for config key: retention.ms"
    assert incremental(controller, 2, "t", ("segment.ms", 0, "7"), validate_only=True).records == ()


def test_broker_configs_are_stored_and_described_and_bad_broker_names_refused():
    controller, _ = controller_with_topic()
    replay_all(controller, incremental(controller, 4, "1", ("log.retention.ms", 0, "2000")))
    entries = {c.name: c for c in describe(controller, 4, "1", node_id=1).configs}
    entry = entries["log.retention.ms"]
    assert (entry.value, int(entry.config_source), entry.read_only) == ("2000", 2, False)
    other = describe(controller, 4, "1")  # node 3000 describes only itself
    assert (other.error_code, other.error_message) == (
        ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 3000 or empty string, but received 1")
    refused = incremental(controller, 4, "x", ("a", 0, "1")).response.responses[0]
    assert (refused.error_code, refused.error_message) == (ErrorCode.INVALID_REQUEST,
                                                           "Unable to parse broker name as a base 10 number.")


def test_legacy_alter_configs_replaces_the_whole_set():
    controller, _ = controller_with_topic(retention_ms="1000", segment_ms="9000")
    request = ac.AlterConfigsRequest(resources=(ac.AlterConfigsResource(
        resource_type=i8(2), resource_name="t", configs=(ac.AlterableConfig(name="segment.ms", value="8000"),)),),
        validate_only=False)
    result = controller.configs.alter(request, controller.replication)
    encode_response(1, result.response)
    replay_all(controller, result)
    assert controller.configs.of(2, "t") == {"segment.ms": "8000"}


def test_removing_a_topic_removes_its_configs():
    controller, result = controller_with_topic(retention_ms="1000")
    controller.replay(RemoveTopicRecordV0(topic_id=result.response.topics[0].topic_id), 99)
    assert controller.configs.configs == {}


def partitions_request(name, count, assignments=None, validate_only=False):
    return cp.CreatePartitionsRequest(topics=(cp.CreatePartitionsTopic(
        name=TopicName(name), count=i32(count), assignments=None if assignments is None else tuple(
            cp.CreatePartitionsAssignment(broker_ids=tuple(BrokerId(b) for b in a)) for a in assignments)),),
        timeout=TIMEOUT, validate_only=validate_only)


def test_create_partitions_adds_partitions_and_refuses_what_kafka_refuses():
    controller, _ = controller_with_topic()
    result = create_partitions(controller.replication, partitions_request("t", 4), FIVE)
    encode_response(1, result.response)
    assert result.response.results[0].error_code == ErrorCode.NONE and len(result.records) == 2
    replay_all(controller, result)
    topic_id = controller.replication.topics_by_name["t"]
    assert sorted(controller.replication.topics[topic_id].partitions) == [0, 1, 2, 3]

    def error(request):
        (answer,) = create_partitions(controller.replication, request, FIVE).response.results
        return answer.error_code, answer.error_message

    assert error(partitions_request("t", 4)) == (ErrorCode.INVALID_PARTITIONS, "Topic already has 4 partition(s).")
    assert error(partitions_request("t", 2)) == (
        ErrorCode.INVALID_PARTITIONS, "The topic t currently has 4 partition(s); 2 would not be an increase.")
    assert error(partitions_request("zz", 5))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error(partitions_request("t", 6, [[1]])) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")
    assert error(partitions_request("t", 5, [[9]]))[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert create_partitions(controller.replication, partitions_request("t", 5, validate_only=True), FIVE).records == ()


def test_an_excessively_large_partition_count_is_refused_before_anything_is_allocated():
    # The protocol fuzzer's find: CreatePartitions with count 2**31-1 made the controller place two billion
    # partitions (24 GiB, the OOM killer). Kafka bounds every user operation at MAX_RECORDS_PER_USER_OP records.
    controller, _ = controller_with_topic()
    refusal = (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    (answer,) = create_partitions(controller.replication, partitions_request("t", 2**31 - 1), FIVE).response.results
    assert (answer.error_code, answer.error_message) == refusal
    result = new_control().handle_create_topics(create_request(creatable("huge", 2**31 - 1)), FIVE, 0)
    assert [(t.error_code, t.error_message) for t in result.response.topics] == [refusal] and result.records == ()


def test_a_request_whose_topics_together_pass_the_bound_refuses_the_topic_that_passes_it():
    result = new_control().handle_create_topics(
        create_request(creatable("a", 6000), creatable("b", 6000), creatable("c", 10)), FIVE, 0)
    assert [t.error_code for t in result.response.topics] == [ErrorCode.NONE, ErrorCode.POLICY_VIOLATION,
                                                               ErrorCode.NONE]
    assert len(result.records) == 1 + 6000 + 1 + 10
