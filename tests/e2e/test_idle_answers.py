"""An idle node answers every API of its role's table (issue 34): `pykraft server start` processes load kio schema
modules, the other versions of a message (protocol/wire_check.py's DeferredTagRules) and several request
builders at first use, so the first request of each kind must still be answered, at its newest version.

A controller-only and a broker-only process (the lean `server start` path, cli/server_fast.py), once the broker is
registered: for each API key each listener advertises, one valid request drawn from the schema (derandomized,
tests/protocol/schema_strategies.py) gets a well-formed answer at its version (Produce with acks=0 excepted: it
has none), on a connection the node keeps open, no handler raised (the server logs say so), and both processes
are still running at the end."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from node.test_protocol_fuzz import HINTS, _body, _expects_no_answer, advertised, exchange

from pykraft.node.local_cluster import LocalCluster
from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.codec import decode_response
from pykraft.protocol.errors import ProtocolError

from .data_plane_checks import wait_every_broker_unfenced

ONE = settings(max_examples=1, deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))


def _newest(pairs: list[tuple[int, int]]) -> dict[int, int]:
    newest: dict[int, int] = {}
    for key, version in pairs:
        newest[key] = max(version, newest.get(key, version))
    return newest


def _answers_each_api(port: int, role: str) -> list[str]:
    answered = []
    for key, version in sorted(_newest(advertised(port)).items()):
        name = f"{role}: {ApiKey(key).name} v{version}"

        @ONE
        @given(request=message_of(key, version))
        def first(request: Any) -> None:
            answer, closed = exchange(port, _body(request, 7))
            assert not closed, f"{name}: the connection was closed"
            if _expects_no_answer(request):
                assert answer is None, name
                return
            assert answer is not None, f"{name}: no answer"
            try:
                decode_response(answer, key, version)
            except ProtocolError as exc:
                raise AssertionError(f"{name}: malformed answer: {exc}") from None

        first()
        answered.append(name)
    return answered


def message_of(key: int, version: int) -> Any:
    from protocol.schema_strategies import message

    return message(request_class(key, version), 100, HINTS)


def test_an_idle_controller_and_broker_answer_the_first_request_of_every_api(tmp_path) -> None:
    cluster = LocalCluster(tmp_path / "idle", controllers=1, brokers=1)
    cluster.format_all()
    cluster.start_all()
    try:
        controller, broker = cluster.nodes[cluster.controller_ids[0]], cluster.nodes[cluster.broker_ids[0]]
        wait_every_broker_unfenced(cluster)
        controller_apis = _answers_each_api(controller.port, "controller")
        broker_apis = _answers_each_api(broker.port, "broker")
        assert len(controller_apis) > 20 and len(broker_apis) > 40
        assert controller.is_running() and broker.is_running()
        # a handler that raised (a module that failed to load at first use) is contained, answered with
        # UNKNOWN_SERVER_ERROR and logged with its traceback (node/runtime/handler_errors.py): none may have
        for node in (controller, broker):
            failed = [line for line in cluster.server_log(node.node_id).splitlines() if "failed, the node goes on" in line]
            assert failed == [], failed
    finally:
        cluster.stop_all(timeout=20)
