"""A voter set written in the log (not yet in a snapshot) is the voter set after a restart from a FileLog.

This broke once: a file log's reads were writable buffers, kio refused them, every control record read back was
counted bad, and a restarted observer had no voters (it could not find its controllers)."""

from __future__ import annotations

import random

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.static.primitive import i16

from pykraft.raft.client import RaftCore
from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.records.control import encode_control_batch

from .helpers import open_log


def _voter_set() -> VoterSet:
    return VoterSet.of(VoterNode(ReplicaKey(i), Endpoints.of([Endpoint("CONTROLLER", "127.0.0.1", 9000 + i)]),
                                 SupportedVersionRange(0, 1)) for i in (1, 2, 3))


def test_an_observer_restarted_on_its_file_log_knows_the_voters_and_their_endpoints(tmp_path) -> None:
    voters = _voter_set()
    log = open_log(tmp_path)
    log.append_as_follower(encode_control_batch(
        [KRaftVersionRecord(version=i16(0), k_raft_version=i16(1)), voters.to_voters_record()],
        base_offset=0, partition_leader_epoch=1, timestamp_ms=0), 1)
    log.flush()
    log.close()

    reopened = open_log(tmp_path)
    try:
        local = LocalReplica(node_id=7, directory_id=None, cluster_id="c", can_become_voter=False)
        core = RaftCore(local, QuorumConfig(), reopened, random.Random(0))
        core.initialize(None, 0)
        assert core.bad_control_records == 0
        assert core.voters() == voters and core.kraft_version() == 1
    finally:
        reopened.close()
