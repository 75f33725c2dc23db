"""The metadata invariants on hand-made committed images: what KIP-841 allows (the sole, leaderless ISR member)
and what it does not, epochs going backwards, and two nodes disagreeing at one offset."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pykraft.sim.checks.invariants import Checker
from pykraft.sim.checks.metadata_invariants import MetadataChecker
from pykraft.sim.engine.statemachine import Digest


def _world() -> Any:
    world = SimpleNamespace()
    world.checker = Checker({})
    return world


def _image(brokers: dict[int, tuple[bool, bool]], partitions: dict[int, tuple[int, tuple[int, ...], int, int]],
           epochs: dict[int, int] | None = None) -> Any:
    """brokers: id -> (fenced, in controlled shutdown); partitions: id -> (leader, isr, leader epoch, part. epoch)."""
    registrations = {b: SimpleNamespace(fenced=f, in_controlled_shutdown=s, epoch=(epochs or {}).get(b, 10))
                     for b, (f, s) in brokers.items()}
    parts = {p: SimpleNamespace(leader=l, isr=i, replicas=(1, 2, 3), leader_epoch=le, partition_epoch=pe)
             for p, (l, i, le, pe) in partitions.items()}
    topic = SimpleNamespace(name="t", topic_id="tid", partitions=parts)
    return SimpleNamespace(cluster=SimpleNamespace(brokers=registrations),
                           replication=SimpleNamespace(topics={"tid": topic}))


def _machine(image: Any, digest: Digest = Digest(1, 1)) -> Any:
    return SimpleNamespace(image=image, digest=lambda: digest)


def _node(node_id: int = 0) -> Any:
    return SimpleNamespace(node_id=node_id, starts=1)


def _names(world: Any) -> list[str]:
    return [v.invariant for v in world.checker.violations]


def test_sole_leaderless_isr_member_may_be_fenced() -> None:
    world = _world()
    checker = MetadataChecker(world)
    image = _image({1: (True, False), 2: (True, False)}, {0: (-1, (1,), 3, 5)})
    checker.on_image(_node(), _machine(image), 10)
    assert _names(world) == []
    assert checker.isr_exceptions_seen == 1


def test_fenced_broker_in_a_larger_isr_or_leading_is_a_violation() -> None:
    for partition in [(2, (1, 2), 3, 5), (1, (1,), 3, 5), (-1, (1, 2), 3, 5)]:
        world = _world()
        MetadataChecker(world).on_image(_node(), _machine(_image({1: (True, False), 2: (False, False)},
                                                                 {0: partition})), 10)
        names = _names(world)
        assert names and set(names) == {"FencedNotInIsr"}, partition


def test_broker_in_controlled_shutdown_counts_as_barred() -> None:
    world = _world()
    MetadataChecker(world).on_image(_node(), _machine(_image({1: (False, True)}, {0: (1, (1, 2), 3, 5)})), 10)
    assert _names(world) == ["FencedNotInIsr", "FencedNotInIsr"]  # leads, and in a two-member ISR


def test_partition_epochs_must_not_go_back_within_a_start() -> None:
    world = _world()
    checker = MetadataChecker(world)
    checker.on_image(_node(), _machine(_image({}, {0: (1, (1,), 4, 7)}), Digest(1, 1)), 10)
    checker.on_image(_node(), _machine(_image({}, {0: (1, (1,), 4, 6)}), Digest(1, 2)), 11)
    assert _names(world) == ["MonotonicPartitionEpochs"]


def test_a_new_start_is_a_new_history() -> None:
    world = _world()
    checker = MetadataChecker(world)
    checker.on_image(_node(), _machine(_image({}, {0: (1, (1,), 4, 7)}), Digest(1, 1)), 10)
    restarted = SimpleNamespace(node_id=0, starts=2)
    checker.on_image(restarted, _machine(_image({}, {0: (1, (1,), 3, 5)}), Digest(1, 3)), 8)
    assert _names(world) == []


def test_broker_epochs_must_not_go_back() -> None:
    world = _world()
    checker = MetadataChecker(world)
    checker.on_image(_node(), _machine(_image({1: (False, False)}, {}, {1: 40}), Digest(1, 1)), 41)
    checker.on_image(_node(), _machine(_image({1: (False, False)}, {}, {1: 12}), Digest(1, 2)), 50)
    assert _names(world) == ["MonotonicBrokerEpochs"]


def test_two_nodes_with_different_images_at_one_offset_disagree() -> None:
    world = _world()
    checker = MetadataChecker(world)
    image = _image({}, {})
    checker.on_image(_node(0), _machine(image, Digest(3, 100)), 20)
    checker.on_image(_node(1), _machine(image, Digest(3, 100)), 20)
    assert _names(world) == []
    checker.on_image(_node(2), _machine(image, Digest(3, 101)), 20)
    assert _names(world) == ["ImageAgreement"]
