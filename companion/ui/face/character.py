"""Who her face is: one character per shipped personality (front matter `face:`).

A character is colours plus features drawn around the same expressive face: Mira's
chestnut bob and hair clip, Jeeves' grey side-parted hair, moustache and bow tie, Pip's
green skin, horns and pointed ears. The expressions (eyes, brows, mouth) are shared, so
all 14 read the same on every character.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtGui import QColor

from companion.persona import FACES


@dataclass(frozen=True, eq=False)
class Character:
    name: str
    skin_light: QColor
    skin_edge: QColor
    brow: QColor
    line: QColor
    """Mouth line."""
    hair: str = ""
    """"bob", "slick" or "" (none)."""
    hair_color: QColor = field(default_factory=lambda: QColor("#000000"))
    accent: QColor = field(default_factory=lambda: QColor("#ff8fb1"))
    """A small touch of colour: Mira's hair clip, Jeeves' bow tie, Pip's horns."""
    moustache: bool = False
    bow_tie: bool = False
    horns: bool = False
    pointed_ears: bool = False
    brow_width: float = 0.058
    iris_glow: QColor = field(default_factory=lambda: QColor("#8f7dff"))


CHARACTERS: dict[str, Character] = {
    "mira": Character(
        "mira", skin_light=QColor("#fff1e3"), skin_edge=QColor("#f6c9a8"), brow=QColor("#6b4034"),
        line=QColor("#6a3f4c"), hair="bob", hair_color=QColor("#7b4a36"), accent=QColor("#ff8fb1"),
    ),
    "jeeves": Character(
        "jeeves", skin_light=QColor("#fbeee4"), skin_edge=QColor("#e3bfa6"), brow=QColor("#8d8f96"),
        line=QColor("#5b3d40"), hair="slick", hair_color=QColor("#a9adb6"), accent=QColor("#23263a"),
        moustache=True, bow_tie=True, brow_width=0.075, iris_glow=QColor("#7da6ff"),
    ),
    "pip": Character(
        "pip", skin_light=QColor("#d9f7b0"), skin_edge=QColor("#8fce6a"), brow=QColor("#3f6a2a"),
        line=QColor("#3d4a2a"), accent=QColor("#fff0cf"), horns=True, pointed_ears=True,
        iris_glow=QColor("#ffb347"),
    ),
}

assert set(CHARACTERS) == set(FACES), "every face a personality may name needs a character"


def character_for(name: str) -> Character:
    """The character for a front matter `face:` value; unknown names get Mira."""
    return CHARACTERS.get((name or "").strip().lower(), CHARACTERS["mira"])
