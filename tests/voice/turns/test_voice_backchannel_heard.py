"""An "mm-hm" over her that leaves her talking is still heard: its words are in the transcript,
in the turn she was answering, while her story goes on to its end. Real VAD, Whisper, piper and
runtime, the scripted brain over HTTP, in real time."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from audio_env import speech
from brain_harness import make_config
from e2e_support import words
from test_voice_false_interruptions import NEAR, STORY, CuedMicrophone

from companion.config import VoiceSettings
from companion.events import EventBus, SpeakingChanged, TurnFinished, UserHeard
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import WavSink
from companion.voice.turns.barge_in import only_backchannel

pytestmark = pytest.mark.real_audio  # a sound over her in real time

QUIET = 0.05
"""Far quieter than her: below the level that stops her, so it is held and let go (voice.turns.held)."""


@pytest.mark.parametrize("loudness", [NEAR, QUIET], ids=["stops-her-a-moment", "under-her-voice"])
async def test_an_mm_hm_that_leaves_her_talking_is_in_the_transcript_of_the_turn_she_was_answering(
        tmp_path, scripted_brain, hearing, piper_voice, loudness):
    scripted_brain.push({"text": STORY}, {"text": "Okay."})
    companion = Companion(make_config(tmp_path, scripted_brain.url), EventBus())
    await companion.start()
    heard: list[UserHeard] = []
    her_first_word, all_said = asyncio.Event(), asyncio.Event()
    told: list[TurnFinished] = []

    def listen(event) -> None:
        if isinstance(event, UserHeard):
            heard.append(event)
        elif isinstance(event, TurnFinished) and event.text == STORY:
            told.append(event)
        elif isinstance(event, SpeakingChanged) and not (event.speaking or event.queued) and told:
            all_said.set()  # her story is told and her voice quiet

    companion.bus.subscribe(listen)
    mm_hm = np.concatenate([np.zeros(32_000, dtype=np.float32), speech(piper_voice, "Mm hmm.", lead_s=0.0) * loudness])
    microphone = CuedMicrophone(speech(piper_voice, "Tell me a story.", tail_s=0.3), mm_hm, her_first_word,
                                tail_s=22.0, done=all_said)
    started = time.monotonic()
    sink = WavSink(lambda: time.monotonic() - started, rate=piper_voice.sample_rate, realtime=True)
    sink.add_start_listener(lambda _when: her_first_word.set())
    session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=microphone, sink=sink,
                           transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"))
    try:
        await asyncio.wait_for(session.run(), 90)
        transcript = companion.transcript()
    finally:
        await session.close()
        await companion.close()

    assert session.loop.barge_ins == 0 and session.loop.heard == ["Tell me a story."]  # she went on
    assert [m["content"] for m in companion.conversation.history if m["role"] == "assistant"] == [STORY]
    question, *backchannels = heard
    assert len(backchannels) == 1 and only_backchannel(backchannels[0].text), heard
    assert backchannels[0].turn == question.turn  # heard within the turn she was answering
    entries = [(e.kind, words(e.text)) for e in transcript]
    assert entries[0] == ("heard", words("Tell me a story."))
    assert ("heard", words(backchannels[0].text)) in entries[1:]  # kept on disk, after the question
    assert words(STORY) == [w for kind, said in entries if kind == "said" for w in said]
