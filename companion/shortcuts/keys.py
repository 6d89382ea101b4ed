"""A shortcut as the desktop names it: Qt's "Ctrl+Shift+F9" read into modifiers and an X keysym name."""

from __future__ import annotations

from dataclasses import dataclass

MODIFIERS = ("Ctrl", "Alt", "Shift", "Meta")
"""Qt's portable modifier names, in the order Qt writes them."""

_KEYSYM_NAMES = {
    # Qt's portable key names that differ from X's keysym names (xkbcommon uses X's).
    "Space": "space", "Esc": "Escape", "Backspace": "BackSpace", "Del": "Delete", "Ins": "Insert",
    "PgUp": "Prior", "PgDown": "Next", "ScrollLock": "Scroll_Lock", "CapsLock": "Caps_Lock",
    "NumLock": "Num_Lock", "Enter": "KP_Enter", "SysReq": "Sys_Req", "Menu": "Menu",
    "Media Play": "XF86AudioPlay", "Media Stop": "XF86AudioStop", "Media Next": "XF86AudioNext",
    "Media Previous": "XF86AudioPrev", "Volume Mute": "XF86AudioMute", "Microphone Mute": "XF86AudioMicMute",
}
_PORTAL_MODIFIERS = {"Ctrl": "CTRL", "Alt": "ALT", "Shift": "SHIFT", "Meta": "LOGO"}


@dataclass(frozen=True)
class Combination:
    modifiers: frozenset[str]
    """A subset of MODIFIERS."""
    keysym: str
    """The X keysym name of the key ("F9", "space", "a")."""

    @classmethod
    def parse(cls, text: str) -> Combination:
        """From a Qt portable key text; ValueError for an empty or unreadable one."""
        text = (text or "").strip()
        if not text:
            raise ValueError("no key")
        # "Ctrl++" is Ctrl with the plus key: the last '+' of a trailing pair is the key.
        parts = text[:-2].split("+") + ["+"] if text.endswith("++") else text.split("+")
        *mods, key = parts
        unknown = [m for m in mods if m not in MODIFIERS]
        if unknown or not key:
            raise ValueError(f"{text!r} is not a key combination")
        if key in _KEYSYM_NAMES:
            keysym = _KEYSYM_NAMES[key]
        elif len(key) == 1:
            keysym = {"+": "plus", "-": "minus", ",": "comma", ".": "period", "/": "slash",
                      ";": "semicolon", "'": "apostrophe", "[": "bracketleft", "]": "bracketright",
                      "\\": "backslash", "`": "grave", "=": "equal"}.get(key, key.lower())
        else:
            keysym = key
        return cls(frozenset(mods), keysym)

    def portal_trigger(self) -> str:
        """The XDG shortcuts spec's form, e.g. "CTRL+SHIFT+F9"."""
        mods = [_PORTAL_MODIFIERS[m] for m in MODIFIERS if m in self.modifiers]
        return "+".join([*mods, self.keysym])
