"""Wyoming servers: where they are, what they offer (describe → info), and the sentences for when they fail.

Home Assistant's voice services (wyoming-faster-whisper, wyoming-piper) speak the Wyoming
protocol; the `wyoming` library does the framing. Each request opens its own connection, as
Home Assistant does: a server closes it after one answer, and a dead connection never
lingers between turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlparse

from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info

from companion.errors import CompanionError, Stage

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 3.0
"""A server on the home network answers a connect in milliseconds; three seconds means it is not there."""
DESCRIBE_TIMEOUT_S = 5.0

HEARING_SERVER_COMMAND = "python -m wyoming_faster_whisper --uri tcp://0.0.0.0:10300 --model tiny.en --data-dir ./models"
VOICE_SERVER_COMMAND = "python -m wyoming_piper --uri tcp://0.0.0.0:10200 --voice en_US-joe-medium --data-dir ./voices"


@dataclass(frozen=True)
class ServerInfo:
    """What a Wyoming server said about itself, and how long a small test took."""

    uri: str
    program: str
    """The program and its version, e.g. "faster-whisper 3.8.1"."""
    models: tuple[str, ...]
    """Hearing models, or voices."""
    languages: tuple[str, ...]
    round_trip_ms: float | None = None
    """A one-second clip transcribed, or a short sentence synthesized, there and back."""

    def summary(self, kind: str = "models") -> str:
        """One line for Settings and the doctor, e.g. "faster-whisper 3.8.1: model tiny.en; 99 languages"."""
        what = {"models": "model", "voices": "voice"}[kind]
        if not self.models:
            listed = f"no {kind} listed"
        elif len(self.models) <= 3:
            listed = f"{what}{'s' if len(self.models) > 1 else ''} {', '.join(self.models)}"
        else:  # a catalog (wyoming-piper lists every voice it could fetch): the count says enough
            listed = f"{len(self.models)} {kind}"
        parts = [listed]
        if self.languages:
            parts.append(", ".join(self.languages) if len(self.languages) <= 4 else f"{len(self.languages)} languages")
        line = f"{self.program}: {'; '.join(parts)}"
        if self.round_trip_ms is not None:
            line += f"; test round trip {self.round_trip_ms:.0f} ms"
        return line


class ServerError(CompanionError):
    """A Wyoming server could not be reached, dropped the connection, was too slow, or refused."""

    def __init__(self, code: str, sentence: str, *, stage: Stage, uri: str) -> None:
        super().__init__(code, sentence, stage=stage)
        self.uri = uri


def _role(stage: Stage) -> str:
    return "hearing" if stage is Stage.HEARING else "voice"


def _setting(stage: Stage) -> str:
    return "voice.hearing" if stage is Stage.HEARING else "voice.speaking"


def unreachable(uri: str, stage: Stage, exc: BaseException) -> ServerError:
    why = "nothing answers there" if isinstance(exc, ConnectionRefusedError) else (
        "it did not answer in time" if isinstance(exc, TimeoutError) else f"{exc.__class__.__name__}: {exc}")
    command = HEARING_SERVER_COMMAND if stage is Stage.HEARING else VOICE_SERVER_COMMAND
    return ServerError(
        "server_unreachable",
        f"I can't reach my {_role(stage)} server at {uri} ({why}). Start it on that machine "
        f"(`{command}`) or set {_setting(stage)} to \"local\" in Settings → Voice.",
        stage=stage, uri=uri,
    )


def dropped(uri: str, stage: Stage, what: str, *, code: str = "server_dropped") -> ServerError:
    """The server went away mid-request (code server_dropped) or was too slow (server_timeout)."""
    return ServerError(
        code,
        f"My {_role(stage)} server at {uri} {what}. Check that it is still running, or set "
        f"{_setting(stage)} to \"local\" in Settings → Voice.",
        stage=stage, uri=uri,
    )


def refused(uri: str, stage: Stage, error: Error) -> ServerError:
    return ServerError(
        "server_error",
        f"My {_role(stage)} server at {uri} said: {error.text}. Check its log, or set "
        f"{_setting(stage)} to \"local\" in Settings → Voice.",
        stage=stage, uri=uri,
    )


class Connection:
    """One request's connection to a server; every read is bounded by `read_timeout_s`."""

    def __init__(self, uri: str, stage: Stage, client: AsyncTcpClient, read_timeout_s: float) -> None:
        self.uri = uri
        self.stage = stage
        self._client = client
        self.read_timeout_s = read_timeout_s

    async def send(self, *events: Event) -> None:
        try:
            for event in events:
                await self._client.write_event(event)
        except (OSError, EOFError) as exc:
            raise dropped(self.uri, self.stage, f"closed the connection while I was sending ({exc.__class__.__name__})") from exc

    async def receive(self, timeout_s: float | None = None) -> Event:
        """The next event; a ServerError when the server closed, broke off mid-event, timed out or sent an error."""
        try:
            event = await asyncio.wait_for(self._client.read_event(), timeout_s or self.read_timeout_s)
        except TimeoutError as exc:
            raise dropped(self.uri, self.stage, f"did not answer within {timeout_s or self.read_timeout_s:g} s",
                          code="server_timeout") from exc
        except (OSError, EOFError) as exc:  # IncompleteReadError is an EOFError: an event cut in half
            raise dropped(self.uri, self.stage, f"broke off mid-answer ({exc.__class__.__name__})") from exc
        if event is None:
            raise dropped(self.uri, self.stage, "closed the connection before answering")
        if Error.is_type(event.type):
            raise refused(self.uri, self.stage, Error.from_event(event))
        return event


@contextlib.asynccontextmanager
async def connect(uri: str, stage: Stage, *, read_timeout_s: float) -> AsyncIterator[Connection]:
    """A connection to the server at `uri`, closed on the way out (also when the caller is cancelled)."""
    parsed = urlparse(uri)
    client = AsyncTcpClient(parsed.hostname or "", parsed.port or 0, connect_timeout=CONNECT_TIMEOUT_S)
    try:
        await client.connect()
    except (OSError, TimeoutError) as exc:
        raise unreachable(uri, stage, exc) from exc
    try:
        yield Connection(uri, stage, client, read_timeout_s)
    finally:
        writer = getattr(client, "_writer", None)
        if writer is not None:
            # Close without waiting for the peer: a dead server must not hold up a cancelled turn.
            writer.close()


async def describe(uri: str, stage: Stage) -> Info:
    """The server's `info` answer to `describe`."""
    async with connect(uri, stage, read_timeout_s=DESCRIBE_TIMEOUT_S) as connection:
        await connection.send(Describe().event())
        while True:
            event = await connection.receive()
            if Info.is_type(event.type):
                return Info.from_event(event)


def hearing_info(uri: str, info: Info) -> ServerInfo:
    """The first speech-to-text program of `info`, as ServerInfo (ServerError when it has none)."""
    if not info.asr:
        raise ServerError("not_hearing", f"The server at {uri} does not transcribe speech (it offers no asr "
                          "program). Point voice.hearing at a wyoming-faster-whisper server.",
                          stage=Stage.HEARING, uri=uri)
    program = info.asr[0]
    models = tuple(m.name for m in program.models if m.installed)
    languages = sorted({language for m in program.models for language in m.languages})
    return ServerInfo(uri, _name(program.name, program.version), models, tuple(languages))


def voice_info(uri: str, info: Info) -> ServerInfo:
    """The first text-to-speech program of `info`, as ServerInfo (ServerError when it has none)."""
    if not info.tts:
        raise ServerError("not_speaking", f"The server at {uri} does not synthesize speech (it offers no tts "
                          "program). Point voice.speaking at a wyoming-piper server.",
                          stage=Stage.SPEAKING, uri=uri)
    program = info.tts[0]
    voices = tuple(v.name for v in program.voices if v.installed)
    languages = sorted({language for v in program.voices for language in v.languages})
    return ServerInfo(uri, _name(program.name, program.version), voices, tuple(languages))


def _name(name: str, version: str | None) -> str:
    return f"{name} {version}" if version else name


class Stopwatch:
    """Milliseconds since it was made."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000
