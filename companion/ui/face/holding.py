"""Her look while she waits out a pause because your words are open: attentive, with a small nod.

A longer wait for "Could you…" must not feel like dead air: she looks like someone who knows
you are still talking (eyes a little wider, brows up, head tilted towards you) and nods now and
then, as a listener does to say "go on". Laid over whatever expression she has, eased in and out.
"""

from __future__ import annotations

import math
from dataclasses import replace

from companion.ui.face.expressions import FaceShape

__all__ = ["HOLD_EASE_S", "NOD_DEPTH", "NOD_S", "attentive", "nod"]

HOLD_EASE_S = 0.12
"""Time constant of the look coming and going (on within ~0.3 s: a hold starts ~0.2 s into a pause)."""
NOD_DEPTH = 0.045
"""How far the head dips at a nod, in face radii (the breath's bob is 0.018)."""
NOD_S = 1.3
"""One nod every this many seconds, a quick dip and a slower rise."""


def attentive(shape: FaceShape) -> FaceShape:
    """`shape` turned towards the speaker: wider eyes, raised brows, a tilt, a slight smile."""
    return replace(shape, eye_height=shape.eye_height * 1.1, brow_y=shape.brow_y - 0.05,
                   head_tilt=shape.head_tilt + 5.0, gaze_y=shape.gaze_y + 0.02,
                   mouth_curve=max(shape.mouth_curve, 0.2), lid_drop=shape.lid_drop * 0.5)


def nod(t: float) -> float:
    """The nod's dip (face radii, downwards) `t` seconds into her life: a quick dip, a slow rise."""
    phase = (t % NOD_S) / NOD_S
    dip = math.sin(math.pi * phase / 0.3) if phase < 0.3 else 0.0
    return NOD_DEPTH * max(0.0, dip)
