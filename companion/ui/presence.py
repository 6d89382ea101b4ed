"""What the pill and the face say she is doing, from everything the window knows.

The core reports its turn state (idle, listening, thinking, working, speaking); the window
adds what only it knows: the brain is down, her voice is loading, the microphone is muted,
push-to-talk is held, a card waits for the user's OK. `look(facts)` folds all of it into one
answer, so the pill never says "Ready" with no brain or "Working…" while she waits for you.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Facts:
    core: str = "idle"
    """The core's last state: idle | listening | thinking | working | speaking | waiting | offline."""
    started: bool = True
    """False while the core is still starting."""
    failed: str = ""
    """Why the core could not start ("" when it did, or still may)."""
    offline: str = ""
    """Why her brain can't be reached ("" when it can, as far as we know)."""
    voice: str = "none"
    """none (typing only) | loading | ready."""
    voice_progress: float | None = None
    """0..1 while a voice model downloads or loads, when known."""
    muted: bool = False
    push_to_talk: bool = False
    """The push-to-talk key is held (she listens even when muted)."""
    tool: str = ""
    """The tool running now, if any."""
    waiting: bool = False
    """An approval card waits for the user's answer."""
    replying: bool = False
    """Her reply text is streaming in."""
    attention: str = "awake"
    """Listening mode as her face shows it (voice.addressing.addressed.Attention): awake | dozing | attentive | off."""
    call_hint: str = ""
    """What calls her while she dozes ("Mira" or “Okay Nabu”), for the pill."""


@dataclass(frozen=True)
class Look:
    text: str
    kind: str
    """The pill's colour family: ok | busy | listening | attention | offline | muted."""
    face_state: str
    """What the face animator shows (idle | listening | thinking | working | speaking)."""
    expression: str | None = None
    """An expression that overrides the core's while this look lasts (None: the core's)."""
    can_stop: bool = False
    """Offer Stop: she is in a turn that can be cut short."""


BUSY = ("thinking", "working", "speaking")


def look(f: Facts) -> Look:
    """The one answer for the pill, the face and the Stop control."""
    # The core's state machine (companion.face_state) also says waiting and offline.
    waiting = f.waiting or f.core == "waiting"
    offline = f.offline or ("can't reach my brain" if f.core == "offline" else "")
    in_turn = f.core in BUSY or f.tool or waiting
    if waiting:
        return Look("Waiting for your OK", "attention", "idle", "pleading", can_stop=True)
    if f.tool:
        return Look(f"Working: {f.tool}", "busy", "working", can_stop=True)
    if f.core == "working":
        return Look("Working…", "busy", "working", can_stop=True)
    if f.core == "speaking":
        return Look("Speaking", "busy", "speaking", can_stop=True)
    if in_turn:
        text = "Replying…" if f.replying else "Thinking…"
        return Look(text, "busy", "thinking", can_stop=True)
    if f.push_to_talk and f.voice == "ready":
        return Look("Listening (push-to-talk)", "listening", "listening")
    if not f.started:
        return Look("Starting…", "busy", "idle")
    if f.failed:
        return Look("Couldn't start", "offline", "idle", "sad")
    if offline:
        return Look(f"Offline: {offline}", "offline", "idle")
    if f.voice == "loading":
        percent = "" if f.voice_progress is None else f" {round(100 * f.voice_progress)} %"
        return Look(f"Loading my voice…{percent}", "busy", "idle")
    if f.voice == "ready" and f.muted:
        return Look("Muted: type to talk", "muted", "idle")
    if f.voice == "ready" and f.attention == "dozing":
        # When called and not called: dozing, whatever voices the room has.
        hint = f": say {f.call_hint}" if f.call_hint else ""
        return Look(f"Dozing{hint}", "ok", "idle", "sleepy")
    if f.voice == "ready" and f.attention == "attentive":
        return Look("Listening to you", "listening", "listening")
    if f.voice == "ready" and f.core == "listening":
        return Look("Listening…", "listening", "listening")
    return Look("Ready", "ok", "idle")


class Presence:
    """Holds the facts; `update(**changes)` returns the new look."""

    def __init__(self) -> None:
        self.facts = Facts()

    def update(self, **changes: object) -> Look:
        self.facts = replace(self.facts, **changes)
        return look(self.facts)

    def look(self) -> Look:
        return look(self.facts)
