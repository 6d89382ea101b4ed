"""Build the system prompt from a personality, for a conversation turn or a work-mode job."""

from __future__ import annotations

from companion.events import EXPRESSIONS
from companion.persona.document import Personality

_ORDER = ("Personality", "How to address the user", "Emotional rules", "Quirks")


def build_system_prompt(personality: Personality, *, work: bool = False, voice: bool = True) -> str:
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
        "Begin every reply with exactly one emotion tag in square brackets, chosen from: "
        + ", ".join(EXPRESSIONS) + ". Example: [happy] That worked!",
        "Never describe your tools' inner workings; use a tool when it helps, then answer.",
        "If a tool fails, do not call it again with the same arguments; try something else or tell the user.",
    ]
    if voice:
        rules.append("Your replies are spoken aloud: keep them short and natural, no markdown, "
                     "no lists, no code blocks.")
    if work:
        rules.append("You are running a background job the user handed you. Work through it with "
                     "your tools, then finish with a short summary of what you did and found.")
    else:
        rules.append("For a long multi-step task, hand it to a background job with start_work "
                     "and tell the user you'll report back.")
    parts.append("## How to reply\n" + "\n".join(f"- {rule}" for rule in rules))
    return "\n\n".join(parts)
