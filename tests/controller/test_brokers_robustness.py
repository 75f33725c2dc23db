"""Arbitrary broker traffic (registrations with any cluster id, incarnation, features or log dirs; heartbeats with
any epoch, offset and wishes; unregistrations; session expiry) never raises out of the controller, always gets an
answer, keeps the KIP-841 invariants and leaves a replica that replays the log with the same image."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.types import BrokerId
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest

from pykraft.controller.controller import UNREGISTER_BROKER

from .broker_fakes import CLUSTER_ID, SESSION_MS, heartbeat_request, log_dir
from .controller_cluster import Quorum, kip841_violations

BROKERS = st.integers(min_value=1, max_value=4)

register = st.tuples(st.just("register"), BROKERS, st.integers(1, 3), st.sampled_from([CLUSTER_ID, CLUSTER_ID, "x"]),
                     st.sampled_from([(7, 27), (7, 20), (27, 27)]),
                     st.sampled_from([None, (), (uuid.UUID(int=3),), (log_dir(1), log_dir(1))]))
heartbeat = st.tuples(st.just("heartbeat"), BROKERS, st.integers(-2, 2), st.integers(-1, 3), st.booleans(),
                      st.booleans())
unregister = st.tuples(st.just("unregister"), BROKERS)
wait = st.tuples(st.just("wait"), st.integers(0, 2 * SESSION_MS))
STEPS = st.lists(st.one_of(register, heartbeat, heartbeat, unregister, wait), max_size=25)


def _step(q: Quorum, step: tuple, now: int) -> int:
    kind = step[0]
    if kind == "register":
        _, broker_id, inc, cluster_id, mv_range, dirs = step
        response = q.register(broker_id, inc, now_ms=now, cluster_id=cluster_id, mv_range=mv_range, log_dirs=dirs)
        assert response is not None
    elif kind == "heartbeat":
        _, broker_id, epoch_delta, offset_delta, want_fence, want_shut_down = step
        epoch = q.active.cluster.broker_epoch(broker_id)
        if epoch is None or epoch_delta < 0:  # unregistered, or a wrong epoch
            request = heartbeat_request(broker_id, (epoch or 0) + epoch_delta, 0)
            assert q.request(63, request, now).error_code == 77  # STALE_BROKER_EPOCH
        else:  # the offset is anywhere around the log end
            response = q.heartbeat(broker_id, now_ms=now, offset=max(0, q.next_offset + offset_delta - 2),
                                   want_fence=want_fence, want_shut_down=want_shut_down)
            assert response.error_code == 0
    elif kind == "unregister":
        assert q.request(UNREGISTER_BROKER, UnregisterBrokerRequest(broker_id=BrokerId(step[1])), now) is not None
    else:
        now += step[1]
        q.tick(now)
    return now


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_any_broker_traffic_keeps_the_invariants(steps: list[tuple]) -> None:
    q = Quorum(max_idle_interval_ms=0, leader_imbalance_check_interval_ms=SESSION_MS)
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2, 3)
    q.create_topic("t", partitions=2, replication=3, assignments=[[1, 2, 3], [3, 2, 1]])
    now = 0
    for step in steps:
        now = _step(q, step, now)
        assert kip841_violations(q.active) == []
    q.sync(1)
    assert q.controllers[1].image() == q.active.image() and q.active.metadata_errors == 0
