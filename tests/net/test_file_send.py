"""FrameServer writing answers whose record batches are file regions (a consumer Fetch answer): the bytes on the wire
are exactly the frame's, in request order, sent from the mapped file on a plain socket, read and written on TLS, and a region
whose file was cut under it closes that connection only. Run on both event loops the node may use (uvloop queues
small writes until the end of the loop turn, which is what the direct mode of net/file_send.py is about)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from pykraft.net.server import ConnectionInfo, FrameServer
from pykraft.net.tls import client_context, server_context
from pykraft.protocol.framing import FileRegion, FrameBody

from .conftest import Certs
from .frame_exchange import LOOPS, MIB, REQUEST, exchange, expected, head_of, run_on



class RegionApp:
    """Answers (correlation id, position, size) with a header, `size` bytes of the file from `position` as a region,
    and a trailer; size 0 gets a small answer."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.regions: list[FileRegion] = []

    async def __call__(self, info: ConnectionInfo, payload: memoryview) -> Any:
        correlation, position, size = REQUEST.unpack_from(payload)
        head = head_of(correlation)
        if size == 0:
            return head
        region = FileRegion(os.dup(self.fd), position, size)
        self.regions.append(region)
        return FrameBody((head, region, b"tail"), len(head) + size + 4)


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = os.urandom(6 * MIB)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return path, data


REQUESTS = [(0, 0), (100, 2 * MIB), (0, 0), (5, 20_000), (3 * MIB + 7, 3 * MIB - 7), (0, 0)]


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("read_late", [False, True], ids=["reader-keeps-up", "socket-fills"])
def test_regions_arrive_byte_exact_and_in_request_order_over_plaintext(loop: str, read_late: bool,
                                                                        data_file: tuple[Path, bytes]) -> None:
    path, data = data_file

    async def scenario() -> None:
        app = RegionApp(path)
        server = FrameServer(app, name="files")
        _, port = await server.start("127.0.0.1", 0)
        answers = await exchange(port, REQUESTS, read_late=read_late)
        stats = server.stats
        await server.close()
        assert answers == [expected(data, c, p, s) for c, (p, s) in enumerate(REQUESTS)]
        assert stats.sent_from_file + stats.copied_from_file == sum(s for _, s in REQUESTS)
        assert stats.sent_from_file > 0  # plaintext: the kernel sent (at least the start of) the regions
        assert all(region.fd == -1 for region in app.regions)  # every duplicate descriptor closed once written
        os.close(app.fd)

    run_on(loop, scenario)


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_regions_are_read_and_encrypted_on_tls(loop: str, data_file: tuple[Path, bytes], certs: Certs) -> None:
    path, data = data_file

    async def scenario() -> None:
        app = RegionApp(path)
        server = FrameServer(app, name="files", ssl_context=server_context(certs.node1_cert, certs.node1_key,
                                                                           certs.ca))
        _, port = await server.start("127.0.0.1", 0)
        context = client_context(certs.node2_cert, certs.node2_key, certs.ca)
        answers = await exchange(port, REQUESTS, context)
        stats = server.stats
        await server.close()
        assert answers == [expected(data, c, p, s) for c, (p, s) in enumerate(REQUESTS)]
        assert stats.sent_from_file == 0 and stats.copied_from_file == sum(s for _, s in REQUESTS)
        os.close(app.fd)

    run_on(loop, scenario)


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_region_cut_short_closes_its_connection_only(loop: str, data_file: tuple[Path, bytes]) -> None:
    path, data = data_file

    async def scenario() -> None:
        app = RegionApp(path)
        server = FrameServer(app, name="files")
        _, port = await server.start("127.0.0.1", 0)
        with pytest.raises(asyncio.IncompleteReadError):  # the frame promised bytes past the file's end
            await exchange(port, [(len(data) - MIB, 2 * MIB)])
        assert await exchange(port, [(0, MIB)]) == [expected(data, 0, 0, MIB)]  # the server goes on
        await server.close()
        os.close(app.fd)

    run_on(loop, scenario)
