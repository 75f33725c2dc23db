"""Every authorization rule (node/runtime/authz_rules.RULES) against every version of its API, with requests drawn from
the schema: whatever the principal may or may not do, the check builds an answer of the request's own version that
encodes (a refused part in the answer's own shape, never an exception that would close the client's connection),
and a narrowed request stays a valid request of that version."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import AclPermissionType as Perm
from pykraft.controller.acl_model import PatternType as Pat
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.controller.acl_model import StandardAcl, acl_to_record
from pykraft.controller.authorizer import AuthorizerSettings
from pykraft.net.server import ConnectionInfo
from pykraft.node.runtime.authz import Denied, Narrowed, RequestAuthorizer
from pykraft.node.runtime.authz_rules import RULES
from pykraft.protocol import headers
from pykraft.protocol.apis import kio_knows, request_class, response_class
from pykraft.protocol.codec import DecodedRequest, encode_request, encode_response_body
from pykraft.protocol.error_responses import zero_entity
from pykraft.protocol.principal import KafkaPrincipal
from pykraft.records.metadata.schema.topic_record import TopicRecordV0

from protocol.schema_strategies import message

HINTS = (("name", ("t", "u")), ("topic", ("t", "u")), ("group_id", ("g", "h")), ("key", ("g", "tx")),
         ("transactional_id", ("tx",)), ("transactional_ids", ("tx", "ty")),
         ("v3_and_below_transactional_id", ("tx",)), ("resource_name", ("t", "1", "")), ("topic_name", ("t",)),
         ("groups", ("g", "h")), ("groups_names", ("g", "h")), ("coordinator_keys", ("g", "h")),
         ("group_ids", ("g", "h")), ("subscribed_topic_names", ("t", "u")))
EXAMPLES = settings(max_examples=4, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
MALLORY = ConnectionInfo("10.0.0.1", 5000, 1, None, "L", KafkaPrincipal("User", "mallory"))


def image(*acls: StandardAcl) -> MetadataCache:
    cache = MetadataCache()
    cache.replay(TopicRecordV0(name="t", topic_id=uuid.UUID(int=7)), 0)
    for acl in acls:
        cache.replay(acl_to_record(uuid.uuid4(), acl), 1)
    return cache


SOME = image(StandardAcl(Res.TOPIC, "t", Pat.LITERAL, "User:mallory", "*", Op.ALL, Perm.ALLOW),
             StandardAcl(Res.GROUP, "g", Pat.LITERAL, "User:mallory", "*", Op.ALL, Perm.ALLOW),
             StandardAcl(Res.CLUSTER, "kafka-cluster", Pat.LITERAL, "User:mallory", "*", Op.DESCRIBE, Perm.ALLOW))
NONE = image()

def served_ranges() -> dict[int, set[int]]:
    """Every (api, version) some listener of a controller, broker or combined node serves."""
    from pykraft.node.runtime.served_apis import COMBINED

    found: dict[int, set[int]] = {}
    for registry in (COMBINED.listeners, COMBINED.broker_listeners):
        for key, versions in registry:
            found.setdefault(int(key), set()).update(range(versions.min_version, versions.max_version + 1))
    return found


SERVED = served_ranges()
CASES = [(key, version) for key in sorted(RULES) for version in sorted(SERVED.get(key, ())) if kio_knows(key, version)]


def authorizer(cache: MetadataCache) -> RequestAuthorizer:
    return RequestAuthorizer(True, AuthorizerSettings(), lambda: cache, rules=RULES)


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{k}-v{v}" for k, v in CASES])
@EXAMPLES
@given(data=st.data())
def test_every_rule_answers_in_the_requests_own_shape(key, version, data):
    request = data.draw(message(request_class(key, version), hints=HINTS))
    header = headers.make_request_header(key, version, 7, "shapes")
    decoded = DecodedRequest(header=header, message=request, context=MALLORY)
    for cache in (NONE, SOME):
        for controller in (False, True):
            check = authorizer(cache).check(decoded, controller)
            if isinstance(check, Denied):
                answer = check.response
            elif isinstance(check, Narrowed):
                if check.request is not None:
                    assert type(check.request) is type(request)
                    encode_request(check.request, correlation_id=7, client_id="shapes")
                answer = check.finish(None if check.request is None else zero_entity(response_class(key, version), {}))
            else:
                continue
            if answer is not None:
                assert type(answer) is response_class(key, version)
                encode_response_body(7, answer)


def test_every_served_api_has_a_rule_of_its_own():
    """An API a node serves without a rule would fall to UNLISTED (CLUSTER_ACTION only): it must be given its check."""
    from pykraft.protocol.apis import ApiKey

    missing = sorted(ApiKey(key).name for key in SERVED if key not in RULES)
    assert missing == []


def test_an_api_without_a_rule_needs_cluster_action():
    from pykraft.node.runtime.authz_rules import UNLISTED

    rules = {key: rule for key, rule in RULES.items() if key != 65}  # DescribeTransactions unlisted
    request = request_class(65, 0)(transactional_ids=("tx",))
    decoded = DecodedRequest(header=headers.make_request_header(65, 0, 7, "t"), message=request, context=MALLORY)
    closed = RequestAuthorizer(True, AuthorizerSettings(), lambda: SOME, rules=rules, unlisted=UNLISTED)
    assert isinstance(closed.check(decoded, False), Denied)
    node = StandardAcl(Res.CLUSTER, "kafka-cluster", Pat.LITERAL, "User:mallory", "*", Op.CLUSTER_ACTION, Perm.ALLOW)
    trusted = RequestAuthorizer(True, AuthorizerSettings(), lambda: image(node), rules=rules, unlisted=UNLISTED)
    assert trusted.check(decoded, False) is None
