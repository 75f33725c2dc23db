"""AdminClient against a fake transport: leader discovery, retries, non-retriable errors, deadlines, and the
honest "outcome unknown" of voter changes."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.add_raft_voter.v1.request import AddRaftVoterRequest
from kio.schema.api_versions.v4 import response as av_resp
from kio.schema.update_features.v1 import response as uf_resp

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminError, DeadlineError, OutcomeUnknownError, UnreachableError
from pykraft.admin.model import FinalizedRange, SupportedRange
from pykraft.admin.transport import TransportClosedError, TransportConnectError, TransportTimeoutError
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.reconfig_messages import add_voter_response, remove_voter_response
from pykraft.raft.voter_set import Endpoint

from .fakes import ZERO_MS, FakeClock, FakeTransport, describe_cluster, describe_quorum, error, replica

A, B, C = ("127.0.0.1", 9093), ("127.0.0.1", 9094), ("127.0.0.1", 9095)
CONTROLLERS = {1: A, 2: B, 3: C}
DIR = uuid.UUID(int=0x1234)


def make_client(transport: FakeTransport, clock: FakeClock, bootstrap=(A,), **kwargs) -> AdminClient:
    return AdminClient(list(bootstrap), transport=transport, clock=clock, sleep=clock.sleep, **kwargs)


def run(coro):
    return asyncio.run(coro)


def cluster_says(leader: int):
    def handle(request):
        assert request.api_key == ApiKey.DESCRIBE_CLUSTER
        assert request.message.endpoint_type == 2
        return describe_cluster(leader, CONTROLLERS)
    return handle


def quorum_ok(request):
    return describe_quorum(2, 5, 100, (replica(1, 90, DIR), replica(2, 100)), (replica(7, 80),),
                           nodes={2: [("CONTROLLER", "127.0.0.1", 9094)]})


def test_describe_quorum_goes_to_the_leader_named_by_describe_cluster():
    transport, clock = FakeTransport({A: cluster_says(2), B: quorum_ok}), FakeClock()
    info = run(make_client(transport, clock).describe_quorum())
    assert transport.apis_sent() == [(A, "DESCRIBE_CLUSTER"), (B, "DESCRIBE_QUORUM")]
    assert (info.leader_id, info.leader_epoch, info.high_watermark) == (2, 5, 100)
    assert [(v.replica_id, v.directory_id, v.log_end_offset) for v in info.voters] == [(1, DIR, 90), (2, None, 100)]
    assert info.voters[0].last_fetch_timestamp is None  # -1 on the wire
    assert [o.replica_id for o in info.observers] == [7]
    assert info.endpoints_of(2) == (Endpoint("CONTROLLER", "127.0.0.1", 9094),)
    assert clock.sleeps == []


def test_not_leader_with_a_named_leader_goes_straight_there():
    def stale(request):
        return describe_quorum(3, 6, -1, (), code=ErrorCode.NOT_LEADER_OR_FOLLOWER, message="not the leader")

    transport, clock = FakeTransport({A: cluster_says(2), B: stale, C: quorum_ok}), FakeClock()
    info = run(make_client(transport, clock).describe_quorum())
    assert info.leader_id == 2
    assert transport.apis_sent() == [(A, "DESCRIBE_CLUSTER"), (B, "DESCRIBE_QUORUM"), (C, "DESCRIBE_QUORUM")]
    assert clock.sleeps == [0.1]


def test_unknown_leader_is_retried_with_backoff_until_one_is_elected():
    answers = iter([-1, -1, 2])
    transport = FakeTransport({A: lambda r: describe_cluster(next(answers), CONTROLLERS), B: quorum_ok})
    clock = FakeClock()
    run(make_client(transport, clock).describe_quorum())
    assert clock.sleeps == [0.1, 0.2]
    assert [api for _, api in transport.apis_sent()] == ["DESCRIBE_CLUSTER"] * 3 + ["DESCRIBE_QUORUM"]


def test_connection_failure_moves_on_to_the_next_bootstrap_address():
    def refuse(request):
        raise TransportConnectError(*A, "connection refused")

    transport, clock = FakeTransport({A: refuse, B: cluster_says(3), C: quorum_ok}), FakeClock()
    run(make_client(transport, clock, bootstrap=(A, B)).describe_quorum())
    assert transport.apis_sent() == [(A, "DESCRIBE_CLUSTER"), (B, "DESCRIBE_CLUSTER"), (C, "DESCRIBE_QUORUM")]


def test_non_retriable_error_is_raised_at_once_with_the_server_message():
    def duplicate(request):
        return add_voter_response(ErrorCode.DUPLICATE_VOTER, "voter 4 is already in the voter set")

    transport, clock = FakeTransport({A: cluster_says(2), B: duplicate}), FakeClock()
    with pytest.raises(AdminError) as caught:
        run(make_client(transport, clock).add_voter(4, DIR, [Endpoint("CONTROLLER", "h", 1)]))
    assert caught.value.code is ErrorCode.DUPLICATE_VOTER
    assert str(caught.value) == "DUPLICATE_VOTER: voter 4 is already in the voter set"
    assert [api for _, api in transport.apis_sent()].count("ADD_RAFT_VOTER") == 1
    assert clock.sleeps == []


def test_add_voter_sends_the_key_and_endpoints_and_succeeds_after_retriable_errors():
    seen: list[AddRaftVoterRequest] = []
    answers = iter([ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NONE])

    def leader(request):
        seen.append(request.message)
        return add_voter_response(next(answers))

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    run(make_client(transport, clock, request_timeout_ms=8000).add_voter(4, DIR, [Endpoint("CONTROLLER", "h", 1)]))
    assert len(seen) == 2
    request = seen[0]
    assert (request.voter_id, request.voter_directory_id) == (4, DIR)
    assert [(item.name, item.host, item.port) for item in request.listeners] == [("CONTROLLER", "h", 1)]
    assert request.ack_when_committed is True
    assert request.timeout.total_seconds() * 1000 == 7000  # the leader gives up before the client does


def test_deadline_expiry_raises_after_exponential_backoff():
    def busy(request):
        return describe_quorum(-1, 5, -1, (), code=ErrorCode.REQUEST_TIMED_OUT)

    transport, clock = FakeTransport({A: cluster_says(2), B: busy}), FakeClock()
    with pytest.raises(DeadlineError) as caught:
        run(make_client(transport, clock, deadline_ms=3000).describe_quorum())
    assert clock.sleeps == [0.1, 0.2, 0.4, 0.8, 1.0]  # the next 1.0 s would pass the 3 s deadline
    assert "127.0.0.1:9094 answered REQUEST_TIMED_OUT" in str(caught.value)
    assert "within 3000 ms" in str(caught.value)


def test_unreachable_bootstrap_names_every_address_and_reason():
    def refuse(address):
        def handle(request):
            raise TransportConnectError(*address, "connection refused")
        return handle

    transport, clock = FakeTransport({A: refuse(A), B: refuse(B)}), FakeClock()
    with pytest.raises(UnreachableError) as caught:
        run(make_client(transport, clock, bootstrap=(A, B), deadline_ms=500).describe_cluster())
    assert str(caught.value) == ("cannot reach any bootstrap controller "
                                 "(127.0.0.1:9093: connection refused; 127.0.0.1:9094: connection refused)")


def test_add_voter_timeout_then_duplicate_is_outcome_unknown():
    answers = iter(["timeout", ErrorCode.DUPLICATE_VOTER])

    def leader(request):
        answer = next(answers)
        if answer == "timeout":
            raise TransportTimeoutError(*B, "no response in time")
        return add_voter_response(answer, "already a voter")

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    with pytest.raises(OutcomeUnknownError) as caught:
        run(make_client(transport, clock).add_voter(4, DIR, [Endpoint("CONTROLLER", "h", 1)]))
    text = str(caught.value)
    assert text.startswith("outcome unknown: adding controller 4 may or may not have been applied")
    assert "DUPLICATE_VOTER" in text and "describe --status" in text


def test_remove_voter_that_keeps_timing_out_is_outcome_unknown_at_the_deadline():
    def leader(request):
        return remove_voter_response(ErrorCode.REQUEST_TIMED_OUT)

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    with pytest.raises(OutcomeUnknownError):
        run(make_client(transport, clock, deadline_ms=2000).remove_voter(4, DIR))


def test_voter_change_never_sent_is_not_in_doubt():
    """Connection refused means the request never left: the answer is "unreachable", not "unknown"."""
    def refuse(request):
        raise TransportConnectError(*A, "connection refused")

    transport, clock = FakeTransport({A: refuse}), FakeClock()
    with pytest.raises(UnreachableError):
        run(make_client(transport, clock, deadline_ms=1000).add_voter(4, DIR, [Endpoint("CONTROLLER", "h", 1)]))


def test_lost_connection_forgets_the_leader_and_rediscovers():
    calls = iter(["closed", "ok"])

    def leader(request):
        if next(calls) == "closed":
            raise TransportClosedError(*B, "connection reset")
        return quorum_ok(request)

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    run(make_client(transport, clock).describe_quorum())
    assert [api for _, api in transport.apis_sent()] == [
        "DESCRIBE_CLUSTER", "DESCRIBE_QUORUM", "DESCRIBE_CLUSTER", "DESCRIBE_QUORUM"]


def test_malformed_response_is_retried_not_raised():
    calls = iter([b"\x00\x00\x00\x07\xff", None])

    def leader(request):
        answer = next(calls)
        return answer if answer is not None else quorum_ok(request)

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    assert run(make_client(transport, clock).describe_quorum()).leader_id == 2


def test_features_come_from_api_versions():
    def leader(request):
        assert request.api_key == ApiKey.API_VERSIONS
        return av_resp.ApiVersionsResponse(
            error_code=ErrorCode.NONE, api_keys=(), throttle_time=ZERO_MS,
            supported_features=(av_resp.SupportedFeatureKey(name="kraft.version", min_version=0, max_version=1),),
            finalized_features_epoch=42,
            finalized_features=(av_resp.FinalizedFeatureKey(name="kraft.version", max_version_level=1,
                                                            min_version_level=1),))

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    features = run(make_client(transport, clock).describe_features())
    assert features.supported == {"kraft.version": SupportedRange(0, 1)}
    assert features.finalized == {"kraft.version": FinalizedRange(1, 1)}
    assert features.finalized_epoch == 42


def test_update_features_reports_each_feature_and_passes_dry_run():
    seen = []

    def leader(request):
        seen.append(request.message)
        return uf_resp.UpdateFeaturesResponse(throttle_time=ZERO_MS, error_code=ErrorCode.NONE, error_message=None,
                                              results=(uf_resp.UpdatableFeatureResult(
                                                  feature="kraft.version", error_code=ErrorCode.INVALID_UPDATE_VERSION,
                                                  error_message="cannot downgrade"),))

    transport, clock = FakeTransport({A: cluster_says(2), B: leader}), FakeClock()
    results = run(make_client(transport, clock).update_features({"kraft.version": 1, "x": 2}, dry_run=True))
    assert seen[0].validate_only is True
    assert [(u.feature, u.max_version_level, u.upgrade_type) for u in seen[0].feature_updates] == [
        ("kraft.version", 1, 1), ("x", 2, 1)]
    assert str(results["kraft.version"]) == "INVALID_UPDATE_VERSION: cannot downgrade"
    assert results["x"].code is ErrorCode.UNKNOWN_SERVER_ERROR  # missing from the answer


def test_update_features_top_level_error_applies_to_every_feature():
    transport = FakeTransport({A: cluster_says(2), B: lambda r: error(r, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)})
    results = run(make_client(transport, FakeClock()).update_features({"kraft.version": 1}))
    assert results["kraft.version"].code is ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_bootstrap_server_mode_sends_to_the_bootstrap_without_discovery():
    transport, clock = FakeTransport({A: quorum_ok}), FakeClock()
    run(make_client(transport, clock, bootstrap_kind="server").describe_quorum())
    assert transport.apis_sent() == [(A, "DESCRIBE_QUORUM")]


def test_bootstrap_server_mode_moves_to_the_next_address_on_not_controller():
    transport = FakeTransport({A: lambda r: error(r, ErrorCode.NOT_CONTROLLER), B: quorum_ok})
    clock = FakeClock()
    run(make_client(transport, clock, bootstrap=(A, B), bootstrap_kind="server").describe_quorum())
    assert transport.apis_sent() == [(A, "DESCRIBE_QUORUM"), (B, "DESCRIBE_QUORUM")]


def test_close_closes_the_transport():
    transport = FakeTransport()

    async def use():
        async with make_client(transport, FakeClock()):
            pass

    run(use())
    assert transport.closed
