"""execute_code — run a Python snippet in the kernel sandbox in the workspace, after the gate says yes."""

from __future__ import annotations

import sys

from companion.safety.command_line.code_scan import scan_code
from companion.safety.gate import ProcessRefused
from companion.safety.sandbox import probe
from companion.tools.action._timeout import TIMEOUT_PARAMETER, pick_timeout

SCHEMA = {
    "type": "function",
    "name": "execute_code",
    "description": (
        "Run a Python 3 program in a fresh sandboxed process, in the workspace folder, and return "
        "what it prints. Use print() for results. It can change files only in the workspace and "
        "has no internet. The user is asked first; code that deletes or writes files, starts "
        "programs or reads secrets always needs their OK."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The complete Python program."},
            "timeout": TIMEOUT_PARAMETER,
        },
        "required": ["code"],
        "additionalProperties": False,
    },
}
TOOLSET = "code"
RISK = "exec"

ANNOUNCE = "Let me write a little program for that."
HEARTBEAT = ["The code is still running...", "Still crunching...", "It's taking a while, still running..."]
COMPLETE = "The code ran."
FAIL = "My code ran into a problem."
EXPRESSIONS = {"focus": "determined", "done": "happy", "fail": "confused"}

MAX_CODE_CHARS = 100_000


def check() -> bool:
    # Not offered where the sandbox can't run, unless the user chose to run code without it.
    return bool(sys.executable) and probe.commands_allowed()


async def execute(args: dict, ctx) -> str:
    code = args.get("code") if isinstance(args, dict) else None
    if not isinstance(code, str) or not code.strip():
        return ctx.fail("I need some Python code to run.")
    if len(code) > MAX_CODE_CHARS:
        return ctx.fail(f"That program is longer than {MAX_CODE_CHARS:,} characters, so I won't run it.")
    try:
        timeout, budget = pick_timeout(args, ctx.budget_s)
    except ValueError as exc:
        return ctx.fail(str(exc))

    scan = scan_code(code)
    if scan.syntax_error:
        return ctx.fail(f"That code doesn't parse ({scan.syntax_error}), so I didn't run it.")
    gate = ctx.services.get("gate")
    if gate is None:
        return ctx.refuse("I can't run code right now: there's no approval gate to ask.")
    verdict = await gate.review_code(code, scan.findings, channel=str(ctx.channel), hold=ctx.hold_budget)
    if not verdict.allowed:
        return ctx.refuse(verdict.sentence)
    try:
        result = await gate.run(verdict, risk=ctx.risk, timeout_s=timeout, cancel=ctx.cancel,
                                env={"PYTHONIOENCODING": "utf-8"})
    except ProcessRefused as exc:
        return ctx.refuse(exc.sentence)
    except OSError as exc:  # e.g. the interpreter is missing
        return ctx.fail(f"I couldn't start it: {exc.strerror or exc}.")
    text = result.describe()
    if result.timed_out:
        return ctx.fail(f"It ran out of time after {timeout} s and I stopped it.\n{text}")
    if result.exit_code != 0 and not result.cancelled:
        # A traceback means the program failed; the model reads it to fix the code.
        return ctx.fail(f"The program stopped with an error (exit {result.exit_code}).\n{text}")
    return text
