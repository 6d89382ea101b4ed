"""What she says around a tool call: resolve the voice lines, and pace the heartbeat."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from companion.tools.registry import Registry, ToolSpec


@dataclass(frozen=True)
class VoiceLines:
    """The four lines for one tool, already resolved (personality, then module, then generic)."""

    announce: str
    heartbeat: tuple[str, ...]
    complete: str
    fail: str


def resolve_lines(spec: ToolSpec, override: Mapping[str, Any] | None = None) -> VoiceLines:
    """One tool's lines: the personality's entry wins key by key, else the ToolSpec's.

    The ToolSpec already holds the module's attributes or the generic lines.
    """
    override = override or {}
    heartbeat = override.get("heartbeat")
    return VoiceLines(
        announce=override.get("announce") or spec.announce,
        heartbeat=tuple(heartbeat) if heartbeat else tuple(spec.heartbeat),
        complete=override.get("complete") or spec.complete,
        fail=override.get("fail") or spec.fail,
    )


def all_lines(registry: Registry, patterns: Mapping[str, Mapping[str, Any]]) -> dict[str, VoiceLines]:
    """Every registered tool's resolved lines, by name (to pre-synthesize or preview them)."""
    return {name: resolve_lines(spec, patterns.get(name)) for name, spec in sorted(registry.tools().items())}


async def run_heartbeat(
    lines: Sequence[str], first_s: float, every_s: float, say: Callable[[str], None]
) -> None:
    """Say the heartbeat lines while a tool runs, until cancelled.

    The first after `first_s`, then one every `every_s`, in order; the last one repeats.
    """
    if not lines:
        return
    await asyncio.sleep(first_s)
    index = 0
    while True:
        say(lines[min(index, len(lines) - 1)])
        index += 1
        await asyncio.sleep(every_s)
