"""The security APIs a node answers from its own image, and the SASL APIs after authentication:

- DescribeAcls (brokers and controllers, Kafka's AclApis): the ACLs of the node's metadata image matching the filter;
  SECURITY_DISABLED ("No Authorizer is configured on the broker") without `authorizer.class.name`. CreateAcls and
  DeleteAcls are the active controller's (a broker forwards them); a controller without an authorizer answers them
  SECURITY_DISABLED (`acl_writes`).
- DescribeUserScramCredentials (brokers, from the SCRAM image: user names and iterations, never salts or keys).
- SaslHandshake and SaslAuthenticate reaching a request handler (on a connection that is not authenticating: a
  PLAINTEXT listener, or after authentication without a session to renew) are answered ILLEGAL_SASL_STATE, as
  Kafka's KafkaApis and ControllerApis answer them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pykraft.controller.acl_requests import describe_acls, security_disabled
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode

from pykraft.protocol.core_versions import to_request_version

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

__all__ = ["ACL_WRITE_APIS", "acl_writes", "security_handlers"]

Handler = Callable[["DecodedRequest"], Awaitable[Any]]
# The controller's writes (HOST_APIS), forwarded by brokers.
ACL_WRITE_APIS = {ApiKey.CREATE_ACLS: (1, 3), ApiKey.DELETE_ACLS: (1, 3), ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0)}


def _illegal_sasl_state(decoded: DecodedRequest) -> Any:
    text = (None if decoded.api_key == ApiKey.SASL_HANDSHAKE
            else "SaslAuthenticate request received after successful authentication")
    return error_response_for(decoded.message, ErrorCode.ILLEGAL_SASL_STATE, error_message=text)


def security_handlers(image_of: Callable[[], Any], authorizer_enabled: bool, *, broker: bool) -> dict[int, Handler]:
    """The handlers of served_apis.SASL_APIS, IMAGE_SECURITY_APIS (and BROKER_SECURITY_APIS on a broker) over `image_of()`."""
    async def sasl(decoded: DecodedRequest) -> Any:
        return _illegal_sasl_state(decoded)

    async def acls(decoded: DecodedRequest) -> Any:
        message = decoded.message
        answer = (describe_acls(image_of().acls, message) if authorizer_enabled
                  else security_disabled(int(ApiKey.DESCRIBE_ACLS), message))
        return to_request_version(answer, decoded.api_version)

    async def scram_users(decoded: DecodedRequest) -> Any:
        return to_request_version(image_of().scram.describe(decoded.message), decoded.api_version)

    handlers: dict[int, Handler] = {int(ApiKey.SASL_HANDSHAKE): sasl, int(ApiKey.SASL_AUTHENTICATE): sasl,
                                    int(ApiKey.DESCRIBE_ACLS): acls}
    if broker:
        handlers[int(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)] = scram_users
    return handlers


def acl_writes(inner: Handler, authorizer_enabled: bool) -> Handler:
    """CreateAcls / DeleteAcls on a controller: SECURITY_DISABLED without an authorizer, else `inner`."""
    async def handle(decoded: DecodedRequest) -> Any:
        key = int(decoded.api_key)
        if not authorizer_enabled and key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
            return to_request_version(security_disabled(key, decoded.message), decoded.api_version)
        return await inner(decoded)
    return handle
