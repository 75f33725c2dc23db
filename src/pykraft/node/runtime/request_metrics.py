"""Kafka's RequestMetrics (`kafka.network:type=RequestMetrics`), per API, on every listener of a node.

For each request answered: RequestsPerSec{request, version}, ErrorsPerSec{request, error} (every error code in the
answer, NONE included, as Kafka's `AbstractResponse.errorCounts`: a Produce to three partitions counts three) and
TotalTimeMs{request} (here a histogram in seconds: from the frame's decode to the answer's encoding). `request` is
Kafka's name of the API (`Produce`, `ApiVersions`, ...); a Fetch counts under `Fetch` and under `FetchFollower`
(a replica's) or `FetchConsumer`, as Kafka's RequestChannel does.

The error codes of an answer are found by a walk compiled once per response class (`_plan`): the `error_code`
fields and the nested entities that can hold one, nothing else (a Fetch answer's records are never looked at).
"""

from __future__ import annotations

import dataclasses
import typing
from collections import Counter
from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

from pykraft.node.runtime.metric_stats import REQUEST_BUCKETS_S, Histogram

FETCH_FOLLOWER = "FetchFollower"
FETCH_CONSUMER = "FetchConsumer"


def kafka_api_name(api_key: int) -> str:
    """Kafka's name of an API (`ApiKeys.name`: the message name without Request), e.g. 22 -> InitProducerId."""
    try:
        return "".join(part.capitalize() for part in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class ApiStats:
    __slots__ = ("versions", "errors", "time")

    def __init__(self) -> None:
        self.versions: Counter[int] = Counter()
        self.errors: Counter[int] = Counter()
        self.time = Histogram(REQUEST_BUCKETS_S, scale=1.0)


class RequestStats:
    def __init__(self) -> None:
        self.by_name: dict[str, ApiStats] = {}
        self._by_key: dict[int, ApiStats] = {}  # the same objects, by api key: one lookup per request

    def record(self, api_key: int, version: int, message: Any, response: Any, seconds: float) -> None:
        """One answered request (`response` None: answered with nothing, e.g. an acks=0 Produce)."""
        stats = self._by_key.get(api_key)
        if stats is None:
            stats = self._by_key[api_key] = self._named(kafka_api_name(api_key))
        self._count(stats, version, response, seconds)
        if api_key == ApiKey.FETCH:
            self._count(self._named(FETCH_FOLLOWER if _replica_id(message) >= 0 else FETCH_CONSUMER), version,
                        response, seconds)

    def record_failure(self, api_key: int, version: int, seconds: float) -> None:
        """A request whose handling raised: answered UNKNOWN_SERVER_ERROR (or its connection closed)."""
        self.record(api_key, version, None, None, seconds)
        self._by_key[api_key].errors[ErrorCode.UNKNOWN_SERVER_ERROR] += 1

    def _named(self, name: str) -> ApiStats:
        stats = self.by_name.get(name)
        if stats is None:
            stats = self.by_name[name] = ApiStats()
        return stats

    @staticmethod
    def _count(stats: ApiStats, version: int, response: Any, seconds: float) -> None:
        stats.versions[version] += 1
        if response is not None:
            _walk(response, stats.errors)
        stats.time.observe(seconds)


def _replica_id(message: Any) -> int:
    state = getattr(message, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(message, "replica_id", -1))


# ---- the error codes of an answer --------------------------------------------------------------------------------
_ERROR, _ONE, _MANY = 0, 1, 2
_PLANS: dict[type, tuple[tuple[int, str], ...]] = {}


def error_counts(response: Any) -> Counter[int]:
    counts: Counter[int] = Counter()
    _walk(response, counts)
    return counts


def _walk(entity: Any, counts: Counter[int]) -> None:
    plan = _PLANS.get(type(entity))
    if plan is None:
        plan = _plan(type(entity))
    for kind, field in plan:
        value = getattr(entity, field)
        if kind == _ERROR:
            counts[int(value)] += 1
        elif kind == _MANY:
            for item in value:
                _walk(item, counts)
        elif value is not None:
            _walk(value, counts)


def _plan(cls: type, seen: frozenset[type] = frozenset()) -> tuple[tuple[int, str], ...]:
    """The fields of `cls` to visit: error_code, and the entities (one, optional, or a tuple of them) whose own plan
    is not empty. A class that is not a dataclass has nothing to visit."""
    if cls in _PLANS:
        return _PLANS[cls]
    if not dataclasses.is_dataclass(cls) or cls in seen:
        return ()
    steps: list[tuple[int, str]] = []
    for field in dataclasses.fields(cls):
        if field.name == "error_code":
            steps.append((_ERROR, field.name))
            continue
        kind, inner = _entity_of(field.type)
        if inner is not None and _plan(inner, seen | {cls}):
            steps.append((kind, field.name))
    plan = _PLANS[cls] = tuple(steps)
    return plan


def _entity_of(annotation: Any) -> tuple[int, type | None]:
    """(_ONE or _MANY, the entity class) when the annotation is an entity, an optional one or a tuple of them."""
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _ONE, annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is tuple and args and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
        return _MANY, args[0]
    if args and origin is not tuple:  # X | None
        entities = [a for a in args if isinstance(a, type) and dataclasses.is_dataclass(a)]
        if len(entities) == 1:
            return _ONE, entities[0]
    return _ONE, None
