"""Messages between simulated brokers (and the metadata admin) and the simulated controllers.

Controller RPCs carry kio request/response objects unchanged, like raft messages (see wire.py). `component` says
which part of the sender made the request (the broker's lifecycle, its ISR manager, or the admin): their request
ids are counted separately, so an answer is routed by (component, request_id).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

METADATA_ADMIN = 999  # the endpoint id of the metadata admin (wire.ADMIN; the raft AdminTool is not used alongside)


class Component(enum.Enum):
    LIFECYCLE = "lifecycle"
    ISR = "isr"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class ControllerRequest:
    request_id: int
    component: Component
    api_key: int
    request: Any


@dataclass(frozen=True, slots=True)
class ControllerResponse:
    request_id: int
    component: Component
    response: Any


@dataclass(frozen=True, slots=True)
class ReplyTo:
    """Where the answer to a ControllerRequest goes (held by the controller until its records commit)."""

    src: int
    src_incarnation: int
    request_id: int
    component: Component
