"""`pykraft storage format|info|random-uuid` through the command line: files that storage reads back, Kafka's
messages, and a one-line refusal for every bad flag or file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.schema.voters_record.v0 import VotersRecord

from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, VoterSet
from pykraft.records.metadata import FeatureLevelRecordV0
from pykraft.records.uuids import kafka_str_to_uuid
from pykraft.storage import open_file_log, read_meta_properties
from pykraft.storage.files import PARTITION_DIR

from .storage_helpers import CLUSTER_ID, decode_file, storage, write_config

DIR_1 = "4Y9Vt1P9RzSfnFt5E_GAJw"
DIR_2 = "IyvZs8vRRwKb4bi2fEXe5w"
DIR_3 = "bIjHUt-sRqyBgkRA0lWSXQ"


def features(path: Path) -> dict[str, int]:
    records = decode_file(path)
    assert isinstance(records[0][1], SnapshotHeaderRecord) and isinstance(records[-1][1], SnapshotFooterRecord)
    return {r.name: int(r.feature_level) for control, r in records if isinstance(r, FeatureLevelRecordV0)}


def bootstrap_voters(metadata_dir: Path) -> VoterSet:
    """Open the directory the way a node does and read the voters of the bootstrap snapshot."""
    log, _ = open_file_log(str(metadata_dir))
    with log:
        assert log.latest_snapshot_id() == BOOTSTRAP_SNAPSHOT_ID
        assert log.end_offset() == 0
    records = decode_file(metadata_dir / PARTITION_DIR / "00000000000000000000-0000000000.checkpoint")
    messages = [m for _, m in records]
    assert [type(m) for m in messages] == [SnapshotHeaderRecord, KRaftVersionRecord, VotersRecord, SnapshotFooterRecord]
    assert int(messages[1].k_raft_version) == 1
    voters = VoterSet.from_voters_record(messages[2])
    assert voters is not None
    return voters


# ---- format ---------------------------------------------------------------------------------------------
def test_static_quorum_controller(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("a", "b"))
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Formatting metadata directory {tmp_path / 'a'} with metadata.version 4.1-IV1.",
        f"Formatting data directory {tmp_path / 'b'} with metadata.version 4.1-IV1.",
    ]
    metas = [read_meta_properties(str(tmp_path / d)) for d in ("a", "b")]
    assert [(m.cluster_id, m.node_id, m.version) for m in metas] == [(CLUSTER_ID, 1, 1)] * 2
    assert metas[0].directory_id is not None and metas[1].directory_id is not None
    assert metas[0].directory_id != metas[1].directory_id
    assert features(tmp_path / "a" / "bootstrap.checkpoint") == {"metadata.version": 27, "transaction.version": 1,
                                                                 "group.version": 1}
    assert not (tmp_path / "b" / "bootstrap.checkpoint").exists()
    assert not (tmp_path / "a" / PARTITION_DIR).exists()  # no raft bootstrap snapshot for a static quorum


def test_standalone(tmp_path):
    config = write_config(tmp_path, dirs=("a",), metadata_dir="meta")
    result = storage("format", "--config", str(config), "--cluster-id", CLUSTER_ID, "--standalone")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Formatting data directory {tmp_path / 'a'} with metadata.version 4.1-IV1.",
        f"Formatting dynamic metadata voter directory {tmp_path / 'meta'} with metadata.version 4.1-IV1.",
    ]
    meta = read_meta_properties(str(tmp_path / "meta"))
    voters = bootstrap_voters(tmp_path / "meta")
    assert voters.keys() == {ReplicaKey(1, meta.directory_id)}
    assert voters.endpoints_of(1) == Endpoints.of([Endpoint("CONTROLLER", "127.0.0.1", 9093)])
    assert features(tmp_path / "meta" / "bootstrap.checkpoint") == {"metadata.version": 27, "kraft.version": 1, "transaction.version": 1,
                                                                 "group.version": 1}


def test_initial_controllers_uses_the_given_directory_id(tmp_path):
    config = write_config(tmp_path, node_id=2)
    value = f"1@h1:9093:{DIR_1},2@[::1]:9094:{DIR_2},3@h3:9095:{DIR_3}"
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID, "-I", value, "-r", "3.9")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Formatting dynamic metadata voter directory {tmp_path / 'logs'} with metadata.version 3.9-IV0.\n"
    assert read_meta_properties(str(tmp_path / "logs")).directory_id == kafka_str_to_uuid(DIR_2)
    voters = bootstrap_voters(tmp_path / "logs")
    assert voters.keys() == {
        ReplicaKey(1, kafka_str_to_uuid(DIR_1)), ReplicaKey(2, kafka_str_to_uuid(DIR_2)), ReplicaKey(3, kafka_str_to_uuid(DIR_3)),
    }
    assert voters.endpoints_of(2) == Endpoints.of([Endpoint("CONTROLLER", "::1", 9094)])
    assert features(tmp_path / "logs" / "bootstrap.checkpoint") == {"metadata.version": 21, "kraft.version": 1}


def test_initial_controllers_without_this_node(tmp_path):
    config = write_config(tmp_path, node_id=4)
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID, "-I", f"1@h1:9093:{DIR_1}")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Formatting dynamic metadata directory ")
    assert read_meta_properties(str(tmp_path / "logs")).directory_id != kafka_str_to_uuid(DIR_1)
    assert bootstrap_voters(tmp_path / "logs").ids() == {1}


def test_no_initial_controllers(tmp_path):
    config = write_config(tmp_path)
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID, "-N", "--feature", "metadata.version=25")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"Formatting metadata directory {tmp_path / 'logs'} with metadata.version 4.0-IV3."]
    assert features(tmp_path / "logs" / "bootstrap.checkpoint") == {"metadata.version": 25, "kraft.version": 1, "transaction.version": 1,
                                                                 "group.version": 1}
    assert not (tmp_path / "logs" / PARTITION_DIR).exists()


def test_broker(tmp_path):
    config = write_config(tmp_path, roles="broker", node_id=4, dirs=("a", "b"))
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID)
    assert result.exit_code == 0, result.output
    assert {read_meta_properties(str(tmp_path / d)).node_id for d in ("a", "b")} == {4}
    assert features(tmp_path / "a" / "bootstrap.checkpoint") == {"metadata.version": 27, "transaction.version": 1,
                                                                 "group.version": 1}


def test_ignore_formatted_formats_the_others(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("a",))
    assert storage("format", "-c", str(config), "-t", CLUSTER_ID).exit_code == 0
    before = (tmp_path / "a" / "meta.properties").read_bytes()
    write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("a", "b"))
    refused = storage("format", "-c", str(config), "-t", CLUSTER_ID)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr == (
        f"pykraft storage: Log directory {tmp_path / 'a'} is already formatted. Use --ignore-formatted to ignore this "
        "directory and format the others.\n"
    )
    assert not (tmp_path / "b").exists()
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID, "-g")
    assert result.exit_code == 0
    assert result.stdout == f"Formatting data directory {tmp_path / 'b'} with metadata.version 4.1-IV1.\n"
    assert (tmp_path / "a" / "meta.properties").read_bytes() == before
    again = storage("format", "-c", str(config), "-t", CLUSTER_ID, "--ignore-formatted")
    assert again.exit_code == 0 and again.stdout == "All of the log directories are already formatted.\n"


def refusal(tmp_path: Path, *args: str, config: Path | None = None) -> str:
    config = config or write_config(tmp_path)
    result = storage("format", "-c", str(config), *args)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pykraft storage: ")
    assert not (tmp_path / "logs" / "meta.properties").exists()
    return lines[0].removeprefix("pykraft storage: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-t", CLUSTER_ID, "-s", "-N"),
         "only one of --standalone, --initial-controllers and --no-initial-controllers may be given, not --standalone "
         "and --no-initial-controllers"),
        (("-t", CLUSTER_ID, "-s", "-I", f"1@h:1:{DIR_1}"), "only one of --standalone, --initial-controllers and "
         "--no-initial-controllers may be given, not --standalone and --initial-controllers"),
        (("-t", CLUSTER_ID), "Because controller.quorum.voters is not set on this controller, you must specify one of "
         "the following: --standalone, --initial-controllers, or --no-initial-controllers."),
        (("-t", CLUSTER_ID, "-s", "-f", "kraft.version=0"), "Cannot set kraft.version to 0 if one of the flags "
         "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, "
         "try removing the --feature flag for kraft.version."),
        (("-t", CLUSTER_ID, "-s", "-r", "3.8"), "kraft.version 1 (dynamic controller quorum) requires metadata.version "
         "3.9-IV0 or later, not 3.8-IV0"),
        (("-t", "not-a-uuid", "-s"), "cluster id 'not-a-uuid' is not a valid Kafka uuid (22 characters of URL-safe "
         "base64; make one with `pykraft storage random-uuid`)"),
        (("-t", CLUSTER_ID + "==", "-s"), f"cluster id '{CLUSTER_ID}==' is not a valid Kafka uuid (22 characters of "
         "URL-safe base64; make one with `pykraft storage random-uuid`)"),
        (("-t", CLUSTER_ID, "-s", "-r", "2.8"), "unknown release version '2.8': supported metadata.version values are "
         "3.3-IV3 to 4.1-IV1"),
        (("-t", CLUSTER_ID, "-s", "-r", "4.1", "-f", "metadata.version=27"),
         "give the metadata.version with either --release-version or --feature, not both"),
        (("-t", CLUSTER_ID, "-s", "-f", "metadata.version=99"), "unsupported metadata.version level 99: supported "
         "levels are 7 (3.3-IV3) to 27 (4.1-IV1)"),
        (("-t", CLUSTER_ID, "-s", "-f", "share.version=1"), "unsupported feature: share.version. Supported features "
         "are: group.version, kraft.version, metadata.version, transaction.version"),
        (("-t", CLUSTER_ID, "-s", "-f", "transaction.version=2"), "unsupported transaction.version level 2: "
         "supported levels are 0 to 1"),
        (("-t", CLUSTER_ID, "-s", "-f", "group.version=2"), "unsupported group.version level 2: supported levels "
         "are 0 and 1"),
        (("-t", CLUSTER_ID, "-s", "-f", "kraft.version"), "cannot parse --feature 'kraft.version': expected name=level"),
        (("-t", CLUSTER_ID, "-s", "-f", "kraft.version=x"),
         "cannot parse --feature 'kraft.version=x': the level must be an integer"),
        (("-t", CLUSTER_ID, "-s", "-f", "kraft.version=2"), "unsupported kraft.version level 2: supported levels are 0 and 1"),
        (("-t", CLUSTER_ID, "-I", "1@h:1"), "cannot parse initial controller '1@h:1': no directory id after the port"),
        (("-t", CLUSTER_ID, "-I", "h:1:" + DIR_1),
         f"cannot parse initial controller 'h:1:{DIR_1}': no @ found (expected id@host:port:directoryId)"),
        (("-t", CLUSTER_ID, "-I", f"1@h:1:{DIR_1},1@h:2:{DIR_2}"),
         "--initial-controllers: node id 1 was specified more than once"),
        (("-t", CLUSTER_ID, "-I", f"1@h:1:{DIR_1},2@h:2:{DIR_1}"),
         "--initial-controllers: directory id of node 2 was specified more than once"),
        (("-t", CLUSTER_ID, "-I", "1@h:99999:" + DIR_1),
         f"cannot parse initial controller '1@h:99999:{DIR_1}': port 99999 is out of range"),
        (("-t", CLUSTER_ID, "-I", "1@h:1:nope"), "cannot parse initial controller '1@h:1:nope': 'nope' is not a directory id"),
        (("-t", CLUSTER_ID, "-I", f"1@[::1:1:{DIR_1}"),
         f"cannot parse initial controller '1@[::1:1:{DIR_1}': '[' without a closing ']'"),
    ],
)
def test_refusals(tmp_path, args, message):
    assert refusal(tmp_path, *args) == message


def test_kraft_version_1_needs_a_quorum_flag(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093")
    assert refusal(tmp_path, "-t", CLUSTER_ID, "-f", "kraft.version=1", config=config) == (
        "Cannot set kraft.version to 1 unless one of the flags --standalone, --initial-controllers, or "
        "--no-initial-controllers is used. For dynamic controllers support, try using one of those flags."
    )


def test_standalone_with_static_voters(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093")
    assert refusal(tmp_path, "-t", CLUSTER_ID, "-s", config=config) == (
        "you cannot set controller.quorum.voters and format the node with --standalone; for a dynamic quorum remove "
        "controller.quorum.voters and set controller.quorum.bootstrap.servers instead"
    )


def test_standalone_on_a_broker(tmp_path):
    config = write_config(tmp_path, roles="broker", node_id=4)
    assert refusal(tmp_path, "-t", CLUSTER_ID, "-s", config=config) == (
        "you cannot use --standalone on a broker node: only controllers are initial voters"
    )


def test_bad_config_file(tmp_path):
    missing = tmp_path / "missing.properties"
    assert refusal(tmp_path, "-t", CLUSTER_ID, config=missing) == (
        f"{missing}: cannot read the configuration file: No such file or directory"
    )
    bad = tmp_path / "bad.properties"
    bad.write_text("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://h:1\ncontroller.listener.names=CONTROLLER\n")
    assert refusal(tmp_path, "-t", CLUSTER_ID, config=bad) == (
        f"{bad}: neither controller.quorum.voters nor controller.quorum.bootstrap.servers is set: set one of them so "
        "this node can find the controllers"
    )


def test_unwritable_directory(tmp_path):
    # A regular file where the directory's parent should be: fails for every user, root included.
    (tmp_path / "ro").write_text("not a directory")
    config = write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("ro/logs",))
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID)
    assert result.exit_code == 1
    assert result.stderr == f"pykraft storage: cannot format: {tmp_path / 'ro' / 'logs'}: Not a directory\n"


def test_typer_usage_errors_exit_2(tmp_path):
    config = write_config(tmp_path)
    assert storage("format", "-c", str(config)).exit_code == 2  # --cluster-id is required
    assert storage("format", "-c", str(config), "-t", CLUSTER_ID, "--bogus").exit_code == 2


# ---- info and random-uuid -------------------------------------------------------------------------------
def test_info_of_formatted_directories(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("a", "b"))
    assert storage("format", "-c", str(config), "-t", CLUSTER_ID).exit_code == 0
    directory_id = (tmp_path / "a" / "meta.properties").read_text().split("directory.id=")[1].split()[0]
    result = storage("info", "-c", str(config))
    assert result.exit_code == 0
    assert result.stdout == (
        f"Found log directories:\n  {tmp_path / 'a'}\n  {tmp_path / 'b'}\n\n"
        f"Found metadata: {{cluster.id={CLUSTER_ID}, directory.id={directory_id}, node.id=1, version=1}}\n\n"
    )


def test_info_of_unformatted_and_missing_directories(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("a", "b"))
    (tmp_path / "a").mkdir()
    result = storage("info", "-c", str(config))
    assert result.exit_code == 1
    assert result.stdout == (
        f"Found log directory:\n  {tmp_path / 'a'}\n\n"
        f"Found problems:\n  {tmp_path / 'a'} is not formatted.\n  {tmp_path / 'b'} does not exist\n\n"
    )


def test_info_reports_mismatched_clusters(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093", dirs=("a", "b"))
    assert storage("format", "-c", str(config), "-t", CLUSTER_ID).exit_code == 0
    other = (tmp_path / "b" / "meta.properties").read_text().replace(CLUSTER_ID, "AAAAAAAAAAAAAAAAAAAAAQ")
    (tmp_path / "b" / "meta.properties").write_text(other)
    result = storage("info", "-c", str(config))
    assert result.exit_code == 1
    assert result.stdout.endswith("Found problem:\n  Mismatched cluster IDs between storage directories.\n\n")


def test_random_uuid_decodes():
    first, second = storage("random-uuid"), storage("random-uuid")
    assert first.exit_code == 0
    text = first.stdout.strip()
    assert len(text) == 22 and "-" not in text
    assert kafka_str_to_uuid(text).version == 4
    assert text != second.stdout.strip()


def test_console_entry_point_runs_format(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093")
    result = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "storage", "format", "-c", str(config), "-t",
                             CLUSTER_ID], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Formatting metadata directory {tmp_path / 'logs'} with metadata.version 4.1-IV1.\n"


def test_standalone_refuses_a_wildcard_controller_address(tmp_path):
    config = write_config(tmp_path)
    config.write_text(config.read_text().replace("CONTROLLER://127.0.0.1:9093", "CONTROLLER://0.0.0.0:9093"))
    assert refusal(tmp_path, "-t", CLUSTER_ID, "-s", config=config) == (
        "--standalone would record the nonroutable address 0.0.0.0 for listener CONTROLLER: set advertised.listeners "
        "to a routable host"
    )


def test_initial_controllers_on_a_broker(tmp_path):
    config = write_config(tmp_path, roles="broker", node_id=4)
    assert refusal(tmp_path, "-t", CLUSTER_ID, "-I", f"1@h:1:{DIR_1}", config=config) == (
        "you cannot use --initial-controllers on a broker node: only controllers are initial voters"
    )


def test_combined_node_standalone(tmp_path):
    config = write_config(tmp_path, roles="broker,controller")
    result = storage("format", "-c", str(config), "-t", CLUSTER_ID, "-s")
    assert result.exit_code == 0, result.output
    voters = bootstrap_voters(tmp_path / "logs")
    assert voters.endpoints_of(1) == Endpoints.of([Endpoint("CONTROLLER", "127.0.0.1", 9093)])


def test_info_reports_a_legacy_directory(tmp_path):
    config = write_config(tmp_path, voters="1@127.0.0.1:9093")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "meta.properties").write_text(f"cluster.id={CLUSTER_ID}\nbroker.id=1\nversion=0\n")
    result = storage("info", "-c", str(config))
    assert result.exit_code == 1
    assert result.stdout == (
        f"Found log directory:\n  {tmp_path / 'logs'}\n\n"
        f"Found metadata: {{broker.id=1, cluster.id={CLUSTER_ID}, version=0}}\n\n"
        "Found problem:\n  The kafka configuration file appears to be for a cluster in KRaft mode, but the directories "
        "are formatted for legacy mode.\n\n"
    )
