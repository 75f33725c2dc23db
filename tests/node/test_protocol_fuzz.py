"""Schema-driven protocol fuzzing against running nodes, over TCP (issue 12).

Three nodes run in one background event loop: a controller, a broker registered with it, and a combined node
(broker,controller). For every listener (the combined node's two included), every API key and every version that
listener advertises in ApiVersions, the test sends
- valid requests drawn from the schema (tests/protocol/schema_strategies.py: nulls, empty arrays, tagged fields
  absent or present, edge integers, the node's own cluster id and node ids some of the time), and
- mutations of them (truncations, bit flips, absurd lengths and counts, insertions, deletions),
and after each one checks, on the same connection or a new one if the request closed it, that the node answers
ApiVersions and DescribeQuorum. A valid request must get a well-formed answer at its version (Produce with acks=0
excepted: it has none); a mutated one may instead close its connection. No node fails, and no handler raised
(a contained exception still answers, UNKNOWN_SERVER_ERROR, but it is a bug: the log has its traceback).

Bounded for CI: a few examples per (API, version), derandomized (the same examples every run), no deadline;
PYKRAFT_FUZZ_EXAMPLES raises the count for a longer hunt.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest, PartitionData, TopicData

from pykraft.broker.actions import BrokerState
from pykraft.node.roles.broker_host import broker_runtime
from pykraft.node.roles.combined_host import combined_runtime, host_parts
from pykraft.node.config.node_config import parse_config
from pykraft.node.roles.controller_host import controller_runtime
from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.raft.config import METADATA_TOPIC

from protocol.helpers import mutated
from protocol.schema_strategies import message
from .helpers import CLUSTER_ID, format_dir, free_ports, make_config

# A deeper local hunt: PYKRAFT_FUZZ_EXAMPLES=50 (the CI default keeps the module to seconds).
VALID_EXAMPLES = MUTATED_EXAMPLES = int(os.environ.get("PYKRAFT_FUZZ_EXAMPLES", "5"))
ANSWER_TIMEOUT_S = 10.0  # a liveness bound, far above what an answer needs
FUZZ = settings(max_examples=VALID_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
MUTATE = settings(FUZZ, max_examples=MUTATED_EXAMPLES)
# Values the nodes know, so that some requests get past the cluster-id and membership checks.
HINTS = (("cluster_id", (CLUSTER_ID,)), ("broker_id", (1, 2)), ("replica_id", (1, 2, -1)), ("voter_id", (1,)),
         ("leader_id", (1,)), ("candidate_id", (1,)), ("node_id", (1, 2)), ("controller_id", (1,)),
         ("topic", ("t", METADATA_TOPIC)), ("name", ("t", "metadata.version", "kraft.version", "CONTROLLER")),
         ("host", ("127.0.0.1", "localhost")))
_SIZE = struct.Struct(">i")
_PROBES = (ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"),
           DescribeQuorumRequest(topics=(TopicData(topic_name=METADATA_TOPIC,
                                                    partitions=(PartitionData(partition_index=0),)),)))


# ---- the nodes: one background event loop ------------------------------------------------------------------------
@dataclass
class Nodes:
    loop: asyncio.AbstractEventLoop
    runtimes: dict[str, Any]
    ports: dict[str, int]  # listener -> port

    def failures(self) -> dict[str, BaseException]:
        return {name: r.failure for name, r in self.runtimes.items() if r.failure is not None}

    def handler_errors(self) -> dict[str, dict[str, int]]:
        """Requests and responses whose handling raised: contained, but each one is a bug the fuzzer found."""
        return {name: dict(r.handler_errors.by_api) for name, r in self.runtimes.items() if r.handler_errors.total}


def _config(data_dir: Path, node_id: int, roles: str, listeners: str, voters: str) -> Any:
    format_dir(data_dir, node_id)
    return parse_config("\n".join([
        f"process.roles={roles}", f"node.id={node_id}", f"listeners={listeners}",
        "controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"controller.quorum.voters={voters}", f"metadata.log.dir={data_dir}", f"log.dirs={data_dir}",
        "controller.quorum.election.timeout.ms=300", "controller.quorum.request.timeout.ms=1000", ""]))


async def _start(tmp: Path) -> tuple[dict[str, Any], dict[str, int]]:
    controller_port, broker_port, combined_port, combined_controller_port = free_ports(4)
    controller = controller_runtime(make_config(tmp, 1, {1: controller_port}))
    broker_dir, combined_dir = tmp / "broker", tmp / "combined"
    broker_dir.mkdir()
    combined_dir.mkdir()
    broker = broker_runtime(_config(broker_dir, 2, "broker", f"PLAINTEXT://127.0.0.1:{broker_port}",
                                    f"1@127.0.0.1:{controller_port}"))
    combined = combined_runtime(_config(
        combined_dir, 1, "broker,controller",
        f"PLAINTEXT://127.0.0.1:{combined_port},CONTROLLER://127.0.0.1:{combined_controller_port}",
        f"1@127.0.0.1:{combined_controller_port}"))
    runtimes = {"controller": controller, "broker": broker, "combined": combined}
    for runtime in runtimes.values():
        await runtime.start()
        _, broker_part = host_parts(runtime.state_machine)
        if broker_part is not None:
            broker_part.start()
    ports = {"controller": controller_port, "broker": broker_port, "combined-broker": combined_port,
             "combined-controller": combined_controller_port}
    return runtimes, ports


def _brokers_running(runtimes: dict[str, Any]) -> bool:
    parts = [host_parts(r.state_machine)[1] for r in runtimes.values()]
    return all(p.lifecycle.state is BrokerState.RUNNING for p in parts if p is not None)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzzed-nodes", daemon=True)
    thread.start()

    def run(coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    runtimes, ports = run(_start(tmp_path_factory.mktemp("fuzzed")))

    async def ready() -> None:
        while not _brokers_running(runtimes):
            await asyncio.sleep(0.05)

    try:
        run(asyncio.wait_for(ready(), 60))
        yield Nodes(loop, runtimes, ports)
    finally:
        for runtime in runtimes.values():
            run(runtime.stop(graceful=False))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


# ---- a blocking client: frames out, frames in --------------------------------------------------------------------
class Closed(Exception):
    """The node closed the connection."""


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise Closed()
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(_read_exactly(sock, _SIZE.size))
    return _read_exactly(sock, size)


def _body(request: Any, correlation_id: int) -> bytes:
    return encode_request(request, correlation_id=correlation_id, client_id="fuzz")[_SIZE.size:]


def _send(sock: socket.socket, body: bytes) -> None:
    sock.sendall(_SIZE.pack(len(body)) + body)


def _read_probes(sock: socket.socket, first_probe_id: int) -> bytes | None:
    """Read up to the answers to both probes (correlation ids first_probe_id, +1): the fuzzed request's answer if it
    had one (it comes first: answers are in request order), else None. Raises Closed, socket.timeout."""
    fuzzed = None
    expected = first_probe_id
    while expected < first_probe_id + len(_PROBES):
        frame = _read_frame(sock)
        correlation_id = _SIZE.unpack_from(frame)[0]
        if correlation_id == expected:
            probe = _PROBES[expected - first_probe_id]
            decode_response(frame, int(probe.__api_key__), int(probe.__version__))
            expected += 1
        else:
            assert fuzzed is None, "two answers to one request"
            fuzzed = frame
    return fuzzed


def _probe_fresh(port: int) -> None:
    """ApiVersions and DescribeQuorum on a new connection: the node is alive and serving."""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        for index, probe in enumerate(_PROBES):
            _send(sock, _body(probe, 100 + index))
        assert _read_probes(sock, 100) is None


def exchange(port: int, body: bytes) -> tuple[bytes | None, bool]:
    """Send one fuzzed request body (correlation id 7) followed by the probes; (its answer or None, whether the node
    closed the connection). The probes are answered on this connection, or on a fresh one if it was closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        try:
            _send(sock, body)
            for index, probe in enumerate(_PROBES):
                _send(sock, _body(probe, 8 + index))
            return _read_probes(sock, 8), False
        except (Closed, BrokenPipeError, ConnectionResetError):
            pass
    _probe_fresh(port)
    return None, True


def advertised(port: int) -> list[tuple[int, int]]:
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        _send(sock, _body(_PROBES[0], 1))
        answer = decode_response(_read_frame(sock), ApiKey.API_VERSIONS, 3).message
    return [(int(k.api_key), v) for k in answer.api_keys for v in range(int(k.min_version), int(k.max_version) + 1)]


# ---- the tests -----------------------------------------------------------------------------------------------------
def _expects_no_answer(request: Any) -> bool:
    return int(request.__api_key__) == ApiKey.PRODUCE and int(request.acks) == 0


def _fuzz_listener(nodes: Nodes, listener: str) -> int:
    port = nodes.ports[listener]
    contained_before = nodes.handler_errors()
    pairs = advertised(port)
    assert len(pairs) > 40 and (ApiKey.DESCRIBE_QUORUM, 0) in pairs
    for key, version in pairs:
        strategy = message(request_class(key, version), 100, HINTS)

        @FUZZ
        @given(request=strategy)
        def valid(request: Any) -> None:
            answer, closed = exchange(port, _body(request, 7))
            assert not closed, f"{listener}: the node closed the connection on a valid request"
            if _expects_no_answer(request):
                assert answer is None
                return
            assert answer is not None, f"{listener}: no answer"
            try:
                decode_response(answer, key, version)
            except ProtocolError as exc:
                raise AssertionError(f"{listener}: the answer to {ApiKey(key).name} v{version} is malformed: {exc}")

        @MUTATE
        @given(data=st.data(), request=strategy)
        def broken(data: st.DataObject, request: Any) -> None:
            exchange(port, data.draw(mutated(_body(request, 7))))

        valid()
        broken()
        assert not nodes.failures(), f"{ApiKey(key).name} v{version} on {listener}: {nodes.failures()}"
        assert nodes.handler_errors() == contained_before, f"{ApiKey(key).name} v{version} on {listener}"
    return len(pairs)


LISTENERS = {"controller": "controller", "broker": "broker", "combined-broker": "combined",
             "combined-controller": "combined"}


@pytest.mark.parametrize("listener", list(LISTENERS))
def test_every_advertised_api_and_version_survives_schema_and_mutation_fuzzing(nodes: Nodes, listener: str) -> None:
    _fuzz_listener(nodes, listener)
    assert not nodes.failures()


@pytest.mark.parametrize("listener", list(LISTENERS))
def test_a_handler_that_raises_is_answered_on_every_listener_and_counted(nodes: Nodes, listener: str) -> None:
    """Containment at the inbound boundary of each listener: the broker's forwarding handler, the controller's, the
    combined node's, made to raise: UNKNOWN_SERVER_ERROR per partition (ElectLeaders v0 has no top-level error code),
    counted per API, and the next requests are served."""
    from kio.schema.elect_leaders.v0 import request as el0

    runtime = nodes.runtimes[LISTENERS[listener]]
    handlers = runtime.inbound.extra
    original = handlers[ApiKey.ELECT_LEADERS]
    before = runtime.handler_errors.by_api["ELECT_LEADERS"]

    async def broken(_decoded: Any) -> Any:
        raise RuntimeError("a handler bug")

    request = el0.ElectLeadersRequest(topic_partitions=(el0.TopicPartitions(topic="t", partitions=(0, 1)),))
    handlers[ApiKey.ELECT_LEADERS] = broken
    try:
        answer, closed = exchange(nodes.ports[listener], _body(request, 7))
    finally:
        handlers[ApiKey.ELECT_LEADERS] = original
    assert not closed and answer is not None
    decoded = decode_response(answer, ApiKey.ELECT_LEADERS, 0).message
    assert [(p.partition_id, p.error_code) for p in decoded.replica_election_results[0].partition_result] == [
        (0, ErrorCode.UNKNOWN_SERVER_ERROR), (1, ErrorCode.UNKNOWN_SERVER_ERROR)]
    assert runtime.handler_errors.by_api["ELECT_LEADERS"] == before + 1
    answer, closed = exchange(nodes.ports[listener], _body(request, 7))
    assert not closed and not nodes.failures()


def test_a_controller_answer_that_raises_in_the_broker_is_counted_and_the_broker_goes_on(nodes: Nodes) -> None:
    """Containment of a peer's response outside the core task: the broker's lifecycle fails on one heartbeat answer;
    it is counted, treated as an undelivered request (the lifecycle retries), and the broker stays registered."""
    import time

    runtime = nodes.runtimes["broker"]
    lifecycle = host_parts(runtime.state_machine)[1].lifecycle
    before = runtime.handler_errors.by_api["BROKER_HEARTBEAT"]

    def once(*_args: Any) -> Any:
        del lifecycle.handle_response  # back to the class's method for the next answers
        raise RuntimeError("a lifecycle bug")

    lifecycle.handle_response = once
    deadline = time.monotonic() + 30  # a liveness bound: heartbeats go every 2 s
    while runtime.handler_errors.by_api["BROKER_HEARTBEAT"] == before:
        assert time.monotonic() < deadline, "no heartbeat answer reached the broker"
        time.sleep(0.05)
    assert lifecycle.state is BrokerState.RUNNING and not nodes.failures()
    assert nodes.runtimes["controller"].state_machine.controller.cluster.is_active(2)  # the session lives on
    _probe_fresh(nodes.ports["broker"])
