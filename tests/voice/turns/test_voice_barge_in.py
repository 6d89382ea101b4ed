"""When the user talks over her: sustained speech, loud enough as a whole (frames measured
behind the echo canceller in the 0 dB open-speaker bench)."""

from __future__ import annotations

import asyncio
from collections import deque

import numpy as np

from companion.voice.sound.frames import FRAME_SAMPLES
from companion.voice.turns.barge_in import talks_over_her
from companion.voice.turns.ear import Ear

FLOOR = 0.0158
"""The floor while she plays at her usual level behind an echo canceller."""
NEEDED = 6
"""200 ms of 32 ms frames."""


def test_a_word_with_one_quiet_frame_in_its_middle_is_the_user_talking_over_her():
    please = [(True, 0.135), (True, 0.063), (True, 0.092), (True, 0.018), (True, 0.008), (True, 0.226)]
    assert talks_over_her(please, NEEDED, FLOOR)


def test_her_own_echo_left_by_the_canceller_never_stops_her_even_where_it_sounds_like_speech():
    residue = [(True, 0.002), (True, 0.004), (True, 0.001), (True, 0.003), (True, 0.002), (True, 0.005)]
    assert not talks_over_her(residue, NEEDED, FLOOR)


def test_one_loud_knock_among_quiet_frames_does_not_stop_her():
    knock = [(True, 0.002), (True, 0.004), (True, 0.3), (True, 0.003), (True, 0.002), (True, 0.005)]
    assert not talks_over_her(knock, NEEDED, FLOOR)


def test_a_loud_sound_that_does_not_sound_like_speech_does_not_stop_her():
    clatter = [(False, 0.2)] * 12 + [(True, 0.2)] * (NEEDED - 1)
    assert not talks_over_her(clatter, NEEDED, FLOOR)


class Voice:
    """Her side as the ear sees it: whether a line of hers is playing."""

    def __init__(self) -> None:
        self.playing = False
        self.recent_played = deque()

    @property
    def busy(self) -> bool:
        return self.playing


class ScriptedMicrophone:
    """Frames of a given level, with her playing or not at each (the VAD below hears the level)."""

    realtime = True

    def __init__(self, voice: Voice, frames: list[tuple[bool, float]]) -> None:
        self.voice, self.frames = voice, list(frames)

    async def read(self):
        if not self.frames:
            return None
        self.voice.playing, level = self.frames.pop(0)
        return np.full(FRAME_SAMPLES, level, dtype=np.float32)

    def close(self) -> None:
        self.frames.clear()


class LoudIsSpeech:
    def probability(self, frame) -> float:
        return 0.9 if abs(frame[0]) > 0.05 else 0.0

    def reset(self) -> None:
        pass


class Silence:
    async def transcribe(self, audio) -> str:
        return ""


async def test_what_the_user_said_before_her_line_began_does_not_count_as_talking_over_it():
    async def barge_ins(frames: list[tuple[bool, float]]) -> int:
        voice, barged = Voice(), []
        ear = Ear(source=ScriptedMicrophone(voice, frames), vad=LoudIsSpeech(), transcriber=Silence(),
                  her_voice=voice, heard=lambda _u: asyncio.sleep(0), barged_in=lambda: barged.append(True))
        await ear.run()
        return len(barged)

    nearly = [(True, 0.2)] * (NEEDED - 1)  # over her last line: one frame short of stopping her
    quiet = [(False, 0.0)] * 2
    one_more = [(True, 0.2)]  # the first frame of her next line
    assert await barge_ins([*nearly, *one_more]) == 1  # over one line, that is enough
    assert await barge_ins([*nearly, *quiet, *one_more]) == 0


class QueuedVoice(Voice):
    """Her side with a line queued before it plays (busy, not yet playing)."""

    def __init__(self) -> None:
        super().__init__()
        self.queued = False

    @property
    def busy(self) -> bool:
        return self.playing or self.queued


class QueueingMicrophone(ScriptedMicrophone):
    """Frames as (her line queued, playing, level)."""

    def __init__(self, voice: QueuedVoice, frames: list[tuple[bool, bool, float]]) -> None:
        self.voice, self.frames = voice, list(frames)

    async def read(self):
        if not self.frames:
            return None
        self.voice.queued, self.voice.playing, level = self.frames.pop(0)
        return np.full(FRAME_SAMPLES, level, dtype=np.float32)


class HearsAlgebra:
    async def transcribe(self, audio) -> str:
        return "algebra."


async def test_a_sound_over_her_that_ends_while_she_speaks_is_not_a_turn_unless_it_stopped_her():
    async def heard(frames: list[tuple[bool, bool, float]]) -> list[str]:
        voice, texts = QueuedVoice(), []

        async def hear(utterance) -> None:
            texts.append(utterance.text)

        ear = Ear(source=QueueingMicrophone(voice, frames), vad=LoudIsSpeech(), transcriber=HearsAlgebra(),
                  her_voice=voice, heard=hear, barged_in=lambda: None)
        await ear.run()
        return texts

    leftover = [(True, False, 0.2)] * (NEEDED - 1)  # her first words leaking back, line queued
    # She goes on speaking through the pause that ends it: the canceller's leftover, not a question.
    assert await heard([*leftover, *[(True, True, 0.0)] * 60]) == []
    # The same sound with her quiet again by its end (she never started, or stopped) is heard.
    assert await heard([*leftover, *[(False, False, 0.0)] * 60]) == ["algebra."]
    # One that begins while her line already plays, one frame short of stopping her: her echo too.
    over_her = [(True, True, 0.2)] * (NEEDED - 1)
    assert await heard([(True, True, 0.0)] * 3 + over_her + [(True, True, 0.0)] * 60) == []
    # Loud enough to stop her, it is barge-in, and the words are kept.
    stops_her = [(True, True, 0.2)] * NEEDED
    assert await heard([(True, True, 0.0)] * 3 + stops_her + [(True, True, 0.0)] * 60) == ["algebra."]
    # Begun while she speaks and ended once she has finished: heard (her echo is judged by its words).
    assert await heard([(True, True, 0.0)] * 3 + over_her + [(False, False, 0.0)] * 60) == ["algebra."]
    # Begun a moment before her line and still sounding once it plays: over her too.
    assert await heard([(False, False, 0.2)] * 3 + over_her + [(True, True, 0.0)] * 60) == []
    # Said before she began, with her line starting in its trailing silence: a turn.
    assert await heard([(False, False, 0.2)] * NEEDED + [(True, True, 0.0)] * 60) == ["algebra."]


async def test_a_stop_said_while_her_next_sentence_is_still_being_made_stops_her():
    """On a busy machine her next sentence may still be synthesizing when the user speaks:
    she is mid-reply (busy), though nothing plays for a moment."""
    voice, barged = QueuedVoice(), []
    between_sentences = [(True, False, 0.2)] * NEEDED  # a line queued, none playing, the user loud
    ear = Ear(source=QueueingMicrophone(voice, between_sentences), vad=LoudIsSpeech(), transcriber=HearsAlgebra(),
              her_voice=voice, heard=lambda _u: asyncio.sleep(0), barged_in=lambda: barged.append(True))
    await ear.run()
    assert barged == [True]


async def test_the_utterance_that_stopped_her_says_so_and_one_said_while_she_was_quiet_does_not():
    async def utterances(frames: list[tuple[bool, bool, float]]):
        voice, heard = QueuedVoice(), []

        async def hear(utterance) -> None:
            heard.append(utterance)

        ear = Ear(source=QueueingMicrophone(voice, frames), vad=LoudIsSpeech(), transcriber=HearsAlgebra(),
                  her_voice=voice, heard=hear, barged_in=lambda: None)
        await ear.run()
        return heard

    # Talked over her until she stopped, then went on a little after: stopped her.
    over_her = [(True, True, 0.2)] * NEEDED + [(False, False, 0.2)] * 5 + [(False, False, 0.0)] * 60
    assert [u.stopped_her for u in await utterances(over_her)] == [True]
    assert [u.stopped_her for u in await utterances([(False, False, 0.2)] * 12 + [(False, False, 0.0)] * 60)] == [False]
