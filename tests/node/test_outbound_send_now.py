"""Outbound.transmit puts a request on a live connection before returning (the exchange task only awaits the
answer), so a follower's next Fetch does not wait a loop turn behind the rest of the core's Ready; without a live
connection (or with a pool that has no fast path) the task connects and sends as before."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.node.runtime import outbound
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages
from pykraft.raft.effects import Destination, Send
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ReplicaKey

ANSWER = messages.vote_response(ErrorCode.NONE, ErrorCode.NONE, 2, 3, True)


class Pool:
    def __init__(self, live: bool) -> None:
        self.live = live
        self.sent: list[str] = []  # how each request left: "now" or "request"
        self.futures: list[asyncio.Future[bytes]] = []

    def send_now(self, host, port, build, *, timeout_ms):
        if not self.live:
            return None
        build(1)
        self.sent.append("now")
        future = asyncio.get_running_loop().create_future()
        self.futures.append(future)
        return future

    async def request(self, host, port, build, *, timeout_ms):
        build(1)
        self.sent.append("request")
        return encode_response(1, ANSWER)[4:]


def vote_send(correlation: int) -> Send:
    request = messages.vote_request("c", ReplicaKey.of(1, None), 3, ReplicaKey.of(2, None), OffsetAndEpoch(0, 0),
                                    pre_vote=False)
    return Send(Destination(2, "127.0.0.1", 1), correlation, request)


async def until(condition) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("never")


@pytest.mark.asyncio
async def test_a_request_on_a_live_connection_leaves_inside_transmit():
    pool, delivered = Pool(live=True), []
    out = outbound.Outbound(pool, timeout_ms=1000, client_id="t", deliver=lambda *a: delivered.append(a))
    out.transmit(vote_send(5))
    assert pool.sent == ["now"]  # before the loop turned
    pool.futures[0].set_result(encode_response(1, ANSWER)[4:])
    await until(lambda: bool(delivered))
    assert [(source, correlation) for source, correlation, _ in delivered] == [(2, 5)]


@pytest.mark.asyncio
async def test_without_a_live_connection_the_task_connects_and_sends():
    pool, delivered = Pool(live=False), []
    out = outbound.Outbound(pool, timeout_ms=1000, client_id="t", deliver=lambda *a: delivered.append(a))
    out.transmit(vote_send(6))
    assert pool.sent == []
    await until(lambda: bool(delivered))
    assert pool.sent == ["request"] and [(s, c) for s, c, _ in delivered] == [(2, 6)]
