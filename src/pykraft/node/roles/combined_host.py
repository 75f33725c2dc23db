"""`process.roles=broker,controller` (combined mode, Kafka's single-node quickstart): one process, one raft voter,
both state machines.

The controller host and the broker host each replay the committed log (each into its own image: the controller's
may run ahead with its own uncommitted writes, the broker's cache is committed records only, and Metadata answers
from the latter). Snapshots are the controller's. The runtime binds the controller listener and the broker
listeners with one request handler, each kind of listener serving its own APIs as in Kafka (`SERVED`,
node/runtime/served_apis.py: a broker listener offers no controller RPC, a controller listener no data plane):
- the controller's RPCs (BrokerRegistration, BrokerHeartbeat, AlterPartition, ...) go to the controller host, which
  answers NOT_CONTROLLER unless this node is the active controller;
- the requests a broker forwards (CreateTopics, DeleteTopics, ElectLeaders, UpdateFeatures) are handled here when
  the local controller is active and forwarded to the active controller otherwise, as a broker does.
The broker part registers and heartbeats like any broker, over TCP, possibly to its own controller listener.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.protocol.apis import ApiKey
from pykraft.raft.log import RawSnapshotReader

from pykraft.node.apis.configs_api import with_logger_changes
from pykraft.node.roles.broker_host import BrokerHost, broker_host
from pykraft.node.runtime import served_apis
from pykraft.node.runtime.served_apis import FORWARDED_APIS
from pykraft.node.roles.controller_host import ControllerHost, controller_host, hosted_runtime

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.runtime.runtime import NodeRuntime


def host_parts(state_machine: Any) -> tuple[ControllerHost | None, BrokerHost | None]:
    """The controller host and the broker host a node's state machine consists of (either may be None)."""
    if isinstance(state_machine, CombinedHost):
        return state_machine.controller, state_machine.broker
    return (state_machine if isinstance(state_machine, ControllerHost) else None,
            state_machine if isinstance(state_machine, BrokerHost) else None)


def combined_runtime(node_config: Any, **runtime_options: Any) -> NodeRuntime:
    """A NodeRuntime whose state machine is a CombinedHost. Raises what the two host builders raise."""
    return hosted_runtime(node_config, CombinedHost(controller_host(node_config), broker_host(node_config)),
                          **runtime_options)


class CombinedHost:
    def __init__(self, controller: ControllerHost, broker: BrokerHost) -> None:
        self.controller = controller
        self.broker = broker

    def bind(self, runtime: NodeRuntime) -> None:
        self.controller.bind(runtime)
        self.broker.bind(runtime)

    def metadata_image(self) -> MetadataCache:
        return self.broker.metadata_image()

    @property
    def acls_loaded(self) -> bool:
        """The controller's replay or the broker's caught up: the ACLs are in the image."""
        return self.controller.acls_loaded or self.broker.acls_loaded

    SERVED = served_apis.COMBINED  # its controller listener the controller's table, its broker listeners the broker's

    def extra_handlers(self) -> dict[int, Any]:
        handlers = self.controller.extra_handlers()

        async def forwarded(decoded: DecodedRequest) -> Any:
            key, message = int(decoded.api_key), decoded.message
            if self.controller.controller.active:
                return await self.controller.answer(key, message)
            return await self.broker.forward(decoded)

        handlers.update({int(key): forwarded for key in FORWARDED_APIS})
        handlers[int(ApiKey.INCREMENTAL_ALTER_CONFIGS)] = with_logger_changes(forwarded, self.broker.node_id)
        scram_users = int(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)  # a broker's API: from the broker's image
        handlers[scram_users] = self.broker.extra_handlers()[scram_users]
        handlers.update(self.broker.data_plane.handlers())
        handlers.update(self.broker.coordinator_handlers())  # group and transaction coordinators, as on a broker
        return handlers

    # ---- StateMachine ------------------------------------------------------------------------------------------
    def apply(self, batches: memoryview, base_offset: int, last_offset: int) -> None:
        self.controller.apply(batches, base_offset, last_offset)
        self.broker.apply(batches, base_offset, last_offset)

    def load_snapshot(self, reader: RawSnapshotReader) -> None:
        self.controller.load_snapshot(reader)
        self.broker.load_snapshot(reader)

    def leader_changed(self, leader_id: int | None, epoch: int) -> None:
        self.controller.leader_changed(leader_id, epoch)
        self.broker.leader_changed(leader_id, epoch)

    def snapshot_records(self) -> Iterable[bytes]:
        return self.controller.snapshot_records()
