"""Words a person begins while she answers, quieter than talking over her: held, not dropped,
and heard with what follows; her own echo held there is never put in front of the user's words.
So is a short first word Whisper hears as nothing alone, across a person's pause after it, but
never her echo's leftover heard as nothing.

The ear is the real one with the real Silero VAD and Whisper tiny.en. The person is a real
reader (Sonnet 1, aeneas-ng's example, fetched from the index at set-up: tests/helpers/
human_clips.py); her line is piper's. The microphone is scripted frame by frame with whether a
line of hers is playing; the barge-in floor is set above every sound here, so nothing said over
her reaches the level that stops her (as on open speakers, where the floor rises with her voice).
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import pytest
from human_clips import michael_recording, sonnet_read

from companion.voice.factory import make_vad
from companion.voice.sound.audio import resample
from companion.voice.sound.frames import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE
from companion.voice.speaking.echo import PlayedLine, words
from companion.voice.turns.ear import Ear
from companion.voice.turns.ear_settings import EarSettings

pytestmark = pytest.mark.timeout(300)

HER_LINE = "It was a lovely day in Australia."
HER_ANSWER = "Sure, I can help with that."
"""Her answer in the benches (bench/human_words.py)."""
NEVER_STOPS_HER = EarSettings(barge_in_floor=1.0)
"""No sound here reaches the level of someone talking over her."""


class Voice:
    """Her side as the ear sees it: whether a line of hers is playing, and what she played."""

    def __init__(self) -> None:
        self.playing = False
        self.recent_played: deque[PlayedLine] = deque(maxlen=8)

    @property
    def busy(self) -> bool:
        return self.playing


class Microphone:
    """`audio` (16 kHz) frame by frame; her line plays from `plays_from_s` to `plays_to_s` of it."""

    realtime = True

    def __init__(self, voice: Voice, audio: np.ndarray, plays_from_s: float, plays_to_s: float,
                 line: str | None = HER_LINE) -> None:
        self.voice, self.audio, self.line = voice, audio, line
        self.plays = (plays_from_s, plays_to_s)
        self.index = 0
        self.began: float | None = None

    async def read(self):
        start = self.index * FRAME_SAMPLES
        if start + FRAME_SAMPLES > self.audio.size:
            return None
        if self.began is None:
            # Her line's times on the clock the ear times utterances on: the first frame ends now.
            self.began = time.monotonic() - FRAME_S
            if self.line is not None:  # None: she says nothing
                self.voice.recent_played.append(PlayedLine(self.line, self.began + self.plays[0],
                                                           self.began + self.plays[1]))
        self.index += 1
        at_s = self.index * FRAME_S
        self.voice.playing = self.plays[0] <= at_s < self.plays[1]
        return self.audio[start:start + FRAME_SAMPLES]

    def close(self) -> None:
        self.index = self.audio.size


async def heard_texts(hearing, audio: np.ndarray, plays_from_s: float, plays_to_s: float,
                      line: str | None = HER_LINE) -> list[str]:
    voice, texts = Voice(), []

    async def heard(utterance) -> None:
        texts.append(utterance.text)

    ear = Ear(source=Microphone(voice, audio, plays_from_s, plays_to_s, line), vad=make_vad(), transcriber=hearing,
              her_voice=voice, heard=heard, barged_in=lambda: None, settings=NEVER_STOPS_HER)
    await ear.run()
    return texts


def piece(audio: np.ndarray, from_s: float, to_s: float) -> np.ndarray:
    return audio[round(from_s * SAMPLE_RATE):round(to_s * SAMPLE_RATE)]


def silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.float32)


@pytest.fixture(scope="module")
def sonnet():
    return sonnet_read().audio


async def test_words_begun_under_her_voice_and_ended_while_she_speaks_are_heard_with_what_follows(hearing, sonnet):
    # "…to thy sweet self | too cruel. | Thou that art now the world's fresh ornament": the reader's
    # "too cruel" (which Whisper hears as nothing alone) is said over her and ends while she still
    # speaks; she stops, and he reads on 0.8 s after it.
    too_cruel = piece(sonnet, 29.3, 30.5)
    thou = piece(sonnet, 31.0, 36.9)
    audio = np.concatenate([silence(1.0), too_cruel, silence(0.5), thou, silence(2.5)])
    texts = await heard_texts(hearing, audio, plays_from_s=0.5, plays_to_s=1.0 + too_cruel.size / SAMPLE_RATE + 0.45)
    said = [word for text in texts for word in words(text)]
    assert "cruel" in said, texts
    assert "ornament" in said, texts


async def test_a_sentence_begun_under_her_voice_is_heard_at_once_when_its_words_are_clearly_not_hers(hearing, sonnet):
    # "From fairest creatures we desire increase," read over her line, ending while she still speaks.
    fairest = piece(sonnet, 2.5, 5.7)
    audio = np.concatenate([silence(1.0), fairest, silence(3.0)])
    texts = await heard_texts(hearing, audio, plays_from_s=0.5, plays_to_s=1.0 + fairest.size / SAMPLE_RATE + 1.5)
    assert any({"fairest", "creatures"} <= set(words(text)) for text in texts), texts


async def test_her_own_echo_held_under_her_voice_is_never_put_in_front_of_the_users_words_nor_answered(
        hearing, sonnet, piper_voice):
    # Open speakers: the canceller lets all but the last 0.6 s of her line through, quiet; the
    # pause after it ends it while she still speaks, and the reader starts as she stops, well
    # within a second of her echo's end (where a held sound is put in front of what follows).
    her = resample(piper_voice.synthesize_sync(HER_LINE), piper_voice.sample_rate, SAMPLE_RATE)
    line_s = her.size / SAMPLE_RATE
    leftover = 0.3 * her[:round((line_s - 0.6) * SAMPLE_RATE)]
    fairest = piece(sonnet, 2.6, 5.7)  # his first word 0.1 s in
    audio = np.concatenate([silence(1.0), leftover, silence(0.6), fairest, silence(2.5)])
    texts = await heard_texts(hearing, audio, plays_from_s=1.0, plays_to_s=1.0 + line_s)
    assert len(texts) == 1, texts  # her echo alone is never a turn
    said = words(texts[0])
    assert {"fairest", "creatures"} <= set(said), texts
    assert not {"lovely", "australia", "austin", "it", "was"} & set(said), texts  # nothing of hers in front


@pytest.fixture(scope="module")
def montreal():
    """Michael's "Montreal forced, um, aligner." (MFA's mfa_um.flac): "Montreal forced" and "aligner"."""
    recording = michael_recording(14)
    return piece(recording, 1.1, 2.95), piece(recording, 6.15, 6.9)


async def test_a_last_word_said_under_her_voice_right_after_the_question_is_heard_with_it_though_nothing_follows(
        hearing, montreal):
    # "Montreal forced | aligner": she begins answering in the pause, his last word comes 0.6 s
    # after, quieter than talking over her, and ends while she still speaks; then he is quiet.
    # Held for what follows, it was lost when nothing did.
    question, last_word = montreal
    question_s = 0.5 + question.size / SAMPLE_RATE
    audio = np.concatenate([silence(0.5), question, silence(0.6), last_word, silence(2.5)])
    texts = await heard_texts(hearing, audio, plays_from_s=question_s + 0.3,
                              plays_to_s=question_s + 0.6 + last_word.size / SAMPLE_RATE + 1.0, line=HER_ANSWER)
    assert "montreal" in words(texts[0]), texts
    assert {"montreal", "aligner"} <= set(words(texts[-1])) or {"montreal", "liner"} <= set(words(texts[-1])), texts


async def test_her_own_echo_under_her_voice_right_after_the_question_is_never_heard_with_it(
        hearing, montreal, piper_voice):
    # The same timing with the canceller's quiet leftover of her line in place of his last word.
    question, _ = montreal
    question_s = 0.5 + question.size / SAMPLE_RATE
    her = resample(piper_voice.synthesize_sync(HER_ANSWER), piper_voice.sample_rate, SAMPLE_RATE)
    line_s = her.size / SAMPLE_RATE
    leftover = 0.3 * her[:round((line_s - 0.6) * SAMPLE_RATE)]
    audio = np.concatenate([silence(0.5), question, silence(0.6), leftover, silence(2.5)])
    texts = await heard_texts(hearing, audio, plays_from_s=question_s + 0.6, plays_to_s=question_s + 0.6 + line_s,
                              line=HER_ANSWER)
    assert len(texts) == 1 and "montreal" in words(texts[0]), texts


async def test_a_first_word_heard_as_nothing_alone_is_heard_with_the_words_after_a_readers_pause(hearing, sonnet):
    # "One. | From fairest creatures we desire increase,": the sonnet's number, which Whisper
    # hears as nothing alone, then the reader's 1.8 s pause before the text, with her quiet.
    texts = await heard_texts(hearing, np.concatenate([piece(sonnet, 0.0, 5.7), silence(2.5)]), 0.0, 0.0, line=None)
    assert len(texts) == 1, texts
    assert {"fairest", "creatures"} <= set(words(texts[0])), texts
    assert {"one", "1"} & set(words(texts[0])), texts


async def test_her_echo_heard_as_nothing_just_after_her_line_is_never_put_in_front_of_words_after_a_pause(
        hearing, sonnet, piper_voice):
    # Her "Okay." comes back through the room just after it stopped playing: Whisper hears nothing
    # in it alone as the ear cuts it, but "Okay." in front of the reader, who begins 1.9 s later,
    # a pause after which a person's own first word is still heard with what follows.
    her = resample(piper_voice.synthesize_sync("Okay."), piper_voice.sample_rate, SAMPLE_RATE)
    line_s = her.size / SAMPLE_RATE
    fairest = piece(sonnet, 2.5, 5.7)  # his first word 0.2 s in
    audio = np.concatenate([silence(1.0 + line_s + 0.1), 0.7 * her, silence(1.7), fairest, silence(2.5)])
    texts = await heard_texts(hearing, audio, plays_from_s=1.0, plays_to_s=1.0 + line_s, line="Okay.")
    assert len(texts) == 1, texts  # her echo alone is never a turn
    said = words(texts[0])
    assert {"fairest", "creatures"} <= set(said), texts
    assert "okay" not in said, texts  # nothing of hers in front
