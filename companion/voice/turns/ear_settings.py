"""How the ear judges, from the user's voice settings: barge-in (how long and how loud the user
must talk over her), the echo floor behind a canceller or not, muting, and the endpointer's patience."""

from __future__ import annotations

from dataclasses import dataclass, field

from companion.config import VoiceSettings
from companion.voice.turns.endpoint import EndpointSettings
from companion.voice.turns.turn_rule import TurnRule

CANCELLED_ECHO_RATIO = 0.05
"""EarSettings.echo_ratio behind an echo canceller: -26 dB of her level, still above what
AEC3 leaves of her (the bench measures 50-76 dB removed)."""


@dataclass(frozen=True)
class EarSettings:
    barge_in: bool = True
    """Stop her when the user talks over her (turn off for speakers without a headset)."""
    barge_in_ms: int = 200
    """How long the user must speak over her before she stops. A short first word ("Stop,")
    is about 250 ms of voice, and behind an echo canceller a frame of it now and then comes
    out suppressed: at 250 ms such a word missed by one frame in 2 of 6 rounds on open
    speakers, and she stopped only when the user's whole sentence had ended."""
    barge_in_floor: float = 0.01
    """Minimum microphone level (RMS) that can count as the user talking over her."""
    echo_ratio: float = 0.3
    """The floor also rises to this fraction of her own current playback level (her echo in
    a raw microphone can come back nearly as loud as she plays)."""
    muted: bool = False
    """Microphone muted: frames are read and thrown away."""
    endpoint: EndpointSettings = field(default_factory=EndpointSettings)
    turn_rule: TurnRule = field(default_factory=TurnRule)
    """How the words and the turn model's probability decide the end of a turn (turn_rule.py)."""
    thinking_line_s: float = 1.2
    """Her thinking line comes when no sentence of a spoken answer is ready this long after the
    user stopped (0: never; VoiceSettings.thinking_line_s)."""

    @classmethod
    def from_voice(cls, voice: VoiceSettings, *, turn_model: bool = False, echo_cancelled: bool = False) -> EarSettings:
        """`echo_cancelled`: the microphone reaches the ear through a working echo canceller,
        so her echo is tens of dB down and the floor need not rise as high with her voice
        (at 0.3, a user no louder than her echo could not stop her on open speakers)."""
        return cls(barge_in=voice.barge_in, muted=voice.muted, thinking_line_s=voice.thinking_line_s,
                   echo_ratio=CANCELLED_ECHO_RATIO if echo_cancelled else cls.echo_ratio,
                   endpoint=EndpointSettings.for_patience(voice.end_of_turn_silence_ms, turn_model=turn_model))
