"""Approval cards: the exact command, Approve once / Always allow / Decline, by click, key or voice.

A card answers through a callback (the gate's `answer(request_id, decision, always=...)`).
The gate owns the clock: the card counts down alongside it, and when the gate says the
question is over (approved, declined, expired) the card shows that and goes away.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from companion.events import ApprovalNeeded

Answer = Callable[[str, str, bool], bool]
"""answer(request_id, decision, always) -> False when the question is no longer open."""

APPROVED, DECLINED, EXPIRED = "approved", "declined", "expired"
LINGER_MS = 1500
"""How long a finished card stays to show how it ended."""

_YES = re.compile(r"^(yes|yeah|yep|yup|sure|ok(ay)?|go ahead|do it|approve[d]?|run it)\b")
_NO = re.compile(r"^(no|nope|nah|don'?t|do not|stop|cancel|decline[d]?)\b")
_ALWAYS = re.compile(r"\balways\b")


def spoken_answer(text: str) -> tuple[str, bool] | None:
    """Read a spoken reply to a card: ("approved"|"declined", always) or None if it isn't one."""
    words = re.sub(r"[^a-z' ]+", " ", text.lower()).strip()
    if _NO.match(words):
        return DECLINED, False
    if _YES.match(words) or words.startswith("always"):
        return APPROVED, bool(_ALWAYS.search(words))
    return None


class ApprovalCard(QFrame):
    """One question. Keys: Y approve once, A always allow, N decline (Alt+letter also works)."""

    answered = Signal(str, str, bool)  # request_id, decision, always

    def __init__(self, request: ApprovalNeeded, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.outcome: str | None = None
        self._answered = False
        self.setObjectName("approvalCard")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        layout = QVBoxLayout(self)
        title = QLabel(request.reason or "May I run this?")
        title.setWordWrap(True)
        title.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(title)
        self.command_label = QLabel(request.command)
        self.command_label.setObjectName("approvalCommand")
        self.command_label.setTextFormat(Qt.TextFormat.PlainText)  # exactly what will run
        self.command_label.setWordWrap(True)
        self.command_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.command_label)
        row = QHBoxLayout()
        self.approve_button = QPushButton("&Yes, approve once")
        self.always_button = QPushButton("&Always allow this exact command")
        self.decline_button = QPushButton("&No, decline")
        self.always_button.setVisible(request.saveable)
        self.approve_button.clicked.connect(lambda: self.answer(APPROVED))
        self.always_button.clicked.connect(lambda: self.answer(APPROVED, always=True))
        self.decline_button.clicked.connect(lambda: self.answer(DECLINED))
        for button in (self.approve_button, self.always_button, self.decline_button):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # Enter must never approve by accident
            row.addWidget(button)
        layout.addLayout(row)
        self.status = QLabel()
        layout.addWidget(self.status)
        self._deadline = time.monotonic() + request.timeout_s
        self._ticker = QTimer(self)
        self._ticker.setInterval(250)
        self._ticker.timeout.connect(self._tick)
        self._ticker.start()
        self._tick()

    def answer(self, decision: str, *, always: bool = False) -> None:
        if self.outcome is not None or self._answered:
            return  # one answer per card, however many keys, clicks or words arrive
        self._answered = True
        self.answered.emit(self.request.request_id, decision, always and self.request.saveable)

    @Slot(str)
    def resolve(self, decision: str) -> None:
        """The gate says how the question ended."""
        self.outcome = decision
        self._ticker.stop()
        for button in (self.approve_button, self.always_button, self.decline_button):
            button.setEnabled(False)
        self.status.setText({
            APPROVED: "Approved.",
            DECLINED: "Declined: I won't run it.",
            EXPIRED: "Nobody answered in time, so I won't run it.",
        }.get(decision, "Nobody could answer this, so I won't run it."))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        key = event.key()
        if key == Qt.Key.Key_Y:
            self.answer(APPROVED)
        elif key == Qt.Key.Key_A and self.request.saveable:
            self.answer(APPROVED, always=True)
        elif key == Qt.Key.Key_N:
            self.answer(DECLINED)
        else:
            super().keyPressEvent(event)

    def _tick(self) -> None:
        left = max(0, round(self._deadline - time.monotonic()))
        if left > 0:
            self.status.setText(f"Waiting for your answer: {left} s left (Y / A / N, or say yes or no).")
        else:
            self.status.setText("Time is up: I won't run it.")
            self._ticker.stop()


class ApprovalPanel(QWidget):
    """The stack of open cards above the text box."""

    def __init__(self, answer: Answer | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._answer = answer
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.cards: dict[str, ApprovalCard] = {}
        self.setVisible(False)

    def set_answer(self, answer: Answer) -> None:
        self._answer = answer

    @Slot(object)
    def add_request(self, request: ApprovalNeeded) -> ApprovalCard:
        card = ApprovalCard(request)
        card.answered.connect(self._send)
        self.cards[request.request_id] = card
        self._layout.addWidget(card)
        self.setVisible(True)
        card.setFocus()
        return card

    @Slot(str, str)
    def resolve(self, request_id: str, decision: str) -> None:
        card = self.cards.get(request_id)
        if card is None:
            return
        card.resolve(decision)
        # A timer owned by the panel dies with it: no callback into a closed window.
        linger = QTimer(self, singleShot=True, interval=LINGER_MS)
        linger.timeout.connect(lambda: self._drop(request_id))
        linger.timeout.connect(linger.deleteLater)
        linger.start()

    @Slot(str, bool)
    def hear(self, text: str, spoken: bool) -> bool:
        """A spoken "yes" or "no" answers the newest open card; True when it did."""
        return spoken and self.answer_words(text)

    def answer_words(self, text: str) -> bool:
        """Answer the newest open card if `text` is a yes or a no; True when it was."""
        open_cards = [c for c in self.cards.values() if c.outcome is None and not c._answered]
        reply = spoken_answer(text) if open_cards else None
        if reply is None:
            return False
        open_cards[-1].answer(reply[0], always=reply[1])
        return True

    def _send(self, request_id: str, decision: str, always: bool) -> None:
        if self._answer is None or not self._answer(request_id, decision, always):
            card = self.cards.get(request_id)
            if card is not None and card.outcome is None:
                card.resolve("unavailable")

    def _drop(self, request_id: str) -> None:
        card = self.cards.pop(request_id, None)
        if card is not None:
            self._layout.removeWidget(card)
            card.deleteLater()
        self.setVisible(bool(self.cards))
