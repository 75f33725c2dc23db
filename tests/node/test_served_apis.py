"""One served-API table per role (node/runtime/served_apis.py): the registry a node's listeners advertise in
ApiVersions and decode against is its role's table, exactly, and every API in it has a handler while no handler
answers an API outside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.node.config.node_config import parse_config
from pykraft.node.roles.broker_host import broker_runtime
from pykraft.node.roles.combined_host import combined_runtime
from pykraft.node.roles.controller_host import controller_runtime
from pykraft.node.runtime import served_apis
from pykraft.node.runtime.inbound import served_registry
from pykraft.protocol.apis import ApiKey, request_class

from .helpers import format_dir, make_config


def _config(tmp_path: Path, roles: str) -> object:
    data_dir = tmp_path / roles.replace(",", "-")
    data_dir.mkdir()
    format_dir(data_dir, 1)
    listeners = "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093" if "broker,controller" == roles else \
        "PLAINTEXT://127.0.0.1:19092"
    return parse_config("\n".join([
        f"process.roles={roles}", "node.id=1", f"listeners={listeners}", "controller.listener.names=CONTROLLER",
        "controller.quorum.voters=1@127.0.0.1:19093" if roles != "broker" else
        "controller.quorum.bootstrap.servers=127.0.0.1:19093",
        f"metadata.log.dir={data_dir}", f"log.dirs={data_dir}", "offsets.topic.replication.factor=1",
    ]) + "\n")


def _runtimes(tmp_path: Path) -> list[tuple[str, object, served_apis.RoleApis]]:
    controller = controller_runtime(make_config(tmp_path, 1, {1: 19093}))
    broker = broker_runtime(_config(tmp_path, "broker"))
    combined = combined_runtime(_config(tmp_path, "broker,controller"))
    return [("controller", controller, served_apis.CONTROLLER), ("broker", broker, served_apis.BROKER),
            ("combined", combined, served_apis.COMBINED)]


def test_each_role_advertises_its_table_and_nothing_is_trimmed(tmp_path: Path) -> None:
    for role, runtime, table in _runtimes(tmp_path):
        assert runtime.registry == table.listeners, role
        assert runtime._broker_registry == table.broker_listeners, role
        # every API of the table has a handler: the runtime's own, the core's or the host's
        assert served_registry(table.listeners, runtime._extra) == table.listeners, role
        if table.broker_listeners is not None:
            assert served_registry(table.broker_listeners, runtime._extra) == table.broker_listeners, role


def test_no_handler_answers_an_api_outside_its_roles_table(tmp_path: Path) -> None:
    for role, runtime, table in _runtimes(tmp_path):
        unlisted = sorted(ApiKey(key).name for key in runtime._extra if ApiKey(key) not in table.served)
        assert unlisted == [], role


@pytest.mark.parametrize("registry", [served_apis.CONTROLLER_APIS, served_apis.BROKER_APIS],
                         ids=["controller", "broker"])
def test_every_listed_version_can_be_decoded(registry) -> None:
    for key, versions in registry:
        for version in range(versions.min_version, versions.max_version + 1):
            assert request_class(key, version) is not None, (key.name, version)


def test_the_controllers_table_is_the_controller_host_plus_the_runtime() -> None:
    controller_only = set(served_apis.CONTROLLER_APIS.api_keys) - set(served_apis.BROKER_APIS.api_keys)
    # (the broker-to-controller RPCs a client never sends, and Envelope, which only brokers send)
    assert controller_only == set(served_apis.CONTROLLER_ONLY_APIS) | {ApiKey.ENVELOPE, ApiKey.ALLOCATE_PRODUCER_IDS,
                                                                       ApiKey.ASSIGN_REPLICAS_TO_DIRS}
    for key in served_apis.FORWARDED_APIS:  # a broker forwards at the ranges the controller serves
        assert served_apis.BROKER_APIS.range_of(key) == served_apis.CONTROLLER_APIS.range_of(key)
