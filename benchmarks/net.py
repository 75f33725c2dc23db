"""Request/response speed of pykraft.net (FrameServer + Connection) against a bare asyncio streams echo.

Run: .venv/bin/python benchmarks/net.py   (prints figures; not a test)

Both sides speak the same framing (int32 size, then a payload starting with an int32 correlation id; 100-byte
payloads, like the loopback anchors in performance-anchors.md). The servers run in a child process, the
clients in this one, so each side has its own core. Figures:
- ping-pong: one request at a time, round-trip time p50 and p99;
- pipelined: WINDOW requests outstanding at once on one connection, responses per second.
The peers measured in the same run:
- "bare streams": asyncio.start_server echo reading with readexactly and answering inline (no handler
  tasks, no ordering queue), its client writing and reading on the same stream;
- "streams server": a FrameServer-like server built on streams (a task per request, responses written in
  order, drain per write) served to the same Connection client, to show what the Protocol choice buys.
Every figure is the median of RUNS runs with the lowest and highest in brackets; the contenders take turns
within each run, and each ratio is the median of the per-run ratios.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import struct
import time
from collections import deque

from pykraft.net.client import Connection
from pykraft.net.server import FrameServer

RUNS = 7
PING_PONGS = 3000
PIPELINED = 30_000
WINDOW = 64
PAYLOAD = 100
_SIZE = struct.Struct(">i")


# ---- servers (child process) ----


async def _frame_handler(_info: object, payload: memoryview) -> bytes:
    return bytes(payload)


async def _bare_echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            size = _SIZE.unpack(await reader.readexactly(4))[0]
            body = await reader.readexactly(size)
            writer.write(_SIZE.pack(size) + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def _streams_frame_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """What FrameServer would be on streams: a task per request, answers written in order."""
    queue: deque[asyncio.Task[bytes]] = deque()
    wake = asyncio.Event()

    async def writer_loop() -> None:
        while True:
            while not queue:
                wake.clear()
                await wake.wait()
            payload = await queue.popleft()
            writer.write(_SIZE.pack(len(payload)) + payload)
            await writer.drain()

    loop_task = asyncio.ensure_future(writer_loop())
    try:
        while True:
            size = _SIZE.unpack(await reader.readexactly(4))[0]
            body = await reader.readexactly(size)
            queue.append(asyncio.ensure_future(_frame_handler(None, memoryview(body))))
            wake.set()
    except (asyncio.IncompleteReadError, ConnectionError):
        loop_task.cancel()
        writer.close()


def _serve(conn: multiprocessing.connection.Connection) -> None:
    async def serve() -> None:
        ours = FrameServer(_frame_handler, name="bench")
        _, ours_port = await ours.start("127.0.0.1", 0)
        bare = await asyncio.start_server(_bare_echo, "127.0.0.1", 0)
        streams = await asyncio.start_server(_streams_frame_server, "127.0.0.1", 0)
        conn.send((ours_port, bare.sockets[0].getsockname()[1], streams.sockets[0].getsockname()[1]))
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until the parent says stop
        await ours.close()

    asyncio.run(serve())


# ---- clients (this process) ----


def _build(correlation_id: int) -> bytes:
    return _SIZE.pack(correlation_id) + b"x" * (PAYLOAD - 4)


async def ours_ping_pong(port: int) -> list[float]:
    conn = await Connection.open("127.0.0.1", port)
    rtts = []
    for _ in range(PING_PONGS):
        start = time.perf_counter()
        await conn.request(_build, timeout_ms=10_000)
        rtts.append(time.perf_counter() - start)
    await conn.close()
    return rtts


async def ours_pipelined(port: int) -> float:
    conn = await Connection.open("127.0.0.1", port)
    remaining = PIPELINED

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await conn.request(_build, timeout_ms=10_000)

    start = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(WINDOW)])
    elapsed = time.perf_counter() - start
    await conn.close()
    return PIPELINED / elapsed


async def bare_ping_pong(port: int) -> list[float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    rtts = []
    for i in range(PING_PONGS):
        start = time.perf_counter()
        payload = _build(i)
        writer.write(_SIZE.pack(len(payload)) + payload)
        await writer.drain()
        size = _SIZE.unpack(await reader.readexactly(4))[0]
        await reader.readexactly(size)
        rtts.append(time.perf_counter() - start)
    writer.close()
    return rtts


async def bare_pipelined(port: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    window = asyncio.Semaphore(WINDOW)

    async def send() -> None:
        for i in range(PIPELINED):
            await window.acquire()
            payload = _build(i)
            writer.write(_SIZE.pack(len(payload)) + payload)
            await writer.drain()

    async def receive() -> None:
        for _ in range(PIPELINED):
            size = _SIZE.unpack(await reader.readexactly(4))[0]
            await reader.readexactly(size)
            window.release()

    start = time.perf_counter()
    await asyncio.gather(send(), receive())
    elapsed = time.perf_counter() - start
    writer.close()
    return PIPELINED / elapsed


def _stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def _percentiles(rtts: list[float]) -> tuple[float, float]:
    rtts = sorted(rtts)
    return rtts[len(rtts) // 2] * 1e6, rtts[int(len(rtts) * 0.99)] * 1e6


def _measure(ports: tuple[int, int, int]) -> dict[str, list[float]]:
    """All figures, the contenders interleaved run by run so that load from other processes on a shared
    machine hits them alike (the ratios are then steadier than the absolute figures)."""
    ours, bare, streams = ports
    figures: dict[str, list[float]] = {}
    for _ in range(RUNS):
        for name, run in (("ours", lambda: ours_ping_pong(ours)), ("streams", lambda: ours_ping_pong(streams)),
                          ("bare", lambda: bare_ping_pong(bare))):
            p50, p99 = _percentiles(asyncio.run(run()))
            figures.setdefault(f"{name} p50", []).append(p50)
            figures.setdefault(f"{name} p99", []).append(p99)
        for name, tput in (("ours", lambda: ours_pipelined(ours)), ("streams", lambda: ours_pipelined(streams)),
                           ("bare", lambda: bare_pipelined(bare))):
            figures.setdefault(f"{name} tput", []).append(asyncio.run(tput()))
    return figures


def _fmt(figure: tuple[float, float, float], unit: str) -> str:
    median, low, high = figure
    return f"{median:>9,.0f} {unit} [{low:,.0f} .. {high:,.0f}]"


def _ratio(figures: dict[str, list[float]], top: str, bottom: str) -> float:
    """Median of the per-run ratios (each run's contenders ran under the same conditions)."""
    return statistics.median(a / b for a, b in zip(figures[top], figures[bottom], strict=True))


def main() -> None:
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(child,), daemon=True)
    server.start()
    ports = parent.recv()
    try:
        figures = _measure(ports)
    finally:
        parent.send("stop")
        server.join(timeout=10)
    labels = {"ours": "FrameServer+Connection   ", "streams": "streams server+Connection",
              "bare": "bare streams echo        "}
    print(f"loopback, {PAYLOAD}-byte payloads, median of {RUNS} runs [lowest .. highest]")
    for figure, unit, title in (("p50", "us", "ping-pong RTT p50"), ("p99", "us", "ping-pong RTT p99"),
                                ("tput", "req/s", f"pipelined, window {WINDOW}")):
        print(title)
        for name, label in labels.items():
            print(f"  {label} {_fmt(_stats(figures[f'{name} {figure}']), unit)}")
    print(f"ratio ours / bare streams echo: RTT p50 {_ratio(figures, 'ours p50', 'bare p50'):.2f}x, "
          f"throughput {_ratio(figures, 'ours tput', 'bare tput'):.2f}x")
    print(f"ratio ours / streams server:    RTT p50 {_ratio(figures, 'ours p50', 'streams p50'):.2f}x, "
          f"throughput {_ratio(figures, 'ours tput', 'streams tput'):.2f}x")


if __name__ == "__main__":
    main()
