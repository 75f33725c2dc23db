"""What the broker's API handlers see of the broker they run on.

The handlers (this folder) sit below the roles that assemble them (node/roles/broker_host.py builds a `BrokerHost`
and hands itself to its handlers), so they name the broker by this protocol, not by its class: the layering test
(tests/test_layering.py) keeps node/apis from importing node/roles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pykraft.broker.metadata_cache import MetadataCache
    from pykraft.node.config.node_config import NodeConfig
    from pykraft.node.runtime.runtime import NodeRuntime
    from pykraft.protocol.codec import DecodedRequest


class DataPlaneView(Protocol):
    node_config: NodeConfig

    def _address_of(self, broker_id: int) -> tuple[str, int] | None: ...


class BrokerView(Protocol):
    node_id: int
    cache: MetadataCache
    runtime: NodeRuntime | None

    @property
    def data_plane(self) -> DataPlaneView: ...

    async def forward(self, decoded: DecodedRequest) -> Any:
        """A request forwarded to the active controller (in an Envelope); its answer."""

    async def forward_own(self, message: Any) -> Any | None:
        """A request of the broker's own sent to the active controller; its answer, None when none came."""

    def _now(self) -> int: ...
