"""Banners across the top of the window for trouble: what went wrong and exactly what to do."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from companion.brain.server import ServerKind, fix_for, guess_kind
from companion.config import BrainSettings
from companion.ui.markdown import code_spans

Action = tuple[str, Callable[[], None]]


def brain_advice(code: str, brain: BrainSettings) -> str:
    """What the user should do about a brain error `code`, in one or two sentences."""
    kind = guess_kind(brain.base_url)
    ollama = kind == ServerKind.OLLAMA
    if code in ("unreachable", "timeout"):
        if ollama:
            return (f"I can't reach my brain at {brain.base_url}. Start Ollama with my model "
                    f"(run `ollama serve`, then `ollama pull {brain.model}`), or set a brain URL "
                    "and API key in Settings → Brain.")
        fix = _backticked(fix_for(kind, "unreachable", brain.model))
        return f"I can't reach my brain at {brain.base_url}. {fix} Or change the URL and API key in Settings → Brain."
    if code == "auth":
        return "My brain refused the API key. Enter the right key in Settings → Brain."
    if code == "unknown_model":
        if ollama:
            return (f"My brain doesn't have the model {brain.model}. Run `ollama pull {brain.model}`, "
                    "or pick another model in Settings → Brain.")
        return (f"My brain at {brain.base_url} doesn't have the model {brain.model}. "
                "Pick one it serves in Settings → Brain.")
    if code == "garbled":
        return (f"Something answers at {brain.base_url}, but not as a chat server. The URL usually "
                "ends in /v1; fix it in Settings → Brain.")
    if code == "wrong_url":
        return (f"Nothing at {brain.base_url} answers chat requests. The URL usually ends in /v1; "
                "fix it in Settings → Brain.")
    return ""


def _backticked(sentence: str) -> str:
    """The core's advice quotes commands in 'single quotes': the banner sets them as code."""
    return re.sub(r"'([^']+)'", r"`\1`", sentence)


class Banner(QFrame):
    """One message with its action buttons, a close button, and an optional progress bar."""

    closed = Signal()

    def __init__(self, key: str, text: str, *, kind: str = "error",
                 actions: Sequence[Action] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.setObjectName(f"banner_{kind}")
        self.setProperty("kind", kind)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 8, 8, 8)
        row = QHBoxLayout()
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._text = ""
        self.set_text(text)
        row.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for title, callback in actions:
            button = QPushButton(title)
            # Clicked, never tabbed to: Tab from her text box then Space opened Settings and
            # the words being typed were lost (the window's own buttons are the same).
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _checked=False, cb=callback: cb())
            row.addWidget(button)
            self.buttons[title] = button
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.setAutoRaise(True)
        close.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        close.clicked.connect(self.dismiss)
        row.addWidget(close)
        outer.addLayout(row)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        outer.addWidget(self.progress)

    def text(self) -> str:
        """The message as given (a `command` keeps its backticks here)."""
        return self._text

    def set_text(self, text: str) -> None:
        """Show `text`; a `command` in backticks is set in the code font, without the backticks."""
        self._text = text
        spans = code_spans(text)
        if not any(code for _piece, code in spans):
            self.label.setTextFormat(Qt.TextFormat.PlainText)
            self.label.setText(text)
            return
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setText("".join(f"<code>{html.escape(piece)}</code>" if code else html.escape(piece)
                                   for piece, code in spans).replace("\n", "<br>"))

    def set_progress(self, done: int, total: int) -> None:
        """Show a progress bar (total 0 means "unknown": a busy bar)."""
        self.progress.setVisible(True)
        self.progress.setRange(0, max(0, total))
        self.progress.setValue(min(done, total) if total else 0)

    def dismiss(self) -> None:
        self.closed.emit()
        self.deleteLater()


class BannerArea(QWidget):
    """Holds banners by key: showing a key again replaces its banner, so nothing piles up."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self._banners: dict[str, Banner] = {}

    def show_banner(self, key: str, text: str, *, kind: str = "error",
                    actions: Sequence[Action] = ()) -> Banner:
        self.clear(key)
        banner = Banner(key, text, kind=kind, actions=actions)
        banner.closed.connect(lambda k=key, b=banner: self._forget(k, b))
        self._banners[key] = banner
        self._layout.addWidget(banner)
        return banner

    def banner(self, key: str) -> Banner | None:
        return self._banners.get(key)

    def clear(self, key: str) -> None:
        banner = self._banners.pop(key, None)
        if banner is not None:
            self._layout.removeWidget(banner)
            banner.deleteLater()

    def shown_keys(self) -> list[str]:
        return list(self._banners)

    def _forget(self, key: str, banner: Banner) -> None:
        if self._banners.get(key) is banner:
            del self._banners[key]


KNOW_VOICES_KEY = "know_voices"
KNOW_VOICES_QUESTION = ("Shall I learn your voice so only you can approve commands and follow up? "
                        "Nothing leaves this computer.")


class KnowVoicesQuestion:
    """Knowing voices is the user's choice, asked once, plainly: while the setting is still "ask",
    the first time a decision would go by a voice (a call opens her follow-up window, a card
    waits for an answer that may be spoken) a banner asks, and Yes or No is saved as the setting
    (`save("yes" | "no")`). Dismissed unanswered, it is not asked again this run; Settings →
    Voice → Knowing voices still offers the choice."""

    def __init__(self, banners: BannerArea, setting: Callable[[], str], save: Callable[[str], None],
                 *, listening: Callable[[], bool] = lambda: True) -> None:
        self._banners, self._setting, self._save, self._listening = banners, setting, save, listening
        self.asked = False

    def attach(self, bridge) -> None:
        """Ask on the bridge's events: her attention opened by a call, or an approval card."""
        bridge.attention.connect(lambda attention, _how: attention == "attentive" and self.needed())
        bridge.approval_needed.connect(lambda _event: self._listening() and self.needed())

    def needed(self) -> None:
        """A decision would go by a voice now: ask, unless asked already or answered."""
        if self.asked or self._setting() != "ask":
            return
        self.asked = True
        self._banners.show_banner(KNOW_VOICES_KEY, KNOW_VOICES_QUESTION, kind="info",
                                  actions=[("Yes", lambda: self._answer("yes")), ("No", lambda: self._answer("no"))])

    def _answer(self, answer: str) -> None:
        self._banners.clear(KNOW_VOICES_KEY)
        self._save(answer)
