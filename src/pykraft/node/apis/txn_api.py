"""The transaction coordinator's requests on a broker (`TXN_APIS`, node/runtime/served_apis.py), at Kafka 4.0's versions: InitProducerId with a
transactional id, AddPartitionsToTxn (v0-3 from clients; v4-5 batched from partition leaders: VerifyOnly for KIP-890
part 1 verification, else the implicit add of a transaction version 2 client's partition), AddOffsetsToTxn, EndTxn
(v0-4; v5 is a transaction version 2 client's: the epoch is bumped and the answer names the id and epoch to use),
DescribeTransactions, ListTransactions (v0-2: states, producer ids, duration, id pattern), and FindCoordinator's
TRANSACTION keys (`locate`, called by group_api). The first FindCoordinator(TRANSACTION) creates
`__transaction_state` through the active controller (transaction.state.log.num.partitions, default 50;
transaction.state.log.replication.factor, default 3; compacted, Kafka's topic configs) and answers
COORDINATOR_NOT_AVAILABLE until its partition has a leader. Every request goes to the id's coordinator
(txn_host.py), which answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when it is not (yet) this broker.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
from typing import TYPE_CHECKING, Any

from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta

from pykraft.protocol.lazy_schema import schema_module
from pykraft.broker.txn_settings import TRANSACTION_TOPIC
from pykraft.broker.txn_state import TxnState
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.group_records import partition_for

from pykraft.node.runtime.client_apis import registered_brokers
from pykraft.node.runtime.listeners import RequestListener
from pykraft.node.apis.wire_build import make, response_namespace
from pykraft.node.hosts.txn_host import TxnHost

apt = schema_module("kio.schema.add_partitions_to_txn.v4.request")  # loaded at the first verification sent

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.apis.broker_view import BrokerView

_log = logging.getLogger("pykraft.node.txn_api")
# Kafka 4.0 advertises the transaction version 2 versions (EndTxn v5, TxnOffsetCommit v5, Produce v12) whatever
# transaction.version is finalized: its clients use them only once it is 2, and a request's version says which rules
# its client follows (EndTxn v5+ is TV_2, below TV_0, as KafkaApis.handleEndTxnRequest).
TXN_V2_END_TXN_VERSION = 5
TRANSACTION_KEY_TYPE = 1
CREATE_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=10))
OFFSETS_TOPIC = "__consumer_offsets"


def leader_address(broker: BrokerView, topic: str, index: int,
                   listener: RequestListener) -> tuple[ErrorCode, tuple[int, str, int] | None]:
    """The leader of `topic`-`index` as a coordinator answer: its endpoint on the request's listener."""
    cache = broker.cache
    topic_id = cache.topic_id(topic)
    partition = None if topic_id is None else cache.partition(topic_id, index)
    address = None if partition is None else next(
        ((host, port) for r, host, port in registered_brokers(cache, listener) if r.broker_id == partition.leader),
        None)
    if partition is None or address is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return ErrorCode.NONE, (partition.leader, address[0], address[1])


class TxnApi:
    def __init__(self, broker: BrokerView, txns: TxnHost, offsets_partitions: Any, to_broker: Any) -> None:
        self.broker = broker
        self.txns = txns
        self._offsets_partitions = offsets_partitions  # () -> partition count of __consumer_offsets, or None
        self._to_broker = to_broker  # (host, port, request) -> answer or None, on the inter-broker listener
        self._creating: asyncio.Task[Any] | None = None

    def handlers(self) -> dict[int, Any]:
        return {ApiKey.ADD_PARTITIONS_TO_TXN: self.add_partitions, ApiKey.ADD_OFFSETS_TO_TXN: self.add_offsets,
                ApiKey.END_TXN: self.end_txn, ApiKey.DESCRIBE_TRANSACTIONS: self.describe,
                ApiKey.LIST_TRANSACTIONS: self.list}

    # ---- FindCoordinator(TRANSACTION) --------------------------------------------------------------------------
    def locate(self, key: str, listener: RequestListener) -> tuple[ErrorCode, tuple[int, str, int] | None]:
        if not key:
            return ErrorCode.INVALID_REQUEST, None
        count = self.txns.partition_count()
        if not count:
            self._create_topic()
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return leader_address(self.broker, TRANSACTION_TOPIC, partition_for(key, count), listener)

    def _create_topic(self) -> None:
        if self._creating is not None and not self._creating.done():
            return
        settings = self.txns.settings
        request = ct_req.CreateTopicsRequest(timeout=CREATE_TIMEOUT, validate_only=False, topics=(
            ct_req.CreatableTopic(name=TopicName(TRANSACTION_TOPIC), num_partitions=i32(settings.partitions),
                                  replication_factor=i16(settings.replication_factor), assignments=(),
                                  configs=tuple(ct_req.CreatableTopicConfig(name=k, value=v)
                                                for k, v in settings.topic_configs().items())),))
        self._creating = asyncio.get_running_loop().create_task(self._create(request))

    async def _create(self, request: Any) -> None:
        answer = await self.broker.forward_own(request)  # as the broker itself, as Kafka's coordinator does
        for topic in getattr(answer, "topics", ()):
            error = ErrorCode(int(topic.error_code))
            if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                _log.info("creating %s: %s %s", TRANSACTION_TOPIC, error.name, topic.error_message or "")

    # ---- InitProducerId ----------------------------------------------------------------------------------------
    async def init_producer_id(self, message: Any) -> Any:
        ns = response_namespace(ApiKey.INIT_PRODUCER_ID, int(message.__version__))
        timeout_ms = int(message.transaction_timeout.total_seconds() * 1000)
        pid, epoch = int(getattr(message, "producer_id", -1)), int(getattr(message, "producer_epoch", -1))
        expected = (pid, epoch) if pid >= 0 and epoch >= 0 else None
        error, producer_id, producer_epoch = await self.txns.init_producer_id(message.transactional_id, timeout_ms,
                                                                               expected, self.txns.server_version())
        error = _older_fenced(error, int(message.__version__), 4)
        return make(ns.InitProducerIdResponse, throttle_time=ZERO_THROTTLE, error_code=error,
                    producer_id=producer_id, producer_epoch=producer_epoch)

    # ---- AddPartitionsToTxn ------------------------------------------------------------------------------------
    async def add_partitions(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        version = int(m.__version__)
        ns = response_namespace(ApiKey.ADD_PARTITIONS_TO_TXN, version)
        if version < 4:
            wanted = [(t.name, int(p)) for t in m.v3_and_below_topics for p in t.partitions]
            error = await self._add(m.v3_and_below_transactional_id, int(m.v3_and_below_producer_id),
                                    int(m.v3_and_below_producer_epoch), wanted)
            error = _older_fenced(error, version, 2)
            return make(ns.AddPartitionsToTxnResponse, throttle_time=ZERO_THROTTLE,
                        results_by_topic_v3_and_below=_topic_results(ns, {tp: error for tp in wanted}))
        results = []
        for txn in m.transactions:
            wanted = [(t.name, int(p)) for t in txn.topics for p in t.partitions]
            errors = await self.verify(txn.transactional_id, int(txn.producer_id), int(txn.producer_epoch),
                                       wanted, add=not txn.verify_only)
            results.append(make(ns.AddPartitionsToTxnResult, transactional_id=txn.transactional_id,
                                topic_results=_topic_results(ns, errors)))
        return make(ns.AddPartitionsToTxnResponse, throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE,
                    results_by_transaction=tuple(results))

    async def _add(self, transactional_id: str, producer_id: int, epoch: int,
                   partitions: list[tuple[str, int]], client_version: int = 0) -> ErrorCode:
        unknown = [tp for tp in partitions if not self._exists(tp)]
        if unknown:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return await self.txns.step(transactional_id, lambda c, now: c.add_partitions(
            transactional_id, producer_id, epoch, partitions, now, client_version))

    def _exists(self, tp: tuple[str, int]) -> bool:
        cache = self.broker.cache
        topic_id = cache.topic_id(tp[0])
        return topic_id is not None and cache.partition(topic_id, tp[1]) is not None

    async def verify(self, transactional_id: str, producer_id: int, epoch: int, partitions: list[tuple[str, int]],
                     add: bool = False) -> dict[tuple[str, int], ErrorCode]:
        """VerifyOnly: are the partitions in the transaction? `add`: a partition leader adding them for a client
        of transaction version 2 (Kafka's KafkaApis passes TV_2 for a batched request that is not VerifyOnly)."""
        if add:
            error = await self._add(transactional_id, producer_id, epoch, partitions, client_version=2)
            return {tp: error for tp in partitions}
        coordinator = self.txns.coordinator_of(transactional_id)
        if isinstance(coordinator, ErrorCode):
            return {tp: coordinator for tp in partitions}
        return coordinator.verify_partitions(transactional_id, producer_id, epoch, partitions)

    async def add_anywhere(self, transactional_id: str, producer_id: int, epoch: int,
                           partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        return await self.verify_anywhere(transactional_id, producer_id, epoch, partitions, add=True)

    async def verify_anywhere(self, transactional_id: str, producer_id: int, epoch: int,
                              partitions: list[tuple[str, int]], add: bool = False) -> dict[tuple[str, int], ErrorCode]:
        """A partition leader's KIP-890 question to the id's coordinator, wherever it is (AddPartitionsToTxn v5,
        VerifyOnly unless `add`, on the inter-broker listener; answered here when this broker is the coordinator)."""
        count = self.txns.partition_count()
        cache = self.broker.cache
        topic_id = cache.topic_id(TRANSACTION_TOPIC)
        partition = None if not count or topic_id is None else cache.partition(
            topic_id, partition_for(transactional_id, count))
        if partition is None or partition.leader < 0:
            return {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        if partition.leader == self.broker.node_id:
            return await self.verify(transactional_id, producer_id, epoch, partitions, add)
        address = self.broker.data_plane._address_of(partition.leader)
        answer = None if address is None else await self._to_broker(address[0], address[1], verify_request(
            transactional_id, producer_id, epoch, partitions, verify_only=not add))
        if answer is None:
            return {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        found = {(str(t.name), int(p.partition_index)): ErrorCode(int(p.partition_error_code))
                 for r in answer.results_by_transaction for t in r.topic_results for p in t.results_by_partition}
        top = ErrorCode(int(answer.error_code))
        return {tp: found.get(tp, top if top is not ErrorCode.NONE else ErrorCode.UNKNOWN_SERVER_ERROR)
                for tp in partitions}

    # ---- AddOffsetsToTxn, EndTxn -------------------------------------------------------------------------------
    async def add_offsets(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.ADD_OFFSETS_TO_TXN, int(m.__version__))
        count = self._offsets_partitions()
        if not count:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        else:
            tp = (OFFSETS_TOPIC, partition_for(m.group_id, count))
            error = await self.txns.step(m.transactional_id, lambda c, now: c.add_partitions(
                m.transactional_id, int(m.producer_id), int(m.producer_epoch), [tp], now))
        return make(ns.AddOffsetsToTxnResponse, throttle_time=ZERO_THROTTLE,
                    error_code=_older_fenced(error, int(m.__version__), 2))

    async def end_txn(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        version = int(m.__version__)
        ns = response_namespace(ApiKey.END_TXN, version)
        client_version = 2 if version >= TXN_V2_END_TXN_VERSION else 0
        error, producer_id, epoch = await self.txns.end_txn(m.transactional_id, int(m.producer_id),
                                                            int(m.producer_epoch), bool(m.committed), client_version)
        if version < TXN_V2_END_TXN_VERSION:
            return make(ns.EndTxnResponse, throttle_time=ZERO_THROTTLE, error_code=_older_fenced(error, version, 2))
        return make(ns.EndTxnResponse, throttle_time=ZERO_THROTTLE, error_code=error,
                    producer_id=ProducerId(producer_id), producer_epoch=i16(epoch))

    # ---- DescribeTransactions, ListTransactions ----------------------------------------------------------------
    async def describe(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.DESCRIBE_TRANSACTIONS, int(m.__version__))
        states = []
        for transactional_id in m.transactional_ids:
            coordinator = self.txns.coordinator_of(transactional_id)
            meta = coordinator if isinstance(coordinator, ErrorCode) else coordinator.describe(transactional_id)
            if isinstance(meta, ErrorCode):  # the other fields at the schema's defaults (zeros), as Kafka sends them
                states.append(make(ns.TransactionState, error_code=meta, transactional_id=transactional_id,
                                   transaction_state="", producer_id=0, producer_epoch=0,
                                   transaction_timeout=datetime.timedelta(0), transaction_start_time=_timestamp(0)))
                continue
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(meta.partitions):
                by_topic.setdefault(topic, []).append(partition)
            states.append(make(
                ns.TransactionState, error_code=ErrorCode.NONE, transactional_id=transactional_id,
                transaction_state=meta.state.state_name, producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch, transaction_timeout=datetime.timedelta(milliseconds=meta.timeout_ms),
                transaction_start_time=_timestamp(meta.start_ms),
                topics=tuple(make(ns.TopicData, topic=t, partitions=tuple(i32(p) for p in ps))
                             for t, ps in by_topic.items())))
        return make(ns.DescribeTransactionsResponse, throttle_time=ZERO_THROTTLE, transaction_states=tuple(states))

    async def list(self, decoded: DecodedRequest) -> Any:
        m = decoded.message
        ns = response_namespace(ApiKey.LIST_TRANSACTIONS, int(m.__version__))
        known = {name: TxnState.of_name(name) for name in m.state_filters}
        unknown = tuple(name for name, state in known.items() if state is None)
        states = {s for s in known.values() if s is not None}
        pattern_text = getattr(m, "transactional_id_pattern", None)
        try:
            pattern = re.compile(pattern_text) if pattern_text else None
        except re.error:
            return make(ns.ListTransactionsResponse, throttle_time=ZERO_THROTTLE, error_code=ErrorCode.INVALID_REQUEST,
                        unknown_state_filters=(), transaction_states=())
        if self.txns.loading:
            return make(ns.ListTransactionsResponse, throttle_time=ZERO_THROTTLE,
                        error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, unknown_state_filters=unknown,
                        transaction_states=())
        now = self.broker._now()
        found = []
        for coordinator in self.txns.coordinators.values():
            if unknown and not states:
                break  # only unknown states asked for: nothing matches
            found += coordinator.listed(states, {int(p) for p in m.producer_id_filters},
                                        int(getattr(m, "duration_filter", -1)), now, pattern)
        return make(ns.ListTransactionsResponse, throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE,
                    unknown_state_filters=unknown, transaction_states=tuple(
                        make(ns.TransactionState, transactional_id=t.transactional_id, producer_id=t.producer_id,
                             transaction_state=t.state.state_name) for t in found))


def _older_fenced(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED (KIP-588) is INVALID_PRODUCER_EPOCH for a request version older than the one that knows it
    (InitProducerId v4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2), as Kafka's KafkaApis answers them."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if error is ErrorCode.PRODUCER_FENCED and version < fenced_since else error


def verify_request(transactional_id: str, producer_id: int, epoch: int, partitions: list[tuple[str, int]],
                   verify_only: bool = True) -> Any:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return apt.AddPartitionsToTxnRequest(transactions=(apt.AddPartitionsToTxnTransaction(
        transactional_id=TransactionalId(transactional_id), producer_id=ProducerId(producer_id),
        producer_epoch=i16(epoch), verify_only=verify_only, topics=tuple(
            apt.AddPartitionsToTxnTopic(name=TopicName(t), partitions=tuple(i32(p) for p in ps))
            for t, ps in by_topic.items())),))


def _topic_results(ns: Any, errors: dict[tuple[str, int], ErrorCode]) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(make(ns.AddPartitionsToTxnPartitionResult,
                                                   partition_index=i32(partition), partition_error_code=error))
    return tuple(make(ns.AddPartitionsToTxnTopicResult, name=topic, results_by_partition=tuple(parts))
                 for topic, parts in by_topic.items())


def _timestamp(ms: int) -> datetime.datetime:
    """A timestamp field (-1, Kafka's "none", is 1 ms before the epoch on the wire)."""
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
