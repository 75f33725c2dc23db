"""SCRAM credentials in the metadata image (Kafka's `ScramControlManager` on the controller and `ScramImage` on every
node): replayed from UserScramCredentialRecord / RemoveUserScramCredentialRecord, changed by
AlterUserScramCredentials on the active controller, described by DescribeUserScramCredentials, and looked up by the
SASL/SCRAM server of every listener.

AlterUserScramCredentials, as Kafka's `alterCredentials` checks it, per user:
- a user named twice in one request (deletion or upsertion) -> DUPLICATE_RESOURCE, nothing written for that user;
- metadata.version below 3.5-IV2 (level 11) -> UNSUPPORTED_VERSION;
- an empty name -> UNACCEPTABLE_CREDENTIAL, an unknown mechanism -> UNSUPPORTED_SASL_MECHANISM;
- an upsertion with fewer than 4096 or more than 16384 iterations -> UNACCEPTABLE_CREDENTIAL ("Too few iterations",
  "Too many iterations");
- a deletion of a credential that does not exist -> RESOURCE_NOT_FOUND.
An accepted upsertion is stored as Kafka stores it: the salt, StoredKey = H(HMAC(salted password, "Client Key")) and
ServerKey = HMAC(salted password, "Server Key"), never the salted password itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kio.static.primitive import i8, i32

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.scram import credential_from_salted, mechanism_by_type
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.remove_user_scram_credential_record import RemoveUserScramCredentialRecordV0
from pykraft.records.metadata.schema.user_scram_credential_record import UserScramCredentialRecordV0

from .result import ControllerResult

alter_rs = schema_module("kio.schema.alter_user_scram_credentials.v0.response")
describe_rs = schema_module("kio.schema.describe_user_scram_credentials.v0.response")

__all__ = ["SCRAM_RECORD", "REMOVE_SCRAM_RECORD", "ScramControl", "ScramCredential", "ScramReplayError"]

SCRAM_RECORD = 11
REMOVE_SCRAM_RECORD = 22
SCRAM_MIN_METADATA_VERSION = 11  # IBP_3_5_IV2: MetadataVersion.isScramSupported
DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_UNKNOWN_USER = "Attempt to describe a user credential that does not exist: "


class ScramReplayError(Exception):
    """A removal of a credential the image does not hold."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # never the keys, in a log line or a traceback (Kafka prints [hidden])
        return "ScramCredential(salt=[hidden], stored_key=[hidden], server_key=[hidden], iterations=[hidden])"


class ScramControl:
    def __init__(self) -> None:
        self.credentials: dict[tuple[str, int], ScramCredential] = {}  # (user, mechanism type) -> credential

    # ---- replay ------------------------------------------------------------------------------------------------
    def replay(self, record: Any) -> None:
        key = int(record.__api_key__)
        if key == SCRAM_RECORD:
            self.credentials[(record.name, int(record.mechanism))] = ScramCredential(
                bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), int(record.iterations))
        elif key == REMOVE_SCRAM_RECORD:
            if self.credentials.pop((record.name, int(record.mechanism)), None) is None:
                raise ScramReplayError(f"Unable to find credential to delete: {record.name} mechanism "
                                       f"{int(record.mechanism)}")

    def snapshot_records(self) -> Iterator[Any]:
        for (name, mechanism), credential in self.credentials.items():
            yield UserScramCredentialRecordV0(name=name, mechanism=i8(mechanism), salt=credential.salt,
                                              stored_key=credential.stored_key, server_key=credential.server_key,
                                              iterations=i32(credential.iterations))

    def credential(self, user: str, mechanism_type: int) -> ScramCredential | None:
        return self.credentials.get((user, mechanism_type))

    def users(self) -> dict[str, list[tuple[int, int]]]:
        """user -> [(mechanism type, iterations)] sorted: what may be shown of a credential (no salt, no keys)."""
        found: dict[str, list[tuple[int, int]]] = {}
        for (name, mechanism), credential in sorted(self.credentials.items()):
            found.setdefault(name, []).append((mechanism, credential.iterations))
        return found

    # ---- DescribeUserScramCredentials (any node, from its image) -----------------------------------------------
    def describe(self, request: Any) -> Any:
        users = self.users()
        asked = [u.name for u in request.users] if request.users else list(users)
        counts: dict[str, int] = {}
        for name in asked:
            counts[name] = counts.get(name, 0) + 1
        results = []
        for name, count in counts.items():
            if count > 1:
                results.append(_described(name, ErrorCode.DUPLICATE_RESOURCE, DESCRIBE_DUPLICATE_USER + name))
            elif name not in users:
                results.append(_described(name, ErrorCode.RESOURCE_NOT_FOUND, DESCRIBE_UNKNOWN_USER + name))
            else:
                infos = tuple(describe_rs.CredentialInfo(mechanism=i8(m), iterations=i32(i)) for m, i in users[name])
                results.append(_described(name, ErrorCode.NONE, None, infos))
        return describe_rs.DescribeUserScramCredentialsResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None, results=tuple(results))

    # ---- AlterUserScramCredentials (the active controller) ----------------------------------------------------
    def alter(self, request: Any, metadata_version: int | None) -> ControllerResult:
        supported = metadata_version is not None and metadata_version >= SCRAM_MIN_METADATA_VERSION
        errors: dict[str, tuple[ErrorCode, str]] = {}
        deletions: dict[str, Any] = {}
        upsertions: dict[str, Any] = {}
        for change, is_deletion in [*((d, True) for d in request.deletions), *((u, False) for u in request.upsertions)]:
            name = change.name
            if name in errors:
                continue
            if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
                errors[name] = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the "
                                                              "same request")
                continue
            problem = self._check(change, is_deletion, supported)
            if problem is not None:
                errors[name] = problem
            elif is_deletion:
                deletions[name] = change
            else:
                upsertions[name] = change
        records: list[Any] = [RemoveUserScramCredentialRecordV0(name=d.name, mechanism=d.mechanism)
                              for d in deletions.values()]
        for upsertion in upsertions.values():
            mechanism = mechanism_by_type(upsertion.mechanism)
            assert mechanism is not None  # checked
            stored, server = credential_from_salted(mechanism, bytes(upsertion.salted_password))
            records.append(UserScramCredentialRecordV0(name=upsertion.name, mechanism=upsertion.mechanism,
                                                       salt=bytes(upsertion.salt), stored_key=stored,
                                                       server_key=server, iterations=upsertion.iterations))
        results = [_altered(name, ErrorCode.NONE, None) for name in [*deletions, *upsertions]]
        results += [_altered(name, error, text) for name, (error, text) in errors.items()]
        return ControllerResult(tuple(records), alter_rs.AlterUserScramCredentialsResponse(
            throttle_time=ZERO_THROTTLE, results=tuple(results)))

    def _check(self, change: Any, is_deletion: bool, supported: bool) -> tuple[ErrorCode, str] | None:
        if not supported:
            return ErrorCode.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM"
        if not change.name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        mechanism = mechanism_by_type(change.mechanism)
        if mechanism is None:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if is_deletion:
            if (change.name, mechanism.type) not in self.credentials:
                return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            return None
        if int(change.iterations) < mechanism.min_iterations:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if int(change.iterations) > mechanism.max_iterations:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        return None


def _altered(user: str, error: ErrorCode, text: str | None) -> Any:
    return alter_rs.AlterUserScramCredentialsResult(user=user, error_code=error, error_message=text)


def _described(user: str, error: ErrorCode, text: str | None, infos: tuple[Any, ...] = ()) -> Any:
    return describe_rs.DescribeUserScramCredentialsResult(user=user, error_code=error, error_message=text,
                                                          credential_infos=infos)
