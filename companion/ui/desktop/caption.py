"""What the compact face's caption says: her words while she is in a turn and a little after, else
what her window's pill says (Dozing: say Mira, Listening…, Muted…).

Her words are the newest of: what you said, her reply as it streams (it replaces the tool's
narration before it), and a line she says outside a reply. They stay while the turn lasts
(her voice included) and `linger_s` after it; then the caption is her state again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

LINGER_S = 6.0
"""Her last words stay this long after her turn ends."""
FOLLOW_MS = 250
"""How often the caption re-reads the pill while the small face shows (see CompactCaption)."""
_MARKUP = re.compile(r"`+|\*\*|__|^#+\s*", re.MULTILINE)


class CompactCaption(QObject):
    """Feeds `show(text)` from the bridge's events and the window's pill.

    The pill changes by many routes that are not core events (her voice loading, the brain
    coming back, the mute button, push-to-talk), and the window has no signal for it: while
    the small face shows, the caption re-reads it every FOLLOW_MS as well as after each event.
    """

    def __init__(self, window, bridge, show: Callable[[str], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self._show = show
        self.linger_s = LINGER_S
        self._words = ""
        self._words_until = 0.0
        self._reply: str | None = None
        """Her reply so far while one streams (None between replies)."""
        self._shown: str | None = None
        bridge.heard.connect(lambda text, _spoken: self._say(f"“{text}”"))
        bridge.reply_delta.connect(self._reply_delta)
        bridge.reply_done.connect(self._reply_done)
        bridge.speak.connect(lambda _kind, text, _tool: self._say(text))
        bridge.event.connect(lambda _event: self.refresh())  # after the window has taken it in
        window.mute_button.toggled.connect(lambda _on: self.refresh())
        self._follow = QTimer(self)
        self._follow.setInterval(FOLLOW_MS)
        self._follow.timeout.connect(self.refresh)

    def start(self) -> None:
        """The small face shows: follow her."""
        self._shown = None
        self.refresh()
        self._follow.start()

    def stop(self) -> None:
        self._follow.stop()

    def note(self, text: str) -> None:
        """A line of the app's own (no compositor…), shown like her words."""
        self._say(text)

    def text(self) -> str:
        """What the caption should say now."""
        look = self.window.presence.look()
        now = time.monotonic()
        # In her turn (thinking, working, speaking) her words stay; waiting for an OK, the pill says so.
        if look.can_stop and look.kind != "attention" and self._words:
            self._words_until = now + self.linger_s
        if self._words and now < self._words_until:
            return self._words
        self._words = ""
        return look.text

    def refresh(self) -> None:
        text = self.text()
        if text != self._shown:
            self._shown = text
            self._show(text)

    def _say(self, text: str) -> None:
        self._reply = None
        if text.strip():
            self._set_words(text)

    def _reply_delta(self, text: str) -> None:
        self._reply = (self._reply or "") + text
        if self._reply.strip():
            self._set_words(self._reply)

    def _reply_done(self, text: str) -> None:
        self._reply = None
        if text.strip():  # empty before a tool call: the words so far stay
            self._set_words(text)

    def _set_words(self, text: str) -> None:
        self._words = " ".join(_MARKUP.sub("", text).split())
        self._words_until = time.monotonic() + self.linger_s
        self.refresh()
