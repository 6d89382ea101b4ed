"""shell — run one command line in the workspace, through the approval gate, inside the kernel sandbox."""

from __future__ import annotations

import shutil

from companion.safety.gate import ProcessRefused
from companion.safety.sandbox import probe
from companion.tools.action._timeout import TIMEOUT_PARAMETER, pick_timeout

SCHEMA = {
    "type": "function",
    "name": "shell",
    "description": (
        "Run a shell command (bash) in the workspace folder and return its output and exit code. "
        "It runs in a sandbox: only the workspace can be changed, and there is no internet "
        "unless you set network. Read-only commands inside the workspace run at once; anything "
        "else asks the user first. Output is capped at 200 KB."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, e.g. 'ls -la' or 'git status'."},
            "timeout": TIMEOUT_PARAMETER,
            "network": {
                "type": "boolean",
                "description": "True only if the command must use the internet (e.g. git clone, "
                               "pip install); the user is then asked every time. Default: no network.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
}
TOOLSET = "terminal"
RISK = "exec"

ANNOUNCE = "Let me run that in the terminal."
HEARTBEAT = ["The command is still running...", "Still going, hang on...", "Taking a while, still running..."]
COMPLETE = "The command finished."
FAIL = "The command didn't work."
EXPRESSIONS = {"focus": "determined", "done": "happy", "fail": "confused"}

MAX_COMMAND_CHARS = 10_000


def check() -> bool:
    # Not offered where the sandbox can't run, unless the user chose to run commands without it.
    return shutil.which("bash") is not None and probe.commands_allowed()


async def execute(args: dict, ctx) -> str:
    command = args.get("command") if isinstance(args, dict) else None
    if not isinstance(command, str) or not command.strip():
        return ctx.fail("I need a command to run.")
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        return ctx.fail("That command is too long or has a null character in it, so I won't run it.")
    try:
        timeout, budget = pick_timeout(args, ctx.budget_s)
    except ValueError as exc:
        return ctx.fail(str(exc))

    gate = ctx.services.get("gate")
    if gate is None:
        # Never run a command that no gate has seen.
        return ctx.refuse("I can't run commands right now: there's no approval gate to ask.")
    network = args.get("network") is True
    verdict = await gate.review(command, tool="shell", channel=str(ctx.channel), hold=ctx.hold_budget,
                                network=network)
    if not verdict.allowed:
        return ctx.refuse(verdict.sentence)
    try:
        result = await gate.run(verdict, risk=ctx.risk, timeout_s=timeout, cancel=ctx.cancel)
    except ProcessRefused as exc:
        return ctx.refuse(exc.sentence)
    except OSError as exc:  # e.g. bwrap or bash is missing
        return ctx.fail(f"I couldn't start it: {exc.strerror or exc}.")
    text = result.describe()
    if args.get("timeout", 0) > budget:
        text += f"\n[the timeout was lowered to {budget} s, this turn's limit]"
    if result.timed_out:
        return ctx.fail(f"It ran out of time after {timeout} s and I stopped it.\n{text}")
    # A non-zero exit is information (grep found nothing), not a broken tool: the model reads it.
    return text
