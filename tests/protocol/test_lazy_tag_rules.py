"""The codec's walk loads a message's other versions only when a tag its version does not know arrives
(wire_check.DeferredTagRules, issue 34: idle RSS): a Fetch v17 decodes with kio's v17 modules alone, and the
"Tag N is not valid for this version" verdict, which needs the other versions, is still Kafka's once they load.
Run in a fresh interpreter: this test process has imported every schema module already."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from pykraft.protocol.wire_check import DeferredTagRules, TagRules, tag_rules

SCRIPT = textwrap.dedent("""
    import struct, sys
    from pykraft.protocol.apis import KRAFT_NODE_APIS
    from pykraft.protocol.codec import decode_request
    from pykraft.protocol.errors import MalformedRequestError
    from pykraft.protocol.wire_check import uvarint_bytes as uvarint

    def fetch_v17(partition_tags):
        partition = struct.pack(">iiqiqi", 0, -1, 0, -1, -1, 100) + partition_tags
        topic = bytes(16) + uvarint(2) + partition + b"\\x00"
        fetch = struct.pack(">iii", 500, 1, 1000) + b"\\x00" + struct.pack(">ii", 0, -1)
        tail = uvarint(1) + uvarint(1) + b"\\x00"
        return struct.pack(">hhih", 1, 17, 5, -1) + b"\\x00" + fetch + uvarint(2) + topic + tail

    def fetch_versions():
        return sorted(m for m in sys.modules if m.startswith("kio.schema.fetch.v") and m.count(".") == 3)

    decoded = decode_request(fetch_v17(b"\\x00"), KRAFT_NODE_APIS)
    print(decoded.message.topics[0].partitions[0].partition_max_bytes, fetch_versions())
    decoded = decode_request(fetch_v17(uvarint(1) + uvarint(90) + uvarint(2) + b"ab"), KRAFT_NODE_APIS)
    print("unknown tag skipped", len(fetch_versions()))
    try:
        decode_request(fetch_v17(uvarint(1) + uvarint(1) + uvarint(8) + bytes(8)), KRAFT_NODE_APIS)
    except MalformedRequestError as exc:
        print("refused:", "tag 1 is not valid for this version" in str(exc))
""")


def test_a_message_decodes_without_its_other_versions_until_a_tag_needs_them() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "100 ['kio.schema.fetch.v17']"
    # Tag 90 is in no version: skipped as Kafka skips it; the family was loaded to learn that (15 versions)
    assert lines[1] == "unknown tag skipped 15"
    assert lines[2] == "refused: True"  # HighWatermark (tag 1) exists from v18 on


def test_deferred_rules_resolve_once_and_agree_with_the_eager_rules() -> None:
    from kio.index import load_request_schema

    calls: list[int] = []
    family = [load_request_schema(1, version) for version in range(4, 19)]
    request = load_request_schema(1, 17)

    def resolve() -> TagRules:
        calls.append(1)
        return tag_rules(request, family)

    deferred = DeferredTagRules(resolve)
    nested = deferred.of("topics").of("partitions")
    assert calls == []  # building the path loads nothing
    eager = tag_rules(request, family)
    assert nested.invalid == eager.of("topics").of("partitions").invalid == frozenset({1})
    assert deferred.invalid == eager.invalid
    assert calls == [1]
