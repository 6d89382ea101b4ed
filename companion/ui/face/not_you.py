"""Her brief "not you" look: words she heard were in a voice that was not hers to answer.

Another voice inside the follow-up window, a stranger's "yes, run it" or "stop", anyone but the
user in *Only me* (events.VoiceIgnored): she does not just stay blank, which would look as if
she had not heard. For about a second her eyes narrow a little, her brows draw level and her
mouth flattens, and she gives a small shake of the head, as a person does who heard and means
"not you"; then she is back to whatever she was showing. Laid over the expression, eased in and out.
"""

from __future__ import annotations

import math
from dataclasses import replace

from companion.ui.face.expressions import FaceShape

__all__ = ["NOT_YOU_S", "SHAKE_DEG", "doubtful", "not_you_weight", "shake"]

NOT_YOU_S = 1.2
"""How long the look lasts: long enough to be seen, short enough not to stand for a mood."""
SHAKE_DEG = 4.0
"""The head shake's turn each way, in degrees of tilt (the idle sway is 1.3)."""
SHAKES = 2
"""Side-to-side turns in the look."""


def doubtful(shape: FaceShape) -> FaceShape:
    """`shape` with narrowed eyes, level brows and a flat mouth."""
    return replace(shape, eye_height=shape.eye_height * 0.85, lid_drop=max(shape.lid_drop, 0.25),
                   brow_y=shape.brow_y + 0.03, brow_angle=shape.brow_angle - 6.0,
                   mouth_curve=min(shape.mouth_curve, 0.0) - 0.1, mouth_skew=shape.mouth_skew + 0.15)


def not_you_weight(since_s: float) -> float:
    """How far the look is on (0..1) `since_s` seconds after the voice was ignored: a quick
    ease in (~0.15 s), held, then a slower ease out."""
    if not 0.0 <= since_s < NOT_YOU_S:
        return 0.0
    rise = min(1.0, since_s / 0.15)
    fall = min(1.0, (NOT_YOU_S - since_s) / 0.35)
    return min(rise, fall)


def shake(since_s: float) -> float:
    """The head shake's tilt (degrees) `since_s` seconds into the look."""
    if not 0.0 <= since_s < NOT_YOU_S:
        return 0.0
    return SHAKE_DEG * not_you_weight(since_s) * math.sin(2 * math.pi * SHAKES * since_s / NOT_YOU_S)
