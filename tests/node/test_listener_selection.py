"""Which endpoints Metadata, DescribeCluster and FindCoordinator name, by the listener a request came in on
(node/runtime/listeners.py): a broker listener names each broker on that listener and leaves out brokers without it,
as Kafka's KRaftMetadataCache; a controller listener keeps pykraft's controller bootstrap."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as DescribeClusterV1
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest as DescribeClusterV2
from kio.schema.metadata.v0 import request as md_v0
from kio.schema.metadata.v5 import request as md_v5
from kio.schema.metadata.v12 import request as md_v12
from kio.static.primitive import i8

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.cluster import BrokerRegistration, Endpoint
from pykraft.node.runtime import client_apis, metadata_api
from pykraft.node.runtime.listeners import RequestListener, broker_endpoint, request_listener
from pykraft.node.config.node_config import parse_config
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_set import Endpoint as VoterEndpoint
from pykraft.raft.voter_set import Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet

from broker.records import change, partition, topic

INTERNAL, EXTERNAL = "INTERNAL", "EXTERNAL"
ON_INTERNAL = RequestListener(INTERNAL, serves_brokers=True)
ON_EXTERNAL = RequestListener(EXTERNAL, serves_brokers=True)
ON_CONTROLLER = RequestListener("CONTROLLER", serves_brokers=False)


def registration(broker_id: int, *names: str, fenced: bool = False) -> BrokerRegistration:
    listeners = tuple(Endpoint(name, f"{name.lower()}-{broker_id}", 9000 + 10 * broker_id + i, 0)
                      for i, name in enumerate(names))
    return BrokerRegistration(broker_id, broker_id, uuid.UUID(int=broker_id), listeners, (), None, fenced=fenced,
                              in_controlled_shutdown=False)


def image(*records) -> MetadataCache:
    cache = MetadataCache()
    cache.replay_all(enumerate(records))
    return cache


def fake_core(node_id: int = 1) -> SimpleNamespace:
    voter = VoterNode(ReplicaKey(100, None), Endpoints.of([VoterEndpoint("CONTROLLER", "ctrl", 9093),
                                                           VoterEndpoint("CONTROLLER2", "ctrl2", 9094)]),
                      SupportedVersionRange(0, 1))
    return SimpleNamespace(
        local=SimpleNamespace(node_id=node_id, listener_name="CONTROLLER", endpoints=Endpoints()),
        quorum=SimpleNamespace(leader_id=lambda: 100, epoch=3), voters=lambda: VoterSet.of([voter]))


# Brokers 1 and 2 have both listeners, broker 3 only INTERNAL; partition 0 led by 3, partition 1 by 1.
CLUSTER = (registration(1, INTERNAL, EXTERNAL).to_record(), registration(2, INTERNAL, EXTERNAL).to_record(),
           registration(3, INTERNAL).to_record(), topic(), partition(0, [3, 1], [3, 1], leader=3),
           partition(1, [1, 3], [1, 3], leader=1))
ALL_TOPICS = md_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)


def brokers(answer) -> list[tuple[int, str, int]]:
    return [(int(b.node_id), b.host, int(b.port)) for b in answer.brokers]


def partitions(answer) -> list[tuple]:
    return [(int(p.partition_index), ErrorCode(p.error_code), int(p.leader_id), [int(r) for r in p.replica_nodes],
             [int(r) for r in getattr(p, "offline_replicas", ())]) for p in answer.topics[0].partitions]


def test_a_broker_listener_names_the_endpoint_on_that_listener_or_nothing():
    both = registration(1, INTERNAL, EXTERNAL)
    assert broker_endpoint(both, ON_INTERNAL) == ("internal-1", 9010)
    assert broker_endpoint(both, ON_EXTERNAL) == ("external-1", 9011)
    assert broker_endpoint(registration(3, INTERNAL), ON_EXTERNAL) is None
    # A controller listener is never a broker's: the broker's first listener (the controller bootstrap).
    assert broker_endpoint(registration(3, INTERNAL), ON_CONTROLLER) == ("internal-3", 9030)
    assert broker_endpoint(both, RequestListener(EXTERNAL, serves_brokers=False)) == ("external-1", 9011)


def test_metadata_on_each_listener_lists_that_listeners_endpoints():
    cache = image(*CLUSTER)
    internal = metadata_api.metadata(fake_core(), "c", ALL_TOPICS, cache, ON_INTERNAL)
    assert brokers(internal) == [(1, "internal-1", 9010), (2, "internal-2", 9020), (3, "internal-3", 9030)]
    assert partitions(internal) == [(0, ErrorCode.NONE, 3, [3, 1], []), (1, ErrorCode.NONE, 1, [1, 3], [])]
    external = metadata_api.metadata(fake_core(), "c", ALL_TOPICS, cache, ON_EXTERNAL)
    assert brokers(external) == [(1, "external-1", 9011), (2, "external-2", 9021)]
    # Broker 3 has no EXTERNAL endpoint: as leader it is LISTENER_NOT_FOUND with no leader, as replica offline.
    assert partitions(external) == [(0, ErrorCode.LISTENER_NOT_FOUND, -1, [3, 1], [3]),
                                    (1, ErrorCode.NONE, 1, [1, 3], [3])]
    assert int(external.controller_id) == 1  # this node (1) is listed


def test_metadata_before_v6_says_leader_not_available_and_v0_keeps_only_reachable_replicas():
    cache = image(*CLUSTER)
    v5 = metadata_api.metadata(fake_core(), "c", md_v5.MetadataRequest(
        topics=None, allow_auto_topic_creation=False), cache, ON_EXTERNAL)
    assert [p[:3] for p in partitions(v5)] == [(0, ErrorCode.LEADER_NOT_AVAILABLE, -1), (1, ErrorCode.NONE, 1)]
    v0 = metadata_api.metadata(fake_core(), "c", md_v0.MetadataRequest(topics=()), cache, ON_EXTERNAL)
    assert [p[:4] for p in partitions(v0)] == [(0, ErrorCode.LEADER_NOT_AVAILABLE, -1, [1]),
                                               (1, ErrorCode.REPLICA_NOT_AVAILABLE, 1, [1])]
    internal_v0 = metadata_api.metadata(fake_core(), "c", md_v0.MetadataRequest(topics=()), cache, ON_INTERNAL)
    assert [p[:4] for p in partitions(internal_v0)] == [(0, ErrorCode.NONE, 3, [3, 1]), (1, ErrorCode.NONE, 1, [1, 3])]


def test_a_broker_never_presents_the_controllers_as_brokers():
    # Nothing registered yet, or every broker fenced: a broker listener answers an empty list, never controllers.
    for cache in (image(), image(*CLUSTER[:3], change(1, 1, fenced=1), change(2, 2, fenced=1),
                                 change(3, 3, fenced=1))):
        answer = metadata_api.metadata(fake_core(), "c", ALL_TOPICS, cache, ON_INTERNAL)
        assert brokers(answer) == [] and int(answer.controller_id) == -1
        described = client_apis.describe_cluster(fake_core(), "c", DescribeClusterV1(
            include_cluster_authorized_operations=False, endpoint_type=i8(1)), cache, ON_INTERNAL)
        assert described.brokers == () and described.error_code == ErrorCode.NONE
    # On a controller listener the controllers stand in (pykraft's controller bootstrap), on that listener.
    answer = metadata_api.metadata(fake_core(), "c", ALL_TOPICS, image(), ON_CONTROLLER)
    assert brokers(answer) == [(100, "ctrl", 9093)] and int(answer.controller_id) == 100
    on_second = metadata_api.metadata(fake_core(), "c", ALL_TOPICS, image(),
                                      RequestListener("CONTROLLER2", serves_brokers=False))
    assert brokers(on_second) == [(100, "ctrl2", 9094)]


def test_describe_cluster_by_listener_and_endpoint_type():
    cache = image(*CLUSTER)
    with_fenced = DescribeClusterV2(include_cluster_authorized_operations=False, endpoint_type=i8(1),
                                    include_fenced_brokers=True)
    external = client_apis.describe_cluster(fake_core(2), "c", with_fenced, cache, ON_EXTERNAL)
    assert [(int(b.broker_id), b.host) for b in external.brokers] == [(1, "external-1"), (2, "external-2")]
    assert int(external.controller_id) == 2
    # Kafka's brokers answer endpoint type 2 with MISMATCHED_ENDPOINT_TYPE; controllers answer it with themselves.
    controllers = DescribeClusterV2(include_cluster_authorized_operations=False, endpoint_type=i8(2),
                                    include_fenced_brokers=False)
    refused = client_apis.describe_cluster(fake_core(), "c", controllers, cache, ON_INTERNAL)
    assert refused.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE and refused.brokers == ()
    answered = client_apis.describe_cluster(fake_core(), "c", controllers, cache, ON_CONTROLLER)
    assert [(int(b.broker_id), b.host) for b in answered.brokers] == [(100, "ctrl")]
    assert int(answered.controller_id) == 100
    # The raft leader is not among the controllers listed (unknown to this node): -1, as Kafka's controllers say.
    core = fake_core()
    core.quorum.leader_id = lambda: 7
    assert int(client_apis.describe_cluster(core, "c", controllers, cache, ON_CONTROLLER).controller_id) == -1


def test_request_listener_reads_the_connection_and_the_roles():
    config = parse_config("process.roles=broker,controller\nnode.id=1\nlisteners=PLAINTEXT://h:1,CONTROLLER://h:2\n"
                          "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@h:2\n")

    def decoded(name):
        return SimpleNamespace(context=SimpleNamespace(listener_name=name))

    assert request_listener(decoded("PLAINTEXT"), config) == RequestListener("PLAINTEXT", serves_brokers=True)
    assert request_listener(decoded("CONTROLLER"), config) == RequestListener("CONTROLLER", serves_brokers=False)
    assert request_listener(SimpleNamespace(context=None), config) == RequestListener(None, serves_brokers=False)
    broker_only = parse_config("process.roles=broker\nnode.id=2\nlisteners=PLAINTEXT://h:1\n"
                               "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@h:2\n")
    assert request_listener(SimpleNamespace(context=None), broker_only).serves_brokers


def test_describe_topic_partitions_on_a_listener_hides_what_cannot_be_reached_there():
    from pykraft.broker.topic_partitions import describe

    cache = image(*CLUSTER)
    external = describe(cache, ["t"], None, 100, listener=EXTERNAL).topics[0].partitions
    assert [(p.index, p.leader, p.offline) for p in external] == [(0, -1, (3,)), (1, 1, (3,))]
    internal = describe(cache, ["t"], None, 100, listener=INTERNAL).topics[0].partitions
    assert [(p.index, p.leader, p.offline) for p in internal] == [(0, 3, ()), (1, 1, ())]
