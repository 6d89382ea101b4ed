"""Her face over time: eased expression changes, irregular blinks, idle motion, lip sync.

Pure Python with an injected clock, so tests drive time directly; the widget asks for
`frame(now)` on every repaint.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from companion.ui.face.character import CHARACTERS
from companion.ui.face.expressions import FaceShape, blend, shape_for
from companion.ui.face.extras import breath_step
from companion.ui.face.frame import FaceFrame
from companion.ui.face.holding import HOLD_EASE_S, attentive, nod
from companion.ui.face.not_you import NOT_YOU_S, doubtful, not_you_weight, shake

TRANSITION_S = 0.22
"""Expression changes finish within this (the brief allows 250 ms)."""
BLINK_CLOSE_S = 0.07
BLINK_OPEN_S = 0.10
SPEECH_ATTACK_S = 0.03
SPEECH_RELEASE_S = 0.09
FAST_MS = 16
STEADY_MS = 33
"""A spinning arc or a ring swelling with your voice: 30 fps looks as smooth."""
BREATHING_MS = 50
"""The listening ring breathing on its own (a 2 s cycle) at its quickest: it is drawn in
steps, and a frame is painted when it takes the next one."""
STILL_MS = 125
"""Only the slow sway and breath left, at their fastest: 8 fps (under half a pixel a frame)."""
RESTING_MS = 3 * STILL_MS
"""The same, as the sway and the breath turn: fewer frames for the same step."""
SWAY_DEG, SWAY_S = 1.3, 5.3
BOB, BOB_S = 0.018, 3.7
"""The idle sway (degrees of tilt) and breath (face radii up and down) and their cycles."""
_LONGEST_STEP = math.hypot(math.radians(SWAY_DEG) * 2 * math.pi / SWAY_S, BOB * 2 * math.pi / BOB_S) * STILL_MS / 1000
"""How far the head's edge moves (face radii) in STILL_MS when both are at their fastest."""


def _ease(t: float) -> float:
    t = max(0.0, min(1.0, t))
    return t * t * (3 - 2 * t)


class FaceAnimator:
    """Holds where the face is going and computes each frame from the clock time."""

    def __init__(self, now: float, *, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._start = now
        self._from = shape_for("neutral")
        self._to = self._from
        self._changed_at = now - TRANSITION_S
        self.expression = "neutral"
        self.character = CHARACTERS["mira"]
        self.state = "idle"
        self._speech_target = 0.0
        self._speech = 0.0
        self._listen_target = 0.0
        self._listen = 0.0
        self._hold_target = 0.0
        self._hold = 0.0
        """How far the attentive look of a hold for open words is on (0..1, eased)."""
        self._not_you_at = now - NOT_YOU_S
        """When her last "not you" look began (not_you.py)."""
        self._last = now
        self._blink_at = now + self._rng.uniform(1.5, 4.0)
        self._double_blink = False

    # --- inputs ---------------------------------------------------------------------------
    def set_expression(self, name: str, now: float) -> None:
        if name == self.expression:
            return
        self._from = self.shape(now)  # start from wherever a running change has got to
        self._to = shape_for(name)
        self._changed_at = now
        self.expression = name

    def set_state(self, state: str) -> None:
        self.state = state
        if state != "speaking":
            self._speech_target = 0.0
        if state != "listening":
            self._listen_target = 0.0

    def set_holding(self, holding: bool) -> None:
        """She waits for the rest of an open sentence: an attentive look and a small nod."""
        self._hold_target = 1.0 if holding else 0.0

    @property
    def holding(self) -> bool:
        return self._hold_target > 0

    def not_you(self, now: float) -> None:
        """Words in a voice not hers to answer were ignored: a brief "not you" look and head shake."""
        self._not_you_at = now

    def showing_not_you(self, now: float) -> bool:
        return 0.0 <= now - self._not_you_at < NOT_YOU_S

    def set_speech_level(self, level: float) -> None:
        """Output audio level 0..1 while she speaks."""
        self._speech_target = max(0.0, min(1.0, level))

    def set_listen_level(self, level: float) -> None:
        """Microphone level 0..1 while she listens."""
        self._listen_target = max(0.0, min(1.0, level))

    # --- outputs --------------------------------------------------------------------------
    def shape(self, now: float) -> FaceShape:
        return blend(self._from, self._to, self._progress(now))

    def _progress(self, now: float) -> float:
        """How far the running expression change has got, eased: 1 once it is over."""
        return _ease((now - self._changed_at) / TRANSITION_S)

    def in_transition(self, now: float) -> bool:
        return now - self._changed_at < TRANSITION_S

    def lively(self, now: float) -> bool:
        """Something quick is moving (a change, speech): paint at full rate."""
        return (self.in_transition(now) or self.state == "speaking" or self._speech > 0.01
                or self.showing_not_you(now))

    def blinking(self, now: float) -> bool:
        return self._blink_at <= now < self._blink_at + BLINK_CLOSE_S + BLINK_OPEN_S + 0.02

    def frame_interval_ms(self, now: float) -> int:
        """How soon the next frame is worth painting: full rate for quick motion, slower for
        a blink, a spinner or the listening ring, and a few frames a second for the idle sway
        alone (under half a pixel per frame). A slow frame is cut short so the next one lands
        on the start of a blink."""
        if self.lively(now):
            return FAST_MS
        if self._hold_target > 0 or self._hold > 0.01:
            return STEADY_MS  # the nod, and the look easing in or out
        if self.blinking(now) or self.state in ("thinking", "working") or (
                self.state == "listening" and self._listen > 0.05):
            return STEADY_MS
        interval = self._breathing_interval(now) if self.state == "listening" else self._resting_interval(now)
        until_blink = int((self._blink_at - now) * 1000)
        return max(FAST_MS, min(interval, until_blink)) if until_blink > 0 else STEADY_MS

    def _resting_interval(self, now: float) -> int:
        """A frame each time the sway and the breath have moved her as far as they do in
        STILL_MS at their fastest: so fewer frames while they turn, none further apart than
        RESTING_MS. Zzz, hearts and sparkles move on their own, at STILL_MS."""
        shape = self.shape(now)
        if shape.zzz > 0.01 or shape.hearts > 0.01 or shape.sparkles > 0.01:
            return STILL_MS
        here = self._resting_pose(now)
        for interval in range(RESTING_MS, STILL_MS, -25):
            there = self._resting_pose(now + interval / 1000)
            if math.dist(here, there) <= _LONGEST_STEP:
                return interval
        return STILL_MS

    def _breathing_interval(self, now: float) -> int:
        """While she listens to quiet: a frame when the ring's breath takes its next step,
        or sooner if the sway calls for one; never faster than BREATHING_MS."""
        resting = self._resting_interval(now)
        t = now - self._start
        breath = breath_step(t)
        for interval in range(BREATHING_MS, resting, 10):
            if breath_step(t + interval / 1000) != breath:
                return interval
        return resting

    def _resting_pose(self, now: float) -> tuple[float, float]:
        """Where the sway and the breath put the head's edge (face radii)."""
        t = now - self._start
        return math.radians(_sway(t)), _bob(t)

    def frame(self, now: float) -> FaceFrame:
        dt = max(0.0, now - self._last)
        self._last = now
        self._speech = _follow(self._speech, self._speech_target, dt)
        self._listen = _follow(self._listen, self._listen_target, dt)
        self._hold += (self._hold_target - self._hold) * (1.0 - math.exp(-dt / HOLD_EASE_S))
        t = now - self._start
        progress = self._progress(now)
        shape = blend(self._from, self._to, progress)
        if self._hold > 0.001:
            shape = blend(shape, attentive(shape), self._hold)
        since = now - self._not_you_at
        if self.showing_not_you(now):
            shape = blend(shape, doubtful(shape), not_you_weight(since))
            shape = replace(shape, head_tilt=shape.head_tilt + shake(since))
        return FaceFrame(
            shape=shape,
            blink=self._blink(now),
            speech_level=self._speech,
            listen_level=self._listen,
            bob=_bob(t) + self._hold * nod(t),
            sway=_sway(t),
            state=self.state,
            phase=t,
            character=self.character,
            settling=(self._from, self._to, progress) if progress < 1.0 else None,
        )

    def _blink(self, now: float) -> float:
        since = now - self._blink_at
        if since < 0:
            return 0.0
        if since < BLINK_CLOSE_S:
            return since / BLINK_CLOSE_S
        if since < BLINK_CLOSE_S + BLINK_OPEN_S:
            return 1.0 - (since - BLINK_CLOSE_S) / BLINK_OPEN_S
        # Irregular, like a person: mostly 2-6 s apart, now and then a quick double blink.
        if not self._double_blink and self._rng.random() < 0.15:
            self._double_blink = True
            self._blink_at = now + 0.12
        else:
            self._double_blink = False
            self._blink_at = now + self._rng.uniform(2.0, 6.0)
        return 0.0


def _sway(t: float) -> float:
    """The idle tilt, in degrees, `t` seconds into her life."""
    return SWAY_DEG * math.sin(t * 2 * math.pi / SWAY_S)


def _bob(t: float) -> float:
    """The breath, in face radii up and down."""
    return BOB * math.sin(t * 2 * math.pi / BOB_S)


def _follow(current: float, target: float, dt: float) -> float:
    # Open fast, close a little slower: speech looks crisp without chattering.
    tau = SPEECH_ATTACK_S if target > current else SPEECH_RELEASE_S
    return current + (target - current) * (1.0 - math.exp(-dt / tau))
