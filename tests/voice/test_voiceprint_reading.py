"""Voices enrolled by name from sentences read aloud (issue 56 item 1): the reading keeps a print
that knows its reader, several people are known each by name, a call grows its caller's own
print, and a reading cut short keeps nothing.

Real audio through the real pipeline pieces: piper's Joe and espeak-ng voices read the
sentences, as frames from a WAV source, heard by Silero VAD and embedded by the speaker encoder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from audio_env import speech_wav, spoken

from companion.voice.sound.audio import WavSource, read_wav, resample, write_wav
from companion.voice.voiceprint import SpeakerEncoder, VoiceprintStore, Voices
from companion.voice.voiceprint.enrolment import SURE_UTTERANCES, Enrolment
from companion.voice.voiceprint.reading import SENTENCES, Reading, ReadingProgress


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    return SpeakerEncoder()


def espeak(text: str, voice: str, folder: Path) -> np.ndarray:
    path = folder / "e.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, timeout=30)
    audio, rate = read_wav(path)
    return resample(audio, rate, 16_000)


def espeak_reading(folder: Path, voice: str, sentences: tuple[str, ...]) -> Path:
    pause = np.zeros(int(1.2 * 16_000), np.float32)
    audio = np.concatenate([pause, *(np.concatenate([espeak(s, voice, folder), pause]) for s in sentences)])
    path = folder / f"reading-{voice}.wav"
    write_wav(path, audio, 16_000)
    return path


async def test_sentences_read_aloud_keep_a_print_by_name_that_knows_the_reader_and_not_another_voice(
        tmp_path, piper_voice, encoder):
    wav = speech_wav(tmp_path / "joe.wav", piper_voice, *[part for s in SENTENCES[:6] for part in (s, 1.2)])
    store = VoiceprintStore(tmp_path / "data")
    seen: list[ReadingProgress] = []
    reading = Reading(store, encoder, "Joe", on_progress=seen.append)

    kept = await reading.run(WavSource(wav, realtime=False))

    voiceprint = VoiceprintStore(tmp_path / "data").get("Joe")
    assert kept and voiceprint is not None and voiceprint.source == "reading"
    assert len(voiceprint.segments) >= SURE_UTTERANCES
    assert seen[0].sentence == SENTENCES[0] and seen[-1].finished and "Joe" in seen[-1].note
    assert [p.done for p in seen] == sorted(p.done for p in seen)  # progress only goes forward
    assert max(p.level for p in seen) > 0.05  # the meter followed the voice
    voices = Voices(encoder, store)
    assert voices.enrolled
    joe_again = spoken(piper_voice, "Mira, what is on my calendar today?")
    stranger = espeak("Mira, what is on my calendar today?", "en-us+f3", tmp_path)
    assert voices.match(encoder.embed_sync(joe_again)).name == "Joe"
    assert voices.match(encoder.embed_sync(stranger)).name is None


async def test_two_people_are_known_each_by_name_and_a_call_grows_only_its_callers_print(tmp_path, piper_voice, encoder):
    store = VoiceprintStore(tmp_path)
    ann = "en-us+f3"
    assert await Reading(store, encoder, "Ann").run(WavSource(espeak_reading(tmp_path, ann, SENTENCES[:6]), realtime=False))
    joe = [encoder.embed_sync(spoken(piper_voice, s)) for s in SENTENCES[:5]]
    store.replace("Joe", [(e, 3.0) for e in joe])
    voices = Voices(encoder, store)
    ann_call = encoder.embed_sync(espeak("Mira, turn the lights off in the kitchen.", ann, tmp_path))
    joe_call = encoder.embed_sync(spoken(piper_voice, "Mira, turn the lights off in the kitchen."))
    ann_before = len(store.get("Ann").segments)

    assert voices.match(ann_call).name == "Ann" and voices.match(joe_call).name == "Joe"
    assert Enrolment(store, voices.known_threshold).learn(ann_call, 2.5)
    assert len(store.get("Ann").segments) == ann_before + 1 and len(store.get("Joe").segments) == 5
    stranger = encoder.embed_sync(espeak("Mira, turn the lights off in the kitchen.", "en-gb-x-rp", tmp_path))
    assert not Enrolment(store, voices.known_threshold).learn(stranger, 2.5)
    assert store.names() == ["Ann", "Joe"]  # a voice matching nobody starts no print of its own


async def test_a_reading_that_ends_too_soon_keeps_nothing(tmp_path, piper_voice, encoder):
    wav = speech_wav(tmp_path / "short.wav", piper_voice, SENTENCES[0], 1.2, SENTENCES[1], 1.2)
    store = VoiceprintStore(tmp_path)
    seen: list[ReadingProgress] = []

    kept = await Reading(store, encoder, "Joe", on_progress=seen.append).run(WavSource(wav, realtime=False))

    assert not kept and store.names() == []
    assert seen[-1].done == 2 and seen[-1].finished and "nothing was kept" in seen[-1].note


def test_the_voice_sessions_store_sees_a_print_the_settings_window_kept_and_does_not_undo_it(tmp_path):
    session, window = VoiceprintStore(tmp_path), VoiceprintStore(tmp_path)
    session.add("you", np.eye(256, dtype=np.float32)[0], 2.0)
    window.replace("Ann", [(np.eye(256, dtype=np.float32)[1], 3.0)] * 5)

    assert "Ann" in session.current()
    session.add("you", np.eye(256, dtype=np.float32)[0], 2.0)  # learning from a call afterwards
    assert VoiceprintStore(tmp_path).names() == ["Ann", "you"]
