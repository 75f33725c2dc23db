"""`pykraft dump-log` on the sample log, on damaged files, and through the real console script."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.cli.sample_log import build_sample_log, write_sample_log
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.control import decode_control_record
from pykraft.records.metadata import decode_metadata_record, metadata_record_envelope
from pykraft.records.metadata.json_view import message_to_dict

runner = CliRunner()


@pytest.fixture()
def sample(tmp_path: Path) -> list[Path]:
    return write_sample_log(tmp_path / "sample")


def run(*args: str):
    return runner.invoke(app, ["dump-log", *args])


def expected_records(path: Path) -> list[dict]:
    """What was written, decoded independently of dump-log: (offset, kind, fields)."""
    out = []
    for batch in iter_batches(path.read_bytes()):
        for record in batch.records():
            if batch.is_control:
                control = decode_control_record(record)
                out.append({"offset": record.offset, "control": message_to_dict(control.message)})
            else:
                envelope = metadata_record_envelope(decode_metadata_record(record.value))
                out.append({"offset": record.offset, "metadata": envelope})
    return out


def test_json_output_matches_what_was_written(sample):
    for path in sample:
        result = run("--json", str(path))
        assert result.exit_code == 0, result.output
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        expected = expected_records(path)
        assert len(lines) == len(expected) > 5
        for line, want in zip(lines, expected):
            assert line["file"] == str(path) and line["offset"] == want["offset"] and line["crcValid"] is True
            if "control" in want:
                assert line["isControl"] is True
                assert {k: v for k, v in line["control"].items() if k != "type"} == want["control"]
            else:
                meta = want["metadata"]
                assert line["metadata"] == {"type": meta["type"], "version": meta["version"], **meta["data"]}


def test_json_output_names_every_record_type_of_the_startup_sequence(sample):
    result = run("--json", str(sample[0]))
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    types = {line.get("control", line.get("metadata"))["type"] for line in lines}
    assert types >= {
        "LeaderChange", "KRaftVersion", "KRaftVoters", "FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD",
        "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "TOPIC_RECORD", "CONFIG_RECORD",
        "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "NO_OP_RECORD",
    }
    assert [line["offset"] for line in lines] == list(range(len(lines)))


def test_text_output_follows_kafkas_dump_format(sample):
    result = run(str(sample[0]))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"Dumping {sample[0]}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1")
    assert "isControl: true" in lines[2] and lines[2].endswith("isvalid: true")
    assert lines[3].startswith("| offset: 0 CreateTime: ") and " LeaderChange: {\"version\":0,\"leaderId\":1," in lines[3]
    assert any('payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version"' in l for l in lines)


def test_snapshot_preamble_names_end_offset_and_epoch(sample):
    result = run(str(sample[1]))
    assert result.stdout.splitlines()[1] == "Snapshot end offset: 13, epoch: 1"
    # Kafka's DumpLogSegments: "SnapshotHeader {...}" without a colon (only LeaderChange has one)
    assert " SnapshotHeader {\"version\":0," in result.stdout and " SnapshotFooter {\"version\":0" in result.stdout
    assert "SnapshotHeader:" not in result.stdout


@pytest.mark.parametrize("into_batch", [10, 40])  # inside the fourth batch's header, or its records
def test_truncated_file_prints_what_it_read_then_names_the_position(sample, tmp_path, into_batch):
    data = sample[0].read_bytes()
    sizes = [b.size_in_bytes for b in iter_batches(data)]
    cut_at = sum(sizes[:3]) + into_batch
    damaged = tmp_path / "00000000000000000000.log"
    damaged.write_bytes(data[:cut_at])
    result = run("--json", str(damaged))
    assert result.exit_code == 1
    printed = [json.loads(line)["baseOffset"] for line in result.stdout.splitlines()]
    assert sorted(set(printed)) == [b.base_offset for b in list(iter_batches(data))[:3]]
    assert f"byte position {sum(sizes[:3])}" in result.stderr
    assert "truncated batch" in result.stderr


def test_crc_mismatch_is_shown_and_reported(sample, tmp_path):
    data = bytearray(sample[0].read_bytes())
    position = next(iter_batches(bytes(data))).size_in_bytes  # where the second batch starts
    data[position + 70] ^= 0x01  # a byte of the second batch's record, under its CRC
    damaged = tmp_path / "00000000000000000000.log"
    damaged.write_bytes(bytes(data))
    result = run(str(damaged))
    assert result.exit_code == 1
    assert f"position: {position} " in result.stdout and "isvalid: false" in result.stdout
    assert f"CRC mismatch in the batch at byte position {position} (base offset 3)" in result.stderr
    # batches after the damaged one are still printed
    assert "NO_OP_RECORD" in result.stdout


def test_garbage_file_reports_the_first_bad_byte(tmp_path):
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"\x00" * 8 + struct.pack(">i", 5) + b"\x00" * 40)
    result = run(str(junk))
    assert result.exit_code == 1
    assert "byte position 0" in result.stderr and "below the minimum" in result.stderr


def test_undecodable_metadata_value_is_printed_as_base64_without_failing(tmp_path):
    # in a metadata log directory (elsewhere such a file is a user topic's segment, dumped as data)
    path = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(encode_batch([SimpleRecord(b"\x01\x63\x00")], base_offset=0, partition_leader_epoch=1, timestamp_ms=0))
    result = run("--json", str(path))
    assert result.exit_code == 0
    (line,) = [json.loads(l) for l in result.stdout.splitlines()]
    assert line["value"] == "AWMA" and "99" in line["error"]


def test_missing_file_is_a_one_line_error(tmp_path):
    result = run(str(tmp_path / "nope.log"))
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "nope.log" in result.stderr


def test_no_file_is_a_usage_error():
    result = run()
    assert result.exit_code == 2


def test_empty_file_dumps_nothing_and_succeeds(tmp_path):
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    result = run(str(empty))
    assert result.exit_code == 0 and "baseOffset" not in result.stdout


def test_kafka_style_files_option(sample):
    result = run("--files", ",".join(str(p) for p in sample), "--cluster-metadata-decoder")
    assert result.exit_code == 0 and result.stdout.count("Dumping ") == 2


def test_sample_log_is_deterministic():
    assert build_sample_log()[0] == build_sample_log()[0]


def test_console_script_exit_codes(sample, tmp_path):
    exe = str(Path(sys.executable).parent / "pykraft")
    ok = subprocess.run([exe, "dump-log", str(sample[0])], capture_output=True, text=True)
    assert ok.returncode == 0 and "NO_OP_RECORD" in ok.stdout
    cut = tmp_path / "00000000000000000000.log"
    cut.write_bytes(sample[0].read_bytes()[:-5])
    bad = subprocess.run([exe, "dump-log", str(cut)], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.startswith("pykraft dump-log: ")


def test_sample_log_refuses_a_formatted_log_directory(tmp_path):
    (tmp_path / "meta.properties").write_text("version=1\n")
    result = runner.invoke(app, ["sample-log", "--output", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.startswith("pykraft sample-log: ") and "meta.properties" in result.stderr
    assert not (tmp_path / "__cluster_metadata-0").exists()


def test_sample_log_writes_a_log_directory_the_storage_layer_reopens(tmp_path):
    from pykraft.storage import open_file_log

    result = runner.invoke(app, ["sample-log", "--output", str(tmp_path)])
    assert result.exit_code == 0 and result.stdout.count("wrote ") == 2
    rerun = runner.invoke(app, ["sample-log", "--output", str(tmp_path)])
    assert rerun.exit_code == 0
    log, report = open_file_log(str(tmp_path))
    try:
        assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (0, 20, 1)
        assert (log.latest_snapshot_id().offset, log.latest_snapshot_id().epoch) == (13, 1)
    finally:
        log.close()


def test_index_and_time_index_files_are_dumped_as_kafka_dumps_them(tmp_path):
    base = 1000
    index = tmp_path / f"{base:020d}.index"
    index.write_bytes(struct.pack(">ii", 5, 0) + struct.pack(">ii", 40, 4096) + bytes(8 * 3))  # preallocated tail
    time_index = tmp_path / f"{base:020d}.timeindex"
    time_index.write_bytes(struct.pack(">qi", 1_700_000_000_000, 5) + struct.pack(">qi", 1_700_000_000_500, 40))
    empty = tmp_path / f"{0:020d}.index"
    empty.write_bytes(b"")
    result = run(str(index), str(time_index), str(empty))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Dumping {index}", "offset: 1005 position: 0", "offset: 1040 position: 4096",
        f"Dumping {time_index}", "timestamp: 1700000000000 offset: 1005", "timestamp: 1700000000500 offset: 1040",
        f"Dumping {empty}", f"{empty} is empty."]
    torn = tmp_path / f"{base:020d}.timeindex"
    torn.write_bytes(struct.pack(">qi", 1, 5) + b"\x00\x01")
    result = run(str(torn))
    assert result.exit_code == 1 and "2 trailing bytes are not a whole 12-byte index entry" in result.stderr


def test_scram_secrets_and_sensitive_configs_are_redacted(tmp_path):
    """Kafka's RecordRedactor: a SCRAM credential's salt and keys and a JAAS config's value never printed."""
    from pykraft.records.metadata import encode_metadata_record
    from pykraft.records.metadata.schema.config_record import ConfigRecordV0
    from pykraft.records.metadata.schema.user_scram_credential_record import UserScramCredentialRecordV0

    salt, stored, server = b"the-salt", b"stored-key-bytes", b"server-key-bytes"
    records = [UserScramCredentialRecordV0(name="alice", mechanism=2, salt=salt, stored_key=stored,
                                           server_key=server, iterations=8192),
               ConfigRecordV0(resource_type=4, resource_name="", name="listener.name.x.plain.sasl.jaas.config",
                              value='PlainLoginModule required user_alice="alice-secret";')]
    path = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(encode_batch([SimpleRecord(value=encode_metadata_record(r)) for r in records], base_offset=0,
                                  partition_leader_epoch=1, timestamp_ms=0))
    import base64

    secrets = [base64.b64encode(v).decode() for v in (salt, stored, server)] + ["alice-secret"]
    for args in ((), ("--json",)):
        result = run(*args, str(path))
        assert result.exit_code == 0, result.output
        assert "(redacted)" in result.output and "alice" in result.output and "8192" in result.output
        assert not any(secret in result.output for secret in secrets)
