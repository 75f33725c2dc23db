"""How a broker assembles its transaction coordinator: the host, the marker sender, the requests, and the hooks
into the data plane (InitProducerId with a transactional id, KIP-890 verification of Produce) and the group
coordinator (FindCoordinator's TRANSACTION keys, TxnOffsetCommit, markers reaching `__consumer_offsets`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykraft.broker.txn_settings import TRANSACTION_VERSION, txn_settings
from pykraft.protocol.apis import ApiKey

from pykraft.node.apis import txn_markers_api, txn_offsets_api
from pykraft.node.apis.txn_api import TxnApi
from pykraft.node.hosts.txn_host import TxnHost
from pykraft.node.hosts.txn_marker_sender import MarkerSender

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.roles.broker_host import BrokerHost


def build_transactions(broker: BrokerHost) -> tuple[TxnHost, TxnApi]:
    settings = txn_settings(broker.data_plane.node_config.raw)
    plane = broker.data_plane

    async def local_append(markers: list[txn_markers_api.MarkerRequest]) -> Any:
        return await txn_markers_api.append_markers(plane.host, markers, broker._now(),
                                                    broker.groups.txn_completed)

    async def to_broker(host: str, port: int, message: Any) -> Any:
        runtime = broker.runtime
        return None if runtime is None else await runtime.outbound.to_broker_for_coordinator(host, port, message)

    def server_version() -> int:
        return broker.cache.features.finalized.get(TRANSACTION_VERSION, 0)

    def value_version() -> int:
        return 1 if server_version() >= 1 else 0

    markers = MarkerSender(broker.node_id, broker.cache, local_append, to_broker,
                           plane._address_of)
    txns = TxnHost(plane.host, settings, lambda: broker._now(), plane.producer_ids.next_id,
                   markers, value_version, server_version)
    markers.is_current = txns.is_current
    markers.on_complete = lambda coordinator, write: txns.spawn(txns.write_and_apply(coordinator, write))
    api = TxnApi(broker, txns, broker.groups.partition_count, to_broker)
    broker.group_api.transaction_locator = api.locate
    plane.transactions = api
    plane.verifier = api.verify_anywhere if settings.verification else None
    plane.adder = api.add_anywhere  # transaction version 2 clients rely on it: not subject to verification.enable
    return txns, api


def txn_handlers(broker: BrokerHost) -> dict[int, Any]:
    """The transaction requests a broker answers (coordinator and partition-leader sides)."""
    api = broker.txn_api

    async def write_txn_markers(decoded: DecodedRequest) -> Any:
        return await txn_markers_api.handle(broker.data_plane.host, decoded.message, broker._now(),
                                            broker.groups.txn_completed)

    async def txn_offset_commit(decoded: DecodedRequest) -> Any:
        return await txn_offsets_api.handle(broker.groups, broker.data_plane.verifier, decoded.message,
                                            broker._now(), broker.data_plane.adder)

    handlers = api.handlers()
    handlers[ApiKey.WRITE_TXN_MARKERS] = write_txn_markers
    handlers[ApiKey.TXN_OFFSET_COMMIT] = txn_offset_commit
    return handlers
