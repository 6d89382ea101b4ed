"""Hearing with the real models: Silero VAD, the endpointer and Whisper tiny.en on real speech."""

from __future__ import annotations

import re

import numpy as np
from audio_env import espeak_wav, speech
from human_clips import sonnet_read
from places import FIXTURES

from companion.voice.factory import make_vad
from companion.voice.hearing.vad import SileroVad, SkipQuiet, SpeechDetector
from companion.voice.sound.audio import read_wav, resample
from companion.voice.sound.frames import FRAME_SAMPLES
from companion.voice.turns.endpoint import Endpointer, UtteranceEnded


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", text.lower()).strip()


def utterances(audio: np.ndarray, vad: SpeechDetector | None = None) -> list[UtteranceEnded]:
    """The utterances her ear's VAD (make_vad: quiet frames skip the model) and endpointer find."""
    vad, endpointer = vad or make_vad(), Endpointer()
    ended = []
    for start in range(0, audio.size - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        frame = audio[start:start + FRAME_SAMPLES]
        ended += [e for e in endpointer.push(frame, vad.probability(frame)) if isinstance(e, UtteranceEnded)]
    return ended


def test_quiet_frames_spare_the_vad_model_and_the_same_utterances_are_found(piper_voice):
    rng = np.random.default_rng(5)
    audio = speech(piper_voice, "Turn on the lights.", 3.0, "I would like to know", 0.3,
                   "the weather in Paris today.", lead_s=3.0, tail_s=2.0)
    audio += (0.0003 * rng.standard_normal(audio.size)).astype(np.float32)  # a quiet room, -70 dBFS
    skipping = SkipQuiet(SileroVad())
    always = utterances(audio, SileroVad())
    spared = utterances(audio, skipping)
    frames = audio.size // FRAME_SAMPLES
    assert skipping.skipped > frames / 2, (skipping.skipped, frames)
    assert len(spared) == len(always) == 2
    for a, b in zip(always, spared, strict=True):  # the very same utterances
        assert a.speech_end_s == b.speech_end_s
        np.testing.assert_array_equal(a.audio, b.audio)


def test_speech_in_another_voice_is_heard_correctly(tmp_path, hearing):
    audio, rate = read_wav(espeak_wav(tmp_path / "q.wav", "Please remind me to call my sister tomorrow."))
    text = hearing.transcribe_sync(resample(audio, rate, 16_000))
    assert words(text) == "please remind me to call my sister tomorrow"


def test_her_own_voice_round_trips_through_whisper_word_for_word(hearing, piper_voice):
    sentence = "The quick brown fox jumps over the lazy dog."
    assert words(hearing.transcribe_sync(speech(piper_voice, sentence))) == words(sentence)


def test_silence_and_faint_noise_are_not_heard_as_words(hearing):
    rng = np.random.default_rng(7)
    assert hearing.transcribe_sync(np.zeros(32_000, dtype=np.float32)) == ""
    assert hearing.transcribe_sync((rng.standard_normal(32_000) * 0.003).astype(np.float32)) == ""


def test_a_pause_in_the_middle_of_a_sentence_keeps_one_utterance(hearing, piper_voice):
    audio = speech(piper_voice, "I would like to know", 0.3, "the weather in Paris today.", tail_s=1.0)
    [only] = utterances(audio)
    assert words(hearing.transcribe_sync(only.audio)) == "i would like to know the weather in paris today"


def test_two_utterances_separated_by_silence_stay_two(hearing, piper_voice):
    audio = speech(piper_voice, "Turn on the lights.", 1.5, "Play some music.", tail_s=1.0)
    first, second = utterances(audio)
    assert words(hearing.transcribe_sync(first.audio)) == "turn on the lights"
    assert words(hearing.transcribe_sync(second.audio)) == "play some music"


def test_an_utterance_starts_well_before_the_first_sound(piper_voice):
    # The pre-roll keeps audio from before the VAD fires, so a soft first syllable is not clipped.
    audio = speech(piper_voice, "Seven sunny Saturdays.", lead_s=1.0, tail_s=1.0)
    [only] = utterances(audio)
    first_sound = int(np.argmax(np.abs(only.audio) > 0.01))
    assert first_sound >= 0.25 * 16_000


def test_the_short_window_hears_the_same_words_as_whispers_full_window(hearing, piper_voice):
    audio = speech(piper_voice, "Could you turn the music down a little?", tail_s=0.3)
    with hearing._lock:
        short, full = hearing._transcribe_short(audio), hearing._transcribe_full(audio)
    assert short is not None and words(short) == words(full) == "could you turn the music down a little"


def test_a_long_utterance_takes_whispers_standard_path(hearing):
    with hearing._lock:
        assert hearing._transcribe_short(np.zeros(29 * 16_000, dtype=np.float32)) is None


def test_a_person_reading_through_whispers_whole_window_is_heard_to_its_end(hearing):
    # 30 s of Sonnet 1 read aloud (from 15 s in), a window full of speech: decoded without
    # timestamps Whisper stopped halfway (31 of 58 words); a woman reading on gave 7 of 67.
    window = sonnet_read().audio[15 * 16_000:45 * 16_000]
    heard = words(hearing.transcribe_sync(window)).split()
    assert len(heard) >= 50, heard


REPEATS = FIXTURES / "audio" / "good_morning_whisper_repeats.wav"
""""Good morning," as her microphone heard it in the turn-taking bench (espeak-ng through the
private PulseAudio): on the AVX2 machines tiny.en decoded its 10 s window as "Good morning. Good morning."."""


def test_a_short_window_that_repeats_itself_is_decoded_again_instead_of_taking_the_30_s_path(
        hearing, monkeypatch):
    # Whether tiny.en's int8 decoder loops on this recording depends on the CPU's arithmetic
    # (it did on the AVX2 machines, not on AVX-512 ones), so the first decoding is made to
    # repeat the way it did there; the second one, with the penalty, is the real model's.
    audio, _rate = read_wav(REPEATS)
    real_decode = hearing._decode
    penalties: list[float] = []

    def decode(encoded, penalty: float, told: str = "") -> str:
        penalties.append(penalty)
        return "Good morning. Good morning." if penalty == 1.0 else real_decode(encoded, penalty, told)

    monkeypatch.setattr(hearing, "_decode", decode)
    monkeypatch.setattr(hearing, "_transcribe_full", lambda _audio: "the 30 s path")
    text = hearing.transcribe_sync(audio)
    assert penalties == [1.0, 1.2]
    assert words(text) == "good morning"
