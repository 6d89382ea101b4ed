"""Chat-template markup in a streamed reply: control tokens end it, tool calls written as text
are taken out (and parsed), invented tool results are dropped. Works across chunk boundaries.

Small models often write a call instead of sending a structured one: Hermes/Qwen
`<tool_call>{…}</tool_call>`, Llama 3 `{"name": …, "parameters": …}` (after `<|python_tag|>`
or bare), Mistral `[TOOL_CALLS] [...]`, Llama 3.1 `<function=name>{…}</function>`, or a JSON
object in a code fence. With a wrong chat template they also write the template's own tokens
(`<|im_end|>`, `<|im_start|>user`, `<|eot_id|>`…): whatever follows one is the model inventing
the next turn, so the reply ends there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MAX_HELD = 8000
"""Characters a possible call may hold back before it is given up as ordinary text."""
_CONTROL = re.compile(r"<\|[A-Za-z0-9_]{1,30}\|>|<(?:start|end)_of_turn>|</s>|\[/?INST\]")
_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n")
_TAGS = ("<tool_call>", "<tool_response>", "</tool_call>", "</tool_response>", "<function=",
         "<|python_tag|>", "[TOOL_CALLS]")
_PREFIXES = (*_TAGS, "<start_of_turn>", "<end_of_turn>", "</s>", "[INST]", "[/INST]", "```")


@dataclass(frozen=True)
class TextCall:
    """A call the model wrote as text: its name and its arguments as JSON text."""

    name: str
    arguments: str


@dataclass
class MarkupFilter:
    """`feed()` raw text, get back what may be shown; `calls` collects calls written as text.

    `known` names the tools offered: a bare or fenced JSON object only counts as a call when it
    names one of them (otherwise it is JSON the user asked for). Explicit call markup
    (`<tool_call>`, `<|python_tag|>`, `[TOOL_CALLS]`, `<function=…>`) is never shown, whatever
    it names: the tool runner then refuses an unknown name in words the model reads.
    """

    known: frozenset[str] = frozenset()
    calls: list[TextCall] = field(default_factory=list)
    ended: bool = False
    """A control token ended the reply: stop reading, ignore the rest."""
    _pending: str = ""
    _line_start: bool = True
    _in_code: bool = False

    def feed(self, chunk: str) -> str:
        if self.ended:
            return ""
        self._pending += chunk
        return self._drain(final=False)

    def finish(self) -> str:
        return "" if self.ended else self._drain(final=True)

    # --- the state machine ----------------------------------------------------------------
    def _drain(self, *, final: bool) -> str:
        out: list[str] = []
        while self._pending and not self.ended:
            if self._in_code:
                end = self._pending.find("```")
                if end < 0:
                    keep = 0 if final else _partial(self._pending, "```")
                    out.append(self._emit(self._pending[: len(self._pending) - keep]))
                    self._pending = self._pending[len(self._pending) - keep:]
                    break
                out.append(self._emit(self._pending[: end + 3]))
                self._pending = self._pending[end + 3:]
                self._in_code = False
                continue
            start, kind, size = self._trigger()
            if start < 0:
                keep = 0 if final else _held_suffix(self._pending)
                out.append(self._emit(self._pending[: len(self._pending) - keep]))
                self._pending = self._pending[len(self._pending) - keep:]
                break
            out.append(self._emit(self._pending[:start]))
            self._pending = self._pending[start:]
            consumed = self._handle(kind, size, final=final)
            if consumed is None:  # needs more text to decide
                if final:  # nothing more will come: an unfinished block is dropped
                    self._pending = ""
                break
            shown, rest = consumed
            out.append(self._emit(shown))
            self._pending = rest
        return "".join(out)

    def _trigger(self) -> tuple[int, str, int]:
        """The first place in the pending text where markup (or a possible call) starts."""
        text = self._pending
        found: list[tuple[int, str, int]] = []
        for tag in _TAGS:
            at = text.find(tag)
            if at >= 0:
                found.append((at, tag, len(tag)))
        control = _CONTROL.search(text)
        if control and control.group(0) != "<|python_tag|>":
            found.append((control.start(), "control", len(control.group(0))))
        fence = _FENCE_OPEN.search(text)
        if fence:
            found.append((fence.start(), "fence", fence.end() - fence.start()))
        brace = self._line_brace(text)
        if brace >= 0:
            found.append((brace, "json", 0))
        return min(found) if found else (-1, "", 0)

    def _line_brace(self, text: str) -> int:
        """Where a `{` or `[{` opens a line (or the reply), or -1."""
        at_start = self._line_start
        for index, char in enumerate(text):
            if char == "\n":
                at_start = True
            elif char in " \t":
                continue
            elif at_start and (char == "{" or text.startswith("[{", index) or text.startswith("[\n", index)):
                return index
            else:
                at_start = False
        return -1

    def _handle(self, kind: str, size: int, *, final: bool) -> tuple[str, str] | None:
        """(text to show, text left) once `kind` at the start of the pending text is settled;
        None while more text is needed."""
        text = self._pending
        if kind == "control":
            self.ended = True
            return "", ""
        if kind in ("</tool_call>", "</tool_response>"):
            return "", text[size:]
        if kind == "<tool_response>":
            end = text.find("</tool_response>")
            return None if end < 0 else ("", text[end + len("</tool_response>"):])
        if kind == "<tool_call>":
            body = text[size:].lstrip()
            if not body:
                return None
            if body[0] not in "{[`":  # "the <tool_call> tag" in prose: drop the tag only
                return "", text[size:].lstrip(" ")
            end = text.find("</tool_call>")
            if end < 0:
                if not final:
                    return None
                end = len(text)
            self._take(text[size:end], explicit=True)
            return "", text[end + len("</tool_call>"):]
        if kind == "<function=":
            match = re.match(r"<function=([\w.-]+)>(.*?)</function>", text, re.S)
            if match is None:
                return None
            self.calls.append(TextCall(match.group(1), match.group(2).strip() or "{}"))
            return "", text[match.end():]
        if kind in ("<|python_tag|>", "[TOOL_CALLS]"):
            body = text[size:]
            end = _json_end(body.lstrip())
            if end < 0 and not final:
                return None if len(body) < MAX_HELD else ("", "")
            offset = len(body) - len(body.lstrip())
            self._take(body.lstrip()[: end if end >= 0 else None], explicit=True)
            return "", body[offset + end:] if end >= 0 else ""
        if kind == "fence":
            body = text[size:]
            stripped = body.lstrip()
            if not stripped:
                return None
            if stripped[0] not in "{[":  # ordinary code: show it, fence and all
                self._in_code = True
                return text[:size], body
            close = body.find("```")
            if close < 0:
                if not final and len(body) < MAX_HELD:
                    return None
                self._in_code = True
                return text[:size], body
            if self._take(body[:close], explicit=False):
                return "", body[close + 3:]
            return text[: size + close + 3], body[close + 3:]
        # kind == "json": a brace at the start of a line
        end = _json_end(text)
        if end < 0:
            if not final and len(text) < MAX_HELD:
                return None
            return text[:1], text[1:]  # not JSON after all: show it as it is
        if self._take(text[:end], explicit=False):
            return "", text[end:]
        return text[:end], text[end:]

    def _take(self, candidate: str, *, explicit: bool) -> bool:
        """Record the calls `candidate` holds; True when it was a call."""
        calls = parse_text_calls(candidate)
        if not calls or (not explicit and any(c.name not in self.known for c in calls)):
            return False
        self.calls.extend(calls)
        return True

    def _emit(self, text: str) -> str:
        stripped = text.rstrip(" \t")
        if stripped:
            self._line_start = stripped.endswith("\n")
        return text


def parse_text_calls(text: str) -> list[TextCall]:
    """The calls in one written block: an object or a list of objects with `name` and
    `arguments` or `parameters` (or OpenAI's {"function": {…}} shape); [] if it is none."""
    text = text.strip()
    fence = re.fullmatch(r"```[A-Za-z0-9_+-]*\s*(.*?)\s*```", text, re.S)
    if fence:
        text = fence.group(1)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return []
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            item = item["function"]
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            return []
        if set(item) - {"name", "arguments", "parameters", "type", "id"}:
            return []  # some other object that happens to have a name
        arguments = item.get("arguments", item.get("parameters")) or {}
        calls.append(TextCall(item["name"], arguments if isinstance(arguments, str) else json.dumps(arguments)))
    return calls


def _json_end(text: str) -> int:
    """Index just past the JSON value (object or array) `text` starts with; -1 if unfinished."""
    if not text or text[0] not in "{[":
        return -1
    depth, in_string, escaped = 0, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return -1


def _partial(text: str, marker: str) -> int:
    """Length of the longest end of `text` that begins `marker`."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:size]):
            return size
    return 0


def _held_suffix(text: str) -> int:
    """How much of the end of `text` to hold back: the start of a tag or token not yet complete."""
    if not any(mark in text[-32:] for mark in "<[`"):
        return 0  # the common case, every few characters of a reply: nothing could be starting
    held = max(_partial(text, marker) for marker in _PREFIXES)
    for pattern in (r"<\|[A-Za-z0-9_]{0,30}\|?$", r"```[A-Za-z0-9_+-]*[ \t]*$", r"<function=[\w.-]*$"):
        match = re.search(pattern, text)
        if match:
            held = max(held, len(text) - match.start())
    return held
