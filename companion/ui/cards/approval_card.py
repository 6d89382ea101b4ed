"""Approval cards: the exact command, Approve once / Always allow / Decline, by click, shortcut or voice.

The command is shown whole (it scrolls, it is never cut) with every control, escape, zero-width
and bidi character spelled out and highlighted (safety/consent/visible.py), and the card says what a
yes lets it touch: read-only, the workspace, the internet.

A card answers through a callback (the gate's `answer(request_id, decision, always=...)`).
The gate owns the clock: the card counts down alongside it, and when the gate says the
question is over (approved, declined, expired) the card shows that and goes away.

A card can never be answered by accident: it never takes keyboard focus (the user may be
typing when it appears), it ignores every key and click for its first second, bare letters
never answer it, approving takes a click or Ctrl+Enter (a click only, for commands that can
destroy data), and Esc declines.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtGui import (
    QKeyEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from companion.events import ApprovalNeeded
from companion.safety.consent.answers import spoken_answer, typed_answer
from companion.safety.consent.approval import access_sentence
from companion.safety.consent.visible import hidden_note, is_code, visible
from companion.ui.cards.command_view import CommandView

Answer = Callable[[str, str, bool], bool]
"""answer(request_id, decision, always) -> False when the question is no longer open."""

APPROVED, DECLINED, EXPIRED = "approved", "declined", "expired"
LINGER_MS = 1500
"""How long a finished card stays to show how it ended."""
ARM_MS = 1000
"""A new card ignores keys and clicks this long: a keystroke or click meant for something
else, landing just as the card appears, must not answer it."""
MIN_PANEL_HEIGHT = 220
"""Below this the cards scroll rather than push the window taller (the window's transcript
gives up room while a card is open, so this costs the window no height)."""


def decision_line(command: str, decision: str, always: bool) -> str:
    """The transcript's record of how a question ended."""
    command = visible(command)
    if decision == APPROVED:
        return f"{'Always allowed' if always else 'Approved'} `{command}`"
    if decision == DECLINED:
        return f"Declined `{command}`"
    if decision == EXPIRED:
        return f"Nobody answered in time, so I didn't run `{command}`"
    return f"Nobody could answer, so I didn't run `{command}`"


class ApprovalCard(QFrame):
    """One question. Click a button, Ctrl+Enter to approve once (not for destructive commands),
    Ctrl+Shift+Enter to always allow (when offered), Esc to decline."""

    answered = Signal(str, str, bool)  # request_id, decision, always
    armed = Signal()
    """Emitted once the card starts taking keys and clicks."""

    def __init__(self, request: ApprovalNeeded, parent: QWidget | None = None, *, spoken: bool = True) -> None:
        super().__init__(parent)
        self.request = request
        self.spoken = spoken
        """Her microphone can hear an answer (not under --no-voice): the hint offers words to say."""
        self.outcome: str | None = None
        self.always = False
        self._answered = False
        self.destructive = not request.saveable and not request.once_only
        """The gate never lets these be remembered (rm -r, dd, …): No is the default. A line that
        is only not saveable ("once": an interpreter, a wrapper) is approved like any other."""
        self.setObjectName("approvalCard")
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # never takes focus from the text box
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        layout = QVBoxLayout(self)
        title = QLabel(visible(request.reason) or "May I run this?")
        title.setWordWrap(True)
        title.setTextFormat(Qt.TextFormat.PlainText)
        title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(title)
        # exactly what will run; Python code keeps its lines
        self.command_label = CommandView(request.command, code=is_code(request))
        layout.addWidget(self.command_label)
        self.details = QLabel("\n".join(line for line in (
            hidden_note(self.command_label.hidden),
            access_sentence(request.access, request.network),
            visible(request.once_only)) if line))
        self.details.setObjectName("approvalDetails")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.PlainText)
        self.details.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.details)
        if not self.details.text():
            self.details.setVisible(False)
        row = QHBoxLayout()
        self._row = row
        layout.addLayout(row)  # first, so the buttons get a parent as they are added
        # No mnemonics (&Y): on some platforms a bare letter triggers them.
        self.approve_button = QPushButton("Yes, run it" if self.destructive else "Yes, approve once")
        self.always_button = QPushButton("Always allow")
        self.always_button.setToolTip("Run this exact command without asking from now on")
        self.decline_button = QPushButton("No, decline")
        self.approve_button.clicked.connect(lambda: self.answer(APPROVED))
        self.always_button.clicked.connect(lambda: self.answer(APPROVED, always=True))
        self.decline_button.clicked.connect(lambda: self.answer(DECLINED))
        for button in (self.approve_button, self.always_button, self.decline_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Space or Enter must never answer
            button.setEnabled(False)  # until armed
            button.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
            button.setMinimumWidth(0)
            row.addWidget(button)
        # Hidden only once it has a parent: setVisible(True) on a parentless button would show it
        # as a window of its own and take the activation (and the keyboard) from hers.
        self.always_button.setVisible(request.saveable)
        self.decline_button.setProperty("defaultChoice", self.destructive)
        self.hint = QLabel(self._hint_text())
        self.hint.setObjectName("approvalHint")
        self.hint.setWordWrap(True)
        self.hint.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.hint)
        self.status = QLabel()
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self._armed = False
        QTimer.singleShot(ARM_MS, self, self._arm)
        self._deadline = time.monotonic() + request.timeout_s
        self._ticker = QTimer(self)
        self._ticker.setInterval(250)
        self._ticker.timeout.connect(self._tick)
        self._ticker.start()
        self._tick()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt name)
        # Side by side when they fit, one under another when they don't: the card follows the
        # window's width and never asks for more.
        super().resizeEvent(event)
        buttons = [b for b in (self.approve_button, self.always_button, self.decline_button)
                   if not b.isHidden()]
        margins = self.layout().contentsMargins()
        needed = sum(b.sizeHint().width() for b in buttons) + self._row.spacing() * (len(buttons) - 1) \
            + margins.left() + margins.right() + 2 * self.frameWidth()
        side_by_side = needed <= event.size().width()
        direction = QHBoxLayout.Direction.LeftToRight if side_by_side else QHBoxLayout.Direction.TopToBottom
        if self._row.direction() != direction:
            self._row.setDirection(direction)
        # Side by side, each as wide as its words at least, the spare room shared (an ignored
        # size hint shared it equally, and "Yes, approve once" ran under "Always allow"); one
        # under another, each the card's width.
        policy = QSizePolicy.Policy.Preferred if side_by_side else QSizePolicy.Policy.Ignored
        for button in buttons:
            button.setSizePolicy(policy, QSizePolicy.Policy.Fixed)
            button.setMinimumWidth(button.sizeHint().width() if side_by_side else 0)

    def is_armed(self) -> bool:
        return self._armed

    def keyboard_approvable(self) -> bool:
        """Ctrl+Enter approves only commands that cannot destroy data; those need a click."""
        return not self.destructive

    def answer(self, decision: str, *, always: bool = False, deliberate: bool = False) -> bool:
        """Answer once. Keys and clicks (not `deliberate`) count only once the card is armed;
        a spoken answer is `deliberate`. True when this call answered the card."""
        if self.outcome is not None or self._answered:
            return False  # one answer per card, however many keys, clicks or words arrive
        if not deliberate and not self.is_armed():
            return False
        self._answered = True
        self.always = always and self.request.saveable
        self.answered.emit(self.request.request_id, decision, self.always)
        return True

    @Slot(str)
    def resolve(self, decision: str) -> None:
        """The gate says how the question ended."""
        self.outcome = decision
        self._ticker.stop()
        for button in (self.approve_button, self.always_button, self.decline_button):
            button.setEnabled(False)
        self.hint.setVisible(False)
        self.status.setText({
            APPROVED: "Approved.",
            DECLINED: "Declined: I won't run it.",
            EXPIRED: "Nobody answered in time, so I won't run it.",
        }.get(decision, "Nobody could answer this, so I won't run it."))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        # The card never holds focus, but a stray key that reaches it is swallowed, not passed on.
        event.accept()

    def _arm(self) -> None:
        self._armed = True
        if self.outcome is None and not self._answered:
            for button in (self.approve_button, self.always_button, self.decline_button):
                button.setEnabled(True)
        self.armed.emit()

    def _hint_text(self) -> str:
        # Only the shortcuts that exist for this card.
        keys = ["Click Yes to run it" if self.destructive else "Ctrl+Enter: approve once"]
        if self.request.saveable:
            keys.append("Ctrl+Shift+Enter: always allow")
        keys.append("Esc: decline")
        if self.spoken:
            keys.append("or say 'yes, run it' or no" if self.destructive else "or say yes or no")
        return " · ".join(keys)

    def _tick(self) -> None:
        left = max(0, round(self._deadline - time.monotonic()))
        if left > 0:
            self.status.setText(f"Waiting for your answer: {left} s left.")
        else:
            self.status.setText("Time is up: I won't run it.")
            self._ticker.stop()


class ApprovalPanel(QWidget):
    """The stack of open cards above the text box."""

    decided = Signal(str)
    """A line for the transcript each time a question ends ("Declined `rm -r notes`")."""
    finished = Signal()
    """A card was answered or went away: the window gives the text box its focus back."""
    opening = Signal(bool)
    """The panel is about to show (True) or has hidden (False): the window makes room first."""

    def __init__(self, answer: Answer | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._answer = answer
        # The cards scroll inside the panel when there is no room for them: the window
        # keeps its size, however many cards or however narrow it is.
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        self._layout = QVBoxLayout(inner)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._scroll.setWidget(inner)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self._scroll)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        self.cards: dict[str, ApprovalCard] = {}
        self.spoken_answers = True
        """Whether new cards offer spoken answers (the app clears it when she has no microphone)."""
        self.setVisible(False)

    def set_answer(self, answer: Answer) -> None:
        self._answer = answer

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        # As tall as the cards want (the scroll area alone would cap it at a few lines)...
        return QSize(0, self._scroll.widget().sizeHint().height() + 2)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        # ...but never a reason for the window to grow: below this it scrolls.
        return QSize(0, min(self.sizeHint().height(), MIN_PANEL_HEIGHT))

    @Slot(object)
    def add_request(self, request: ApprovalNeeded) -> ApprovalCard:
        card = ApprovalCard(request, self, spoken=self.spoken_answers)
        card.answered.connect(self._send)
        self.cards[request.request_id] = card
        self._layout.addWidget(card)
        if self.isHidden():
            self.opening.emit(True)
        self.setVisible(True)  # shown, never focused
        self._scroll.viewport().installEventFilter(self)
        return card

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if watched is self._scroll.viewport() and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self, self._answers_in_sight)  # once the cards have laid out anew
        return False

    def _answers_in_sight(self) -> None:
        """When the cards must scroll, the newest card's answer buttons stay in sight (they were
        below the fold in the smallest window)."""
        card = self.newest_open()
        if card is None:
            return
        buttons = [b for b in (card.approve_button, card.always_button, card.decline_button) if not b.isHidden()]
        if buttons:
            self._scroll.ensureWidgetVisible(max(buttons, key=lambda b: b.y() + b.height()), 0, 4)

    def newest_open(self) -> ApprovalCard | None:
        open_cards = [c for c in self.cards.values() if c.outcome is None and not c._answered]
        return open_cards[-1] if open_cards else None

    def approve_by_shortcut(self, *, always: bool) -> bool:
        """Ctrl+Enter / Ctrl+Shift+Enter: True when the newest card took it."""
        card = self.newest_open()
        if card is None or not card.keyboard_approvable() or (always and not card.request.saveable):
            return False
        return card.answer(APPROVED, always=always)

    def decline_by_shortcut(self) -> bool:
        """Esc: True when the newest card took it."""
        card = self.newest_open()
        return card is not None and card.answer(DECLINED)

    @Slot(str, str)
    def resolve(self, request_id: str, decision: str) -> None:
        card = self.cards.get(request_id)
        if card is None or card.outcome is not None:
            return
        card.resolve(decision)
        self.decided.emit(decision_line(card.request.command, decision, card.always))
        self.finished.emit()
        # A timer owned by the panel dies with it: no callback into a closed window.
        linger = QTimer(self, singleShot=True, interval=LINGER_MS)
        linger.timeout.connect(lambda: self._drop(request_id))
        linger.timeout.connect(linger.deleteLater)
        linger.start()

    @Slot(str, bool)
    def hear(self, text: str, spoken: bool) -> bool:
        """A spoken "yes" or "no" answers the newest open card; True when it did."""
        return spoken and self.answer_words(text)

    def answer_words(self, text: str, *, typed: bool = False) -> bool:
        """Answer the newest open card if `text` is a yes or a no; True when it was.
        Typed text must be nothing but the answer, and the card must be armed."""
        card = self.newest_open()
        reply = (typed_answer(text) if typed else spoken_answer(text)) if card else None
        if card is None or reply is None:
            return False
        if typed and not card.is_armed():
            # Typed before the question was on screen: not an answer, and not a new turn either
            # (which would cancel the one waiting for this card).
            self.decided.emit(f"I didn't take “{text}” as an answer: it came before the question "
                              "was on screen. Please answer on the card.")
            return True
        return card.answer(reply[0], always=reply[1], deliberate=not typed)

    def _send(self, request_id: str, decision: str, always: bool) -> None:
        if self._answer is None or not self._answer(request_id, decision, always):
            card = self.cards.get(request_id)
            if card is not None and card.outcome is None:
                self.resolve(request_id, "unavailable")

    def _drop(self, request_id: str) -> None:
        card = self.cards.pop(request_id, None)
        if card is not None:
            self._layout.removeWidget(card)
            card.deleteLater()
        self.setVisible(bool(self.cards))
        if not self.cards:
            self.opening.emit(False)
        self.finished.emit()
