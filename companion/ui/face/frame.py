"""What one painted frame of her face needs: the blended shape and the live animation."""

from __future__ import annotations

from dataclasses import dataclass

from companion.ui.face.character import CHARACTERS, Character
from companion.ui.face.expressions import FaceShape


@dataclass(frozen=True)
class FaceFrame:
    """Everything one painted frame needs: the blended shape plus the live animation."""

    shape: FaceShape
    blink: float = 0.0
    """0 eyes open .. 1 shut."""
    speech_level: float = 0.0
    """Lip sync: output audio level 0..1, opens the mouth."""
    listen_level: float = 0.0
    """Microphone level 0..1 while she listens, swells the listening ring."""
    bob: float = 0.0
    sway: float = 0.0
    state: str = "idle"
    phase: float = 0.0
    """Seconds since start, for drifting decorations and spinners."""
    character: Character = CHARACTERS["mira"]
    settling: tuple[FaceShape, FaceShape, float] | None = None
    """During an expression change: from, to, and how far along (`shape` is their blend)."""
