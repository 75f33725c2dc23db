"""Exact text of `metadata-quorum describe` and `features describe` from hand-built values (reference §6.1, §6.3)."""

from __future__ import annotations

import uuid

import pytest

from pykraft.admin.model import FeatureMetadata, FinalizedRange, QuorumInfo, ReplicaState, SupportedRange
from pykraft.cli.quorum_output import (
    added_controller_line,
    feature_lines,
    feature_update_line,
    max_follower_lag,
    parse_levels,
    removed_controller_line,
    replication_table,
    status_text,
)
from pykraft.raft.voter_set import Endpoint, ReplicaKey
from pykraft.records.uuids import kafka_str_to_uuid

D1 = kafka_str_to_uuid("ILZ5MPTeRWakmJu99uBJCA")
D2 = kafka_str_to_uuid("Xk9zHoRgT5O1D3w2e3n3pQ")
CONTROLLER = Endpoint("CONTROLLER", "localhost", 9093)


def quorum(voters, observers=(), leader=1, nodes=None) -> QuorumInfo:
    return QuorumInfo(leader_id=leader, leader_epoch=7, high_watermark=1500, voters=tuple(voters),
                      observers=tuple(observers), nodes=nodes or {})


def test_status_has_eight_padded_lines_with_json_ish_lists():
    info = quorum(
        [ReplicaState(1, D1, 1510, 5000, 5000), ReplicaState(2, D2, 1490, 4990, 4000)],
        [ReplicaState(7, None, 1400, 4800, 3000)],
        nodes={1: (CONTROLLER, Endpoint("SSL", "::1", 9095)), 2: (Endpoint("CONTROLLER", "h2", 9094),)},
    )
    assert status_text("MkU3OEVBNTcwNTJENDM2Qk", info) == (
        "ClusterId:              MkU3OEVBNTcwNTJENDM2Qk\n"
        "LeaderId:               1\n"
        "LeaderEpoch:            7\n"
        "HighWatermark:          1500\n"
        "MaxFollowerLag:         20\n"
        "MaxFollowerLagTimeMs:   1000\n"
        'CurrentVoters:          [{"id": 1, "directoryId": "ILZ5MPTeRWakmJu99uBJCA", "endpoints": '
        '["CONTROLLER://localhost:9093", "SSL://[::1]:9095"]}, '
        '{"id": 2, "directoryId": "Xk9zHoRgT5O1D3w2e3n3pQ", "endpoints": ["CONTROLLER://h2:9094"]}]\n'
        'CurrentObservers:       [{"id": 7, "directoryId": null}]'
    )


def test_every_label_is_padded_to_24_characters():
    lines = status_text("c", quorum([ReplicaState(1, D1, 10)])).splitlines()
    assert len(lines) == 8
    # the value starts at column 24 on every line, whatever the label's length
    assert all(line[23] == " " and line[24] != " " for line in lines)
    assert [line[:24].rstrip() for line in lines] == [
        "ClusterId:", "LeaderId:", "LeaderEpoch:", "HighWatermark:", "MaxFollowerLag:", "MaxFollowerLagTimeMs:",
        "CurrentVoters:", "CurrentObservers:"]


@pytest.mark.parametrize(
    ("voters", "expected"),
    [
        # the leader is the laggiest voter (all equal, the leader listed first): time lag 0
        ([ReplicaState(1, D1, 100, 50, 50), ReplicaState(2, D2, 100, 40, 40)], (0, 0)),
        # equal offsets but the follower is listed first: it is "the laggiest", so the times are subtracted
        ([ReplicaState(2, D2, 100, 40, 40), ReplicaState(1, D1, 100, 50, 50)], (0, 10)),
        # a follower behind, caught-up times known
        ([ReplicaState(1, D1, 100, 50, 50), ReplicaState(2, D2, 60, 45, 20)], (40, 30)),
        # a follower behind that never caught up: -1
        ([ReplicaState(1, D1, 100, 50, 50), ReplicaState(2, D2, 60, 45, None)], (40, -1)),
        # the leader alone
        ([ReplicaState(1, D1, 100, 50, 50)], (0, 0)),
        # the leader not among the voters (it removed itself): both -1 instead of Kafka's crash
        ([ReplicaState(2, D2, 60, 45, 20)], (-1, -1)),
    ],
)
def test_max_follower_lag_rules(voters, expected):
    assert max_follower_lag(quorum(voters)) == expected


def test_empty_lists_print_as_brackets_and_endpoints_are_omitted_when_unknown():
    text = status_text("c", quorum([ReplicaState(1, None, 3)]))
    assert text.splitlines()[-2:] == ['CurrentVoters:          [{"id": 1, "directoryId": null}]',
                                      "CurrentObservers:       []"]


def test_replication_table_orders_leader_first_and_pads_cells_followed_by_tabs():
    info = quorum(
        [ReplicaState(1, D1, 1400, 900, 800), ReplicaState(2, D2, 1500, 1000, 1000)],
        [ReplicaState(7, None, 1450, 950, None)],
        leader=2,
    )
    assert replication_table(info) == (
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
        "2     \tXk9zHoRgT5O1D3w2e3n3pQ\t1500        \t0  \t1000              \t1000                 \tLeader  \t\n"
        "1     \tILZ5MPTeRWakmJu99uBJCA\t1400        \t100\t900               \t800                  \tFollower\t\n"
        "7     \tAAAAAAAAAAAAAAAAAAAAAA\t1450        \t50 \t950               \t-1                   \tObserver\t"
    )


def test_replication_human_readable_prints_ms_ago_and_keeps_minus_one():
    info = quorum([ReplicaState(1, D1, 10, 9000, None)])
    rows = replication_table(info, human_readable=True, now_ms=10_000).splitlines()
    cells = rows[1].split("\t")
    assert cells[4].rstrip() == "1000 ms ago"
    assert cells[5].rstrip() == "-1"
    # a leader clock ahead of ours prints 0 ms ago rather than a negative age
    ahead = replication_table(quorum([ReplicaState(1, D1, 10, 10_050, 10_050)]), human_readable=True, now_ms=10_000)
    assert ahead.splitlines()[1].split("\t")[4].rstrip() == "0 ms ago"


def test_add_and_remove_controller_lines():
    key = ReplicaKey(4, D1)
    endpoints = [CONTROLLER, Endpoint("CONTROLLER2", "fe80::1", 9094)]
    assert added_controller_line(key, endpoints, dry_run=False) == (
        "Added controller 4 with directory id ILZ5MPTeRWakmJu99uBJCA and endpoints: "
        "CONTROLLER://localhost:9093, CONTROLLER2://[fe80::1]:9094")
    assert added_controller_line(key, endpoints[:1], dry_run=True).startswith("DRY RUN of adding controller 4 ")
    assert removed_controller_line(key, False) == "Removed KRaft controller 4 with directory id ILZ5MPTeRWakmJu99uBJCA"
    assert removed_controller_line(key, True).startswith("DRY RUN of removing KRaft controller 4")


def test_feature_lines_sorted_with_release_names_and_unknown_epoch():
    features = FeatureMetadata(
        supported={"metadata.version": SupportedRange(7, 27), "kraft.version": SupportedRange(0, 1),
                   "group.version": SupportedRange(0, 1)},
        finalized={"metadata.version": FinalizedRange(1, 21), "kraft.version": FinalizedRange(1, 1)},
        finalized_epoch=None,
    )
    assert feature_lines(features) == [
        "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: -",
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: -",
        "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.1-IV1\t"
        "FinalizedVersionLevel: 3.9-IV0\tEpoch: -",
    ]
    with_epoch = FeatureMetadata({"metadata.version": SupportedRange(0, 99)}, {}, 12)
    assert feature_lines(with_epoch) == ["Feature: metadata.version\tSupportedMinVersion: UNKNOWN 0\t"
                                         "SupportedMaxVersion: UNKNOWN 99\tFinalizedVersionLevel: UNKNOWN 0\tEpoch: 12"]


def test_feature_update_lines():
    assert feature_update_line("upgrade", "kraft.version", 1, None, dry_run=False) == "kraft.version was upgraded to 1."
    assert feature_update_line("upgrade", "kraft.version", 1, None, dry_run=True) == "kraft.version can be upgraded to 1."
    assert feature_update_line("upgrade", "kraft.version", 1, "INVALID_UPDATE_VERSION: no", dry_run=False) == (
        "Could not upgrade kraft.version to 1. INVALID_UPDATE_VERSION: no")
    assert feature_update_line("upgrade", "x", 2, "E", dry_run=True) == "Can not upgrade x to 2. E"


def test_parse_levels_uses_kafkas_messages():
    assert parse_levels(["kraft.version=1", " a = 2 "]) == {"kraft.version": 1, "a": 2}
    with pytest.raises(ValueError, match="equals sign not found"):
        parse_levels(["kraft.version"])
    with pytest.raises(ValueError, match="unable to parse x as a short"):
        parse_levels(["kraft.version=x"])
    with pytest.raises(ValueError, match="unable to parse 40000 as a short"):
        parse_levels(["kraft.version=40000"])
    with pytest.raises(ValueError, match="specified more than once"):
        parse_levels(["a=1", "a=2"])


def test_directory_id_none_and_zero_uuid_print_the_same():
    zero = quorum([ReplicaState(1, uuid.UUID(int=0), 3)])
    none = quorum([ReplicaState(1, None, 3)])
    assert status_text("c", zero) == status_text("c", none)
