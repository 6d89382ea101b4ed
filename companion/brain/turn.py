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

from companion.brain.budget import fit_messages, message_tokens
from companion.brain.client import BrainError, ChatModel, ToolCallRequest
from companion.brain.emotion import guess_emotion
from companion.brain.fill import fill_wanted
from companion.brain.reply import ReplyStream
from companion.brain.tool_list import compact_tools
from companion.brain.toolcall import WORK_TOOLS, CallRecord, ToolRunner
from companion.brain.warmup import warm_in_background
from companion.config import BrainSettings, Settings
from companion.errors import CompanionError
from companion.events import (
    ErrorOccurred,
    EventBus,
    ExpressionChanged,
    ReplyDelta,
    ReplyDone,
    Speak,
    SpeechKind,
    TurnFinished,
)
from companion.persona import Personality, build_system_prompt, build_turn_note, with_turn_note
from companion.tools.context import Channel, Mode, Session, ToolContext
from companion.tools.families import ON_REQUEST_TOOLSETS
from companion.tools.registry import Registry, ToolSpec

log = logging.getLogger(__name__)

MAX_HISTORY_MESSAGES = 60
"""Older messages are dropped (whole user turns at a time) to keep requests small."""
EXTRA_ROUNDS = 3
"""Model rounds allowed beyond the call cap, for refused calls and the final answer."""
SENTENCE_ROOM = 0.25
"""The server may write this share past the reply cap, so the sentence that crosses it can end."""
LIMIT_LINE = "That's where I'll stop; ask me if you want more."
REPEATING_LINE = "I was starting to repeat myself, so I stopped there."


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: her final visible reply and face, and what happened on the way."""

    text: str
    emotion: str = "neutral"
    interrupted: bool = False
    error: CompanionError | None = None
    calls: tuple[CallRecord, ...] = field(default_factory=tuple)
    cut: str = ""
    """Why the reply was ended early: "limit" (the reply cap), "repeating", or "" (it wasn't)."""


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
        self.sent_notes: dict[int, str] = {}
        """The turn note each user message in the history was sent with (by the message's id):
        later requests repeat it, so every request starts with the one before it, byte for
        byte, and a server's prompt cache covers all but the newest words. The history itself
        keeps the plain words."""
        self.remembered: Callable[[list[dict[str, Any]]], None] | None = None
        """Called with the messages each turn adds to the history (the conversation store saves them)."""
        self._no_tools_model: str | None = None
        self._partial = ""
        self._mood_shown: str | None = None
        """The mood her face was given by the words of the round being said (None before them)."""
        self._learnt_context: tuple[ChatModel, int] | None = None
        """A context size learnt from a context-exceeded error, for that client (it wins over
        the server's word until the client is swapped)."""

    @property
    def partial(self) -> str:
        """The visible text of the round being streamed (what an interruption leaves)."""
        return self._partial

    async def run_turn(self, text: str, channel: Channel = Channel.TEXT) -> TurnResult:
        """Answer one user message. Cancelling the task stops the stream and the running tool;
        the history then keeps what was said so far."""
        personality = self.personality()
        system = build_system_prompt(personality)
        note = build_turn_note(voice=channel == Channel.VOICE, work=self.mode == Mode.WORK)
        added: list[dict[str, Any]] = [{"role": "user", "content": text}]
        live = {id(message) for message in self.history}
        for gone in [key for key in self.sent_notes if key not in live]:
            del self.sent_notes[gone]
        self.sent_notes[id(added[0])] = note
        runner = ToolRunner(
            registry=self.registry, bus=self.bus, mode=self.mode, narration=self.settings.narration,
            patterns=personality.patterns, make_context=lambda spec: self._context(spec, channel),
        )
        self._partial = ""
        self._mood_shown = None
        try:
            result = await self._rounds(system, note, added, runner, channel)
        except asyncio.CancelledError:
            _answer_open_calls(added)
            if self._partial:
                added.append({"role": "assistant", "content": self._partial})
            self._remember(added)
            self.bus.emit(TurnFinished(self._partial, "neutral", interrupted=True))
            raise
        if result.error is None or result.error.code != "context":
            self._remember(added)  # a turn too large for the context would fail every next turn
        if result.error is None and result.emotion != self._mood_shown:
            self.bus.emit(ExpressionChanged(result.emotion, "reply"))
        self.bus.emit(TurnFinished(result.text, result.emotion))
        return result

    async def _rounds(
        self, system: str, note: str, added: list[dict[str, Any]], runner: ToolRunner, channel: Channel,
    ) -> TurnResult:
        describe = getattr(self.model, "describe", None)
        if describe is not None:
            await describe()  # once per client: the server's kind and context size
        cap, server_cap = self._caps(channel)
        max_rounds = runner.limits.max_calls + EXTRA_ROUNDS
        retried_without_tools = retried_drop = retried_context = False
        round_number = 0
        while True:
            last_round = round_number >= max_rounds
            tools = None if last_round or runner.exhausted else self._offered()
            stream = ReplyStream(known_tools=self._callable(tools), cap_tokens=cap)
            messages = self._request(system, note, added, tools, server_cap)
            try:
                reply = await self.model.complete(messages, tools, partial(self._stream, stream),
                                                  max_tokens=server_cap)
            except BrainError as error:
                if error.code == "no_tools" and tools and not retried_without_tools:
                    # Say it once, remember it for this model, and answer without tools.
                    retried_without_tools = True
                    self._no_tools_model = self.model.model
                    self.bus.emit(Speak(SpeechKind.SAY, error.sentence))
                    continue
                if error.code == "dropped" and not stream.text.strip() and not retried_drop:
                    retried_drop = True  # nothing was said yet: ask once more, silently
                    log.info("the stream broke before any words; asking again")
                    continue
                if error.code == "context" and not retried_context:
                    retried_context = True
                    learnt = error.context_tokens or int(_tokens(messages) * 0.7)
                    self._learnt_context = (self.model, learnt)
                    log.info("context exceeded; retrying within %d tokens", learnt)
                    continue
                return self._failed(error, stream, added, runner)
            tail = stream.finish()
            if tail:
                self.bus.emit(ReplyDelta(tail))
            visible = stream.text.strip()
            calls = reply.tool_calls or (stream.text_calls(f"call_text_{round_number}_") if tools else ())
            cut = _cut_reason(reply.finish_reason, stream.stop_reason) if not calls else ""
            if visible:
                self.bus.emit(ReplyDone(visible))
            added.append(_assistant_message(visible, stream.emotion, calls, cut))
            self._partial = ""
            if not calls or last_round:
                _answer_open_calls(added, "Not run: no more tools this turn.")
                if cut:
                    self.bus.emit(Speak(SpeechKind.SAY, LIMIT_LINE if cut == "limit" else REPEATING_LINE))
                emotion = stream.emotion or guess_emotion(visible)
                return TurnResult(visible, emotion, calls=tuple(runner.records), cut=cut)
            self._mood_shown = None  # a tool's focus face comes next
            for call in calls:
                content = await runner.run(call)
                added.append({"role": "tool", "tool_call_id": call.id, "content": content})
            round_number += 1

    def _caps(self, channel: Channel) -> tuple[int, int]:
        """The reply cap she keeps to, and the one the server is given (room to end a sentence)."""
        brain = self.settings.brain
        cap = brain.max_tokens_spoken if channel == Channel.VOICE else brain.max_tokens_typed
        server_cap = cap + max(40, int(cap * SENTENCE_ROOM))
        if self._context_size():
            # A small context (2,048 or 4,096) must keep room for the prompt and the history.
            server_cap = min(server_cap, max(64, self._context_size() // 3))
            cap = min(cap, server_cap)
        return cap, server_cap

    def fill(self, text: str, channel: Channel = Channel.VOICE) -> bool:
        """While the user still speaks: send the request a turn on `text` (their words so far)
        would start with, built as run_turn builds it, to fill a local server's prompt cache
        (brain/fill.py). False when none went (off, a hosted API, the same words again, a real
        request under way, a model that can't)."""
        fill = getattr(self.model, "fill", None)
        if fill is None or not text.strip() or not fill_wanted(self.settings.brain, getattr(self.model, "server", None)):
            return False
        system = build_system_prompt(self.personality())
        note = build_turn_note(voice=channel == Channel.VOICE, work=self.mode == Mode.WORK)
        tools = self._offered()
        messages = self._request(system, note, [{"role": "user", "content": text}], tools, self._caps(channel)[1])
        return bool(fill(messages, tools))

    def _request(
        self, system: str, note: str, added: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
        reply_tokens: int,
    ) -> list[dict[str, Any]]:
        """The messages of one request: the fixed system message, the recent history that fits
        the context, then this turn, its user message carrying the turn note."""
        current = [dict(m) for m in added]
        current[0]["content"] = with_turn_note(str(current[0]["content"]), note)
        history = [self._as_sent(m) for m in self.history]
        fitted = fit_messages([{"role": "system", "content": system}], history, current,
                              tools=tools, context_tokens=self._context_size(), reply_tokens=reply_tokens)
        if fitted.dropped:
            log.info("left %d older messages out to fit the context", fitted.dropped)
        return fitted.messages

    def _as_sent(self, message: dict[str, Any]) -> dict[str, Any]:
        """A history message as its request sent it (a user message with its turn note)."""
        note = self.sent_notes.get(id(message))
        if note is None or message.get("role") != "user":
            return message
        return {**message, "content": with_turn_note(str(message["content"]), note)}

    def _context_size(self) -> int:
        if self._learnt_context is not None and self._learnt_context[0] is self.model:
            return self._learnt_context[1]
        if self.settings.brain.context_tokens:
            return self.settings.brain.context_tokens
        server = getattr(self.model, "server", None)
        return getattr(server, "context_tokens", 0)

    async def warm_up(self) -> None:
        """One tiny request with this conversation's exact prefix (system message and tools),
        so the server has it cached before the user's first question. Never raises."""
        describe = getattr(self.model, "describe", None)
        try:
            if describe is not None:
                await describe()
            system = build_system_prompt(self.personality())
            messages = [{"role": "system", "content": system}, {"role": "user", "content": "Hi"}]
            settings = getattr(self.model, "settings", None)
            if isinstance(settings, BrainSettings):
                await asyncio.wrap_future(warm_in_background(settings, messages, self._offered()))
            else:
                await self.model.complete(messages, self._offered(), lambda _piece: True, max_tokens=1)
        except (BrainError, OSError) as exc:
            log.info("prompt warm-up failed (the first turn will say why): %s", exc)

    def _stream(self, stream: ReplyStream, piece: str) -> bool:
        visible, stop = stream.feed(piece)
        if visible.strip() and self._mood_shown is None:
            # Her face leaves its thinking as her words come (the tag, if any, leads them),
            # not when the whole reply has been said.
            self._mood_shown = stream.emotion or "neutral"
            self.bus.emit(ExpressionChanged(self._mood_shown, "reply"))
        if visible:
            self._partial += visible
            self.bus.emit(ReplyDelta(visible))
        return stop

    def _failed(
        self, error: BrainError, stream: ReplyStream, added: list[dict[str, Any]], runner: ToolRunner
    ) -> TurnResult:
        tail = stream.finish()
        if tail:
            self.bus.emit(ReplyDelta(tail))
        heard = stream.text.strip()
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
        schemas = self.registry.schemas_for(str(self.mode), exclude=exclude, opened=self.session.open_toolsets)
        if self.mode == Mode.COMPANION:
            # Spoken and typed turns share one compact list: the same bytes keep the server's
            # prompt cache warm when the user switches between talking and typing.
            schemas = compact_tools(schemas)
        return schemas or None

    def _callable(self, tools: list[dict[str, Any]] | None) -> list[str]:
        """Names a call written as text may use: those offered, and on a conversation turn the
        on-request families' tools too (they run when called, listed or not)."""
        if tools is None:
            return []
        names = [tool["name"] for tool in tools]
        if self.mode == Mode.COMPANION:
            everything = self.registry.offered(str(self.mode), opened=ON_REQUEST_TOOLSETS)
            names += [spec.name for spec in everything if spec.name not in names]
        return names

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


def _cut_reason(finish_reason: str, stop_reason: str) -> str:
    if stop_reason in ("limit", "repeating"):
        return stop_reason
    return "limit" if finish_reason == "length" else ""


def _tokens(messages: list[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)


def _assistant_message(
    visible: str, emotion: str | None, calls: tuple[ToolCallRequest, ...], cut: str,
) -> dict[str, Any]:
    """The assistant message for the history: reasoning and markup removed, the emotion tag
    kept (so the model keeps the habit of writing one), a cut reply marked as cut."""
    text = visible
    if emotion and text:
        text = f"[{emotion}] {text}"
    if cut:
        text = f"{text} {LIMIT_LINE if cut == 'limit' else REPEATING_LINE}".strip()
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _safe_json(c.arguments)}}
            for c in calls
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
