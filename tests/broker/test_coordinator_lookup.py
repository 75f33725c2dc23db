"""The one coordinator lookup the group and transaction hosts share (broker/coordinator_lookup.py)."""

from pykraft.broker.coordinator_lookup import coordinator_for
from pykraft.protocol.errors import ErrorCode
from pykraft.records.group_records import partition_for


def test_no_topic_yet_is_coordinator_not_available() -> None:
    assert coordinator_for("g", None, set(), {}) is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert coordinator_for("g", 0, set(), {}) is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_loading_then_loaded_then_not_ours() -> None:
    partition = partition_for("my-group", 50)
    coordinator = object()
    assert coordinator_for("my-group", 50, {partition}, {}) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator_for("my-group", 50, set(), {partition: coordinator}) is coordinator
    other = (partition + 1) % 50
    assert coordinator_for("my-group", 50, set(), {other: coordinator}) is ErrorCode.NOT_COORDINATOR
