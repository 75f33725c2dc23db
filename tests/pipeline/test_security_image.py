"""The pipeline's image shows users (without credentials) and ACLs (replay.py's image_user and image_acl rows, the
controller's own replay behind them; no Spark)."""

from __future__ import annotations

import uuid

from kio.static.primitive import i8, i16, i32

from pykraft.controller.acl_model import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from pykraft.controller.acl_model import acl_to_record
from pykraft.pipeline.replay import InputRecord, replay_cluster
from pykraft.records.metadata import encode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.remove_access_control_entry_record import RemoveAccessControlEntryRecordV0
from pykraft.records.metadata.schema.user_scram_credential_record import UserScramCredentialRecordV0

SALT, STORED, SERVER = b"salt-of-alice", b"stored-key-of-alice", b"server-key-of-alice"


def rows(records: list[object], stop: int) -> list[dict]:
    inputs = [InputRecord(offset, offset, 1000 + offset, encode_metadata_record(r), False)
              for offset, r in enumerate(records)]
    return list(replay_cluster("c", inputs, stop))


def test_users_and_acls_at_an_offset_without_secrets():
    kept = StandardAcl(ResourceType.TOPIC, "orders-", PatternType.PREFIXED, "User:alice", "*", AclOperation.WRITE,
                       AclPermissionType.ALLOW)
    gone_id = uuid.uuid4()
    records = [
        FeatureLevelRecordV0(name="metadata.version", feature_level=i16(25)),
        UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=SALT, stored_key=STORED, server_key=SERVER,
                                    iterations=i32(8192)),
        acl_to_record(uuid.uuid4(), kept),
        acl_to_record(gone_id, StandardAcl(ResourceType.GROUP, "g", PatternType.LITERAL, "User:bob", "*",
                                           AclOperation.READ, AclPermissionType.DENY)),
        RemoveAccessControlEntryRecordV0(id=gone_id),
    ]
    at_end = [r for r in rows(records, 10) if r["kind"] in ("image_user", "image_acl")]
    assert [(r["kind"], r["name"]) for r in at_end] == [("image_user", "alice"), ("image_acl", "User:alice")]
    assert at_end[0]["detail"] == "SCRAM-SHA-256=iterations=8192"
    assert at_end[1]["state"] == "ALLOW" and "name=orders-, patternType=PREFIXED" in at_end[1]["detail"]
    text = repr(at_end)
    assert not any(secret.decode() in text for secret in (SALT, STORED, SERVER))
    before_removal = [r for r in rows(records, 3) if r["kind"] == "image_acl"]
    assert sorted(r["name"] for r in before_removal) == ["User:alice", "User:bob"]
