"""quorum-state: Kafka's JSON, two copies, repair from either, refusal when both are bad."""

from __future__ import annotations

import json
import os
import uuid
from types import SimpleNamespace

import pytest

from pykraft.storage import QuorumStateCorruptError
from pykraft.storage.quorum_state import QuorumStateData, QuorumStateStore

DIR_ID = uuid.UUID(bytes=bytes.fromhex("27c6803dc7cb42dd9baacd494ffacc81"))


def test_v1_json_is_kafkas_one_line_format(tmp_path) -> None:
    state = QuorumStateData(leader_epoch=2, voted_id=1, voted_directory_id=DIR_ID)
    assert state.to_json() == (
        '{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}'
    )
    store = QuorumStateStore(str(tmp_path))
    store.write(state)
    text = open(tmp_path / "quorum-state").read()
    assert text.count("\n") == 1 and json.loads(text)["data_version"] == 1
    assert store.read() == state


def test_v0_json_matches_kafka_example() -> None:
    state = QuorumStateData(leader_epoch=2, leader_id=1, data_version=0, current_voters=())
    assert state.to_json() == (
        '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],'
        '"data_version":0}'
    )
    assert QuorumStateData.from_json(state.to_json()) == state


def test_reads_a_file_kafka_wrote_without_backup(tmp_path) -> None:
    (tmp_path / "quorum-state").write_text(
        '{"leaderId":3,"leaderEpoch":7,"votedId":3,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}\n'
    )
    store = QuorumStateStore(str(tmp_path))
    assert store.read() == QuorumStateData(leader_epoch=7, leader_id=3, voted_id=3)
    assert store.repaired == store.backup_path and os.path.exists(store.backup_path)


def test_rejects_unknown_data_version() -> None:
    with pytest.raises(ValueError):
        QuorumStateData.from_json('{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":2}')


def test_from_election_state() -> None:
    election = SimpleNamespace(epoch=5, leader_id=None, voted_key=SimpleNamespace(id=2, directory_id=DIR_ID))
    state = QuorumStateData.from_election(election, kraft_version=1)
    assert (state.leader_epoch, state.leader_id, state.voted_id, state.voted_directory_id) == (5, -1, 2, DIR_ID)
    assert QuorumStateData.from_election(election, kraft_version=0).voted_directory_id is None


DAMAGE = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "bitflip-digit": lambda data: data.replace(b'"leaderEpoch":9', b'"leaderEpoch":1'),
    "garbage": lambda data: b"\x00\xff" * 10,
    "deleted": None,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("target", ["quorum-state", "quorum-state.backup"])
def test_one_damaged_copy_never_loses_the_vote(tmp_path, damage: str, target: str) -> None:
    store = QuorumStateStore(str(tmp_path))
    store.write(QuorumStateData(leader_epoch=8, voted_id=1))
    expected = QuorumStateData(leader_epoch=9, voted_id=2, voted_directory_id=DIR_ID)
    store.write(expected)
    path = tmp_path / target
    if DAMAGE[damage] is None:
        path.unlink()
    else:
        path.write_bytes(DAMAGE[damage](path.read_bytes()))
    assert store.read() == expected
    assert store.repaired is not None
    assert QuorumStateStore(str(tmp_path)).read() == expected  # both copies good again
    assert open(tmp_path / "quorum-state").read() == expected.to_json() + "\n"


def test_crash_between_backup_and_primary_writes_keeps_the_newer_state(tmp_path) -> None:
    store = QuorumStateStore(str(tmp_path))
    store.write(QuorumStateData(leader_epoch=3, voted_id=1))
    old_primary = (tmp_path / "quorum-state").read_bytes()
    newer = QuorumStateData(leader_epoch=4, voted_id=2)
    store.write(newer)
    (tmp_path / "quorum-state").write_bytes(old_primary)  # the primary's rename never happened
    assert store.read() == newer


@pytest.mark.parametrize("second", ["damaged", "deleted"])
def test_both_copies_bad_refuses_to_start(tmp_path, second: str) -> None:
    store = QuorumStateStore(str(tmp_path))
    store.write(QuorumStateData(leader_epoch=9, voted_id=2))
    (tmp_path / "quorum-state").write_bytes(b'{"leaderId":')
    if second == "deleted":
        (tmp_path / "quorum-state.backup").unlink()
    else:
        (tmp_path / "quorum-state.backup").write_bytes(b"{}\ncrc32c:00000000\n")
    with pytest.raises(QuorumStateCorruptError, match="quorum-state.*NEW directory id"):
        store.read()


def test_fresh_directory_has_no_state(tmp_path) -> None:
    assert QuorumStateStore(str(tmp_path)).read() is None


@pytest.mark.parametrize("target", ["quorum-state", "quorum-state.backup"])
def test_load_only_reads_and_repair_writes_what_it_found(tmp_path, target: str) -> None:
    """A node start loads first (it may still refuse for another reason) and repairs only once nothing refuses."""
    store = QuorumStateStore(str(tmp_path))
    expected = QuorumStateData(leader_epoch=9, voted_id=2, voted_directory_id=DIR_ID)
    store.write(expected)
    (tmp_path / target).write_bytes(b"\x00\xff")
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert store.load() == expected
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files and store.repaired is None
    store.repair()
    assert store.repaired == str(tmp_path / target)
    assert QuorumStateStore(str(tmp_path)).load() == expected and (tmp_path / target).read_bytes() != b"\x00\xff"
