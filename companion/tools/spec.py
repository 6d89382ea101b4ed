"""What a tool is: the ToolSpec the registry keeps, built from a tool module's attributes.

The contract (docs/adding-a-tool.md): SCHEMA and `async def execute(args, ctx)` are required;
TOOLSET, RISK, BUILT_IN, the voice lines, EXPRESSIONS and check() are optional, with the
defaults below.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

__all__ = [
    "DEFAULT_EXPRESSIONS",
    "GENERIC_ANNOUNCE",
    "GENERIC_COMPLETE",
    "GENERIC_FAIL",
    "GENERIC_HEARTBEAT",
    "RISKS",
    "Execute",
    "ToolSpec",
    "spec_from_module",
]

RISKS = ("read", "write", "exec", "network")
"""What a tool may do: read and write tools never start a process; exec tools start them only
through the gate (Gate.run / Gate.start), which checks ctx.risk; network is refused for now."""
GENERIC_ANNOUNCE = "Give me a moment, I'm on it."
GENERIC_HEARTBEAT = ("Still working on it...",)
GENERIC_COMPLETE = "Done."
GENERIC_FAIL = "That didn't work, sorry."
DEFAULT_EXPRESSIONS = {"focus": "thinking", "fail": "sad"}

Execute = Callable[[dict[str, Any], Any], Awaitable[str]]


@dataclass(frozen=True)
class ToolSpec:
    """Everything the registry and the turn loop need to know about one tool."""

    name: str
    schema: dict[str, Any]
    execute: Execute
    toolset: str = "core"
    risk: str = "read"
    built_in: bool = False
    announce: str = GENERIC_ANNOUNCE
    heartbeat: tuple[str, ...] = GENERIC_HEARTBEAT
    complete: str = GENERIC_COMPLETE
    fail: str = GENERIC_FAIL
    expressions: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_EXPRESSIONS))
    check: Callable[[], bool] | None = None
    module: str = ""
    quiet: bool = False
    """Says nothing while it runs (only FAIL): for a tool that only prepares, like use_tools."""


def spec_from_module(module: ModuleType, *, toolset: str | None = None) -> ToolSpec | None:
    """Build a ToolSpec from a module's attributes, filling the documented defaults.

    Returns None for a module whose SCHEMA is not a dict: it is not a tool.
    """
    schema = getattr(module, "SCHEMA", None)
    if not isinstance(schema, dict):
        return None
    module_name = getattr(module, "__name__", repr(module))
    name = schema.get("name")
    execute = getattr(module, "execute", None)
    if not isinstance(name, str) or not name or not callable(execute):
        raise ValueError(f"tool module {module_name} needs SCHEMA['name'] and execute()")
    if not inspect.iscoroutinefunction(execute):
        # The turn loop awaits execute(); a plain function would fail only when first called.
        raise ValueError(f"tool {name}: execute(args, ctx) must be `async def`")
    risk = getattr(module, "RISK", "read")
    if risk not in RISKS:
        raise ValueError(f"tool {name}: RISK must be one of {RISKS}, not {risk!r}")
    if risk == "network":
        # Named in the contract but not enforced by anything yet: a tool may not claim it.
        raise ValueError(f"tool {name}: RISK 'network' is not supported yet; use read, write or exec")
    heartbeat = getattr(module, "HEARTBEAT", None) or GENERIC_HEARTBEAT
    if isinstance(heartbeat, str):
        heartbeat = (heartbeat,)  # one line, not a tuple of its characters
    expressions = dict(DEFAULT_EXPRESSIONS)
    declared = getattr(module, "EXPRESSIONS", None)
    if isinstance(declared, dict):
        expressions.update(declared)
    check = getattr(module, "check", None)
    return ToolSpec(
        name=name,
        schema=_filled_schema(schema),
        execute=execute,
        toolset=toolset or getattr(module, "TOOLSET", "core"),
        risk=risk,
        built_in=bool(getattr(module, "BUILT_IN", False)),
        announce=getattr(module, "ANNOUNCE", None) or GENERIC_ANNOUNCE,
        heartbeat=tuple(heartbeat),
        complete=getattr(module, "COMPLETE", None) or GENERIC_COMPLETE,
        fail=getattr(module, "FAIL", None) or GENERIC_FAIL,
        expressions=expressions,
        check=check if callable(check) else None,
        module=module_name,
        quiet=bool(getattr(module, "QUIET", False)),
    )


def _filled_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a flat function SCHEMA with the optional keys a model API expects filled in."""
    filled = dict(schema)
    filled.setdefault("type", "function")
    filled.setdefault("description", "")
    filled.setdefault("parameters", {"type": "object", "properties": {}})
    return filled
