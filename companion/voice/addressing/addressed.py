"""Is she being spoken to? The listening mode, her name, the wake word and the follow-up window (pure: no I/O).

Times are the ear's stream seconds (the microphone's own clock, or a file's), so a file read
faster than real time is judged exactly as the same audio spoken live.

The rule, as the README states it:
- *Always answer*: every utterance is hers. *Muted*: none (push-to-talk still is).
- *When called*: an utterance is hers when it starts with her name or an alias ("Mira, what's
  the time?", also after "hey" / "hi" / "okay"), when the wake word was heard during it or up
  to CALL_S before it began, or when push-to-talk was held during it. While her name can call
  her (every utterance is transcribed then), the wake word's phrase in so many words ("Hey
  Jarvis, what's the time?") calls her too, whether the detector heard it or not.
- A bare call ("Mira?", "Okay Nabu" and nothing else) starts no turn: she becomes attentive
  and the next utterance starting within CALL_S is hers.
- The follow-up window: from the moment she starts answering until `follow_up_s` after her
  last word, the next utterance needs no call unless it is clearly meant for someone else:
  it does not use her name, is not a question, does not start like a reply or a request to
  her (FOLLOW_UP_OPENERS), her last line was not a question, and it did not stop her by
  talking over her (whoever stops her mid-answer is talking to her; and the first words said
  over her are the ones her echo canceller damages most, "Please stop" heard as "We start").
  One that calls someone else by name ("Hey John, are you coming?") is someone else's, even
  as a question or after her question.
  Such an utterance starts no turn and closes the window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from companion.voice.addressing.heard import GREETINGS, call_end, same_sound, wake_forms, words
from companion.voice.addressing.wake import BUNDLED_WAKE_WORDS

__all__ = [
    "CALL_S", "CHIME_RATE", "Attention", "Addressing", "AddressSettings", "Listening", "Verdict", "address_settings",
    "chime", "name_end", "sounds_like", "starts_with_name", "without_call",
]

CALL_S = 5.0
"""After a bare call (the wake word, her name alone, push-to-talk), an utterance starting
within this many seconds is hers: "Okay Nabu … what's the time?" with a breath between."""

BARE_CALL_WORDS = 3
"""A called utterance of at most this many words, the call included, is just the call."""

FOLLOW_UP_OPENERS = frozenset({
    "yes", "yeah", "yep", "yup", "no", "nope", "nah", "sure", "okay", "ok", "alright", "right",
    "thanks", "thank", "please", "and", "also", "but", "so", "then", "what", "what's", "whats",
    "why", "how", "how's", "when", "where", "who", "which", "whose", "can", "could", "would",
    "will", "should", "shall", "do", "does", "did", "is", "are", "was", "were", "have", "has",
    "tell", "say", "show", "read", "open", "close", "find", "search", "look", "check", "set",
    "start", "stop", "cancel", "remind", "add", "remove", "delete", "play", "pause", "make",
    "give", "send", "call", "write", "explain", "repeat", "again", "more", "go", "let", "let's",
    "lets", "try", "use", "keep", "turn",
})
"""First words that read as a reply or a request to her inside the follow-up window."""

REQUEST_OPENERS = FOLLOW_UP_OPENERS - frozenset({
    "and", "also", "but", "so", "then", "is", "are", "was", "were", "have", "has", "do", "does", "did", "right",
    "okay", "ok", "alright", "yes", "yeah", "yep", "yup", "no", "nope", "nah", "sure", "thanks", "thank", "more",
    "again",
})
"""Words that, right after her name with no comma between, still make it a call: Whisper wrote
"Mirror what time is it?" for "Mira, what time is it?" in one voice in three. "Mira and I",
"Mira is" stay talk about her."""


class Listening(StrEnum):
    ALWAYS = "always"
    CALLED = "called"
    MUTED = "muted"
    ONLY_ME = "only_me"
    """Every utterance in a voice she knows is hers, no call needed; every other voice is
    ignored (voice.addressing.calling asks the voice). Judged here as When called, which is
    what it is until a voice is known."""

    @property
    def calls(self) -> bool:
        """Her name and the wake word call her in this mode."""
        return self in (Listening.CALLED, Listening.ONLY_ME)


class Attention(StrEnum):
    """What her face shows about listening."""

    AWAKE = "awake"
    """Always answer: every voice is hers to answer."""
    DOZING = "dozing"
    """When called, not called: waiting for her name or the wake word."""
    ATTENTIVE = "attentive"
    """Just called, answering, or in the follow-up window."""
    OFF = "off"
    """Muted."""


@dataclass(frozen=True)
class AddressSettings:
    mode: Listening = Listening.ALWAYS
    names: tuple[str, ...] = ()
    """Her name and aliases (the personality's front matter), any case."""
    name_wakes: bool = True
    """Her name as the first word calls her (when off, only the wake word and push-to-talk do)."""
    follow_up_s: float = 8.0
    heard: tuple[str, ...] = ()
    """Her names as her hearing writes them (voice.addressing.learning), besides the names."""
    wake_phrase: str = ""
    """The wake word's phrase ("Hey Jarvis"): its words first in a transcript call her like her
    name while her name can, exactly as written (no sounds-like: the detector did not vouch for
    them, and "Alex, stop that" is no "Alexa"). Empty: only the detector hears the wake word."""
    wake_forms: tuple[str, ...] = ()
    """How the wake word's phrase is written (heard.WAKE_SPELLINGS): a wake word heard during an
    utterance whose transcript starts with none of them was a near miss. Empty: not checked."""

    def __post_init__(self) -> None:
        if self.follow_up_s < 0:
            raise ValueError("the follow-up window can't be negative")


@dataclass(frozen=True)
class Verdict:
    """Whether an utterance starts a turn, and why (for the log and the bench)."""

    turn: bool
    reason: str
    """always | name | called (the wake word or push-to-talk) | wake-phrase (the wake word's words,
    the detector silent) | follow-up | bare-call | not-called | near-miss | someone-else | muted"""
    call_end: int = 0
    """Where the wake word's call ends in the transcript (0: none to take off)."""

    def question(self, text: str) -> str:
        """What to ask her: `text` without the wake word's call ("Okay Nabu, what time is it?"
        asks "What time is it?")."""
        if not self.call_end:
            return text
        rest = text[self.call_end:].lstrip(" ,.!?;:-")
        return rest[:1].upper() + rest[1:] if rest else text

    @property
    def called(self) -> bool:
        """She was called by it (a turn or a bare call): the face turns attentive."""
        return self.turn or self.reason == "bare-call"


CHIME_RATE = 22_050


def chime() -> np.ndarray:
    """Her "I'm listening" cue: two soft rising notes, 0.25 s in all."""
    notes = []
    for pitch in (660.0, 880.0):
        t = np.arange(int(0.12 * CHIME_RATE)) / CHIME_RATE
        notes.append(0.2 * np.sin(2 * np.pi * pitch * t) * np.hanning(t.size))
    return np.concatenate(notes).astype(np.float32)


def address_settings(voice, names: tuple[str, ...] = (), heard: tuple[str, ...] = ()) -> AddressSettings:
    """The policy's settings from the user's VoiceSettings (and her names, and how they are
    heard, when known)."""
    return AddressSettings(mode=Listening(voice.mode), names=names, name_wakes=voice.name_wakes,
                           follow_up_s=voice.follow_up_s, heard=heard,
                           wake_phrase=BUNDLED_WAKE_WORDS.get(voice.wake_word, ""), wake_forms=wake_forms(voice.wake_word))


def _words(text: str) -> list[str]:
    return words(text)


def sounds_like(word: str, name: str) -> bool:
    """`word` as Whisper may write `name`: Whisper tiny.en writes "Mira" as "Mirror" in every
    voice measured (piper and three espeak-ng voices), so an exact match would never hear her
    name. Same Metaphone key and close spelling (heard.same_sound)."""
    return same_sound(word, name)


_WORD = re.compile(r"[\w']+")


def name_end(text: str, names: tuple[str, ...], *, exact: bool = False) -> int | None:
    """Where her name ends when the transcript's first word(s), after an optional greeting,
    are one of `names` or (unless `exact`) sound like it (a name of several words matches word
    for word; a greeting opening a name, "Hey Jarvis", is one like any other), said
    *to* her: a greeting before it ("Hey Mira …"), or a comma, stop, "?" or "!" right after it
    ("Mira, …", as Whisper writes a name called out). None otherwise: "Mira and I went to the
    cinema" is about her, not to her."""
    spans = [(m.group().lower().strip("'"), m.end()) for m in _WORD.finditer(text)]
    greeted = False
    while spans and spans[0][0] in GREETINGS:
        spans, greeted = spans[1:], True
    alike = (lambda word, part: word == part) if exact else sounds_like
    for name in names:
        parts = _words(name)
        while parts and parts[0] in GREETINGS:
            parts = parts[1:]
        heard = spans[: len(parts)]
        if not parts or len(heard) < len(parts) or not all(alike(w, p) for (w, _), p in zip(heard, parts, strict=True)):
            continue
        after = text[heard[-1][1]:].lstrip()
        following = spans[len(parts)][0] if len(spans) > len(parts) else ""
        if greeted or not after or after[0] in ",.!?;:" or following in REQUEST_OPENERS:
            return heard[-1][1]
    return None


def starts_with_name(text: str, names: tuple[str, ...]) -> bool:
    """The transcript starts with her name, said to her (name_end)."""
    return name_end(text, names) is not None


def without_call(text: str, settings: AddressSettings) -> str:
    """`text` with a leading call taken off: her name (after a greeting) or the wake word
    ("Mira, yes, run it" -> "yes, run it"), for reading an answer to a card."""
    end = name_end(text, (*settings.names, *settings.heard))
    if end is None and settings.wake_forms:
        end = call_end(text, settings.wake_forms)
    return text[end:].lstrip(" ,.!?;:-") if end else text


_SOMEONE = re.compile(r"^\W*(?i:hey|hi|hello|okay|ok|oh)\W+([A-Z][a-z']+)\s*[,.!?]")


def calls_someone_else(text: str, names: tuple[str, ...]) -> bool:
    """It calls another person by name ("Hey John, are you coming?"): in the follow-up window
    that is someone else's conversation, however much it sounds like a request. (No speaker
    signal runs here to tell the caller's voice from another: bench/RESULTS.md.)"""
    match = _SOMEONE.match(text)
    if match is None:
        return False
    word = match.group(1).lower()
    return word not in FOLLOW_UP_OPENERS and not any(sounds_like(word, n.lower()) for n in names)


def _reads_as_for_her(text: str) -> bool:
    words = _words(text)
    return text.rstrip().endswith("?") or (bool(words) and words[0] in FOLLOW_UP_OPENERS)


class Addressing:
    """The state of being called. The loop tells it what happened (`call`, `answering`,
    `answered`) and asks `judge` for each utterance, in stream seconds."""

    def __init__(self, settings: AddressSettings | None = None) -> None:
        self.settings = settings or AddressSettings()
        self._called_at: float | None = None
        """When the latest call not yet used by a turn was heard (wake word, bare name, push-to-talk)."""
        self._unconfirmed_wake = False
        """That call is a wake word whose utterance has not yet shown the call in its words."""
        self._key: tuple[float, float | None] | None = None
        """When the push-to-talk key went down and came up (None: still held), until a turn uses it."""
        self._answering = False
        self._window_until: float | None = None
        self._last_line_question = False

    def apply(self, settings: AddressSettings) -> None:
        self.settings = settings

    # --- what happened --------------------------------------------------------------------
    def call(self, at: float, *, wake: bool = False) -> None:
        """The wake word was heard (`wake`), or push-to-talk pressed or released, at stream time `at`."""
        self._called_at = at
        self._unconfirmed_wake = wake

    def push_to_talk(self, at: float, down: bool) -> None:
        """The push-to-talk key went down (`down`) or up at stream time `at`. Either is a call;
        and whatever was said while it was held is hers, however long after the key came up its
        end is judged (an ear behind a busy processor judged a question 2 s after the release)."""
        self.call(at)
        if down:
            self._key = (at, None)
        elif self._key is not None:
            self._key = (self._key[0], at)

    def answering(self) -> None:
        """She took a turn: the window stays open while she answers."""
        self._answering = True

    def answered(self, at: float, last_line: str = "") -> None:
        """She finished answering at `at`; `last_line` is what she said last."""
        self._answering = False
        self._window_until = at + self.settings.follow_up_s
        self._last_line_question = last_line.rstrip().endswith("?")

    # --- what it means ----------------------------------------------------------------------
    def attention(self, now: float) -> Attention:
        mode = self.settings.mode
        if mode == Listening.MUTED:
            return Attention.OFF
        if mode == Listening.ALWAYS:
            return Attention.AWAKE
        if self._answering or self._in_window(now) or self._call_open(now):
            return Attention.ATTENTIVE
        return Attention.DOZING

    def judge(self, text: str, start: float, end: float, *, peek: bool = False, stopped_her: bool = False) -> Verdict:
        """Whether the utterance `text`, spoken from `start` to `end`, starts a turn (`stopped_her`:
        it talked over her loud enough to stop her). Unless `peek`, the verdict is taken: a call
        is used up, a window closed by someone else stays closed."""
        s = self.settings
        if s.mode == Listening.ALWAYS:
            return Verdict(True, "always")
        by_call = self._by_call(start, end)
        named = s.name_wakes and starts_with_name(text, (*s.names, *s.heard))
        said_wake = None  # where the wake word's phrase ends, said in so many words
        if s.name_wakes and s.wake_phrase and not named:
            said_wake = name_end(text, (s.wake_phrase,), exact=True)
        call = 0
        if by_call and self._unconfirmed_wake and self._called_at is not None and self._called_at >= start:
            # The wake word was heard during this utterance: its words must start with the call.
            # (Heard before it began, it was an utterance of its own that said nothing else.)
            found = call_end(text, s.wake_forms) if s.wake_forms else 0
            if found is None:
                if not peek:
                    self._called_at = None
                by_call = False
                if not named and said_wake is None:
                    return Verdict(False, "near-miss")
            else:
                call = found
                if not peek:
                    self._unconfirmed_wake = False
        if s.mode == Listening.MUTED and not by_call:
            return Verdict(False, "muted")
        if by_call or named or said_wake is not None:
            bare = len(_words(text)) <= BARE_CALL_WORDS and not text.rstrip().endswith("?")
            if not peek and not bare:
                # A bare call keeps the call open for what comes next; a turn uses it up (a key
                # still held goes on calling her for what is said after it).
                self._called_at = None
                self._key = (end, None) if self._key is not None and self._key[1] is None else None
            elif not peek:
                self._called_at = end
            if bare:
                return Verdict(False, "bare-call")
            if named:
                return Verdict(True, "name")
            if by_call:  # the phrase said again after a call (push-to-talk, a bare call) is no question either
                return Verdict(True, "called", call or said_wake or 0)
            return Verdict(True, "wake-phrase", said_wake)
        if self._answering or (self._window_until is not None and start <= self._window_until):
            elsewhere = calls_someone_else(text, (*s.names, *s.heard))
            if stopped_her or (not elsewhere and (self._last_line_question or _reads_as_for_her(text))):
                return Verdict(True, "follow-up")
            if not peek:
                self._window_until = None
            return Verdict(False, "someone-else")
        return Verdict(False, "not-called")

    def needs_words(self, start: float, end: float) -> bool:
        """Must the utterance be transcribed to be judged? (Always in Only me: the voice decides
        after the words.) Not in When called with her name off,
        unless a call or the follow-up window makes it hers: then only the wake word counts and
        Whisper never runs on the room's voices."""
        s = self.settings
        if s.mode != Listening.CALLED or s.name_wakes:
            return True
        return self._by_call(start, end) or self._answering or (
            self._window_until is not None and start <= self._window_until)

    def _by_call(self, start: float, end: float) -> bool:
        near_call = self._called_at is not None and start - CALL_S <= self._called_at <= end + 0.5
        return near_call or self._under_key(start, end)

    def _under_key(self, start: float, end: float) -> bool:
        """Some of the utterance from `start` to `end` was said with the push-to-talk key held."""
        if self._key is None:
            return False
        down, up = self._key
        return down <= end + 0.5 and (up is None or start <= up)

    def _in_window(self, now: float) -> bool:
        return self._window_until is not None and now <= self._window_until

    def _call_open(self, now: float) -> bool:
        held = self._key is not None and self._key[1] is None
        return held or (self._called_at is not None and now <= self._called_at + CALL_S)
