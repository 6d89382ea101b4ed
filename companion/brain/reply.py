"""One model round's text on its way out: reasoning and emotion tags removed (ReplyFilter),
template markup and written tool calls taken out (MarkupFilter), limits kept (ReplyGuard)."""

from __future__ import annotations

from collections.abc import Iterable

from companion.brain.client import ToolCallRequest
from companion.brain.emotion import ReplyFilter
from companion.brain.guard import ReplyGuard
from companion.brain.markup import MarkupFilter


class ReplyStream:
    """`feed()` raw pieces; it returns (visible text, stop now). `finish()` releases the rest.

    `stop_reason`: "" (the model finished), "ended" (it wrote a turn-ending template token),
    "limit" (the reply cap was reached at a sentence end) or "repeating".
    """

    def __init__(self, *, known_tools: Iterable[str] = (), cap_tokens: int) -> None:
        self._filter = ReplyFilter()
        self._markup = MarkupFilter(known=frozenset(known_tools))
        self._guard = ReplyGuard(cap_tokens)
        self._visible: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self._visible)

    @property
    def emotion(self) -> str | None:
        return self._filter.emotion

    @property
    def stop_reason(self) -> str:
        if self._markup.ended:
            return "ended"
        return self._guard.stop_reason

    def feed(self, piece: str) -> tuple[str, bool]:
        text = self._markup.feed(self._filter.feed(piece))
        out, stop = self._guard.feed(text) if text else ("", bool(self._guard.stop_reason))
        self._visible.append(out)
        return out, stop or self._markup.ended

    def finish(self) -> str:
        text = self._markup.feed(self._filter.finish()) + self._markup.finish()
        out = (self._guard.feed(text)[0] if text else "") + self._guard.finish()
        self._visible.append(out)
        return out

    def text_calls(self, prefix: str) -> tuple[ToolCallRequest, ...]:
        """The calls the model wrote as text, as requests for the tool runner (ids start
        with `prefix`, unique within the turn)."""
        return tuple(ToolCallRequest(id=f"{prefix}{index}", name=call.name, arguments=call.arguments)
                     for index, call in enumerate(self._markup.calls))
