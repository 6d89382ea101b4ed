"""use_tools — put the workspace tools (files, the terminal, Python) into her tool list.

A conversation turn lists only the tools at hand; the workspace families are listed once she
asks for them here (or calls one of their tools), and stay listed for the rest of the run.
"""

from __future__ import annotations

from companion.tools.families import ON_REQUEST_TOOLSETS

SCHEMA = {
    "type": "function",
    "name": "use_tools",
    "description": "Get the tools for the user's files, the terminal or running Python code.",
    "parameters": {
        "type": "object",
        "properties": {"family": {"type": "string", "enum": list(ON_REQUEST_TOOLSETS)}},
        "required": ["family"],
        "additionalProperties": False,
    },
}
TOOLSET = "core"
RISK = "read"
QUIET = True  # getting her tools out is not news: she speaks about the work they do

FAIL = "I can't use those tools right now."
EXPRESSIONS = {"fail": "confused"}

WHAT = {"code": "Python code", "file": "file", "terminal": "terminal"}


async def execute(args: dict, ctx) -> str:
    family = str(args.get("family", ""))
    settings = ctx.services.get("settings")
    disabled = settings.tools.disabled_toolsets if settings is not None else ()
    if family in disabled:
        return ctx.fail(f"The user has switched off the {WHAT[family]} tools in Settings.")
    opened = ctx.session.open_toolsets
    if family not in opened:
        opened.append(family)
    return f"The {WHAT[family]} tools are in your tool list now: use them."
