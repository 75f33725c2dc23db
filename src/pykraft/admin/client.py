"""The admin client: finds the quorum leader, sends it the leader-only requests, retries what can be retried.

Leader discovery (with `bootstrap_kind="controller"`, i.e. --bootstrap-controller): DescribeCluster v1 with
endpoint type 2 to a bootstrap controller; its `controller_id` is the raft leader (-1 while none is known) and its
node list gives the leader's address. An error response that names another leader (DescribeQuorum's LeaderId) is
used directly when that node's address is known. With `bootstrap_kind="server"` (--bootstrap-server) requests go
to the bootstrap addresses in turn, as Kafka's admin client sends them to a broker that forwards them.

Retries: NOT_LEADER_OR_FOLLOWER, NOT_CONTROLLER, REQUEST_TIMED_OUT (and the other "not now" codes in
`RETRIABLE`) and transport failures are retried with exponential backoff (`retry_backoff_ms` doubling up to
`retry_backoff_max_ms`, no jitter) until `deadline_ms` after the call started. Every other error code raises
`AdminError` at once. Each attempt waits at most `request_timeout_ms` (less when the deadline is nearer), and
less when the node stops answering: while an answer is overdue the node is probed (liveness.py), and a node that
does not answer its probe (paused, wedged) is given up after `probe_interval_ms + probe_timeout_ms`; the next
attempt rediscovers the leader. So a command answers within a few seconds of a new leader being known.

Voter changes are not idempotent, so the client tracks whether an attempt may have taken effect: a transport
time-out or a lost connection after sending, a REQUEST_TIMED_OUT answer (the leader may have appended the
record and timed out waiting for the commit) or NOT_LEADER_OR_FOLLOWER (the leader may have appended and then
lost leadership). After such an attempt, running out of time, or a retry answered by the very conflict the
earlier attempt would cause (DUPLICATE_VOTER for an add, VOTER_NOT_FOUND for a remove), raises
`OutcomeUnknownError` instead of claiming success or failure. A NONE answer is always success: the leader answers
NONE only once the new voter set is committed.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kio.schema.describe_cluster.v1 import request as dc_req
from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.elect_leaders.v2 import request as el_req
from kio.schema.unregister_broker.v0 import request as ub_req
from kio.schema.types import BrokerId, TopicName
from kio.schema.update_features.v1 import request as uf_req
from kio.static.primitive import i8, i16, i32, i32Timedelta

from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.raft.reconfig_messages import add_voter_request, api_versions_request, remove_voter_request
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey

from . import configs, quorum_reassignments, responses, topic_configs, topics
from . import partition_reassignments as reassignments
from .brokers import WAIT_NOTICE_S
from .errors import AdminError, DeadlineError, OutcomeUnknownError, TopicError, UnreachableError
from .liveness import PROBE_INTERVAL_MS, PROBE_TIMEOUT_MS, LivenessWatch, NodeUnresponsiveError
from .model import (BrokerInfo, ClusterInfo, FeatureMetadata, QuorumInfo, TopicCreated, TopicDescription,
                    error_code_of)
from .responses import Outcome
from .transport import DirectTransport, Transport, TransportConnectError, TransportError, default_transport

__all__ = ["RETRIABLE", "AdminClient"]

T = TypeVar("T")
Address = tuple[str, int]
CLIENT_ID = "pykraft-admin"

RETRIABLE = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION,
})
# Codes after which the cached leader address is wrong or about to be.
LEADER_MOVED = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_CONTROLLER, ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.LEADER_NOT_AVAILABLE,
})
# Codes under which a voter change sent to the leader may still have been appended.
MAYBE_APPLIED = frozenset({ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER})


class _Retry(Exception):
    """One attempt failed in a way worth retrying."""

    def __init__(self, address: Address | None, reason: str, *, maybe_applied: bool, answered: bool) -> None:
        super().__init__(reason)
        self.address, self.reason = address, reason
        self.maybe_applied, self.answered = maybe_applied, answered


class AdminClient:
    def __init__(
        self,
        bootstrap: Sequence[Address],
        *,
        ssl_context: ssl.SSLContext | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        deadline_ms: int = 60_000,
        transport: Transport | None = None,
        bootstrap_kind: str = "controller",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        probe_interval_ms: int = PROBE_INTERVAL_MS,
        probe_timeout_ms: int = PROBE_TIMEOUT_MS,
        probe_transport: Transport | None = None,
        on_wait: Callable[[str], None] | None = None,
        sasl: Any | None = None,
    ) -> None:
        if not bootstrap:
            raise ValueError("at least one bootstrap address is needed")
        if bootstrap_kind not in ("controller", "server"):
            raise ValueError(f"bootstrap_kind must be 'controller' or 'server', not {bootstrap_kind!r}")
        self._bootstrap = [(str(h), int(p)) for h, p in bootstrap]
        self._kind = bootstrap_kind
        # With SASL every pooled connection authenticates first; the liveness probes (ApiVersions, which a SASL
        # listener answers before authentication) need not.
        self._transport = transport if transport is not None else default_transport(ssl_context, sasl)
        # Probes need a connection of their own (a pooled one would queue them behind the overdue request), so they
        # never share `transport`: tests hand in a fake for both.
        probes = probe_transport if probe_transport is not None else DirectTransport(ssl_context)
        self._liveness = LivenessWatch(probes, CLIENT_ID, interval_ms=probe_interval_ms,
                                       probe_timeout_ms=probe_timeout_ms)
        self._request_timeout_ms = request_timeout_ms
        self._backoff_ms, self._backoff_max_ms = retry_backoff_ms, retry_backoff_max_ms
        self._deadline_ms = deadline_ms
        self._clock, self._sleep = clock, sleep
        self._next_bootstrap = 0
        self._leader: Address | None = None
        self._cluster: ClusterInfo | None = None  # the last DescribeCluster answer: node id -> address
        # --bootstrap-server only: the active controller found after a NOT_CONTROLLER (see _controller_address).
        self._active_controller: Address | None = None
        self._rediscover = False
        self._unresponsive: dict[Address, float] = {}  # a node given up by the liveness watch -> when
        # Called once when no bootstrap address answers and the wait may be long (brokers.WAIT_NOTICE_S), so that a
        # command pointed at a dead cluster says what it waits for.
        self._on_wait = on_wait

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._transport.close()

    # ---- public operations ----------------------------------------------------------------------------------
    async def describe_cluster(self) -> ClusterInfo:
        return await self._retrying("DescribeCluster", self._describe_cluster_once)

    async def describe_quorum(self) -> QuorumInfo:
        message = dq_req.DescribeQuorumRequest(topics=(dq_req.TopicData(
            topic_name=TopicName(METADATA_TOPIC),
            partitions=(dq_req.PartitionData(partition_index=i32(METADATA_PARTITION)),)),))
        response = await self._leader_call("DescribeQuorum", message, responses.describe_quorum_outcome)
        return responses.quorum_info(response)

    async def add_voter(self, voter_id: int, directory_id: uuid.UUID | None,
                        endpoints: Endpoints | Iterable[Endpoint]) -> None:
        endpoints = endpoints if isinstance(endpoints, Endpoints) else Endpoints.of(endpoints)
        message = add_voter_request(None, ReplicaKey.of(voter_id, directory_id), endpoints, self._server_timeout_ms())
        what = f"adding controller {voter_id}"
        await self._leader_call(what, message, responses.simple_outcome,
                                conflicts=frozenset({ErrorCode.DUPLICATE_VOTER}))

    async def remove_voter(self, voter_id: int, directory_id: uuid.UUID | None) -> None:
        message = remove_voter_request(None, ReplicaKey.of(voter_id, directory_id))
        what = f"removing controller {voter_id}"
        await self._leader_call(what, message, responses.simple_outcome,
                                conflicts=frozenset({ErrorCode.VOTER_NOT_FOUND}))

    async def alter_quorum_reassignment(self, target: Sequence[int] | None, timeout_ms: int) -> Outcome:
        """AlterPartitionReassignments of `__cluster_metadata-0` (quorum reassignment) at the active controller;
        `target` None cancels. Returns the partition's outcome when it is NONE (the voters are the target) or
        REQUEST_TIMED_OUT (accepted, still in progress after `timeout_ms`); another refusal raises AdminError. The
        same target sent again is not recorded again, so the retries after NOT_CONTROLLER are safe."""
        result: list[Outcome] = []

        def outcome(response: Any) -> Outcome:
            found = quorum_reassignments.alter_partition_outcome(response)
            if found.code in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT):
                result.append(found)
                return Outcome(ErrorCode.NONE)
            return found

        await self._controller_call("AlterPartitionReassignments",
                                    lambda: quorum_reassignments.alter_request(target, timeout_ms), outcome)
        return result[-1]

    async def list_quorum_reassignment(self) -> quorum_reassignments.QuorumReassignment | None:
        """ListPartitionReassignments of `__cluster_metadata-0`: None when no quorum reassignment is in progress."""
        response = await self._controller_call("ListPartitionReassignments", quorum_reassignments.list_request,
                                               responses.simple_outcome)
        return quorum_reassignments.quorum_reassignment(response)

    async def describe_features(self) -> FeatureMetadata:
        response = await self._leader_call("ApiVersions", api_versions_request(), responses.simple_outcome)
        return responses.feature_metadata(response)

    async def finalized_features(self) -> Mapping[str, Any]:
        return (await self.describe_features()).finalized

    async def supported_features(self) -> Mapping[str, Any]:
        return (await self.describe_features()).supported

    async def update_features(self, levels: Mapping[str, int], *, dry_run: bool = False,
                              upgrade_type: int = 1) -> dict[str, AdminError | None]:
        """UpdateFeatures v1. Returns each feature's error (None = done, or valid with dry_run). A top-level error
        that is not retriable is every feature's error, as Kafka's admin client reports it."""
        message = uf_req.UpdateFeaturesRequest(
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=self._server_timeout_ms())),
            validate_only=dry_run,
            feature_updates=tuple(uf_req.FeatureUpdateKey(feature=name, max_version_level=i16(level),
                                                          upgrade_type=i8(upgrade_type))
                                  for name, level in levels.items()))
        try:
            response = await self._leader_call("UpdateFeatures", message, responses.simple_outcome)
        except AdminError as exc:
            return dict.fromkeys(levels, exc)
        return responses.feature_update_results(response, levels)

    # ---- topics and brokers -----------------------------------------------------------------------------------
    async def create_topics(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                            replica_assignment: Sequence[Sequence[int]] | None = None,
                            configs: Mapping[str, str] | None = None, validate_only: bool = False) -> TopicCreated:
        """CreateTopics for one topic at the active controller; None = the cluster default. A refusal raises
        TopicError (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, ...). A retry after an attempt whose answer
        was lost can meet TOPIC_ALREADY_EXISTS for the topic that attempt created, as with Kafka's admin client."""
        message = topics.create_topics_request(name, partitions, replication_factor, replica_assignment, configs,
                                               validate_only, self._server_timeout_ms())
        response = await self._topic_call(name, f"creating topic {name}", message, topics.create_outcome)
        return topics.topic_created(response)

    async def _topic_call(self, name: str, what: str, message: Any, outcome_of: Callable[[Any], Outcome]) -> Any:
        """A controller call about one topic: any refusal raises TopicError for it."""
        try:
            return await self._controller_call(what, lambda: message, outcome_of)
        except TopicError:
            raise
        except AdminError as exc:
            raise TopicError(name, exc.code, exc.message) from None

    async def delete_topics(self, names_or_ids: Iterable[str | uuid.UUID]) -> None:
        """DeleteTopics at the active controller. Topics answered with a retriable error are sent again (alone);
        the first topic refused for good raises TopicError once every topic has its answer."""
        pending = list(dict.fromkeys(names_or_ids))
        refused: list[TopicError] = []

        def outcome(response: Any) -> Outcome:
            retry = None
            for key, error in topics.delete_results(response, pending).items():
                if error is not None and error.code in RETRIABLE:
                    retry = retry or error
                    continue
                pending.remove(key)
                if error is not None:
                    refused.append(error)
            return Outcome(retry.code, retry.message) if retry is not None else Outcome(ErrorCode.NONE)

        if pending:
            await self._controller_call("DeleteTopics", lambda: topics.delete_topics_request(
                pending, self._server_timeout_ms()), outcome)
        if refused:
            raise refused[0]

    async def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        """Metadata v12 of the named topics (None: every topic), sorted by name; an unknown name raises TopicError."""
        message = topics.metadata_request(None if names is None else list(names))
        response = await self._leader_call("Metadata", message, lambda _: Outcome(ErrorCode.NONE))
        found, errors = topics.topic_descriptions(response)
        if errors:
            raise errors[0]
        return found

    async def topic_configs(self, names: Iterable[str]) -> dict[str, list[tuple[str, str | None]]]:
        """DescribeConfigs: each named topic's non-default configs; an unknown topic raises TopicError."""
        response = await self._leader_call("DescribeConfigs", topic_configs.describe_configs_request(names),
                                           lambda _: Outcome(ErrorCode.NONE))
        found, errors = topic_configs.overridden_configs(response)
        if errors:
            raise errors[0]
        return found

    async def create_partitions(self, name: str, count: int,
                                assignment: Sequence[Sequence[int]] | None = None) -> None:
        """CreatePartitions at the active controller: grow `name` to `count` partitions; a refusal raises TopicError."""
        message = topic_configs.create_partitions_request(name, count, assignment, self._server_timeout_ms())
        await self._topic_call(name, f"adding partitions to {name}", message, topic_configs.create_partitions_outcome)

    async def alter_partition_reassignments(
            self, targets: Mapping[tuple[str, int], Sequence[int] | None],
            allow_replication_factor_change: bool = True) -> dict[tuple[str, int], AdminError | None]:
        """AlterPartitionReassignments at the active controller (through a broker with --bootstrap-server): each
        (topic, partition) moves to its broker list, or None cancels its reassignment. Returns each partition's
        refusal (None: accepted). Retried while the answer is a retriable top-level error."""
        if not targets:
            return {}
        message = reassignments.alter_request(targets, allow_replication_factor_change, self._server_timeout_ms())
        response = await self._controller_call("AlterPartitionReassignments", lambda: message,
                                               reassignments.top_level_outcome)
        return reassignments.alter_results(response, targets)

    async def list_partition_reassignments(
            self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], reassignments.PartitionReassignment]:
        """The ongoing reassignments (of the named partitions, or all), from the active controller."""
        message = reassignments.list_request(None if partitions is None else list(partitions),
                                             self._server_timeout_ms())
        response = await self._controller_call("ListPartitionReassignments", lambda: message,
                                               reassignments.top_level_outcome)
        return reassignments.list_results(response)

    async def list_brokers(self) -> list[BrokerInfo]:
        """The registered brokers, fenced ones included (DescribeCluster v2), by id. A controller without
        registered brokers answers with the controllers (see node/runtime/client_apis.py), which are then listed
        unfenced; a broker lists the brokers with an endpoint on the listener it was asked on."""
        response = await self._leader_call("DescribeCluster", topics.describe_brokers_request(),
                                           responses.simple_outcome)
        return topics.broker_infos(response)

    async def unregister_broker(self, broker_id: int) -> None:
        """UnregisterBroker v0 at the active controller (a broker forwards it); a refusal raises AdminError, e.g.
        BROKER_ID_NOT_REGISTERED."""
        message = ub_req.UnregisterBrokerRequest(broker_id=BrokerId(broker_id))
        await self._controller_call(f"unregistering broker {broker_id}", lambda: message, responses.simple_outcome)

    async def elect_leaders(self, election_type: int, partitions: Iterable[tuple[str, int]] | None
                            ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """ElectLeaders v2 at the active controller (0 = preferred, 1 = unclean; None = every partition): each
        partition's result (ELECTION_NOT_NEEDED when its leader already is the one asked for)."""
        wanted: dict[str, list[int]] = {}
        for topic, index in partitions or ():
            wanted.setdefault(topic, []).append(index)
        message = el_req.ElectLeadersRequest(
            election_type=i8(election_type),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=self._server_timeout_ms())),
            topic_partitions=None if partitions is None else tuple(
                el_req.TopicPartitions(topic=TopicName(t), partitions=tuple(i32(p) for p in ps))
                for t, ps in wanted.items()))
        response = await self._controller_call("ElectLeaders", lambda: message, responses.simple_outcome)
        return {(str(r.topic), int(p.partition_id)): (error_code_of(p.error_code), p.error_message)
                for r in response.replica_election_results for p in r.partition_result}

    async def metadata(self, names: Iterable[str] | None = None) -> Any:
        """The raw Metadata v12 answer (brokers, and the named topics or all of them), for log_admin.py."""
        return await self._leader_call("Metadata", topics.metadata_request(None if names is None else list(names)),
                                       lambda _: Outcome(ErrorCode.NONE))

    async def node_call(self, address: Address, what: str, message: Any) -> Any:
        """One request to one given node (a partition leader, a broker's log dirs), retried on transport failures
        until the deadline; the answer as it came (its per-partition errors are the caller's)."""
        return await self._retrying(what, lambda remaining_ms: self._exchange(
            address, message, min(self._request_timeout_ms, remaining_ms)))

    def server_timeout_ms(self) -> int:
        return self._server_timeout_ms()

    @property
    def bootstrap_kind(self) -> str:
        return self._kind

    async def any_node_call(self, what: str, message: Any, outcome_of: Callable[[Any], Outcome]) -> Any:
        """A request any node answers from its image (DescribeAcls): the leader with --bootstrap-controller, a
        bootstrap broker with --bootstrap-server; retried while the answer is retriable (security.py)."""
        return await self._leader_call(what, message, outcome_of)

    async def controller_call(self, what: str, message: Any, outcome_of: Callable[[Any], Outcome]) -> Any:
        """A request for the active controller (CreateAcls, AlterUserScramCredentials): a broker forwards it."""
        return await self._controller_call(what, lambda: message, outcome_of)

    # ---- configs (Kafka's describeConfigs / incrementalAlterConfigs) ------------------------------------------
    async def describe_configs(self, kind: int, name: str, *, include_synonyms: bool = True,
                               include_documentation: bool = False) -> list[configs.ConfigEntry]:
        """One resource's configs, from the node configs.node_for names (any node for a topic or the default)."""
        message = configs.describe_request(kind, name, include_synonyms, include_documentation)
        response = await self._node_call(f"describing the configs of {name or 'the default'}",
                                         configs.node_for(kind, name), message, configs.describe_outcome)
        return configs.entries_of(response)

    async def alter_configs(self, kind: int, name: str, changes: Sequence[tuple[str, int, str | None]],
                            validate_only: bool = False) -> None:
        """IncrementalAlterConfigs of one resource: (key, operation, value) changes; a refusal raises AdminError."""
        message = configs.alter_request(kind, name, changes, validate_only)
        what, node = f"altering the configs of {name or 'the default'}", configs.node_for(kind, name)
        if node is None:
            await self._controller_call(what, lambda: message, configs.alter_outcome)
        else:
            await self._node_call(what, node, message, configs.alter_outcome)

    async def _node_call(self, what: str, node_id: int | None, message: Any,
                         outcome_of: Callable[[Any], Outcome]) -> Any:
        """Send `message` to node `node_id` (None: any node) until it answers something not retriable."""
        if node_id is None:
            return await self._leader_call(what, message, outcome_of)

        async def attempt(remaining_ms: int) -> Any:
            timeout_ms = min(self._request_timeout_ms, remaining_ms)
            info = self._cluster
            if info is None or info.node(node_id) is None:
                info = await self._describe_cluster_once(timeout_ms)
            node = info.node(node_id)
            if node is None:
                known = ", ".join(str(n.node_id) for n in info.nodes) or "none"
                raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"node {node_id} is not in the cluster "
                                                                 f"(known nodes: {known})")
            address = (node.host, node.port)
            response = await self._exchange(address, message, timeout_ms)
            outcome = outcome_of(response)
            if outcome.code == ErrorCode.NONE:
                return response
            if outcome.code in RETRIABLE:
                raise _Retry(address, f"{_text(address)} answered {outcome.code.name}", maybe_applied=False,
                             answered=True)
            raise AdminError(outcome.code, outcome.message)

        return await self._retrying(what, attempt)

    async def _controller_call(self, what: str, build: Callable[[], Any],
                               outcome_of: Callable[[Any], Outcome]) -> Any:
        """Send `build()` to the active controller until it answers something other than a retriable error."""
        async def attempt(remaining_ms: int) -> Any:
            timeout_ms = min(self._request_timeout_ms, remaining_ms)
            address = await self._controller_address(timeout_ms)
            response = await self._exchange(address, build(), timeout_ms)
            outcome = outcome_of(response)
            if outcome.code == ErrorCode.NONE:
                return response
            if outcome.code in LEADER_MOVED:
                self._forget_leader(outcome.leader_hint)
                self._active_controller, self._rediscover = None, True
            if outcome.code in RETRIABLE:
                raise _Retry(address, f"{_text(address)} answered {outcome.code.name}", maybe_applied=False,
                             answered=True)
            raise AdminError(outcome.code, outcome.message)

        return await self._retrying(what, attempt)

    async def _controller_address(self, timeout_ms: int) -> Address:
        """With --bootstrap-controller: the raft leader (the active controller). With --bootstrap-server: the
        bootstrap node (a Kafka broker forwards controller requests); after it answered NOT_CONTROLLER, the
        controller its DescribeCluster (endpoint type 2) names, else the next bootstrap address."""
        if self._kind == "controller":
            return await self._leader_address(timeout_ms)
        if self._active_controller is None and self._rediscover:
            self._rediscover = False
            self._active_controller = await self._find_active_controller(timeout_ms)
        return self._active_controller or self._bootstrap[self._next_bootstrap % len(self._bootstrap)]

    async def _find_active_controller(self, timeout_ms: int) -> Address | None:
        address = self._bootstrap[self._next_bootstrap % len(self._bootstrap)]
        message = dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(2))
        response = await self._exchange(address, message, timeout_ms)
        if responses.simple_outcome(response).code != ErrorCode.NONE:  # e.g. a broker: UNSUPPORTED_ENDPOINT_TYPE
            self._next_bootstrap += 1
            return None
        info = responses.cluster_info(response)
        node = info.node(info.controller_id) if info.controller_id >= 0 else None
        return None if node is None else (node.host, node.port)

    # ---- the retry loop -------------------------------------------------------------------------------------
    async def _retrying(self, what: str, attempt: Callable[[int], Awaitable[T]],
                        conflicts: frozenset[ErrorCode] | None = None) -> T:
        """Run `attempt(remaining_ms)` until it returns, raises a non-retriable error, or the deadline passes.
        `conflicts` is given for voter changes only (see the module docstring)."""
        deadline = self._clock() + self._deadline_ms / 1000
        backoff = self._backoff_ms
        failures: dict[Address, str] = {}
        answered, maybe_applied, last = False, None, "no attempt"
        while True:
            remaining_ms = max(int((deadline - self._clock()) * 1000), 1)
            try:
                return await attempt(remaining_ms)
            except _Retry as retry:
                last, answered = retry.reason, answered or retry.answered
                if retry.address is not None and not retry.answered:
                    failures[retry.address] = retry.reason
                if retry.maybe_applied and maybe_applied is None:
                    maybe_applied = retry.reason
            except AdminError as exc:
                if conflicts is not None and maybe_applied is not None and exc.code in conflicts:
                    raise OutcomeUnknownError(
                        what, f"an earlier attempt ended with {maybe_applied}, a retry got {exc.code.name}") from None
                raise
            if self._clock() + backoff / 1000 >= deadline:
                raise self._give_up(what, failures, answered, last,
                                    maybe_applied if conflicts is not None else None) from None
            if not answered and self._on_wait is not None and all(a in failures for a in self._bootstrap) \
                    and deadline - self._clock() > WAIT_NOTICE_S:
                notice, self._on_wait = self._on_wait, None
                detail = "; ".join(f"{_text(a)}: {failures[a]}" for a in self._bootstrap)
                notice(f"waiting up to {deadline - self._clock():.0f} s for a bootstrap {self._kind} to answer "
                       f"({detail})")
            await self._sleep(backoff / 1000)
            backoff = min(backoff * 2, self._backoff_max_ms)

    def _give_up(self, what: str, failures: dict[Address, str], answered: bool, last: str,
                 maybe_applied: str | None) -> Exception:
        if maybe_applied is not None:
            return OutcomeUnknownError(what, f"{maybe_applied}; no later answer settled it within "
                                             f"{self._deadline_ms} ms")
        if not answered:
            tried = [a for a in self._bootstrap if a in failures] + [a for a in failures if a not in self._bootstrap]
            return UnreachableError(self._kind, [(h, p, failures[(h, p)]) for h, p in tried])
        return DeadlineError(what, self._deadline_ms, last)

    async def _leader_call(self, what: str, message: Any, outcome_of: Callable[[Any], Outcome],
                           conflicts: frozenset[ErrorCode] | None = None) -> Any:
        async def attempt(remaining_ms: int) -> Any:
            timeout_ms = min(self._request_timeout_ms, remaining_ms)
            address = await self._leader_address(timeout_ms)
            response = await self._exchange(address, message, timeout_ms)
            outcome = outcome_of(response)
            if outcome.code == ErrorCode.NONE:
                return response
            if outcome.code in LEADER_MOVED:
                self._forget_leader(outcome.leader_hint)
                if self._kind == "server":
                    self._next_bootstrap += 1  # no discovery with --bootstrap-server: try the next address
            if outcome.code in RETRIABLE:
                reason = f"{_text(address)} answered {outcome.code.name}"
                raise _Retry(address, reason, maybe_applied=outcome.code in MAYBE_APPLIED, answered=True)
            raise AdminError(outcome.code, outcome.message)

        return await self._retrying(what, attempt, conflicts)

    # ---- leader discovery -----------------------------------------------------------------------------------
    async def _leader_address(self, timeout_ms: int) -> Address:
        if self._kind == "server":
            return self._bootstrap[self._next_bootstrap % len(self._bootstrap)]
        if self._leader is not None:
            return self._leader
        info = await self._describe_cluster_once(timeout_ms)
        if info.controller_id < 0:
            raise _Retry(None, "no leader is known yet (DescribeCluster controller_id -1)",
                         maybe_applied=False, answered=True)
        node = info.node(info.controller_id)
        if node is None:
            raise _Retry(None, f"leader {info.controller_id} is not among the controllers DescribeCluster lists",
                         maybe_applied=False, answered=True)
        address = (node.host, node.port)
        given_up = self._unresponsive.get(address)
        if given_up is not None and self._clock() - given_up < self._liveness.suspect_s:
            # The followers still name the node that just stopped answering: ask them again, not it.
            raise _Retry(None, f"leader {info.controller_id} at {_text(address)} stopped answering; waiting for "
                               f"another leader", maybe_applied=False, answered=True)
        self._leader = address
        return self._leader

    def _forget_leader(self, hint: int | None) -> None:
        """Drop the cached leader; use the node an error response named if we know where it listens."""
        self._leader = None
        node = self._cluster.node(hint) if (self._cluster is not None and hint is not None and hint >= 0) else None
        if node is not None:
            self._leader = (node.host, node.port)

    async def _describe_cluster_once(self, remaining_ms: int) -> ClusterInfo:
        address = self._bootstrap[self._next_bootstrap % len(self._bootstrap)]
        message = dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                endpoint_type=i8(2 if self._kind == "controller" else 1))
        response = await self._exchange(address, message, min(self._request_timeout_ms, remaining_ms))
        outcome = responses.simple_outcome(response)
        if outcome.code in RETRIABLE:
            self._next_bootstrap += 1
            raise _Retry(address, f"{_text(address)} answered {outcome.code.name}", maybe_applied=False, answered=True)
        if outcome.code != ErrorCode.NONE:
            raise AdminError(outcome.code, outcome.message)
        self._cluster = responses.cluster_info(response)
        return self._cluster

    async def _exchange(self, address: Address, message: Any, timeout_ms: int) -> Any:
        """One request/response with one node; every failure becomes a `_Retry`."""
        host, port = address
        key, version = int(message.__api_key__), int(message.__version__)

        def build(correlation_id: int) -> bytes:
            return encode_request(message, correlation_id=correlation_id, client_id=CLIENT_ID)[4:]

        try:
            payload = await self._liveness.answer(
                host, port, self._transport.request(host, port, build, timeout_ms=timeout_ms))
        except TransportError as exc:
            self._on_transport_failure(address)
            if isinstance(exc, NodeUnresponsiveError):
                self._unresponsive[address] = self._clock()
            sent = not isinstance(exc, TransportConnectError)
            raise _Retry(address, exc.reason, maybe_applied=sent, answered=False) from None
        try:
            return decode_response(payload, key, version).message
        except ProtocolError as exc:  # a peer's bad bytes: retried like a lost connection
            self._on_transport_failure(address)
            raise _Retry(address, f"{_text(address)} sent a malformed response: {exc}",
                         maybe_applied=True, answered=True) from None

    def _on_transport_failure(self, address: Address) -> None:
        if address == self._leader:
            self._leader = None
        if address == self._bootstrap[self._next_bootstrap % len(self._bootstrap)]:
            self._next_bootstrap += 1  # the next attempt tries the next bootstrap address

    def _server_timeout_ms(self) -> int:
        # The server gives up a little before we do, so that its REQUEST_TIMED_OUT reaches us instead of our own
        # time-out (which would leave a voter change in doubt for longer).
        return max(self._request_timeout_ms - min(1000, self._request_timeout_ms // 4), 1)


def _text(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
