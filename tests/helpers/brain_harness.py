"""Helpers for brain tests: a RunConfig in tmp_path, small test tools, and an event recorder."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.events import Event, Speak
from companion.runtime import Companion
from companion.tools.registry import Registry, ToolSpec

PLAIN_PERSONALITY = """---
name: Testa
language: en
voice: test
---
## Personality
Plain and brief.
## How to address the user
As "you".
## Emotional rules
Neutral.
## Tool voice patterns
{patterns}
## Quirks
None.
"""


def write_personality(path: Path, patterns: str = "") -> Path:
    path.write_text(PLAIN_PERSONALITY.format(patterns=patterns), encoding="utf-8")
    return path


def make_config(tmp_path: Path, brain_url: str, *, personality: Path | None = None,
                **sections: dict[str, Any]) -> RunConfig:
    """Settings pointing at the scripted brain, with everything inside tmp_path."""
    paths = Paths.default(tmp_path / "config")
    merged: dict[str, dict[str, Any]] = {
        "brain": {"base_url": brain_url, "model": "scripted", "read_timeout_s": 10.0},
        "tools": {"workspace": str(tmp_path / "workspace")},
    }
    for name, values in sections.items():
        merged.setdefault(name, {}).update(values)
    settings = with_overrides(Settings(), **merged)
    chosen = personality or write_personality(tmp_path / "personality.md")
    from dataclasses import replace

    return RunConfig(paths=paths, settings=replace(settings, personality=str(chosen)))


def tool(
    name: str, execute: Callable[[dict, Any], Awaitable[str]] | None = None, *,
    toolset: str = "core", announce: str | None = None, heartbeat: tuple[str, ...] | None = None,
    complete: str | None = None, fail: str | None = None, focus: str = "thinking",
    fail_face: str = "sad", parameters: dict[str, Any] | None = None,
) -> ToolSpec:
    """A test tool; by default it answers "<name> ran with <args>"."""

    async def default(args: dict, ctx: Any) -> str:
        return f"{name} ran with {args}"

    return ToolSpec(
        name=name,
        schema={"type": "function", "name": name, "description": f"test tool {name}",
                "parameters": parameters or {"type": "object", "properties": {}}},
        execute=execute or default,
        toolset=toolset,
        announce=announce or f"Running {name}.",
        heartbeat=heartbeat or (f"Still on {name}...",),
        complete=complete or f"{name} done.",
        fail=fail or f"{name} failed.",
        expressions={"focus": focus, "fail": fail_face},
    )


def registry_with(*specs: ToolSpec) -> Registry:
    registry = Registry()
    for spec in specs:
        registry.register(spec)
    return registry


class Recorder:
    """Collects every event; `wait_for` waits (no sleeping) until a condition holds."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def speech(self) -> list[tuple[str, str]]:
        return [(str(e.kind), e.text) for e in self.of(Speak)]

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        async def loop() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(loop(), timeout)


async def start_companion(config: RunConfig, registry: Registry) -> tuple[Companion, Recorder]:
    recorder = Recorder()
    companion = Companion(config, registry=registry)
    companion.bus.subscribe(recorder)
    await companion.start()
    return companion, recorder
