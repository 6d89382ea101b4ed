"""The assembled core every front-end drives: settings, tools, personality, brain, work, events.

Usage (terminal, voice loop and window alike)::

    companion = Companion(config, bus)        # bus: an EventBus you subscribed to
    await companion.start()
    result = await companion.ask("what time is it?", Channel.VOICE)
    companion.interrupt("stop")               # Esc, barge-in, "stop": one event ends the turn
    companion.keep_heard(turn_id, played)     # after it: history keeps what was heard
    await companion.close()

Everything she says arrives on the bus as events (see companion.events), each stamped with
its turn's id; `companion.turns` (turns.TurnOwner) says which turn is current. `ask()` emits
UserHeard itself, so front-ends never emit it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.brain.client import ChatModel, OpenAIChatModel
from companion.brain.narration import VoiceLines, all_lines
from companion.brain.prepared import HeldBus, PreparedTurn
from companion.brain.turn import MAX_HISTORY_MESSAGES, Conversation, TurnResult
from companion.brain.work import WorkManager
from companion.brain_clients import BrainClients, PinnedModel, SwitchingModel
from companion.config import Settings, VoiceSettings
from companion.conversations import ConversationStore, Entry
from companion.conversations.kept import KeptConversations
from companion.events import (
    ErrorOccurred,
    Event,
    EventBus,
    Speak,
    SpeechKind,
    TurnSource,
    UserHeard,
    turn_scope,
)
from companion.face_state import FaceState
from companion.foreground import ForegroundTurn
from companion.paths import code_paths, own_paths
from companion.persona import PersonalityStore
from companion.safety.consent.answers import answer_aloud, still_waiting
from companion.safety.grants import Grants
from companion.safety.jail.jail import OWN_PATHS_SERVICE, check_workspace
from companion.supervisor import Supervisor
from companion.tool_services import ToolServices
from companion.tools import registry as tool_registry
from companion.tools.context import Channel, Mode, Session
from companion.tools.registry import Registry
from companion.turns import TurnOwner

if TYPE_CHECKING:
    from companion.config import RunConfig
    from companion.mcp import McpManager
    from companion.reminders import ReminderScheduler
    from companion.safety.gate import Gate


class Companion:
    """One conversation with her, and everything it needs.

    Attributes front-ends may read: `settings`, `bus`, `registry`, `personality` (the
    PersonalityStore: `.current`, `.problems`, `.save()`), `work` (the WorkManager),
    `conversation` (its `.history`), `services` (handed to every tool as ctx.services).
    """

    def __init__(
        self, config: RunConfig, bus: EventBus | None = None, *,
        registry: Registry | None = None, model: ChatModel | None = None,
    ) -> None:
        """`registry` and `model` replace tool discovery and the OpenAI client (tests, benches)."""
        self.paths = config.paths
        self.settings: Settings = config.settings
        self.bus = bus or EventBus()
        self.session = Session()
        self.services: dict[str, Any] = {"settings": self.settings, "bus": self.bus}
        self._given_registry = registry
        self._given_model = model
        self.registry: Registry | None = None
        self.model: ChatModel | None = None
        """What conversations talk to: switches to a new client on a brain settings change."""
        self.clients: BrainClients | None = None
        self.personality: PersonalityStore | None = None
        self.conversation: Conversation | None = None
        self.work: WorkManager | None = None
        self.turns = TurnOwner(self.bus)
        """The one owner of the current turn; interrupting goes through it."""
        self.supervisor = Supervisor(self.bus)
        """Watches her long-lived tasks: a failure is an ErrorOccurred, a restart where sensible."""
        self.face = FaceState(self.bus)
        """The one writer of StateChanged (her face and the pill)."""
        self.foreground = ForegroundTurn(self.bus, self.turns, after=self._after_turn, heard=self.note_heard_reply)
        """Her one foreground turn: its task, interrupting it, what was heard of it."""
        self.tool_services = ToolServices(self.paths, self.bus, self.supervisor, self.services,
                                          is_quiet=self.is_quiet,
                                          say=lambda line: self.tell(TurnSource.REMINDER, line))
        """The gate, the reminders and the MCP servers (started by start())."""
        self._hold_notices = False
        self.kept: KeptConversations | None = None
        """Her conversations on disk (set by start())."""
        self._warm_up: asyncio.Future[None] | None = None

    # --- life cycle -----------------------------------------------------------------------
    @property
    def workspace(self) -> Path:
        return self.settings.tools.workspace_path()

    @property
    def gate(self) -> Gate | None:
        """The approval gate (set by start()); front-ends attach their approver to it."""
        return self.tool_services.gate

    @property
    def reminders(self) -> ReminderScheduler | None:
        """Says due reminders (set by start()); tools reach it as ctx.services["reminders"]."""
        return self.tool_services.reminders

    @property
    def mcp(self) -> McpManager | None:
        """The MCP servers' tool families (set by start() when servers are configured)."""
        return self.tool_services.mcp

    async def start(self) -> None:
        """Discover tools, load the personality (copying the default on first run), connect
        the brain client. Never talks to the model: a brain that is down shows on the first turn."""
        # A workspace inside her own folders would let a file tool rewrite her settings and
        # grants: refuse to start, with a fix (JailError's sentence). One that contains them
        # is fine: the jail refuses her paths in it (ctx.services["own_paths"]).
        check_workspace(self.workspace, self._own_paths())
        self.services[OWN_PATHS_SERVICE] = self._own_paths()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.paths.data_dir.mkdir(parents=True, exist_ok=True)
        self.registry = self._given_registry or tool_registry.discover(
            plugin_dir=self.paths.data_dir / "plugins", disabled=self.settings.tools.disabled_toolsets,
            enabled_plugins=self.settings.tools.enabled_plugins,
        )
        chosen = self.settings.personality
        self.personality = PersonalityStore(
            Path(chosen) if chosen else self.paths.personality_file,
            known_tools=lambda: self.registry.tools().keys() if self.registry else (),
            copy_default=not chosen,
        )
        if self._given_model is None:
            self.clients = BrainClients(OpenAIChatModel, self.settings.brain)
            self.model = SwitchingModel(self.clients)
        else:
            self.model = self._given_model
        self.conversation = self._conversation(self.bus, Mode.COMPANION)
        self.kept = KeptConversations(self.paths.data_dir, self.bus, keep=MAX_HISTORY_MESSAGES)
        self.conversation.history = self.kept.recent()
        self.conversation.remembered = self.kept.recorder.remembered
        self.work = WorkManager(
            make_conversation=lambda bus: self._conversation(bus, Mode.WORK),
            bus=self.bus, is_quiet=self.is_quiet, remember=self._remember_said,
            say=lambda line: self.tell(TurnSource.NOTICE, line),
        )
        self.services.update(work=self.work, personality=self.personality, session=self.session)
        self.tool_services.start(self.settings, self.registry, self.workspace, self._personality_elsewhere())
        self._report_personality()
        if self._given_model is None:
            # The server caches her prompt now, so the first question doesn't pay for it.
            self._warm_up = asyncio.ensure_future(self.conversation.warm_up())

    async def close(self) -> None:
        """Stop the turn and the background job, and close the brain client."""
        self.interrupt("closing")
        await self.foreground.settle()
        if self._warm_up is not None:
            self._warm_up.cancel()
            await asyncio.gather(self._warm_up, return_exceptions=True)
        if self.work is not None:
            await self.work.close()
        await self.tool_services.stop_reminders()
        await self.supervisor.close()
        await self.tool_services.close()  # long-lived sandboxed processes end with her
        if self.clients is not None:
            await self.clients.close()
        if self.kept is not None:
            self.kept.close()

    # --- turns ----------------------------------------------------------------------------
    async def ask(self, text: str, channel: Channel = Channel.TEXT) -> TurnResult:
        """One user turn: emits UserHeard, then everything she says and does, and returns how
        it ended. A turn still live is interrupted first (new words win). Brain failures come
        back as `result.error` (and a spoken sentence), never as an exception."""
        assert self.conversation is not None, "call start() first"
        source = TurnSource.SPOKEN if channel == Channel.VOICE else TurnSource.TYPED
        owned = self.turns.begin(source, text)  # interrupts the live turn: its task is cancelled
        await self.foreground.settle()
        with turn_scope(owned.id):
            if self.personality is not None and self.personality.refresh():
                self._report_personality()
            self.bus.emit(UserHeard(text, spoken=channel == Channel.VOICE))
            # The task copies this context: everything the turn emits carries its id.
            turn = asyncio.ensure_future(self.conversation.run_turn(text, channel))
        return await self.foreground.own(turn, self.conversation, owned.id)

    def prepare(self, text: str, front: Callable[[Event], None], channel: Channel = Channel.VOICE) -> PreparedTurn:
        """Start answering `text` while the user may still go on (brain/prepared.py): `front`
        sees the reply as it streams; nothing is shown, kept or run until ask_prepared().
        It is a tentative turn: it gets its id (and becomes current) only when confirmed."""
        assert self.conversation is not None, "call start() first"
        if self.personality is not None and self.personality.refresh():
            self._report_personality()
        hold = HeldBus(self.bus, front)
        scratch = self._conversation(hold, Mode.COMPANION)  # type: ignore[arg-type]
        scratch.history = list(self.conversation.history)
        scratch.sent_notes = self.conversation.sent_notes  # its note stays with its words once confirmed
        return PreparedTurn(scratch, hold, text, channel)

    async def ask_prepared(self, prepared: PreparedTurn) -> TurnResult:
        """The user's turn is over: the prepared turn becomes hers, exactly as ask() runs one."""
        assert self.conversation is not None, "call start() first"
        owned = self.turns.begin(TurnSource.SPOKEN, prepared.text)
        await self.foreground.settle()
        prepared.hold.turn = owned.id  # what it emits from now on (and what waited) is this turn's
        prepared.confirm(self.conversation.history, self.conversation.remembered)
        return await self.foreground.own(prepared.task, prepared.conversation, owned.id)

    def tell(self, source: TurnSource, text: str) -> None:
        """She speaks up on her own (a reminder, a background result): a turn of its own, said
        through the same mouth and stopped by the same interruption."""
        owned = self.turns.begin(source, text)
        with turn_scope(owned.id):
            self.bus.emit(Speak(SpeechKind.SAY, text))
        self.turns.thought(owned.id)

    def brain_waking(self) -> bool:
        """Her brain is still starting: the start-up warm-up request has not been answered yet
        (a local server loading its model answers nothing until it has)."""
        return self._warm_up is not None and not self._warm_up.done()

    def interrupt(self, reason: str = "stop") -> bool:
        """Esc, barge-in, push-to-talk, "stop", quit: end the current turn now (its model
        stream, tool, queued speech and playback). True when a turn was live."""
        return self.foreground.interrupt(reason)

    def keep_heard(self, turn_id: int, heard: str) -> None:
        """After an interruption: turn `turn_id`'s reply in the history becomes what was played."""
        self.foreground.keep_heard(turn_id, heard)

    def answer_aloud(self, text: str) -> bool:
        """A spoken "yes" or "no" while an approval request is open answers the newest one,
        through the gate (it starts no turn, so the turn waiting for the answer goes on).
        True when `text` was such an answer."""
        return answer_aloud(self.gate, text)

    def card_waiting_line(self) -> str:
        """What she says when called while a card waits: the words that answer the newest card."""
        return still_waiting(self.gate)

    @property
    def busy(self) -> bool:
        """A turn is running."""
        return self.foreground.running

    def note_heard_reply(self, played_text: str) -> None:
        """After a barge-in, keep only the part of her last reply that was actually played."""
        if self.conversation is not None:
            self.conversation.replace_last_reply(played_text.strip())
            if self.kept is not None:
                self.kept.heard_reply(self.conversation.history)

    # --- conversations on disk --------------------------------------------------------------
    @property
    def store(self) -> ConversationStore | None:
        """Her conversations on disk (None before start())."""
        return self.kept.store if self.kept is not None else None

    @property
    def conversation_id(self) -> int | None:
        """The conversation being recorded (None before start())."""
        return self.kept.conversation_id if self.kept is not None else None

    async def new_conversation(self) -> int:
        """Start afresh: the running turn stops (and is saved in the old conversation), the
        history empties, and what follows is recorded in a new conversation."""
        assert self.kept is not None, "call start() first"
        await self.foreground.stop()
        conversation_id = self.kept.start_new()
        if self.conversation is not None:
            self.conversation.history = []
        return conversation_id

    async def open_conversation(self, conversation_id: int) -> None:
        """Carry on a past conversation: its recent turns become her history again."""
        assert self.kept is not None, "call start() first"
        await self.foreground.stop()
        recent = self.kept.switch_to(conversation_id)
        if self.conversation is not None:
            self.conversation.history = recent

    def transcript(self, conversation_id: int | None = None) -> list[Entry]:
        """Every transcript line of a conversation (the current one by default), oldest first."""
        return self.kept.transcript(conversation_id) if self.kept is not None else []

    def _after_turn(self) -> None:
        """A turn ended: background results and reminders that waited for it are told now."""
        if self.work is not None:
            self.work.deliver_notices()
        self.tool_services.deliver_pending()

    # --- quiet moments (background job results) ---------------------------------------------
    def is_quiet(self) -> bool:
        """She may speak up unprompted: no turn running and the front-end is not holding."""
        return not self.busy and not self._hold_notices

    def hold_notices(self, hold: bool) -> None:
        """The voice loop holds notices while the user speaks or she is talking; releasing
        delivers what waited."""
        self._hold_notices = hold
        if not hold and self.work is not None:
            self.work.deliver_notices()
        if not hold:
            self.tool_services.deliver_pending()

    # --- settings and previews --------------------------------------------------------------
    def apply_settings(self, settings: Settings) -> None:
        """Use new settings from the next turn on (switches take effect at once)."""
        old, self.settings = self.settings, settings
        self.services["settings"] = settings
        self.services[OWN_PATHS_SERVICE] = self._own_paths()
        self.tool_services.apply(settings, old, self._personality_elsewhere())
        if self.registry is not None:
            for toolset in set(old.tools.disabled_toolsets) | set(settings.tools.disabled_toolsets):
                self.registry.set_toolset_enabled(toolset, toolset not in settings.tools.disabled_toolsets)
            for plugin in set(old.tools.enabled_plugins) ^ set(settings.tools.enabled_plugins):
                self.registry.set_plugin_enabled(plugin, plugin in settings.tools.enabled_plugins)
        if settings.brain != old.brain and self.clients is not None:
            # The next request goes to the new brain; a stream or job in flight keeps its client.
            self.clients.replace(settings.brain)
        if self.conversation is not None:
            self.conversation.settings = settings
        if self.personality is not None and settings.personality != old.personality:
            path = Path(settings.personality) if settings.personality else self.paths.personality_file
            self.personality.path = path
            self.personality.refresh()

    def voice_settings(self, voice: VoiceSettings | None = None) -> VoiceSettings:
        """The voice settings with her personality's `voice:`, `speed:`, `variation:` and `pitch:` filled in."""
        voice, her = voice or self.settings.voice, self.personality and self.personality.current
        return voice if her is None else voice.with_personality_voice(her.voice, her.speed, her.variation,
                                                                      her.pitch)

    def saved_grants(self) -> tuple[Grants, str | None]:
        """The saved "always" answers (exact lines, command families) and any notice about the file."""
        if self.gate is None:
            return Grants(), None
        return self.gate.grants.current(), self.gate.grants.notice

    def revoke_grants(self, values: Iterable[str]) -> list[str]:
        """Forget saved "always" answers (exact lines or families); returns those forgotten."""
        if self.gate is None:
            return []
        return [value for value in values if self.gate.grants.revoke(value)]

    def narration_lines(self) -> dict[str, VoiceLines]:
        """Every tool's resolved lines (personality, module, generic): to pre-synthesize or preview."""
        assert self.registry is not None and self.personality is not None, "call start() first"
        self.personality.refresh()
        return all_lines(self.registry, self.personality.current.patterns)

    # --- internals --------------------------------------------------------------------------
    def _conversation(self, bus: EventBus, mode: Mode) -> Conversation:
        assert self.model is not None and self.registry is not None and self.personality is not None
        store = self.personality
        # A background job keeps the client it started with until it ends (WorkManager releases it).
        model = PinnedModel(self.clients) if mode == Mode.WORK and self.clients is not None else self.model
        return Conversation(
            model=model, registry=self.registry, personality=lambda: store.current,
            settings=self.settings, bus=bus, mode=mode, workspace=self.workspace,
            data_dir=self.paths.data_dir, session=self.session, services=self.services,
        )

    def _own_paths(self) -> tuple[Path, ...]:
        """Her folders and files no tool may touch (docs/tools.md, "Her own files")."""
        chosen = self.settings.personality
        return own_paths(self.paths.config_dir, self.paths.data_dir, *([Path(chosen)] if chosen else []),
                         *code_paths())

    def _personality_elsewhere(self) -> tuple[Path, ...]:
        """The personality file when the settings keep it outside her folders (hidden from commands too)."""
        chosen = self.settings.personality
        return (Path(chosen).expanduser(),) if chosen else ()

    def family_notes(self) -> dict[str, str]:
        """A line per MCP family for Settings: running with its tools, stopped, or why not."""
        return self.tool_services.family_notes()

    def _remember_said(self, line: str) -> None:
        if self.conversation is not None:
            self.conversation.history.append({"role": "assistant", "content": line})
        if self.kept is not None:
            self.kept.recorder.remembered_aside(line)

    def _report_personality(self) -> None:
        assert self.personality is not None
        sentence = self.personality.problem_sentence()
        if sentence:
            self.bus.emit(ErrorOccurred("personality", "personality_problems", sentence))
            if self.turns.live:
                self.bus.emit(Speak(SpeechKind.SAY, sentence))  # part of the turn that found it
            else:
                self.tell(TurnSource.NOTICE, sentence)

