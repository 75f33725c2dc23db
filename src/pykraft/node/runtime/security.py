"""A node's security parts, built from its config (node/config/security.py) for the runtime: each listener's
`ListenerSecurity` (the principal mapping of its certificates, the SASL server of a SASL listener, whose SCRAM users are
the metadata image's), the SASL credentials of the node's own connections (to the controllers, to other brokers), and
its `RequestAuthorizer` (ACLs from the metadata image, `super.users`, `allow.everyone.if.no.acl.found`, the initial
load the state machine reports).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykraft.controller.authorizer import AuthorizerSettings
from pykraft.net.sasl_client import SaslClientConfig, random_nonce
from pykraft.net.sasl_server import SaslServerConfig
from pykraft.net.server import ListenerSecurity

from pykraft.node.runtime.authz import RequestAuthorizer
from pykraft.node.runtime.authz_rules import RULES, UNLISTED
from pykraft.node.runtime.client_apis import image_of

__all__ = ["client_sasl", "listener_security", "request_authorizer"]


def listener_security(config: Any, listener: str, scram_lookup: Callable[[str, int], Any]) -> ListenerSecurity:
    security = config.security
    sasl = security.sasl_listeners.get(listener)
    server = None
    if sasl is not None:
        server = SaslServerConfig(sasl.mechanisms, plain_users=sasl.plain_users, scram_lookup=scram_lookup,
                                  reauth_ms=dict(sasl.reauth_ms), failed_delay_ms=security.failed_auth_delay_ms,
                                  max_receive_size=security.sasl_max_receive_size, nonce=random_nonce)
    return ListenerSecurity(ssl_mapper=security.ssl_mappers.get(listener), sasl=server)


def client_sasl(config: Any, listener: str | None) -> SaslClientConfig | None:
    """What the node authenticates with on `listener` (None: not a SASL listener)."""
    found = config.security.client_credentials.get(listener) if listener is not None else None
    return None if found is None else SaslClientConfig(*found)


def request_authorizer(config: Any, state_machine: Callable[[], Any]) -> RequestAuthorizer:
    security = config.security
    settings = AuthorizerSettings(security.super_users, security.allow_if_no_acl)
    auto_create = str(config.raw.get("auto.create.topics.enable", "true")).strip().lower() == "true"
    return RequestAuthorizer(security.authorizer, settings, lambda: image_of(state_machine()),
                             loaded=lambda: bool(getattr(state_machine(), "acls_loaded", True)), rules=RULES,
                             auto_create_topics=auto_create, unlisted=UNLISTED)
