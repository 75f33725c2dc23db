"""`pykraft metadata-shell` over the sample log (a snapshot and the log after it): Kafka 4's node tree, its
commands and texts, and the image checked against the records decoded independently (dump-log's decoder)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from pykraft.cli.metadata_image import ImageError, load_image
from pykraft.cli.metadata_nodes import provenance_text, root_node
from pykraft.cli.metadata_shell_cmd import Shell
from pykraft.cli.sample_log import write_sample_log
from pykraft.records import iter_batches
from pykraft.records.metadata import decode_metadata_record, metadata_record_envelope


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sample")
    write_sample_log(root)
    return root


def records(path: Path) -> list[tuple[int, dict]]:
    found = []
    for batch in iter_batches(path.read_bytes()):
        if not batch.is_control:
            found += [(r.offset, metadata_record_envelope(decode_metadata_record(r.value))) for r in batch.records()]
    return found


def run(shell: Shell, line: str) -> list[str]:
    lines: list[str] = []
    shell.out = lines.append
    shell.run_line(line)
    return "\n".join(lines).split("\n") if lines else []


def test_the_tree_holds_what_the_log_registered(sample):
    written = records(sample / "__cluster_metadata-0" / "00000000000000000000.log")
    brokers = sorted({str(r["data"]["brokerId"]) for _, r in written if r["type"] == "REGISTER_BROKER_RECORD"})
    topics = sorted({r["data"]["name"] for _, r in written if r["type"] == "TOPIC_RECORD"})
    shell = Shell(root_node(load_image(directory=sample)))
    assert run(shell, "ls /") == ["image", "local"]
    assert run(shell, "ls /image/cluster/brokers") == brokers
    assert run(shell, "ls /image/topics/byName") == topics
    assert run(shell, "ls /image") == ["acls", "clientQuotas", "cluster", "configs", "delegationToken", "features",
                                       "producerIds", "provenance", "scram", "topics"]
    broker = run(shell, f"cat /image/cluster/brokers/{brokers[0]}")[0]
    assert broker.startswith(f"BrokerRegistration(id={brokers[0]}, epoch=") and "rack=Optional" in broker
    assert "listeners=[Endpoint(listenerName='" in broker and "fenced=" in broker


def test_cd_pwd_relative_paths_globs_and_tree(sample):
    shell = Shell(root_node(load_image(directory=sample)))
    topic = run(shell, "ls /image/topics/byName")[0]
    run(shell, f"cd /image/topics/byName/{topic}")
    assert run(shell, "pwd") == [f"/image/topics/byName/{topic}"]
    assert run(shell, "cat name") == [topic]
    assert run(shell, "cat 0")[0].startswith("PartitionRegistration(replicas=[")
    partitions = run(shell, "ls ../*/[0-9]")
    assert all(p.isdigit() for p in partitions) and partitions
    run(shell, "cd ..")
    assert run(shell, "pwd") == ["/image/topics/byName"]
    tree = run(shell, f"tree /image/topics/byName/{topic}")
    assert tree[:2] == ["0:", "  PartitionRegistration(replicas=" + tree[1].split("replicas=", 1)[1]]
    assert "name:" in tree and f"  {topic}" in tree
    found = run(shell, "find /image/features")
    assert found[0] == "/image/features" and "/image/features/metadataVersion" in found


def test_missing_paths_print_kafkas_lines_and_mark_the_command_failed(sample):
    shell = Shell(root_node(load_image(directory=sample)))
    assert run(shell, "ls /nope") == ["ls: /nope: no such file or directory."]
    assert run(shell, "cat /image") == ["cat: /image: Is a directory"]
    assert run(shell, "cd /image/provenance") == ["cd: /image/provenance: not a directory."]
    assert shell.failed


def test_a_snapshot_alone_versus_the_whole_directory(sample):
    folder = sample / "__cluster_metadata-0"
    snapshot = next(folder.glob("*.checkpoint"))
    end_offset = int(snapshot.name.split("-")[0])
    alone = load_image(snapshot=snapshot)
    whole = load_image(directory=sample)
    assert alone.provenance.offset == end_offset - 1
    last = records(folder / "00000000000000000000.log")[-1][0]
    assert whole.provenance.offset == last >= alone.provenance.offset
    assert provenance_text(5, 2, 1700000000123) == "offset 5, epoch 2, time 2023-11-14T22:13:20.123Z[UTC]"
    with pytest.raises(ImageError):
        load_image(directory=sample / "nowhere")


def test_the_command_line_forms(sample, capsys, monkeypatch):
    from pykraft.cli.metadata_shell_cmd import run as shell_command

    base = ["--directory", str(sample)]
    assert shell_command([*base, "ls", "/image/cluster"]) == 0
    assert capsys.readouterr().out == "brokers\ncontrollers\n"
    assert shell_command([*base, "--command", "cat /local/version"]) == 0
    assert capsys.readouterr().out.strip()
    monkeypatch.setattr("sys.stdin", io.StringIO("cd /image\npwd\nexit\nls\n"))
    assert shell_command(base) == 0
    assert capsys.readouterr().out == "/image\n"
    assert shell_command([*base, "ls", "/x"]) == 1
    assert capsys.readouterr().out == "ls: /x: no such file or directory.\n"
    assert shell_command(["ls"]) == 1
    assert capsys.readouterr().err == "pykraft metadata-shell: give one of --snapshot/-s FILE or --directory/-d DIR\n"


def test_the_console_script_runs_it(sample):
    done = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "metadata-shell", "-d", str(sample), "pwd"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "/\n"
