"""cancel_work — stop the background job that start_work began."""

from __future__ import annotations

SCHEMA = {
    "type": "function",
    "name": "cancel_work",
    "description": "Stop the background job that is running (when the user asks to cancel or stop it).",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
}
TOOLSET = "core"
RISK = "read"

ANNOUNCE = "Stopping the background job."
HEARTBEAT = ["Winding it down..."]
COMPLETE = "Stopped."
FAIL = "There was nothing to stop."
EXPRESSIONS = {"focus": "determined", "done": "neutral", "fail": "confused"}


async def execute(args: dict, ctx) -> str:
    work = ctx.services.get("work")
    if work is None:
        return ctx.fail("Background work isn't available here.")
    stopped, sentence = work.cancel()
    return sentence if stopped else ctx.fail(sentence)
