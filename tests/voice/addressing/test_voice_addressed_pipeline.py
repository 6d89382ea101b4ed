"""When called, through the real pipeline from a file: real Whisper, the real wake-word model,
piper and espeak-ng voices, the real runtime and the scripted brain over HTTP."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from brain_harness import PLAIN_PERSONALITY, make_config
from calling_support import CALLED, conversation, espeak, said

from companion.config import VoiceSettings
from companion.events import AttentionChanged, EventBus
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink, WavSource, resample

BACKGROUND = [
    ("en-us", "Did you see the game last night?"),
    ("en+m3", "No, I was at my sister's place. Who won?"),
    ("en-us+f3", "The home team, in the last minute. I told Mira about it this morning."),
    ("en+f2", "What time is the meeting tomorrow?"),
    ("en-us+m5", "Nine o'clock, and please bring the slides."),
    ("en+m7", "Okay. Can you pass me the salt?"),
]
"""A room's talk in six espeak-ng voices: questions, requests, and her name in mid-sentence."""


async def run_file(tmp_path, brain, piper_voice, hearing, wav: Path, voice: VoiceSettings = CALLED,
                   during=None):
    """One session over `wav`; `during(session)` runs before it starts. Returns (session, companion, attention)."""
    personality = tmp_path / "mira.md"
    personality.write_text(PLAIN_PERSONALITY.format(patterns="").replace("name: Testa", "name: Mira\naliases: [Mimi]"))
    companion = Companion(make_config(tmp_path, brain.url, personality=personality), EventBus())
    await companion.start()
    attention: list[str] = []
    companion.bus.subscribe(lambda e: attention.append(e.attention) if isinstance(e, AttentionChanged) else None)
    source = WavSource(wav, realtime=False)
    sink = WavSink(lambda: source.position_s, rate=piper_voice.sample_rate)
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=voice)
    if during is not None:
        during(session)
    try:
        await session.run()
    finally:
        await session.close()
        await companion.close()
    return session, companion, attention


def user_lines(companion) -> list[str]:
    return [m["content"] for m in companion.conversation.history if m["role"] == "user"]


async def test_background_dialogue_in_other_voices_starts_no_turn_and_reaches_no_brain(
        tmp_path, scripted_brain, piper_voice, hearing):
    parts: list = []
    for voice, text in BACKGROUND:
        parts += [espeak(text, voice, tmp_path), 1.2]
    wav = conversation(tmp_path / "room.wav", *parts)

    session, companion, attention = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav)

    verdicts = session.loop.calling.verdicts
    assert len(verdicts) >= 5 and all(not v.turn for v in verdicts), verdicts
    assert scripted_brain.requests == []
    assert session.loop.heard == [] and user_lines(companion) == []
    assert attention == ["dozing"]


async def test_the_same_dialogue_starts_turns_when_she_answers_every_voice(
        tmp_path, scripted_brain, piper_voice, hearing):
    """The test above bites: in Always answer the room's talk reaches the brain."""
    scripted_brain.push(*[{"text": "Mm-hm."}] * 6)
    (voice1, line1), (voice2, line2) = BACKGROUND[:2]
    wav = conversation(tmp_path / "room.wav", espeak(line1, voice1, tmp_path), 1.2, espeak(line2, voice2, tmp_path))

    session, _companion, attention = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                                    voice=VoiceSettings(listening="always"))

    assert len(scripted_brain.requests) == 2 and len(session.loop.heard) == 2
    assert attention == ["awake"]


@pytest.mark.parametrize("voice", ["piper", "en-us", "en+m3"])
async def test_her_name_first_starts_a_turn(tmp_path, scripted_brain, piper_voice, hearing, voice):
    scripted_brain.push({"text": "Paris."})
    question = "Mira, what is the capital of France?"
    audio = said(piper_voice, question) if voice == "piper" else espeak(question, voice, tmp_path)
    wav = conversation(tmp_path / "q.wav", espeak(BACKGROUND[0][1], "en-us+f3", tmp_path), 1.2, audio)

    session, companion, attention = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav)

    assert len(scripted_brain.requests) == 1
    [line] = user_lines(companion)
    assert "capital" in line.lower()
    assert [v.reason for v in session.loop.calling.verdicts] == ["not-called", "name"]
    assert attention[:2] == ["dozing", "attentive"]


@pytest.mark.parametrize(("wake_word", "phrase", "voice"), [
    ("okay_nabu", "Okay Nabu", "piper"), ("okay_nabu", "Okay Nabu", "en-us"), ("okay_nabu", "Okay Nabu", "en+m3"),
    ("hey_jarvis", "Hey Jarvis", "piper"), ("alexa", "Alexa", "en-us"),
])
async def test_the_wake_word_starts_a_turn(tmp_path, scripted_brain, piper_voice, hearing, wake_word, phrase,
                                           voice):
    scripted_brain.push({"text": "Paris."})
    question = f"{phrase}, what is the capital of France?"
    audio = said(piper_voice, question) if voice == "piper" else espeak(question, voice, tmp_path)
    wav = conversation(tmp_path / "q.wav", audio)

    session, companion, _ = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                           voice=replace(CALLED, wake_word=wake_word, name_wakes=False))

    assert [v.reason for v in session.loop.calling.verdicts] == ["called"]
    assert len(scripted_brain.requests) == 1 and len(user_lines(companion)) == 1


@pytest.mark.parametrize("name_wakes", [True, False])
async def test_a_wake_phrase_the_detector_misses_still_calls_her_in_words_while_her_name_can(
        tmp_path, scripted_brain, piper_voice, hearing, name_wakes):
    """microWakeWord's "Hey Jarvis" scores ~0 on espeak-ng's voices; Whisper writes the phrase.
    Her answer opens the follow-up window as any call's does: the second question needs no call."""
    scripted_brain.push({"text": "Paris."}, {"text": "Madrid."})
    wav = conversation(tmp_path / "q.wav", espeak("Hey Jarvis, what is the capital of France?", "en-us", tmp_path),
                       2.5, espeak("And what about Spain?", "en-us", tmp_path))

    session, companion, _ = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                           voice=replace(CALLED, wake_word="hey_jarvis", name_wakes=name_wakes))

    assert session.loop.calling.wakes == []  # the detector heard nothing
    if name_wakes:
        assert [v.reason for v in session.loop.calling.verdicts] == ["wake-phrase", "follow-up"]
        first, second = user_lines(companion)
        assert first.startswith("What is the capital"), first  # asked without the call
        assert "spain" in second.lower()
    else:
        assert scripted_brain.requests == [] and user_lines(companion) == []


async def test_a_follow_up_inside_the_window_needs_no_call_and_one_after_it_does(
        tmp_path, scripted_brain, piper_voice, hearing):
    scripted_brain.push({"text": "Paris."}, {"text": "Madrid."}, {"text": "Rome."})
    wav = conversation(tmp_path / "talk.wav", said(piper_voice, "Mira, what is the capital of France?"), 2.5,
                       said(piper_voice, "And what about Spain?"), 12.0,
                       said(piper_voice, "And what about Italy?"))

    session, companion, attention = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                                    voice=replace(CALLED, follow_up_s=8.0))

    assert [v.reason for v in session.loop.calling.verdicts] == ["name", "follow-up", "not-called"]
    assert len(scripted_brain.requests) == 2
    assert "spain" in user_lines(companion)[-1].lower()
    assert attention == ["dozing", "attentive", "dozing"]


@pytest.mark.parametrize("mode", ["always", "called", "muted"])
async def test_push_to_talk_works_in_every_mode(tmp_path, scripted_brain, piper_voice, hearing, mode):
    scripted_brain.push({"text": "Paris."})
    wav = conversation(tmp_path / "q.wav", said(piper_voice, "What is the capital of France?"))

    def press_the_key(session: VoiceSession) -> None:
        # What WindowVoice.push_to_talk(True) does: the call, and the microphone opens.
        session.loop.calling.push_to_talk(True)
        session.loop.apply(replace(session.loop.settings, muted=False))

    session, companion, _ = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                           voice=VoiceSettings().with_mode(mode), during=press_the_key)

    assert len(scripted_brain.requests) == 1 and len(user_lines(companion)) == 1
    assert [v.reason for v in session.loop.calling.verdicts] == ["always" if mode == "always" else "called"]


class CountingTranscriber:
    """The real Whisper, counting how often it is asked to transcribe."""

    def __init__(self, whisper) -> None:
        self.whisper = whisper
        self.calls = 0

    async def transcribe(self, audio):
        self.calls += 1
        return await self.whisper.transcribe(audio)


@pytest.mark.parametrize("name_wakes", [False, True])
async def test_whisper_runs_on_the_room_only_when_her_name_can_call_her(
        tmp_path, scripted_brain, piper_voice, hearing, name_wakes):
    parts: list = []
    for voice, text in BACKGROUND[:3]:
        parts += [espeak(text, voice, tmp_path), 1.2]
    wav = conversation(tmp_path / "room.wav", *parts)
    counting = CountingTranscriber(hearing)

    session, _companion, _ = await run_file(tmp_path, scripted_brain, piper_voice, counting, wav,
                                            voice=replace(CALLED, name_wakes=name_wakes))

    assert scripted_brain.requests == []
    if name_wakes:
        assert counting.calls >= 3 and session.loop.ear.words.skipped == 0
    else:
        assert counting.calls == 0 and session.loop.ear.words.skipped >= 3


async def test_a_bare_wake_word_gets_yes_and_the_question_after_it_is_answered(
        tmp_path, scripted_brain, piper_voice, hearing):
    scripted_brain.push({"text": "Paris is the capital of France."})
    wav = conversation(tmp_path / "q.wav", said(piper_voice, "Okay Nabu."), 2.0,
                       said(piper_voice, "What is the capital of France?"), 4.0)

    session, companion, attention = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                                   voice=replace(CALLED, called_cue="yes"))

    assert [v.reason for v in session.loop.calling.verdicts] == ["bare-call", "called"]
    assert len(scripted_brain.requests) == 1 and "capital" in user_lines(companion)[0].lower()
    her_voice = hearing.transcribe_sync(resample(session.sink.audio(), session.sink.rate, 16_000)).lower()
    assert her_voice.index("yes") < her_voice.index("paris"), her_voice
    assert attention[:2] == ["dozing", "attentive"]


async def test_a_bare_wake_word_gets_a_chime_when_chosen(tmp_path, scripted_brain, piper_voice, hearing):
    wav = conversation(tmp_path / "q.wav", said(piper_voice, "Okay Nabu."), 3.0)

    session, _companion, _ = await run_file(tmp_path, scripted_brain, piper_voice, hearing, wav,
                                            voice=replace(CALLED, called_cue="chime"))

    played = session.sink.audio()
    sounding = np.flatnonzero(np.abs(played) > 0.01)
    assert sounding.size, "nothing was played"
    cue = played[sounding[0]: sounding[0] + int(0.1 * session.sink.rate)]
    peak_hz = np.argmax(np.abs(np.fft.rfft(cue))) * session.sink.rate / cue.size
    assert abs(peak_hz - 660) < 30, peak_hz
    assert scripted_brain.requests == []
