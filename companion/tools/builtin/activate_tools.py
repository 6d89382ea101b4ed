"""activate_tools — list the MCP tool families, and switch one on for the running background job."""

from __future__ import annotations

SCHEMA = {
    "type": "function",
    "name": "activate_tools",
    "description": (
        "List the tool families that come from MCP servers, with their tools; or switch one "
        "family on for this job (give `family`, e.g. 'mcp:time') so its tools can be used "
        "from the next step on."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "family": {
                "type": "string",
                "description": "The family to switch on, e.g. 'mcp:time'. Leave out to list them.",
            },
        },
        "additionalProperties": False,
    },
}
TOOLSET = "mcp"
RISK = "read"

ANNOUNCE = "Let me see which extra tools I can pick up."
HEARTBEAT = ["Starting the tool server...", "Still waiting for the tool server..."]
COMPLETE = "Those tools are ready."
FAIL = "I couldn't get those tools going."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}


async def execute(args: dict, ctx) -> str:
    mcp = ctx.services.get("mcp")
    if mcp is None or not mcp.families:
        return "No MCP servers are configured, so there are no extra tool families."
    family = str(args.get("family") or "").strip()
    if not family:
        return "\n".join(_describe(status) for status in mcp.statuses())
    if not family.startswith("mcp:"):
        family = f"mcp:{family}"
    status = await mcp.activate(family)
    if isinstance(status, str):
        return ctx.fail(status)
    if not status.up:
        return ctx.fail(status.reason or f"The MCP server for {family} is not running.")
    return f"{family} is on for this job.\n{_describe(status)}"


def _describe(status) -> str:
    head = f"{status.family} ({status.state}{': ' + status.reason if status.reason else ''})"
    lines = [head]
    lines += [f"- {name} [{risk}]: {description}" for name, description, risk in status.tools]
    if status.skipped:
        lines.append(f"- left out (their names are taken): {', '.join(status.skipped)}")
    if not status.tools and status.state == "stopped":
        lines.append("- switched off; activate it to see its tools")
    return "\n".join(lines)
