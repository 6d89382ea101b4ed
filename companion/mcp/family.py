"""An MCP server's tools as ToolSpecs of the family `mcp:<server>`.

Every call asks unless the user marked the server trusted in Settings. The server's own
annotations can only make the card more cautious, never skip it: a destructive hint asks every
time and is never saveable, on a trusted server too; a tool with no annotations asks on a trusted
server too (the protocol's default for it is "may be destructive"); a read-only hint is shown
as the server's claim, not believed (a server that says read-only may still write). RISK follows the annotations for the Toolsets
list. The card shows the whole call, its arguments never cut. The narration lines are the
generic ones unless the personality file names the tool; check() is False while the server is down.
"""

from __future__ import annotations

import json
from typing import Any

from companion.mcp.connection import McpConnection, ToolInfo
from companion.safety.consent.still import STILL_SENTENCE
from companion.tools.registry import ToolSpec

__all__ = ["DESCRIPTION_LIMIT", "risk_of", "tool_spec"]

DESCRIPTION_LIMIT = 400
"""Characters of a server's tool description the model is offered (some servers write essays)."""

def risk_of(tool: ToolInfo) -> str:
    if tool.read_only:
        return "read"
    return "exec" if tool.destructive else "write"


def tool_spec(connection: McpConnection, tool: ToolInfo) -> ToolSpec:
    """The spec the registry holds for `tool`; its execute() calls the server."""
    risk = risk_of(tool)
    server = connection.name
    description = tool.description[:DESCRIPTION_LIMIT] or f"The {tool.name} tool."
    schema = {
        "type": "function",
        "name": tool.name,
        "description": f"{description} (from the MCP server '{server}')",
        "parameters": _object_schema(tool.input_schema),
    }

    async def execute(args: dict[str, Any], ctx: Any) -> str:
        # Trust skips the question only for a tool its server calls harmless (read-only, or not
        # destructive): with no annotations the protocol's default is "may be destructive", and
        # a tool that itself says it deletes asks every time.
        harmless = tool.read_only or not tool.destructive
        if not connection.server.trusted or tool.says_destructive or not harmless:
            refusal = await _approval(ctx, server, tool, args)
            if refusal is not None:
                return ctx.refuse(refusal)
        elif (gate := ctx.services.get("gate")) is not None:
            gate.trusted_call(_shown(server, tool.name, args), server=server, tool=tool.name)
        # Every server runs with the workspace writable: while an approval card holds it still
        # its processes are stopped (safety/consent/still.py), so the call waits here and says so.
        still = getattr(ctx.services.get("gate"), "still", None)
        if still is not None and not await still.quiet(float(ctx.budget_s) * 0.8):
            return ctx.refuse(STILL_SENTENCE.format(what=f"use {tool.name} from '{server}', which can change it"))
        outcome = await connection.call(tool.name, args, ctx.budget_s)
        return outcome.text if outcome.ok else ctx.fail(outcome.text)

    return ToolSpec(
        name=tool.name, schema=schema, execute=execute, toolset=connection.server.family,
        risk=risk, check=lambda: connection.up, module=f"mcp:{server}",
    )


async def _approval(ctx: Any, server: str, tool: ToolInfo, args: dict[str, Any]) -> str | None:
    """None when the user approved the call; otherwise the sentence saying why it did not run."""
    gate = ctx.services.get("gate")
    if gate is None:
        return f"I can't use {tool.name} from '{server}' right now: there's no approval gate to ask."
    verdict = await gate.review_tool_call(
        _shown(server, tool.name, args), server=server, tool=tool.name,
        destructive=tool.destructive, claims_read_only=tool.read_only,
        channel=str(ctx.channel), hold=ctx.hold_budget,
    )
    return None if verdict.allowed else verdict.sentence


def _shown(server: str, tool: str, args: dict[str, Any]) -> str:
    """The call as the card and the audit log show it: whole, never cut (a long argument must
    not push the path of a delete out of sight)."""
    return f"mcp:{server} {tool} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The parameters schema a chat API accepts: an object, without the `title` noise."""
    cleaned = {k: v for k, v in schema.items() if k != "title"}
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned
