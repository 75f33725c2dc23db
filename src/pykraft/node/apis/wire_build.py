"""Building kio messages at whatever version a client asked for, from one set of field values.

The data-plane answers (Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch) are built straight at the request's
version: `make(cls, **values)` keeps the values the version has a field for, drops the others (a v4 Fetch answer
has no topic id, a v13 one no topic name) and gives every other required field Kafka's zero value.
"""

from __future__ import annotations

import importlib
from dataclasses import MISSING, fields
from functools import cache
from typing import Any

from pykraft.protocol.apis import response_class
from pykraft.protocol.error_responses import zero_value


@cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    return tuple((f.name, f) for f in fields(cls))


@cache
def _plan(cls: type) -> tuple[frozenset[str], tuple[tuple[str, Any], ...]]:
    """The field names of `cls`, and the zero value of each field without a default (kio's messages are frozen, so
    one zero value serves every message built): worked out once per class, not on every answer (the Fetch and
    Produce handlers build several messages per request)."""
    required = tuple((name, zero_value(f)) for name, f in _fields(cls)
                     if f.default is MISSING and f.default_factory is MISSING)
    return frozenset(name for name, _ in _fields(cls)), required


def make(cls: type, **values: Any) -> Any:
    names, required = _plan(cls)
    kwargs = dict(required)
    for name, value in values.items():
        if name in names:
            kwargs[name] = value
    return cls(**kwargs)


@cache
def response_namespace(api_key: int, version: int) -> Any:
    """The kio module holding the response classes (nested ones included) of one version."""
    return importlib.import_module(response_class(api_key, version).__module__)


def has_field(message: Any, name: str) -> bool:
    cls: type = type(message)  # (typed `type`: mypy takes a type[Any] for unhashable)
    return any(n == name for n, _ in _fields(cls))
