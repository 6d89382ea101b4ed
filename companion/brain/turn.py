"""The turn loop: one user message to a final reply, through as many model rounds as tools need."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from companion.brain.client import BrainError, ChatModel, ModelReply
from companion.brain.emotion import ReplyFilter
from companion.brain.toolcall import WORK_TOOLS, CallRecord, ToolRunner
from companion.config import Settings
from companion.errors import CompanionError
from companion.events import (
    ErrorOccurred,
    EventBus,
    ExpressionChanged,
    ReplyDelta,
    ReplyDone,
    Speak,
    SpeechKind,
    State,
    StateChanged,
    TurnFinished,
)
from companion.persona import Personality, build_system_prompt
from companion.tools.context import Channel, Mode, Session, ToolContext
from companion.tools.registry import Registry, ToolSpec

log = logging.getLogger(__name__)

MAX_HISTORY_MESSAGES = 60
"""Older messages are dropped (whole user turns at a time) to keep requests small."""
EXTRA_ROUNDS = 3
"""Model rounds allowed beyond the call cap, for refused calls and the final answer."""


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: her final visible reply and face, and what happened on the way."""

    text: str
    emotion: str = "neutral"
    interrupted: bool = False
    error: CompanionError | None = None
    calls: tuple[CallRecord, ...] = field(default_factory=tuple)


class Conversation:
    """History plus the turn loop, in one mode (companion for chat and voice, work for jobs).

    Events go to `bus`; `settings`, `model` and `personality` are read at the start of
    each turn, so the owner may swap them between turns.
    """

    def __init__(
        self, *, model: ChatModel, registry: Registry, personality: Callable[[], Personality],
        settings: Settings, bus: EventBus, mode: Mode = Mode.COMPANION,
        workspace: Path, data_dir: Path, session: Session | None = None,
        services: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.registry = registry
        self.personality = personality
        self.settings = settings
        self.bus = bus
        self.mode = mode
        self.workspace = workspace
        self.data_dir = data_dir
        self.session = session or Session()
        self.services = services if services is not None else {}
        self.history: list[dict[str, Any]] = []
        self.remembered: Callable[[list[dict[str, Any]]], None] | None = None
        """Called with the messages each turn adds to the history (the conversation store saves them)."""
        self._no_tools_model: str | None = None
        self._partial = ""

    @property
    def partial(self) -> str:
        """The visible text of the round being streamed (what an interruption leaves)."""
        return self._partial

    async def run_turn(self, text: str, channel: Channel = Channel.TEXT) -> TurnResult:
        """Answer one user message. Cancelling the task stops the stream and the running tool;
        the history then keeps what was said so far."""
        personality = self.personality()
        system = build_system_prompt(personality, work=self.mode == Mode.WORK,
                                     voice=channel == Channel.VOICE)
        added: list[dict[str, Any]] = [{"role": "user", "content": text}]
        runner = ToolRunner(
            registry=self.registry, bus=self.bus, mode=self.mode, narration=self.settings.narration,
            patterns=personality.patterns, make_context=lambda spec: self._context(spec, channel),
        )
        self._partial = ""
        self.bus.emit(StateChanged(State.THINKING))
        try:
            result = await self._rounds(system, added, runner)
        except asyncio.CancelledError:
            _answer_open_calls(added)
            if self._partial:
                added.append({"role": "assistant", "content": self._partial})
            self._remember(added)
            self.bus.emit(TurnFinished(self._partial, "neutral", interrupted=True))
            self.bus.emit(StateChanged(State.IDLE))
            raise
        self._remember(added)
        if result.error is None:
            self.bus.emit(ExpressionChanged(result.emotion, "reply"))
        self.bus.emit(TurnFinished(result.text, result.emotion))
        self.bus.emit(StateChanged(State.IDLE))
        return result

    async def _rounds(self, system: str, added: list[dict[str, Any]], runner: ToolRunner) -> TurnResult:
        max_rounds = runner.limits.max_calls + EXTRA_ROUNDS
        retried_without_tools = False
        for round_number in range(max_rounds + 1):
            last_round = round_number == max_rounds
            tools = None if last_round or runner.exhausted else self._offered()
            reply_filter = ReplyFilter()
            messages = [{"role": "system", "content": system}, *self.history, *added]
            try:
                reply = await self.model.complete(messages, tools, partial(self._stream, reply_filter))
            except BrainError as error:
                if error.code == "no_tools" and tools and not retried_without_tools:
                    # Say it once, remember it for this model, and answer without tools.
                    retried_without_tools = True
                    self._no_tools_model = self.model.model
                    self.bus.emit(Speak(SpeechKind.SAY, error.sentence))
                    continue
                return self._failed(error, reply_filter, added, runner)
            tail = reply_filter.finish()
            if tail:
                self.bus.emit(ReplyDelta(tail))
            visible = reply_filter.text.strip()
            if visible:
                self.bus.emit(ReplyDone(visible))
            added.append(_assistant_message(reply, reply_filter))
            self._partial = ""
            if not reply.tool_calls or last_round:
                _answer_open_calls(added, "Not run: no more tools this turn.")
                return TurnResult(visible, reply_filter.emotion or "neutral", calls=tuple(runner.records))
            for call in reply.tool_calls:
                content = await runner.run(call)
                added.append({"role": "tool", "tool_call_id": call.id, "content": content})
        raise AssertionError("unreachable: the last round always returns")

    def _stream(self, reply_filter: ReplyFilter, piece: str) -> None:
        visible = reply_filter.feed(piece)
        if visible:
            self._partial += visible
            self.bus.emit(ReplyDelta(visible))

    def _failed(
        self, error: BrainError, reply_filter: ReplyFilter, added: list[dict[str, Any]], runner: ToolRunner
    ) -> TurnResult:
        tail = reply_filter.finish()
        if tail:
            self.bus.emit(ReplyDelta(tail))
        heard = reply_filter.text.strip()
        if heard:
            added.append({"role": "assistant", "content": heard})
        self.bus.emit(ErrorOccurred(str(error.stage), error.code, error.sentence))
        # The sentence also arrives as speech, so every front-end that talks says it.
        self.bus.emit(Speak(SpeechKind.SAY, error.sentence))
        self.bus.emit(ExpressionChanged("confused", f"error: {error.code}"))
        return TurnResult(heard, "confused", error=error, calls=tuple(runner.records))

    def _offered(self) -> list[dict[str, Any]] | None:
        if self._no_tools_model == self.model.model:
            return None
        exclude = WORK_TOOLS if self.mode == Mode.WORK else ()
        schemas = self.registry.schemas_for(str(self.mode), exclude=exclude)
        return schemas or None

    def _context(self, spec: ToolSpec, channel: Channel) -> ToolContext:
        tools = self.settings.tools
        if self.mode == Mode.WORK:
            budget = tools.work_budget_s
        else:
            budget = tools.voice_budget_s if channel == Channel.VOICE else tools.text_budget_s
        return ToolContext(
            workspace=self.workspace, data_dir=self.data_dir, mode=self.mode, channel=channel,
            budget_s=budget, session=self.session, services=self.services,
            tool=spec.name, risk=spec.risk,
        )

    def _remember(self, added: list[dict[str, Any]]) -> None:
        if self.remembered is not None:
            self.remembered(added)
        self.history.extend(added)
        if len(self.history) > MAX_HISTORY_MESSAGES:
            # Cut at a user message so no tool result loses the call it answers.
            cut = len(self.history) - MAX_HISTORY_MESSAGES
            while cut < len(self.history) and self.history[cut]["role"] != "user":
                cut += 1
            del self.history[:cut]

    def replace_last_reply(self, heard: str) -> None:
        """Keep only what the user actually heard of her last reply (after a barge-in)."""
        for message in reversed(self.history):
            if message["role"] == "user":
                break
            if message["role"] == "assistant" and not message.get("tool_calls"):
                message["content"] = heard
                return
        if heard:
            self.history.append({"role": "assistant", "content": heard})


def _answer_open_calls(
    added: list[dict[str, Any]], answer: str = "Interrupted by the user before it finished."
) -> None:
    """Give every call left without a result one (an interrupted or capped turn), so the
    history stays a valid conversation for the next request. Only the last round can be open."""
    last = next((i for i in range(len(added) - 1, -1, -1) if added[i].get("tool_calls")), None)
    if last is None:
        return
    answered = {m["tool_call_id"] for m in added[last + 1:] if m["role"] == "tool"}
    for call in added[last]["tool_calls"]:
        if call["id"] not in answered:
            added.append({"role": "tool", "tool_call_id": call["id"], "content": answer})


def _assistant_message(reply: ModelReply, reply_filter: ReplyFilter) -> dict[str, Any]:
    """The assistant message for the history: reasoning removed, the emotion tag kept (so the
    model keeps the habit of writing one)."""
    text = reply_filter.text.strip()
    if reply_filter.emotion and text:
        text = f"[{reply_filter.emotion}] {text}"
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _safe_json(c.arguments)}}
            for c in reply.tool_calls
        ]
    return message


def _safe_json(raw: str) -> str:
    """Broken argument JSON is replaced by "{}" in the history: some servers reject the whole
    request when an earlier message holds invalid JSON."""
    try:
        json.loads(raw or "{}")
    except json.JSONDecodeError:
        return "{}"
    return raw or "{}"
