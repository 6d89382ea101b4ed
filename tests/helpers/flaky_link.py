"""A loopback TCP link in front of a real server that can break a connection halfway, or never answer.

`FlakyLink(target_port, cut_after=n)` forwards bytes both ways, except that the first `cuts`
connections are closed once `n` bytes have come from the client: the server saw half an
utterance and the client is left waiting. `Silent()` accepts connections and says nothing.
"""

from __future__ import annotations

import asyncio
import contextlib


class FlakyLink:
    def __init__(self, target_port: int, *, cut_after: int, cuts: int = 1) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.cuts_left = cuts
        self.connections = 0
        self.cut = 0
        self._server: asyncio.Server | None = None

    @property
    def uri(self) -> str:
        return f"tcp://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> FlakyLink:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_exc) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, client_reader, client_writer) -> None:
        self.connections += 1
        cut = self.cuts_left > 0
        self.cuts_left -= 1 if cut else 0
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def upstream() -> None:
            sent = 0
            while data := await client_reader.read(4096):
                if cut and sent + len(data) >= self.cut_after:
                    server_writer.write(data[: self.cut_after - sent])
                    await server_writer.drain()
                    self.cut += 1
                    raise ConnectionAbortedError
                sent += len(data)
                server_writer.write(data)
                await server_writer.drain()
            server_writer.write_eof()

        async def downstream() -> None:
            while data := await server_reader.read(4096):
                client_writer.write(data)
                await client_writer.drain()

        tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
        with contextlib.suppress(Exception):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in (client_writer, server_writer):
            writer.close()


class Silent:
    """Accepts connections, reads what comes, never answers."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._held: list = []

    @property
    def uri(self) -> str:
        return f"tcp://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> Silent:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_exc) -> None:
        for writer in self._held:
            writer.close()
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader, writer) -> None:
        self._held.append(writer)
        # Closing the link at the end cancels this read; that is the end of it, not an error.
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            while await reader.read(4096):
                pass
