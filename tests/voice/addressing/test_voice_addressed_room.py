"""When called, in a room with open speakers (private PulseAudio, her echo canceller, real
devices in real time): other voices start nothing, her own voice saying the wake word never
wakes her, and talking over her still stops her."""

from __future__ import annotations

import asyncio

from calling_support import conversation, espeak
from open_speaker_talk import OpenSpeakerTalk

from companion.config import VoiceSettings

CALLED = VoiceSettings(listening="called", wake_word="okay_nabu")

HER_REPLY = ("Okay Nabu is the word that wakes me. Okay Nabu, okay Nabu! Canberra is the capital of "
             "Australia, and it sits between Sydney and Melbourne.")
"""Her answer says the wake word three times, on open speakers, back into her microphone."""

ROOM_TALK = [
    ("en-us", "Did you see the game last night?"),
    ("en+m3", "No, I was at my sister's place. Who won?"),
    ("en-us+f3", "The home team, in the last minute."),
    ("en+f2", "What time is the meeting tomorrow?"),
]


async def until(condition, timeout: float = 60.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


async def test_in_a_room_other_voices_and_her_own_wake_word_start_nothing(
        tmp_path, pulse_audio, scripted_brain, piper_voice, hearing):
    lines = [piece for voice, line in ROOM_TALK for piece in (espeak(line, voice, tmp_path), 0.8)]
    dialogue = conversation(tmp_path / "room.wav", *lines)
    scripted_brain.push({"text": HER_REPLY})
    async with OpenSpeakerTalk(tmp_path, pulse_audio, scripted_brain.url, piper_voice, hearing,
                               voice=CALLED) as talk:
        calling = talk.session.loop.calling
        player = talk.room.say(dialogue)
        await asyncio.to_thread(player.wait, 60)
        await until(lambda: len(calling.verdicts) >= 2 and not talk.session.loop.ear.in_speech)
        assert scripted_brain.requests == [] and talk.heard_lines() == []

        answered = await talk.ask("Okay Nabu, tell me about Canberra.")
        await until(lambda: not talk.session.loop.ear.in_speech)
        detector = calling.wake

    assert len(scripted_brain.requests) == 1, talk.heard_lines()
    assert len(answered.heard_lines) == 1 and "canberra" in answered.heard_lines[0].lower()
    # The user's "Okay Nabu" woke her once; her own three, through the echo canceller, never did.
    assert detector is not None and len(detector.detections) == 1, detector.detections
    assert len(calling.wakes) == 1, calling.wakes
    assert [v.reason for v in calling.verdicts if v.turn] == ["called"], calling.verdicts


async def test_when_called_talking_over_her_still_stops_her(
        tmp_path, pulse_audio, scripted_brain, piper_voice, hearing):
    scripted_brain.push({"text": HER_REPLY + " " + HER_REPLY}, {"text": "Okay, I will stop."})
    async with OpenSpeakerTalk(tmp_path, pulse_audio, scripted_brain.url, piper_voice, hearing,
                               voice=CALLED) as talk:
        # Called by push-to-talk (what the window does on the key): this test is about talking over her.
        talk.session.loop.calling.push_to_talk(True)
        result = await talk.ask("Tell me about Canberra.", interrupt_after_s=2.0)

    # (Under heavy load her short second reply may be talked over too, as in test_voice_open_speakers.)
    assert result.barge_ins >= 1
    # Her words were cut short, and what the user said over her is a turn of the conversation.
    assert len(result.heard_lines) == 2, result.heard_lines
    assert len(scripted_brain.requests) == 2
