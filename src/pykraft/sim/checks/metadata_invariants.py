"""Invariants of the metadata image, checked on every node's COMMITTED image (metadata_machine.py: fed committed
records only) each time it changes, and on the active controller against it.

Names:
- FencedNotInIsr (KIP-841): no fenced or in-controlled-shutdown broker leads a partition, and none is in an ISR
  except as its SOLE member with leader -1 (partition_change.py: the last ISR member is kept, leaderless).
- MonotonicPartitionEpochs: per node and process start, a partition's leader epoch and partition epoch never
  decrease (a rebuild or a snapshot load of the same start included). A restart may begin from an older
  committed offset, so each start is its own history; across nodes ImageAgreement ties them together.
- MonotonicBrokerEpochs: per node and process start, a registered broker's epoch never decreases.
- ImageAgreement: two nodes (controllers and brokers alike) whose committed images end at the same offset hold
  identical images (digest of the encoded snapshot records).
- ActiveControllerImage: a controller replica with no uncommitted replays holds exactly the committed image
  (the host's skip-what-was-replayed and rebuild-from-log paths).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykraft.sim.engine.statemachine import Digest

if TYPE_CHECKING:
    from pykraft.sim.hosts.metadata_machine import MetadataMachine
    from pykraft.sim.engine.world import World

METADATA_INVARIANTS = frozenset({"FencedNotInIsr", "MonotonicPartitionEpochs", "MonotonicBrokerEpochs",
                                 "ImageAgreement", "ActiveControllerImage", "ControllerRequestCrash",
                                 "ControllerOffsets", "MetadataLiveness"})


class MetadataChecker:
    def __init__(self, world: World) -> None:
        self.world = world
        self.digests: dict[int, Digest] = {}
        self.partition_epochs: dict[tuple[int, int], dict[Any, tuple[int, int]]] = {}  # (node, start) -> tp -> ..
        self.broker_epochs: dict[tuple[int, int], dict[int, int]] = {}
        self.checks = 0
        self.isr_exceptions_seen = 0  # sole fenced ISR member with leader -1: the allowed exception, observed
        world.checker.enabled = world.checker.enabled | METADATA_INVARIANTS

    def violation(self, name: str, node: Any, detail: str) -> None:
        self.world.checker.violation(name, node, detail)

    def on_image(self, node: Any, machine: MetadataMachine, offset: int) -> None:
        """The committed image of `node` changed; it now ends at `offset` (exclusive)."""
        self.checks += 1
        digest = machine.digest()
        known = self.digests.setdefault(offset, digest)
        if known != digest:
            self.violation("ImageAgreement", node, f"image at offset {offset} is {digest}, elsewhere {known}")
        image = machine.image
        key = (node.node_id, node.starts)
        self._check_kip841(node, image, offset)
        self._check_partition_epochs(node, image, self.partition_epochs.setdefault(key, {}), offset)
        self._check_broker_epochs(node, image, self.broker_epochs.setdefault(key, {}), offset)

    def _check_kip841(self, node: Any, image: Any, offset: int) -> None:
        brokers = image.cluster.brokers
        barred = {b for b, r in brokers.items() if r.fenced or r.in_controlled_shutdown}
        if not barred:
            return
        for topic in image.replication.topics.values():
            for pid, p in topic.partitions.items():
                if p.leader in barred:
                    self.violation("FencedNotInIsr", node, f"{topic.name}-{pid} at offset {offset}: leader "
                                                           f"{p.leader} is {_why(brokers[p.leader])}")
                inside = [b for b in p.isr if b in barred]
                if not inside:
                    continue
                if len(p.isr) == 1 and p.leader == -1:
                    self.isr_exceptions_seen += 1
                    continue
                self.violation("FencedNotInIsr", node, f"{topic.name}-{pid} at offset {offset}: isr {list(p.isr)} "
                                                       f"leader {p.leader} holds {_why(brokers[inside[0]])} broker "
                                                       f"{inside[0]}")

    def _check_partition_epochs(self, node: Any, image: Any, seen: dict[Any, tuple[int, int]], offset: int) -> None:
        for topic in image.replication.topics.values():
            for pid, p in topic.partitions.items():
                tp = (topic.topic_id, pid)
                now = (p.leader_epoch, p.partition_epoch)
                before = seen.get(tp)
                if before is not None and (now[0] < before[0] or now[1] < before[1]):
                    self.violation("MonotonicPartitionEpochs", node, f"{topic.name}-{pid} at offset {offset}: "
                                                                     f"(leader, partition) epochs {now} after {before}")
                seen[tp] = now

    def _check_broker_epochs(self, node: Any, image: Any, seen: dict[int, int], offset: int) -> None:
        for broker_id, registration in image.cluster.brokers.items():
            before = seen.get(broker_id)
            if before is not None and registration.epoch < before:
                self.violation("MonotonicBrokerEpochs", node, f"broker {broker_id} at offset {offset}: epoch "
                                                              f"{registration.epoch} after {before}")
            seen[broker_id] = registration.epoch

    def on_controller_settled(self, node: Any) -> None:
        """A controller replica with no uncommitted replays just applied a commit."""
        if node.controller.image() != node.committed_image.image():
            self.violation("ActiveControllerImage", node, f"controller (active={node.controller.active}) differs "
                                                          f"from the committed image at {node.machine.next_offset}")


def _why(registration: Any) -> str:
    return "fenced" if registration.fenced else "in controlled shutdown"
