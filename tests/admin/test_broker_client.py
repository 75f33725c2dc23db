"""BrokerClient's waits on a dead cluster: the deadline is kept, nothing answering ends as UnreachableError naming
every address, and a wait long enough to notice is announced once, saying what it waits for."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.admin.brokers import WAIT_NOTICE_S, BrokerClient
from pykraft.admin.errors import UnreachableError
from pykraft.admin.transport import TransportConnectError

from .fakes import FakeClock


class DeadTransport:
    def __init__(self) -> None:
        self.attempts = 0

    async def request(self, host, port, build, *, timeout_ms):
        self.attempts += 1
        raise TransportConnectError(host, port, "connection refused")

    async def close(self):
        return None


def _client(deadline_ms: int, notices: list[str]) -> tuple[BrokerClient, FakeClock, DeadTransport]:
    clock, transport = FakeClock(), DeadTransport()
    client = BrokerClient([("127.0.0.1", 1), ("127.0.0.1", 2)], transport=transport, deadline_ms=deadline_ms,
                          clock=clock, sleep=clock.sleep, on_wait=notices.append)
    return client, clock, transport


def test_a_long_wait_on_a_dead_cluster_is_announced_once_and_ends_at_the_deadline():
    notices: list[str] = []
    client, clock, transport = _client(60_000, notices)
    with pytest.raises(UnreachableError) as raised:
        asyncio.run(client.metadata())
    assert str(raised.value) == ("cannot reach any bootstrap server (127.0.0.1:1: connection refused; "
                                 "127.0.0.1:2: connection refused)")
    assert len(notices) == 1 and notices[0].startswith("waiting up to 6")
    assert notices[0].endswith("s for a bootstrap server to answer (127.0.0.1:1: connection refused; "
                               "127.0.0.1:2: connection refused)")
    assert 59 <= clock.now - 1000 <= 61 and transport.attempts > 2


def test_a_short_deadline_fails_with_one_line_and_no_notice():
    notices: list[str] = []
    client, clock, _ = _client(int(WAIT_NOTICE_S * 1000) - 1000, notices)
    with pytest.raises(UnreachableError):
        asyncio.run(client.metadata())
    assert notices == [] and clock.now - 1000 <= WAIT_NOTICE_S
