"""start_work — hand a longer task to a background job that works on it in work mode."""

from __future__ import annotations

SCHEMA = {
    "type": "function",
    "name": "start_work",
    "description": (
        "Start a background job for a longer multi-step task (it may use every enabled tool, "
        "including ones not available in conversation). Returns at once; you will be told the "
        "result later. Only one job runs at a time."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The whole task, self-contained: the job does not see this conversation.",
            },
        },
        "required": ["task"],
        "additionalProperties": False,
    },
}
TOOLSET = "core"
RISK = "read"

ANNOUNCE = "I'll hand that to a background job."
HEARTBEAT = ["Setting it up..."]
COMPLETE = "It's running in the background now."
FAIL = "I couldn't start the background job."
EXPRESSIONS = {"focus": "determined", "done": "happy", "fail": "confused"}


async def execute(args: dict, ctx) -> str:
    work = ctx.services.get("work")
    if work is None:
        return ctx.fail("Background work isn't available here.")
    started, sentence = work.start(str(args.get("task", "")))
    return sentence if started else ctx.fail(sentence)
