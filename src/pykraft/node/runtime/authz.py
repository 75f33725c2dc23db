"""Authorization of every request a node answers (Kafka's AuthHelper and the checks at the top of each KafkaApis and
ControllerApis handler), in front of the handlers rather than inside them.

The node's `RequestAuthorizer` holds the StandardAuthorizer's settings and reads the ACLs of its own metadata image
(a broker's cache, a controller's image: both replay the same AccessControlEntryRecords); the decisions are the pure
function of controller/authorizer.py. The principal and the client's address are the request's connection context
(`ConnectionInfo.principal`, `peer_host`), or an Envelope's when a broker forwarded the request.

`check(decoded, on_controller_listener)` applies the rule of the request's API (authz_rules.py, authz_data.py,
authz_groups.py) and says one of:
- None: the request goes to its handler as it is;
- `Denied(response)`: it is answered with that (CLUSTER_AUTHORIZATION_FAILED for a cluster operation, ...);
- `Narrowed(request, finish)`: the handler gets `request` (the resources the principal may use; None: no handler
  call at all) and `finish(answer)` is what the client gets: the answer with the refused resources put back in, each
  with Kafka's error (TOPIC_AUTHORIZATION_FAILED per partition for Produce, ...), topics the principal may not
  describe left out of listings, and the AuthorizedOperations fields filled in.
Without `authorizer.class.name` no rule runs, as Kafka's `authorizer.forall` allows everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pykraft.controller.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from pykraft.controller.authorizer import (
    AuthorizerNotReadyError,
    AuthorizerSettings,
    authorize,
    authorize_by_resource_type,
    authorized_operations,
)
from pykraft.protocol.principal import ANONYMOUS

__all__ = ["AuthorizerNotReadyError", "Denied", "Narrowed", "RequestAuthorizer", "Rule"]


@dataclass(frozen=True, slots=True)
class Denied:
    response: Any


@dataclass(frozen=True, slots=True)
class Narrowed:
    request: Any | None
    finish: Callable[[Any], Any]


Check = Denied | Narrowed | None
# (authorizer, decoded request, came in on a controller listener) -> Check
Rule = Callable[["RequestAuthorizer", Any, bool], Check]


class RequestAuthorizer:
    def __init__(self, enabled: bool, settings: AuthorizerSettings, image_of: Callable[[], Any],
                 loaded: Callable[[], bool] = lambda: True, rules: Mapping[int, Rule] | None = None,
                 auto_create_topics: bool = True, unlisted: Rule | None = None) -> None:
        self.enabled = enabled
        self.rules = dict(rules or {})  # authz_rules.RULES: handed in, the rule modules import this one
        self.unlisted = unlisted  # the rule of an API without one (authz_rules.UNLISTED: CLUSTER_ACTION)
        self.auto_create_topics = auto_create_topics  # auto.create.topics.enable: Metadata's CREATE check
        self._settings = settings
        self.image_of = image_of  # the metadata image: .acls, .replication (topics), ...
        self._loaded = loaded
        self.denials = 0  # requests (or parts of them) refused: pykraft_authorization_denials_total

    @property
    def settings(self) -> AuthorizerSettings:
        return replace(self._settings, loaded=self._loaded())

    def loaded(self) -> bool:
        return self._loaded()

    # ---- decisions (Kafka's AuthHelper) ------------------------------------------------------------------------
    def allowed(self, context: Any, operation: AclOperation, resource_type: ResourceType, name: str, *,
                counted: bool = True) -> bool:
        """`counted` False: a refusal that is not one (Kafka's logIfDenied=false: another check may still allow)."""
        if not self.enabled or context is None:
            return True  # no authorizer; or a request the node made itself (no connection)
        principal, host = _who(context)
        result = authorize(self.image_of().acls, self.settings, principal, host, operation, resource_type, name)
        self.denials += counted and not result
        return result

    def cluster(self, context: Any, operation: AclOperation, *, counted: bool = True) -> bool:
        return self.allowed(context, operation, ResourceType.CLUSTER, CLUSTER_NAME, counted=counted)

    def allowed_names(self, context: Any, operation: AclOperation, resource_type: ResourceType,
                      names: Iterable[str]) -> set[str]:
        return {name for name in set(names) if self.allowed(context, operation, resource_type, name)}

    def operations(self, context: Any, resource_type: ResourceType, name: str) -> int | None:
        """The AuthorizedOperations bit field, or None without an authorizer (the handler's own value stays)."""
        if not self.enabled or context is None:
            return None
        principal, host = _who(context)
        return authorized_operations(self.image_of().acls, self.settings, principal, host, resource_type, name)

    def by_resource_type(self, context: Any, operation: AclOperation, resource_type: ResourceType) -> bool:
        if not self.enabled or context is None:
            return True
        principal, host = _who(context)
        return authorize_by_resource_type(self.image_of().acls, self.settings, principal, host, operation,
                                          resource_type)

    # ---- the rules -----------------------------------------------------------------------------------------------
    def check(self, decoded: Any, on_controller_listener: bool) -> Check:
        if not self.enabled or decoded.context is None:
            return None
        rule = self.rules.get(int(decoded.api_key), self.unlisted)
        return None if rule is None else rule(self, decoded, on_controller_listener)


def _who(context: Any) -> tuple[str, str]:
    return str(getattr(context, "principal", ANONYMOUS)), str(getattr(context, "peer_host", ""))
