"""Her 14 expressions as data: numeric face shapes that can be blended into each other.

Every field is a float so a transition is a plain linear blend of two shapes; the painter
(head.py) turns a shape into strokes. Units are fractions of the face radius.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from companion.events import EXPRESSIONS


@dataclass(frozen=True)
class FaceShape:
    # eyes
    eye_height: float = 1.0
    """Vertical eye size (1 normal, >1 wide open)."""
    eye_width: float = 1.0
    lid_drop: float = 0.0
    """How far the upper lids hang down (0 open, 1 shut): sleepy, bored."""
    lid_slant: float = 0.0
    """Upper-lid slant: >0 inner corners down (angry, determined), <0 outer corners down (sad)."""
    lower_lid: float = 0.0
    """Cheeks pushing the lower lids up (a smiling squint)."""
    eye_smile: float = 0.0
    """Eyes become upward arcs (^ ^), the closed-eye smile."""
    eye_squeeze: float = 0.0
    """Eyes become > < squeezed shut (crying hard)."""
    shine: float = 1.0
    """Size of the highlights in the eyes (sparkly when excited, tiny when scared)."""
    gaze_x: float = 0.0
    gaze_y: float = 0.0
    # brows
    brow_y: float = 0.0
    """Brow height offset (negative raises)."""
    brow_angle: float = 0.0
    """Degrees; positive lifts the inner ends (worried), negative lowers them (cross)."""
    brow_arch: float = 0.3
    brow_raise_left: float = 0.0
    """Extra lift of her left brow only (the quizzical look)."""
    # mouth
    mouth_curve: float = 0.15
    """-1 frown .. 1 broad smile."""
    mouth_width: float = 0.30
    mouth_open: float = 0.0
    mouth_wave: float = 0.0
    """A wobbly mouth line (nervous, confused, scared)."""
    mouth_skew: float = 0.0
    """Lifts one corner (a lopsided, unsure mouth)."""
    mouth_y: float = 0.0
    # the whole head
    head_tilt: float = 0.0
    """Degrees."""
    flush: float = 0.0
    """Reddens the whole face (anger)."""
    pale: float = 0.0
    """Cools the face and draws gloom lines on the forehead (fear)."""
    # decorations (opacity 0..1)
    blush: float = 0.0
    tears: float = 0.0
    sweat: float = 0.0
    zzz: float = 0.0
    hearts: float = 0.0
    sparkles: float = 0.0
    question: float = 0.0
    think_dots: float = 0.0
    anger_mark: float = 0.0


SHAPES: dict[str, FaceShape] = {
    "neutral": FaceShape(),
    "happy": FaceShape(
        eye_smile=1.0, brow_y=-0.03, brow_arch=0.5, mouth_curve=0.9, mouth_width=0.40,
        mouth_open=0.18, blush=0.35,
    ),
    "excited": FaceShape(
        eye_height=1.18, eye_width=1.08, shine=1.7, brow_y=-0.09, brow_arch=0.6,
        mouth_curve=1.0, mouth_width=0.46, mouth_open=0.75, sparkles=1.0, blush=0.2,
    ),
    "sad": FaceShape(
        # Droops as a whole (head bowed, cool skin) so it reads apart from neutral at tray size.
        lid_slant=-0.75, shine=0.8, gaze_y=0.7, brow_angle=30, brow_arch=-0.05, brow_y=0.04,
        mouth_curve=-1.0, mouth_width=0.3, mouth_y=0.05, head_tilt=-7, pale=0.3,
    ),
    "crying": FaceShape(
        eye_squeeze=1.0, brow_angle=28, brow_arch=-0.1, brow_y=-0.02, mouth_curve=-0.9,
        mouth_width=0.30, mouth_open=0.75, mouth_wave=0.5, tears=1.0, blush=0.25,
    ),
    "angry": FaceShape(
        lid_slant=0.75, shine=0.7, brow_angle=-26, brow_arch=-0.1, brow_y=0.05,
        mouth_curve=-0.65, mouth_width=0.34, mouth_open=0.08, flush=0.55, anger_mark=1.0,
    ),
    "surprised": FaceShape(
        eye_height=1.32, eye_width=1.05, shine=1.1, brow_y=-0.15, brow_arch=0.7,
        mouth_curve=0.0, mouth_width=0.19, mouth_open=1.0, mouth_y=0.03,
    ),
    "embarrassed": FaceShape(
        lower_lid=0.35, gaze_x=-0.8, gaze_y=0.35, brow_angle=14, brow_arch=0.2,
        mouth_curve=0.25, mouth_width=0.22, mouth_wave=0.85, blush=1.0, sweat=0.8, head_tilt=-5,
    ),
    "thinking": FaceShape(
        gaze_x=0.8, gaze_y=-0.7, lid_drop=0.12, brow_raise_left=0.09, brow_angle=-4,
        mouth_curve=-0.1, mouth_width=0.2, mouth_skew=0.7, think_dots=1.0, head_tilt=6,
    ),
    "sleepy": FaceShape(
        lid_drop=0.78, gaze_y=0.4, shine=0.6, brow_y=0.05, brow_angle=6, brow_arch=0.1,
        mouth_curve=0.0, mouth_width=0.12, mouth_open=0.28, zzz=1.0, head_tilt=-9,
    ),
    "affectionate": FaceShape(
        eye_smile=1.0, brow_angle=10, brow_arch=0.4, brow_y=-0.02, mouth_curve=0.75,
        mouth_width=0.24, blush=0.95, hearts=1.0, head_tilt=7,
    ),
    "confused": FaceShape(
        gaze_x=-0.5, brow_raise_left=0.13, brow_angle=-8, brow_arch=0.2, mouth_curve=-0.1,
        mouth_width=0.28, mouth_wave=1.0, mouth_skew=-0.8, question=1.0, head_tilt=11,
    ),
    "scared": FaceShape(
        eye_height=1.22, eye_width=0.92, shine=0.45, brow_angle=30, brow_y=-0.1,
        brow_arch=-0.15, mouth_curve=-0.35, mouth_width=0.36, mouth_open=0.38, mouth_wave=1.0,
        pale=1.0, sweat=1.0,
    ),
    "determined": FaceShape(
        lid_slant=0.55, lower_lid=0.25, shine=1.4, brow_angle=-22, brow_arch=-0.05, brow_y=0.03,
        mouth_curve=0.45, mouth_width=0.34, mouth_open=0.1, mouth_skew=0.3, sparkles=1.0,
        head_tilt=-5,
    ),
    # Window-only: never an emotion tag, shown while she waits for the user's OK on a card.
    "pleading": FaceShape(
        eye_height=1.22, eye_width=1.06, shine=1.9, gaze_y=-0.45, brow_angle=24, brow_y=-0.07,
        brow_arch=0.25, mouth_curve=-0.12, mouth_width=0.15, mouth_wave=0.3, blush=0.3,
        head_tilt=-6,
    ),
}

WINDOW_EXPRESSIONS = ("pleading",)
"""Faces the window makes for its own states (not emotion tags the brain may use)."""

assert set(SHAPES) == set(EXPRESSIONS) | set(WINDOW_EXPRESSIONS), "every expression needs a shape"


def shape_for(name: str) -> FaceShape:
    """The shape for an expression name; unknown names fall back to neutral."""
    return SHAPES.get(name, SHAPES["neutral"])


def blend(a: FaceShape, b: FaceShape, t: float) -> FaceShape:
    """The shape `t` of the way from `a` to `b` (0 gives a, 1 gives b)."""
    if t <= 0.0:
        return a
    if t >= 1.0:
        return b
    return replace(
        a, **{f.name: getattr(a, f.name) + (getattr(b, f.name) - getattr(a, f.name)) * t for f in fields(a)}
    )
