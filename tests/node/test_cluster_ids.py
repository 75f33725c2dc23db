"""cluster_ids.py: whom a raft request came from, and one line per peer for cluster id refusals (issue 12 item 6)."""

from __future__ import annotations

import asyncio
import logging
import uuid

from pykraft.node.runtime.cluster_ids import ClusterIdMismatchLog, requester_id
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey

OURS, THEIRS = "OURS-cluster-id", "THEIRS-cluster-id"
KEY = ReplicaKey.of(3, uuid.uuid4())


def test_requester_id_of_each_raft_request():
    assert requester_id(messages.fetch_request(THEIRS, KEY, 1, 0, 0, 0, 500, 1024)) == 3
    assert requester_id(messages.vote_request(THEIRS, KEY, 2, ReplicaKey.of(1, None), OffsetAndEpoch(0, 0),
                                              False)) == 3
    endpoints = Endpoints.of([Endpoint("CONTROLLER", "127.0.0.1", 9093)])
    assert requester_id(messages.begin_quorum_epoch_request(THEIRS, 3, 2, ReplicaKey.of(1, None), endpoints)) == 3


def test_a_refusal_is_logged_once_per_peer_with_both_ids(caplog):
    log = ClusterIdMismatchLog(OURS, lookup=None)  # type: ignore[arg-type] - the refusing side asks nobody
    request = messages.fetch_request(THEIRS, KEY, 1, 0, 0, 0, 500, 1024)
    refused = messages.fetch_response(ErrorCode.INCONSISTENT_CLUSTER_ID)
    with caplog.at_level(logging.INFO, logger="pykraft.node"):
        for _ in range(5):
            log.check_refusal(request, refused)
        log.check_refusal(request, messages.fetch_response(ErrorCode.NONE))
    lines = [r.getMessage() for r in caplog.records if "INCONSISTENT_CLUSTER_ID" in r.getMessage()]
    assert len(lines) == 1 and "node 3" in lines[0] and OURS in lines[0] and THEIRS in lines[0]


def test_the_refused_side_asks_the_peer_for_its_id_once(caplog):
    asked = []

    class Answer:
        cluster_id = THEIRS

    async def lookup(host, port, request):
        asked.append((host, port))
        return Answer()

    async def main():
        log = ClusterIdMismatchLog(OURS, lookup)
        request = messages.fetch_request(OURS, KEY, 1, 0, 0, 0, 500, 1024)
        for _ in range(4):
            log.check_answer(1, "127.0.0.1", 9093, request, messages.fetch_response(ErrorCode.INCONSISTENT_CLUSTER_ID))
        await asyncio.sleep(0.05)

    with caplog.at_level(logging.INFO, logger="pykraft.node"):
        asyncio.run(main())
    lines = [r.getMessage() for r in caplog.records if "INCONSISTENT_CLUSTER_ID" in r.getMessage()]
    assert asked == [("127.0.0.1", 9093)]
    assert len(lines) == 1 and "node 1 at 127.0.0.1:9093" in lines[0] and OURS in lines[0] and THEIRS in lines[0]
