"""The simulated broker's data plane: the real partition host (broker/partition_host.py, the code the node's
`PartitionHost` runs) over the broker's simulated partition logs (partition_logs.py), with deterministic shells
for what the node does with asyncio:

- waiting answers (acks=all, DeleteRecords) are `SimWaiter`s whose callback sends the answer on the network;
- one replica fetcher per source broker (Kafka's fetcher thread, the node's replica_fetcher.py): a Fetch round
  is a message to the leader, its answer is carried out by the same pure decisions (broker/replica_fetch.py);
  the next round goes at once after records came, after `FETCH_WAIT_MS` after an empty answer (the leader's long
  poll, modelled on the follower's side) and after `FETCH_BACKOFF_MS` after an error or no answer within
  `FETCH_TIMEOUT_MS`;
- the leader answers a Fetch with broker/fetch_answers.py, a Produce with `append_as_leader`, a DeleteRecords with
  broker/record_deletion.py.
The producer state of a log opened or truncated is rebuilt from its batches, transactions and markers included
(the node reads Kafka's producer snapshots first; the simulated disk has none); transaction markers are appended
by `on_marker` (txn_markers.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykraft.broker.fetch_answers import PartitionFetch, answer_partition
from pykraft.broker.partition_host import PartitionCore, Replica
from pykraft.broker import txn_verification
from pykraft.broker.record_deletion import delete_records
from pykraft.broker.replica_fetch import FetchAction, FetchPosition, decide
from pykraft.broker.replica_settings import DataPlaneSettings
from pykraft.broker.topic_settings import TopicSettings
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import InvalidAppendError
from pykraft.records import iter_batches
from pykraft.sim.hosts.data_wire import (DeleteRecordsRequest, DeleteRecordsResponse, FetchRequest, FetchResponse,
                                         ProduceRequest, ProduceResponse)
from pykraft.sim.hosts.partition_logs import SimPartitionLogs
from pykraft.sim.hosts.txn_markers import MarkerRequest, MarkerResponse, append_marker, observe_batch

if TYPE_CHECKING:
    from pykraft.sim.hosts.brokers import BrokerNode

FETCH_WAIT_MS = 40
FETCH_BACKOFF_MS = 100
FETCH_TIMEOUT_MS = 1000
FETCH_MAX_BYTES = 64 * 1024


class SimWaiter:
    """A waiting answer: `then` is called once with its value (at once when it is already finished)."""

    __slots__ = ("done", "value", "_then")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self._then: Callable[[Any], None] | None = None

    def finish(self, value: Any) -> None:
        if self.done:
            return
        self.done, self.value = True, value
        if self._then is not None:
            self._then(value)

    def then(self, callback: Callable[[Any], None]) -> None:
        self._then = callback
        if self.done:
            callback(self.value)


def rebuild_producers(replica: Replica) -> None:
    """The producer state (sequences, open transactions) from every batch of the log."""
    replica.producers.clear()
    log = replica.log
    if log.end_offset() <= log.start_offset():
        return
    for batch in iter_batches(log.read(log.start_offset(), 1 << 62).records, verify_crc=False):
        if batch.producer_id >= 0:
            observe_batch(replica, batch)


class SimPartitionHost(PartitionCore):
    def new_waiter(self) -> SimWaiter:
        return SimWaiter()

    def finish(self, token: SimWaiter, value: Any) -> None:
        token.finish(value)

    def waiter_done(self, token: SimWaiter) -> bool:
        return token.done

    def _open_producers(self, replica: Replica) -> None:
        rebuild_producers(replica)

    def _reload_producers(self, replica: Replica) -> None:
        rebuild_producers(replica)

    def _observe_batch(self, replica: Replica, batch: Any) -> None:
        observe_batch(replica, batch)


class SimDataPlane:
    """One broker process's data plane (a new one per start); `open` once caught up with the metadata."""

    def __init__(self, broker: BrokerNode, logs: SimPartitionLogs, min_insync: int) -> None:
        self.broker = broker
        settings = DataPlaneSettings(broker.node_id, TopicSettings(min_insync_replicas=min_insync))
        assert broker.isr is not None
        self.host = SimPartitionHost(settings, broker.cache, logs, report_progress=broker.report_progress,
                                     high_watermark_of=broker.isr.high_watermark, now_ms=broker.now)
        self.open = False
        self._plan: dict[int, list[tuple[str, int]]] = {}
        self._in_flight: dict[int, tuple[int, dict[tuple[str, int], FetchPosition]]] = {}  # source -> round
        self._round_ids = 0
        self.truncations = 0
        self.rounds = 0

    def start(self) -> None:
        self.host.load()
        self.open = True

    # ---- the broker's hooks ------------------------------------------------------------------------------------
    def sync_metadata(self) -> None:
        if not self.open:
            return
        self._plan = self.host.sync_metadata(self.broker.now())
        for source in sorted(self._plan):
            if source not in self._in_flight:
                self._fetch_round(source)

    def isr_changed(self) -> None:
        if self.open:
            self.host.refresh_all()

    # ---- follower: one replica fetcher per source broker ---------------------------------------------------------
    def _follows(self, key: tuple[str, int], source: int) -> bool:
        replica = self.host.replicas.get(key)
        return replica is not None and replica.leading is None and replica.leader_id == source

    def _fetch_round(self, source: int) -> None:
        broker = self.broker
        keys = [k for k in self._plan.get(source, []) if self._follows(k, source)]
        if not keys or broker.lifecycle is None:
            self._in_flight.pop(source, None)
            return
        self._round_ids += 1
        sent: dict[tuple[str, int], FetchPosition] = {}
        parts = []
        for key in keys:
            replica = self.host.replicas[key]
            entries = replica.log.epoch_entries()
            position = FetchPosition(replica.leader_epoch, replica.log.end_offset(), entries[-1][0] if entries else -1)
            sent[key] = position
            parts.append((key[0], PartitionFetch(key[1], position.fetch_offset, position.leader_epoch,
                                                 position.last_fetched_epoch, FETCH_MAX_BYTES,
                                                 replica.log.start_offset())))
        self._in_flight[source] = (self._round_ids, sent)
        self.rounds += 1
        request = FetchRequest(self._round_ids, broker.node_id, broker.lifecycle.broker_epoch, tuple(parts))
        broker.world.send(broker.node_id, source, request, "ReplicaFetch")
        broker.later(FETCH_TIMEOUT_MS, self._fetch_timeout, source, self._round_ids)

    def _fetch_timeout(self, source: int, round_id: int) -> None:
        current = self._in_flight.get(source)
        if current is not None and current[0] == round_id:
            self._in_flight.pop(source)
            self.broker.later(FETCH_BACKOFF_MS, self._next_round, source)

    def _next_round(self, source: int) -> None:
        if source not in self._in_flight:
            self._fetch_round(source)

    def on_fetch_response(self, source: int, response: FetchResponse) -> None:
        current = self._in_flight.get(source)
        if current is None or current[0] != response.request_id:
            return  # timed out meanwhile, or an answer to an earlier process
        self._in_flight.pop(source)
        sent = current[1]
        appended = ok = False
        for topic, answer in response.partitions:
            key = (topic, answer.index)
            replica = self.host.replicas.get(key)
            if key not in sent or replica is None or not self._follows(key, source):
                continue
            action = self._apply(replica, sent[key], answer)
            ok = ok or action not in (FetchAction.BACK_OFF, FetchAction.SKIP)
            appended = appended or (action is FetchAction.APPEND and len(answer.records) > 0) \
                or action in (FetchAction.TRUNCATE, FetchAction.RESTART)
        delay = 0 if appended else FETCH_WAIT_MS if ok else FETCH_BACKOFF_MS
        self.broker.later(delay, self._next_round, source)

    def _apply(self, replica: Replica, sent: FetchPosition, answer: Any) -> FetchAction:
        log = replica.log
        decision = decide(sent, replica.leader_epoch, log.end_offset(), answer.error, answer.log_start_offset,
                          answer.diverging)
        if decision.action is FetchAction.RESTART:
            self.host.restart_at_leader_start(replica, decision.offset)
            self.truncations += 1
        elif decision.action is FetchAction.TRUNCATE:
            self.host.truncate_diverging(replica, decision.offset, decision.epoch)
            self.truncations += 1
        elif decision.action is FetchAction.APPEND:
            try:
                self.host.append_as_follower(replica, answer.records, answer.high_watermark, answer.log_start_offset)
            except InvalidAppendError as exc:
                self.broker.world.checker.violation("FollowerAppend", self.broker, f"{replica.topic}-"
                                                    f"{replica.partition}: {exc}")
                return FetchAction.BACK_OFF
        return decision.action

    # ---- leader: requests --------------------------------------------------------------------------------------
    def on_fetch(self, request: FetchRequest) -> FetchResponse:
        now = self.broker.now()
        answers = []
        for topic, part in request.partitions:
            if not self.open:
                from pykraft.broker.fetch_answers import PartitionAnswer
                answers.append((topic, PartitionAnswer(part.index, ErrorCode.NOT_LEADER_OR_FOLLOWER)))
                continue
            answers.append((topic, answer_partition(self.host, topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, part,
                                                    request.replica_id, request.broker_epoch, now)))
        return FetchResponse(request.request_id, tuple(answers))

    def on_produce(self, request: ProduceRequest, reply: Callable[[Any], None]) -> None:
        if not self.open:
            reply(ProduceResponse(request.request_id, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        # No KIP-890 verification of transactional writes (transaction.partition.verification.enable=false): the
        # simulated transaction coordinator is the workload's (sim/hosts/txn_workload.py), brokers cannot ask it.
        result = self.host.append_as_leader(request.topic, request.partition, bytearray(request.records),
                                            request.acks, verified=txn_verification.SKIP)
        if request.acks == 0:
            return
        if result.error is not ErrorCode.NONE or result.waiter is None:
            reply(ProduceResponse(request.request_id, result.error, result.base_offset))
            return
        result.waiter.then(lambda error: reply(ProduceResponse(request.request_id, error, result.base_offset)))

    def on_marker(self, request: MarkerRequest, reply: Callable[[Any], None]) -> None:
        if not self.open:
            reply(MarkerResponse(request.request_id, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        result = append_marker(self.host, request, self.broker.now())
        if result.error is not ErrorCode.NONE or result.waiter is None:
            reply(MarkerResponse(request.request_id, result.error))
            return
        result.waiter.then(lambda error: reply(MarkerResponse(request.request_id, error, result.base_offset)))

    def on_delete_records(self, request: DeleteRecordsRequest, reply: Callable[[Any], None]) -> None:
        if not self.open:
            reply(DeleteRecordsResponse(request.request_id, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        started = delete_records(self.host, request.topic, request.partition, request.offset)
        if started.waiter is None:
            reply(DeleteRecordsResponse(request.request_id, started.error, started.low_watermark))
            return
        started.waiter.then(lambda outcome: reply(DeleteRecordsResponse(request.request_id, *outcome)))

    def close(self, clean: bool) -> None:
        """The process stops: waiting answers end with it (a clean stop answers them as the node does)."""
        self.open = False
        if clean:
            self.host.abandon_all()
        self._in_flight.clear()
