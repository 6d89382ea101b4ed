"""Build the system prompt from a personality, and the short note that travels with each turn.

The system prompt is the same for every turn, channel and mode, so a server's prompt cache
keeps it (with the tool list after it) from one request to the next: what differs per turn
(spoken or typed, the time, a background job's brief) goes into the turn note, which is sent
with the newest user message only.
"""

from __future__ import annotations

from datetime import datetime

from companion.events import EXPRESSIONS
from companion.persona.document import Personality

_ORDER = ("Personality", "How to address the user", "Emotional rules", "Quirks")


def build_system_prompt(personality: Personality) -> str:
    """Her system prompt: who she is (from the file), then how to format replies."""
    parts = [f"You are {personality.name}, a companion who lives on the user's desktop."]
    for title in _ORDER:
        text = personality.section(title)
        if text:
            parts.append(f"## {title}\n{text}")
    for title, text in personality.sections.items():
        if title.lower() not in {t.lower() for t in _ORDER} and text:
            parts.append(f"## {title}\n{text}")
    rules = [
        f"Reply in the language with code '{personality.language}' unless the user writes in another.",
        "Begin every reply with one emotion tag from: " + ", ".join(EXPRESSIONS)
        + ". Example: [happy] That worked!",
        "Use a tool when it helps, then answer; never describe how your tools work.",
        "Hand long multi-step tasks to start_work and say you'll report back.",
        "Follow the note in brackets at the end of the user's message.",
    ]
    parts.append("## How to reply\n" + "\n".join(f"- {rule}" for rule in rules))
    return "\n\n".join(parts)


def build_turn_note(*, voice: bool, work: bool = False, now: datetime | None = None) -> str:
    """What this turn needs that the cached prefix must not carry: how the reply is delivered,
    the time, and in a background job what the job is."""
    now = now or datetime.now().astimezone()
    notes = [f"It is {now:%A %H:%M}."]
    if work:
        notes.append("This is a background job: work through it with your tools, then finish "
                     "with a short summary of what you did and found.")
    elif voice:
        notes.append("Spoken reply: short and natural, no markdown, lists or code.")
    else:
        notes.append("Typed reply: markdown is fine, keep it brief.")
    return "[" + " ".join(notes) + "]"


def with_turn_note(text: str, note: str) -> str:
    """The user's message as sent to the model: their words, then the turn note."""
    return f"{text}\n\n{note}"
