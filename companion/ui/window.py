"""Her window: the face, the transcript, a text box, mute and push-to-talk, banners and cards.

The window only shows things and reports what the user does, as signals; app.py connects
those signals to the core. `connect_bridge` wires the core's events (via the bridge) in.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QEvent, QObject, Qt, Signal, Slot
from PySide6.QtGui import QCloseEvent, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPushButton,
    QStyle,
    QStyleOptionFrame,
    QWidget,
)

from companion.config import BrainSettings
from companion.ui.banner import BannerArea, brain_advice
from companion.ui.bridge import EventBridge
from companion.ui.cards.approval_card import ApprovalPanel
from companion.ui.face.pictures import app_icon
from companion.ui.face.widget import FaceWidget
from companion.ui.presence import BUSY, Presence
from companion.ui.push_to_talk_hold import PushToTalkHold
from companion.ui.transcript import TranscriptView
from companion.ui.window_layout import build_menu, lay_out
from companion.ui.work_chip import WorkChip

OFFLINE_TEXT = {
    "unreachable": "can't reach my brain",
    "timeout": "my brain doesn't answer",
    "auth": "my brain refused the key",
    "unknown_model": "my brain lacks the model",
    "wrong_url": "wrong brain URL",
    "garbled": "wrong brain URL",
}
"""What the pill says after a brain error, by its code (the banner says what to do)."""


CAPTIONS_MIN = 140
CAPTIONS_MIN_WITH_CARD = 60
"""The transcript's least height, and while a card is open (the card needs the room more)."""

WORK_CHIP_CHARS = 28
"""A background job's chip names the task in at most this many characters."""


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class CompanionWindow(QMainWindow):
    text_submitted = Signal(str)
    mute_toggled = Signal(bool)
    push_to_talk = Signal(bool)
    """True when the push-to-talk key goes down, False when it is released."""
    stop_requested = Signal()
    settings_requested = Signal(str)
    """Open Settings, on the named tab ("" for the first)."""
    personality_requested = Signal()
    always_on_top_toggled = Signal(bool)
    quit_requested = Signal()
    new_conversation_requested = Signal()
    conversations_requested = Signal()
    notes_requested = Signal()

    def __init__(self, *, brain: BrainSettings | None = None, push_to_talk_key: str = "F9",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Companion")
        self.setWindowIcon(app_icon())
        self.brain = brain or BrainSettings()
        self.ptt = PushToTalkHold(push_to_talk_key, active=self.isActiveWindow, parent=self)
        self.ptt.changed.connect(self._push_to_talk_changed)
        self._brain_failed = False
        self.presence = Presence()
        self._core_expression = "neutral"
        self.face = FaceWidget()
        self.captions = TranscriptView()
        self.captions.stop_requested.connect(self.stop_requested.emit)
        self.captions.typed.connect(self._typed_in_transcript)
        self.banners = BannerArea()
        self.approvals = ApprovalPanel()
        self.state_label = QLabel()
        self.state_label.setObjectName("statePill")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setToolTip("Stop what she is doing (Esc)")
        self.stop_button.clicked.connect(self.stop_requested.emit)
        self.work_chip = WorkChip()
        self.text_box = QLineEdit()
        self.text_box.returnPressed.connect(self._submit)
        self._placeholders: tuple[str, ...] = ("Type to her", "Type…")
        """Her hint in the text box, longest first: the longest that fits is shown."""
        self.text_box.installEventFilter(self)  # its hint follows its width
        self.approvals.opening.connect(self._make_room_for_cards)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self._submit)
        self.mute_button = QPushButton("Mute mic")
        self.mute_button.setCheckable(True)
        self.mute_button.setToolTip("Stop her listening (typing still works)")
        self.mute_button.toggled.connect(self._on_mute)
        self.menu_button, self.on_top_action = build_menu(self)
        lay_out(self)
        self._approval_shortcuts()
        # Only the text box takes the keyboard: a key typed after a click elsewhere must
        # never open the menu, mute her, or press Send.
        for button in (self.menu_button, self.send_button, self.mute_button, self.stop_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.resize(460, 720)
        self.set_voice("none")  # until app.py says her voice is loading
        self.text_box.setFocus()

    # --- building -------------------------------------------------------------------------
    def _approval_shortcuts(self) -> None:
        # Modified keys only: a bare letter typed into the text box never answers a card.
        for keys, always in (("Ctrl+Return", False), ("Ctrl+Enter", False),
                             ("Ctrl+Shift+Return", True), ("Ctrl+Shift+Enter", True)):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.activated.connect(lambda always=always: self._approve_by_shortcut(always))
        self.approvals.decided.connect(self.captions.add_notice)
        self.approvals.decided.connect(
            lambda _line: self._update(waiting=self.approvals.newest_open() is not None))
        self.approvals.finished.connect(self.focus_text_box)

    def _make_room_for_cards(self, shown: bool) -> None:
        """An open card takes room from the transcript, not from the screen: the window never
        grows for it."""
        self.captions.setMinimumHeight(CAPTIONS_MIN_WITH_CARD if shown else CAPTIONS_MIN)
        splitter = self.captions.parentWidget()
        splitter.refresh()  # its least height now, before the panel's layout asks for it

    def _approve_by_shortcut(self, always: bool) -> None:
        if self.text_box.hasFocus() and self.text_box.text().strip():
            return  # Ctrl+Enter with a message typed is "send" in many apps, never an OK
        self.approvals.approve_by_shortcut(always=always)

    @Slot()
    def focus_text_box(self) -> None:
        """Give the text box the keyboard back (after a card, a popup, or on activation)."""
        self.text_box.setFocus(Qt.FocusReason.OtherFocusReason)

    def connect_bridge(self, bridge: EventBridge) -> None:
        # Only bound methods of the window and its widgets, never lambdas: Qt drops a connection
        # whose receiver is destroyed, and the bridge outlives the window (events queued before
        # the app closed are still delivered after the window is gone).
        bridge.heard.connect(self._turn_started)
        bridge.heard.connect(self.captions.add_heard)
        bridge.heard_aside.connect(self.captions.add_aside)
        bridge.reply_delta.connect(self.captions.add_reply_delta)
        bridge.reply_done.connect(self.captions.finish_reply)
        bridge.speak.connect(self.captions.add_speech)
        bridge.tool_started.connect(self.captions.tool_started)
        bridge.tool_finished.connect(self.captions.tool_finished)
        bridge.expression.connect(self._expression_changed)
        bridge.state.connect(self.show_state)
        bridge.reply_delta.connect(self._reply_streaming)
        bridge.tool_started.connect(self._tool_started)
        bridge.tool_finished.connect(self._tool_finished)
        bridge.approval_needed.connect(self._approval_needed)
        bridge.speech_level.connect(self.face.set_speech_level)
        bridge.mic_level.connect(self.face.set_listen_level)
        self.face.follow_holds(bridge)
        bridge.approval_needed.connect(self.approvals.add_request)
        bridge.approval_resolved.connect(self.approvals.resolve)
        bridge.error.connect(self.show_error)
        bridge.error_cleared.connect(self._error_cleared)
        bridge.turn_finished.connect(self._turn_finished)
        bridge.work_changed.connect(self.show_work)
        bridge.attention.connect(self._attention_changed)

    # --- what the core tells us -----------------------------------------------------------
    @Slot(str)
    def show_state(self, state: str) -> None:
        """The core's turn state (idle, listening, thinking, working, speaking)."""
        was_busy = self.presence.facts.core in BUSY
        if state == "thinking" and not was_busy:
            # A new turn: the last reply's face (happy, sad…) is over.
            self._show_expression("thinking")
        changes: dict = {"core": state}
        # Waiting for an OK is inside the tool's run: its name must still be there after the yes.
        if state not in (*BUSY, "waiting"):
            changes.update(replying=False, tool="")
            if was_busy and self._core_expression == "thinking":
                # A turn with no reply tag to end it (a job's result said aloud): the thinking
                # bubbles go with the turn.
                self._core_expression = "neutral"
        self._update(**changes)

    def set_started(self, started: bool) -> None:
        """False while the core starts (the pill says so instead of "Ready")."""
        self._update(started=started, **({} if started else {"failed": ""}))

    def set_start_failed(self, why: str) -> None:
        """The core could not start: the pill says so (never "Ready") and her face is sad."""
        self._update(started=True, failed=why)

    def set_voice(self, status: str, progress: float | None = None) -> None:
        """Her voice: "none" (typing only: no mic controls), "loading" (with progress 0..1) or "ready"."""
        self._update(voice=status, voice_progress=progress)
        has_voice = status != "none"
        self.mute_button.setVisible(has_voice)
        key = self.ptt.text
        self._placeholders = (f"Type to her, or hold {key} to talk", f"Type, or hold {key}",
                              "Type to her", "Type…") if status == "ready" else ("Type to her", "Type…")
        self._fit_placeholder()

    def _fit_placeholder(self) -> None:
        """The longest hint the text box shows whole (a narrow window cut "…hold F9 to talk")."""
        box = self.text_box
        room = text_room(box)
        fitting = [text for text in self._placeholders if box.fontMetrics().horizontalAdvance(text) <= room]
        box.setPlaceholderText(fitting[0] if fitting else self._placeholders[-1])
        box.setToolTip(self._placeholders[0])

    def _update(self, **changes) -> None:
        self.presence.update(**changes)
        self._render()

    def _render(self) -> None:
        look = self.presence.look()
        self.state_label.setText(look.text)
        if self.state_label.property("kind") != look.kind:
            self.state_label.setProperty("kind", look.kind)
            self.state_label.style().unpolish(self.state_label)  # restyle for the new kind
            self.state_label.style().polish(self.state_label)
        self.face.set_state(look.face_state)
        wanted = look.expression or self._core_expression
        if self.face.expression != wanted:
            self.face.set_expression(wanted)
        self.stop_button.setVisible(look.can_stop)

    def _show_expression(self, name: str) -> None:
        self._core_expression = name
        self._render()

    @Slot(str, str, str)
    def show_error(self, stage: str, code: str, sentence: str) -> None:
        # The sentence itself also arrives as speech (a caption); the banner says what to do.
        if stage == "brain":
            self._brain_failed = True
            if code in OFFLINE_TEXT:
                self._update(offline=OFFLINE_TEXT[code])
        advice = brain_advice(code, self.brain) if stage == "brain" else ""
        if advice:
            self._show_expression("confused")
            self.banners.show_banner(
                "brain", advice, actions=[("Open Settings", lambda: self.settings_requested.emit("brain"))])
        elif code.startswith("mcp_"):
            # A tool server that won't start: one banner per server and failure, so a second
            # server failing never hides the first (the same failure again replaces its own).
            self.banners.show_banner(f"{stage}:{sentence}", sentence, kind="warning")
        elif stage not in ("brain", "tools"):
            # Settings, personality, audio, models: a notice that stays until dismissed.
            self.banners.show_banner(stage, sentence, kind="warning")

    @Slot(str, str, str)
    def show_work(self, status: str, task: str, result: str) -> None:
        if status == "running":
            self.work_chip.show_task(f"Working on: {_short(task, WORK_CHIP_CHARS)}", task)
            return
        self.work_chip.setVisible(False)
        self.captions.add_notice(f"Background job {status}: {task}" + (f": {result}" if result else ""))

    def _expression_changed(self, name: str, _reason: str) -> None:
        self._show_expression(name)

    def _reply_streaming(self, _text: str) -> None:
        self._update(replying=True)

    def _tool_started(self, name: str, _call_id: str) -> None:
        self._update(tool=name)

    def _tool_finished(self, _name: str, _outcome: str, _detail: str) -> None:
        self._update(tool="")

    def _approval_needed(self, _request: object) -> None:
        self._update(waiting=True)

    def _error_cleared(self, stage: str, _code: str) -> None:
        self.banners.clear(stage)

    def _attention_changed(self, attention: str, _how: str) -> None:
        self._update(attention=attention)

    def _turn_started(self, _text: str, _spoken: bool) -> None:
        self._brain_failed = False

    def _turn_finished(self, _text: str, _emotion: str, interrupted: bool) -> None:
        if not interrupted and not self._brain_failed:
            self.banners.clear("brain")  # she reached her brain again
            self._update(offline="")
        if interrupted:
            self._core_expression = "neutral"  # stopped: no reply tag will replace the turn's face
        self._update(replying=False, tool="")
        self.captions.end_turn(interrupted)

    def brain_changed(self, brain: BrainSettings) -> None:
        """New brain settings were saved: the old address's trouble is no longer known."""
        self.brain = brain
        self.brain_back()

    def brain_back(self) -> None:
        """Her brain answers (again): its Offline pill, its banner and the puzzled face go."""
        self._brain_failed = False
        self.banners.clear("brain")
        if self._core_expression == "confused":
            self._core_expression = "neutral"
        self._update(offline="", **({"core": "idle"} if self.presence.facts.core == "offline" else {}))

    # --- what the user does ---------------------------------------------------------------
    def _submit(self) -> None:
        text = self.text_box.text().strip()
        if not text:
            return
        self.text_box.clear()
        self.text_submitted.emit(text)

    def _typed_in_transcript(self, text: str) -> None:
        self.text_box.setFocus()
        self.text_box.insert(text)

    def _on_mute(self, muted: bool) -> None:
        self.mute_button.setText("Unmute mic" if muted else "Mute mic")
        self.mute_toggled.emit(muted)
        self._update(muted=muted)

    def set_call_hint(self, hint: str) -> None:
        """What calls her (“Mira” or “Okay Nabu”): the pill says it while she dozes."""
        self._update(call_hint=hint)

    def set_muted(self, muted: bool) -> None:
        self.mute_button.setChecked(muted)

    def set_push_to_talk_key(self, text: str) -> None:
        self.ptt.set_key(text)
        self.set_voice(self.presence.facts.voice, self.presence.facts.voice_progress)

    @Slot(bool)
    def set_always_on_top(self, on: bool) -> None:
        if bool(self.windowFlags() & Qt.WindowType.WindowStaysOnTopHint) != on:
            visible = self.isVisible()
            self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, on)
            if visible:
                self.show()  # changing a window flag hides the window
        if self.on_top_action.isChecked() != on:
            self.on_top_action.setChecked(on)
        self.always_on_top_toggled.emit(on)

    def saved_geometry(self) -> str:
        return bytes(self.saveGeometry().toBase64().data()).decode("ascii")

    def restore_saved_geometry(self, text: str) -> bool:
        return bool(text) and self.restoreGeometry(QByteArray.fromBase64(text.encode("ascii")))

    @Slot(bool)
    def global_push_to_talk(self, down: bool) -> None:
        """The push-to-talk key from any window (the desktop portal or an X11 grab)."""
        self.ptt.hold(down)

    def _push_to_talk_changed(self, down: bool) -> None:
        self.push_to_talk.emit(down)
        self._update(push_to_talk=down)

    def install_push_to_talk(self, app: QApplication) -> None:
        """Watch the push-to-talk key (and Esc) anywhere in the window, not only in the text box."""
        app.installEventFilter(self)
        app.installEventFilter(self.ptt)  # the last installed sees each event first

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        kind = event.type()
        if watched is self.text_box and kind == QEvent.Type.Resize:
            self._fit_placeholder()
            return False
        if kind == QEvent.Type.KeyPress and self.isActiveWindow():
            key_event: QKeyEvent = event  # type: ignore[assignment]
            if key_event.key() == Qt.Key.Key_Escape:
                if self.approvals.decline_by_shortcut():
                    return True  # Esc with a card open declines it
                self.stop_requested.emit()
        return False

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt name)
        super().changeEvent(event)
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            self.focus_text_box()  # back from a dialog, a menu, or another app

    def keep_open(self) -> None:
        """Called while quit_requested is handled: the close button must not close the window
        yet (an unsaved personality asks first)."""
        self._keep_open = True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self._keep_open = False
        self.quit_requested.emit()
        if self._keep_open:
            event.ignore()
        else:
            event.accept()


def text_room(box: QLineEdit) -> int:
    """How wide a text `box` shows text: inside its frame and padding, less its own margins."""
    option = QStyleOptionFrame()
    box.initStyleOption(option)
    contents = box.style().subElementRect(QStyle.SubElement.SE_LineEditContents, option, box)
    margins = box.textMargins()
    return contents.width() - margins.left() - margins.right() - 4  # QLineEdit keeps 2 px each side
