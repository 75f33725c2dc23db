"""Issue 12 item 4 at the unit level: an attempt waiting on a node that stops answering (a paused leader) is given
up once the node fails an ApiVersions probe, and the leader is rediscovered; a slow but live node keeps its
request. Real asyncio time with short probe settings; every wait is bounded."""

from __future__ import annotations

import asyncio

from kio.schema.api_versions.v4 import response as av_resp

from pykraft.admin.client import AdminClient
from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey
from pykraft.protocol.codec import decode_request
from pykraft.protocol.errors import ErrorCode

from .fakes import ZERO_MS, FakeClock, FakeTransport, describe_cluster, describe_quorum, replica

A, B, C = ("127.0.0.1", 9093), ("127.0.0.1", 9094), ("127.0.0.1", 9095)
CONTROLLERS = {1: A, 2: B, 3: C}
PROBES = dict(probe_interval_ms=50, probe_timeout_ms=100)


class PausableTransport(FakeTransport):
    """A FakeTransport whose `paused` addresses never answer anything (a SIGSTOPped process) and whose `slow`
    addresses answer requests other than ApiVersions after `delay_s` (a live leader waiting for a commit)."""

    def __init__(self, handlers, paused=(), slow=(), delay_s: float = 0.0) -> None:
        super().__init__(handlers)
        self.paused, self.slow, self.delay_s = set(paused), set(slow), delay_s

    async def request(self, host, port, build, *, timeout_ms):
        if (host, port) in self.paused:
            decoded = decode_request(build(7), KRAFT_NODE_APIS)
            self.sent.append(((host, port), decoded.api_key))
            await asyncio.Event().wait()
        answer = await super().request(host, port, build, timeout_ms=timeout_ms)
        if (host, port) in self.slow and self.sent[-1][1] != ApiKey.API_VERSIONS:
            await asyncio.sleep(self.delay_s)
        return answer


def api_versions(request):
    return av_resp.ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=(), throttle_time=ZERO_MS,
                                       supported_features=(), finalized_features_epoch=-1, finalized_features=(),
                                       zk_migration_ready=False)


def leader_is(node_id: int):
    def handle(request):
        if request.api_key == ApiKey.API_VERSIONS:
            return api_versions(request)
        if request.api_key == ApiKey.DESCRIBE_CLUSTER:
            return describe_cluster(node_id, CONTROLLERS)
        return describe_quorum(node_id, 7, 100, (replica(1, 90), replica(2, 100), replica(3, 100)))
    return handle


def test_a_paused_leader_is_given_up_and_the_new_leader_answers():
    # The follower (the only bootstrap address) still names the paused node 1 first, then the new leader 2.
    answers = iter([1])

    def follower(request):
        return leader_is(next(answers, 2))(request)

    transport = PausableTransport({C: follower, A: leader_is(1), B: leader_is(2)}, paused={A})
    client = AdminClient([C], transport=transport, probe_transport=transport, clock=FakeClock(),
                         sleep=FakeClock().sleep, request_timeout_ms=600_000, deadline_ms=900_000, **PROBES)
    info = asyncio.run(asyncio.wait_for(client.describe_quorum(), 30))
    assert info.leader_id == 2
    to_paused = [api for address, api in transport.apis_sent() if address == A]
    assert to_paused == ["DESCRIBE_QUORUM", "API_VERSIONS"], "one request, one failed probe, then given up"


def test_a_slow_but_live_leader_keeps_its_request():
    transport = PausableTransport({C: leader_is(2), B: leader_is(2)}, slow={B}, delay_s=0.5)
    client = AdminClient([C], transport=transport, probe_transport=transport, clock=FakeClock(),
                         sleep=FakeClock().sleep, **PROBES)
    info = asyncio.run(asyncio.wait_for(client.describe_quorum(), 30))
    assert info.leader_id == 2
    to_leader = [api for address, api in transport.apis_sent() if address == B]
    assert to_leader.count("DESCRIBE_QUORUM") == 1, "answered probes never abandon the request"
    assert to_leader.count("API_VERSIONS") >= 2


def test_a_node_given_up_is_not_asked_again_while_the_followers_still_name_it():
    answers = iter([1, 1, 1, 1])  # the follower names the paused node until it times out and a new leader wins

    def follower(request):
        return leader_is(next(answers, 2))(request)

    transport = PausableTransport({C: follower, A: leader_is(1), B: leader_is(2)}, paused={A})
    clock = FakeClock()
    client = AdminClient([C], transport=transport, probe_transport=transport, clock=clock, sleep=clock.sleep,
                         request_timeout_ms=600_000, deadline_ms=900_000, retry_backoff_ms=1, retry_backoff_max_ms=1,
                         **PROBES)
    info = asyncio.run(asyncio.wait_for(client.describe_quorum(), 30))
    assert info.leader_id == 2
    assert [api for address, api in transport.apis_sent() if address == A] == ["DESCRIBE_QUORUM", "API_VERSIONS"]
    assert [api for address, api in transport.apis_sent() if address == C].count("DESCRIBE_CLUSTER") == 5
