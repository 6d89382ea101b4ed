"""Run the tool calls of one turn: check, refuse, narrate, time out, cap, and report the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import jsonschema

from companion.brain.client import ToolCallRequest
from companion.brain.narration import resolve_lines, run_heartbeat
from companion.config import NarrationSettings
from companion.events import (
    ApprovalNeeded,
    ApprovalResolved,
    EventBus,
    ExpressionChanged,
    Outcome,
    Speak,
    SpeechKind,
    ToolFinished,
    ToolStarted,
)
from companion.tools.context import Mode, ToolContext
from companion.tools.families import COMPANION_TOOLSETS, ON_REQUEST_TOOLSETS
from companion.tools.registry import Registry, ToolSpec

log = logging.getLogger(__name__)

MAX_OUTPUT_CHARS = 16_000
WORK_TOOLS = frozenset({"start_work", "cancel_work", "use_tools"})
"""Conversation-only tools, never offered inside a background job: they hand work to it (or
take it back), or list tool families that a job always has."""


@dataclass(frozen=True)
class Limits:
    max_calls: int
    max_failures: int


COMPANION_LIMITS = Limits(max_calls=8, max_failures=2)
WORK_LIMITS = Limits(max_calls=40, max_failures=6)


def limits_for(mode: Mode) -> Limits:
    return WORK_LIMITS if mode == Mode.WORK else COMPANION_LIMITS


@dataclass(frozen=True)
class CallRecord:
    """How one call of the turn ended; `detail` is the sentence or a short result."""

    name: str
    arguments: dict[str, Any] | None
    outcome: Outcome
    detail: str = ""


def grace_s(budget_s: float) -> float:
    """Extra time past the budget before a call is stopped: a tool bounds itself by the
    budget and needs a moment to say its partial result."""
    return min(5.0, max(0.5, budget_s * 0.1))


def cap_output(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return (text[:MAX_OUTPUT_CHARS] + f"\n[output cut: showing the first {MAX_OUTPUT_CHARS:,} of "
            f"{len(text):,} characters]")


class ToolRunner:
    """Runs the calls of one turn through `registry.dispatchable`, with narration and caps.

    `run()` returns the text handed back to the model for that call; it never raises
    except CancelledError (the call is then reported as interrupted).
    """

    def __init__(
        self, *, registry: Registry, bus: EventBus, mode: Mode, narration: NarrationSettings,
        patterns: Mapping[str, Mapping[str, Any]], make_context: Callable[[ToolSpec], ToolContext],
    ) -> None:
        self.registry = registry
        self.bus = bus
        self.mode = mode
        self.limits = limits_for(mode)
        self.narration = narration
        self.patterns = patterns
        self.make_context = make_context
        self.records: list[CallRecord] = []
        self.executed = 0
        self.failures = 0
        self._announced: set[str] = set()
        self._seen: dict[tuple[str, str], Outcome] = {}

    @property
    def exhausted(self) -> bool:
        """No more calls may run this turn (a cap was reached)."""
        return self.executed >= self.limits.max_calls or self.failures >= self.limits.max_failures

    async def run(self, call: ToolCallRequest) -> str:
        arguments, problem = _parse_arguments(call.arguments)
        if problem:
            return self._refuse(call, None, f"The arguments for {call.name} were not valid JSON "
                                            f"({problem}). Send them again as one JSON object.")
        spec, refusal = self._lookup(call.name)
        if spec is None:
            return self._refuse(call, arguments, refusal)
        invalid = _schema_problem(spec, arguments)
        if invalid:
            return self._refuse(call, arguments, f"The arguments for {call.name} don't fit its "
                                                 f"parameters: {invalid}. Fix them and call again.")
        key = (call.name, json.dumps(arguments, sort_keys=True))
        earlier = self._seen.get(key)
        if earlier is not None:
            said = "failed" if earlier == Outcome.FAILED else "ran"
            return self._refuse(call, arguments, f"You already called {call.name} with exactly these "
                                                 f"arguments this turn and it {said}; the result is above. "
                                                 "Don't repeat it: use that result or try something different.")
        if self.failures >= self.limits.max_failures:
            return self._refuse(call, arguments, f"{self.failures} tool calls already failed this turn, so "
                                                 "no more tools now. Tell the user what happened.")
        if self.executed >= self.limits.max_calls:
            return self._refuse(call, arguments, f"That is the limit of {self.limits.max_calls} tool calls "
                                                 "for this turn. Answer with what you have.")
        outcome, text = await self._execute(spec, call, arguments)
        self._seen[key] = outcome
        if outcome == Outcome.FAILED:
            return (f"{call.name} failed: {cap_output(text)}\nDo not repeat this identical call; "
                    "try something different or tell the user.")
        return cap_output(text)

    # --- checks ---------------------------------------------------------------------------
    def _lookup(self, name: str) -> tuple[ToolSpec | None, str]:
        spec = self.registry.dispatchable(name)
        if spec is None:
            known = self.registry.tools().get(name)
            if known is None:
                return None, f"There is no tool called {name}. Use only the tools you were given."
            return None, (f"The user has switched off the {known.toolset} tools, so {name} can't run. "
                          "Tell the user if they need it.")
        if self.mode == Mode.COMPANION and spec.toolset not in COMPANION_TOOLSETS:
            return None, (f"{name} is only for background work. Hand the task to start_work "
                          "if it needs this tool.")
        if self.mode == Mode.WORK and name in WORK_TOOLS:
            return None, f"{name} can't be used inside a background job."
        if spec.built_in:
            return None, f"{name} is run by the model provider, not by me."
        if not self.registry.is_available(spec):
            return None, f"{name} isn't available right now."
        return spec, ""

    def _refuse(self, call: ToolCallRequest, arguments: dict[str, Any] | None, sentence: str) -> str:
        # A refused call runs nothing and says nothing out loud: the model reads why.
        self.records.append(CallRecord(call.name, arguments, Outcome.REFUSED, sentence))
        self.bus.emit(ToolFinished(call.name, call.id, Outcome.REFUSED, sentence))
        return sentence

    # --- running --------------------------------------------------------------------------
    async def _execute(
        self, spec: ToolSpec, call: ToolCallRequest, arguments: dict[str, Any]
    ) -> tuple[Outcome, str]:
        lines = resolve_lines(spec, self.patterns.get(spec.name))
        ctx = self.make_context(spec)
        self.executed += 1
        opened = ctx.session.open_toolsets
        if self.mode == Mode.COMPANION and spec.toolset in ON_REQUEST_TOOLSETS and spec.toolset not in opened:
            opened.append(spec.toolset)  # called without asking: list its family from now on
        if spec.name not in self._announced and not spec.quiet:
            self._announced.add(spec.name)
            self.bus.emit(Speak(SpeechKind.ANNOUNCE, lines.announce, spec.name))
        self.bus.emit(ToolStarted(spec.name, call.id, arguments))
        self.bus.emit(ExpressionChanged(spec.expressions.get("focus", "thinking"), f"focus: {spec.name}"))
        asking: set[str] = set()  # approval questions open right now

        def watch(event: object) -> None:
            if isinstance(event, ApprovalNeeded):
                asking.add(event.request_id)
            elif isinstance(event, ApprovalResolved):
                asking.discard(event.request_id)

        def beat(line: str) -> None:
            if not asking and not spec.quiet:  # never hum over a question the user is being asked
                self.bus.emit(Speak(SpeechKind.HEARTBEAT, line, spec.name))

        stop_watching = self.bus.subscribe(watch)
        heartbeat = asyncio.ensure_future(run_heartbeat(
            lines.heartbeat, self.narration.heartbeat_first_s, self.narration.heartbeat_every_s, beat,
        ))
        timeout = ctx.budget_s + grace_s(ctx.budget_s)
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                # Time spent waiting for the user's approval does not count against the budget.
                ctx.hold_budget = partial(_move_deadline, deadline)
                result = await spec.execute(arguments, ctx)
            text = result if isinstance(result, str) else str(result)
            outcome = Outcome.FAILED if ctx.failed else Outcome.REFUSED if ctx.refused else Outcome.OK
            if ctx.failed:
                text = ctx.failure or text
        except asyncio.CancelledError:
            ctx.cancel.set()
            self.records.append(CallRecord(spec.name, arguments, Outcome.INTERRUPTED))
            self.bus.emit(ToolFinished(spec.name, call.id, Outcome.INTERRUPTED))
            raise
        except TimeoutError as exc:
            ctx.cancel.set()
            if deadline.expired():
                outcome, text = Outcome.FAILED, f"it took longer than {timeout:g} seconds and was stopped"
            else:  # the tool's own timeout escaped it
                log.warning("tool %s let a timeout escape", spec.name, exc_info=True)
                outcome, text = Outcome.FAILED, f"it timed out inside ({exc or 'no details'})"
        except Exception as exc:  # a tool should never raise; if one does, the turn goes on
            log.exception("tool %s raised", spec.name)
            outcome, text = Outcome.FAILED, f"it crashed ({type(exc).__name__}: {exc})"
        finally:
            stop_watching()
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        self.records.append(CallRecord(spec.name, arguments, outcome, text[:200]))
        self.bus.emit(ToolFinished(spec.name, call.id, outcome, text[:200]))
        if outcome == Outcome.OK and not spec.quiet:
            self.bus.emit(Speak(SpeechKind.COMPLETE, lines.complete, spec.name))
        elif outcome == Outcome.FAILED:  # a refused call (the gate said no) says neither
            self.failures += 1
            self.bus.emit(Speak(SpeechKind.FAIL, lines.fail, spec.name))
            self.bus.emit(ExpressionChanged(spec.expressions.get("fail", "sad"), f"fail: {spec.name}"))
        return outcome, text


def _move_deadline(deadline: asyncio.Timeout, seconds: float) -> None:
    when = deadline.when()
    if when is not None:
        deadline.reschedule(when + seconds)


def _parse_arguments(raw: str) -> tuple[dict[str, Any], str]:
    """(arguments, problem); an empty string means no arguments."""
    if not raw.strip():
        return {}, ""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, exc.msg
    if not isinstance(value, dict):
        return {}, f"expected an object, got {type(value).__name__}"
    return value, ""


def _schema_problem(spec: ToolSpec, arguments: dict[str, Any]) -> str:
    parameters = spec.schema.get("parameters") or {"type": "object"}
    try:
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(parameters).iter_errors(arguments)
        )
    except jsonschema.exceptions.SchemaError:
        log.warning("tool %s has an invalid parameters schema", spec.name)
        return ""
    if error is None:
        return ""
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
