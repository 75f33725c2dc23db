"""CreateTopics on the controller: validation errors with Kafka's messages, placement, KIP-841 initial ISR."""

import random
from collections import Counter

import pytest

from pykraft.controller.topics import place_replicas
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode

from .partition_helpers import add_partition, apply, brokers, creatable, create_request, new_control, topic_id

FIVE = brokers(1, 2, 3, 4, 5)


def results_by_name(result):
    return {t.name: t for t in result.response.topics}


def create(control, view, *topics, validate_only=False):
    return control.handle_create_topics(create_request(*topics, validate_only=validate_only), view, 0)


def test_created_topic_is_replayable_and_answers_with_its_id_and_shape():
    control = new_control()
    result = create(control, FIVE, creatable("orders", 6, 3))
    (answer,) = result.response.topics
    assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (ErrorCode.NONE, 6, 3)
    assert type(result.records[0]).__name__ == "TopicRecordV0" and len(result.records) == 7
    apply(control, result)
    assert control.topics_by_name == {"orders": answer.topic_id}
    for p in range(6):
        partition = control.partition(answer.topic_id, p)
        assert len(set(partition.replicas)) == 3 and partition.isr == partition.replicas
        assert partition.leader == partition.replicas[0] and (partition.leader_epoch, partition.partition_epoch) == (0, 0)
    encode_response(1, result.response)  # the answer is a well-formed CreateTopics v7 response


def test_round_robin_placement_spreads_leaders_and_replicas_evenly():
    placement = place_replicas([1, 2, 3, 4, 5], 10, 3, random.Random(3))
    leaders = Counter(r[0] for r in placement)
    replicas = Counter(b for r in placement for b in r)
    assert set(leaders.values()) == {2} and set(replicas.values()) == {6}
    assert all(len(set(r)) == 3 for r in placement)


def test_placement_start_comes_from_the_injected_generator():
    starts = {place_replicas([1, 2, 3, 4, 5], 1, 1, random.Random(seed))[0][0] for seed in range(40)}
    assert len(starts) > 1
    assert place_replicas([1, 2, 3], 4, 2, random.Random(9)) == place_replicas([1, 2, 3], 4, 2, random.Random(9))


def test_replicas_are_placed_only_on_active_brokers():
    control = new_control()
    result = create(control, brokers(1, 2, 3, 4, fenced=[2], shutdown=[4]), creatable("t", 8, 2))
    apply(control, result)
    tid = result.response.topics[0].topic_id
    used = {b for p in range(8) for b in control.partition(tid, p).replicas}
    assert used == {1, 3}


def test_replication_factor_above_the_active_broker_count_is_invalid_replication_factor():
    (answer,) = create(new_control(), brokers(1, 2, 3, fenced=[3]), creatable("t", 1, 3)).response.topics
    assert answer.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert answer.error_message == ("Unable to replicate the partition 3 time(s): The target replication factor of 3 "
                                    "cannot be reached because only 2 broker(s) are registered.")


def test_no_active_broker_at_all_says_all_brokers_are_fenced():
    (answer,) = create(new_control(), brokers(1, fenced=[1]), creatable("t")).response.topics
    assert answer.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert answer.error_message.endswith("All brokers are currently fenced.")


@pytest.mark.parametrize("name, reason", [
    ("", "the empty string is not allowed"),
    (".", "'.' is not allowed"),
    ("..", "'..' is not allowed"),
    ("a" * 250, f"the length of '{'a' * 250}' is longer than the max allowed length 249"),
    ("bad name!", "'bad name!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
])
def test_illegal_topic_name_is_invalid_topic_exception(name, reason):
    (answer,) = create(new_control(), FIVE, creatable(name)).response.topics
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert answer.error_message == f"Topic name is invalid: {reason}"


def test_longest_legal_name_is_accepted():
    (answer,) = create(new_control(), FIVE, creatable("a.B_c-" + "x" * 243)).response.topics
    assert answer.error_code == ErrorCode.NONE


def test_existing_topic_is_topic_already_exists_and_wins_over_a_bad_replication_factor():
    control = new_control()
    add_partition(control, topic_id(1), 0, (1,), name="orders")
    (answer,) = create(control, FIVE, creatable("orders", 1, 0)).response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'orders' already exists.")


def test_name_colliding_by_dot_and_underscore_is_invalid_topic_exception():
    control = new_control()
    add_partition(control, topic_id(1), 0, (1,), name="a.b")
    (answer,) = create(control, FIVE, creatable("a_b")).response.topics
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert answer.error_message == "Topic 'a_b' collides with existing topic: a.b"
    colliding_in_request = create(new_control(), FIVE, creatable("x.y"), creatable("x_y"))
    assert [t.error_code for t in colliding_in_request.response.topics] == [ErrorCode.NONE,
                                                                           ErrorCode.INVALID_TOPIC_EXCEPTION]


def test_duplicate_names_in_one_request_are_all_invalid_request():
    result = create(new_control(), FIVE, creatable("d"), creatable("ok"), creatable("d"))
    codes = [(t.name, t.error_code, t.error_message) for t in result.response.topics]
    assert codes == [("d", ErrorCode.INVALID_REQUEST, "Duplicate topic name."), ("ok", ErrorCode.NONE, None),
                     ("d", ErrorCode.INVALID_REQUEST, "Duplicate topic name.")]
    assert len(result.records) == 2


@pytest.mark.parametrize("rf", [0, -2])
def test_non_positive_replication_factor_is_invalid_replication_factor(rf):
    (answer,) = create(new_control(), FIVE, creatable("t", 1, rf)).response.topics
    assert answer.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert answer.error_message == "Replication factor must be larger than 0, or -1 to use the default value."


@pytest.mark.parametrize("count", [0, -2])
def test_non_positive_partition_count_is_invalid_partitions(count):
    (answer,) = create(new_control(), FIVE, creatable("t", count, 1)).response.topics
    assert answer.error_code == ErrorCode.INVALID_PARTITIONS
    assert answer.error_message == "Number of partitions was set to an invalid non-positive value."


def test_bad_replication_factor_is_reported_before_bad_partition_count():
    (answer,) = create(new_control(), FIVE, creatable("t", 0, 0)).response.topics
    assert answer.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_minus_one_uses_the_configured_defaults():
    control = new_control(default_num_partitions=3, default_replication_factor=2)
    (answer,) = create(control, FIVE, creatable("t", -1, -1)).response.topics
    assert (answer.num_partitions, answer.replication_factor) == (3, 2)


def test_validate_only_answers_without_writing_records():
    control = new_control()
    result = create(control, FIVE, creatable("t", 2, 2), validate_only=True)
    assert result.records == () and result.response.topics[0].error_code == ErrorCode.NONE


def test_manual_assignment_initial_isr_and_leader_are_the_active_replicas_only():
    control = new_control()
    view = brokers(1, 2, 3, fenced=[1], shutdown=[2])
    result = create(control, view, creatable("m", -1, -1, {0: (1, 2, 3), 1: (3, 1, 2)}))
    apply(control, result)
    tid = result.response.topics[0].topic_id
    assert [(control.partition(tid, p).isr, control.partition(tid, p).leader) for p in (0, 1)] == [((3,), 3), ((3,), 3)]
    assert control.partition(tid, 0).replicas == (1, 2, 3)


@pytest.mark.parametrize("assignments, message", [
    ({0: (1, 2), 1: (1, 2), 3: (1, 2)}, "partitions should be a consecutive 0-based integer sequence"),
    ({0: ()}, "The manual partition assignment includes an empty replica list."),
    ({0: (1, 1)}, "The manual partition assignment includes the broker 1 more than once."),
    ({0: (1, 9)}, "The manual partition assignment includes broker 9, but no such broker is registered."),
    ({0: (1, 2), 1: (1,)}, "The manual partition assignment includes a partition with 1 replica(s), but this is not "
                           "consistent with previous partitions, which have 2 replica(s)."),
    ({0: (4, 5)}, "All brokers specified in the manual partition assignment for partition 0 are fenced or in "
                  "controlled shutdown."),
])
def test_bad_manual_assignment_is_invalid_replica_assignment(assignments, message):
    view = brokers(1, 2, 3, 4, 5, fenced=[4], shutdown=[5])
    (answer,) = create(new_control(), view, creatable("m", -1, -1, assignments)).response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


@pytest.mark.parametrize("count, rf, message", [
    (-1, 2, "A manual partition assignment was specified, but replication factor was not set to -1."),
    (2, -1, "A manual partition assignment was specified, but numPartitions was not set to -1."),
])
def test_manual_assignment_with_a_count_or_factor_is_invalid_request(count, rf, message):
    (answer,) = create(new_control(), FIVE, creatable("m", count, rf, {0: (1, 2)})).response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_REQUEST, message)


def test_topic_ids_come_from_the_injected_generator_and_are_distinct():
    a = create(new_control(seed=5), FIVE, creatable("x"), creatable("y")).response.topics
    b = create(new_control(seed=5), FIVE, creatable("x"), creatable("y")).response.topics
    assert [t.topic_id for t in a] == [t.topic_id for t in b]
    assert a[0].topic_id != a[1].topic_id and a[0].topic_id.int != 0
