"""Her devices changing under her, straight on the sound server (the pulse path: PortAudio
through ALSA sees only the server's default device): a speaker unplugged while she speaks, and
the default speaker changed while she speaks. Real PulseAudio, Whisper, piper and runtime.
(A stream the server ends with nowhere to move it is told as "the speaker went away" and
reopened by the sound watch, as a dead server is: test_faults_sound_server.py.)"""

from __future__ import annotations

import asyncio

import pytest
from sound_talk import FIRST_QUESTION, LONG_ANSWER, NEXT_ANSWER, NEXT_QUESTION, Talk, words

from companion.voice.sound.pulse_devices import stream_counts

pytestmark = [pytest.mark.real_audio, pytest.mark.timeout(240)]

USB = "module-null-sink sink_name=usb_speaker rate=48000 channels=2"


async def test_a_speaker_unplugged_while_she_speaks_moves_her_voice_to_the_default_one_and_she_goes_on(
        tmp_path, pulse_audio, scripted_brain, hearing, piper_voice):
    """PulseAudio moves the streams of a device that goes away to the default one (the desktop's
    behaviour): her line goes on there, the canceller re-aligns, and no loss is told."""
    module = pulse_audio.pactl("load-module", *USB.split())
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    try:
        async with Talk(tmp_path, pulse_audio, scripted_brain, hearing, piper_voice, "pulse",
                        output_device="usb_speaker") as talk:
            await talk.answering_aloud(FIRST_QUESTION)
            echo_before = talk.session.echo.stats()
            await asyncio.to_thread(pulse_audio.pactl, "unload-module", module)  # unplugged
            module = ""
            await asyncio.wait_for(talk.session.loop.wait_until_quiet(), 60)
            said = await talk.ask_aloud_and_record(NEXT_QUESTION, NEXT_ANSWER, speaker="speaker")
            assert talk.session.loop.heard == [NEXT_QUESTION]  # nothing the user said was lost or doubled
            assert stream_counts(talk.session.sink)["moves"] == 1 and talk.session.sink._stream.device == "speaker"
            assert talk.session.echo.stats().xruns > echo_before.xruns  # the canceller re-aligned
            assert talk.seen.lost() == [] and talk.session.sound.attempts == []
    finally:
        if module:
            pulse_audio.pactl("unload-module", module)
    assert words(NEXT_ANSWER) in said, said


async def test_the_default_speaker_changed_while_she_speaks_moves_her_voice_there_without_a_word(
        tmp_path, pulse_audio, scripted_brain, hearing, piper_voice):
    module = pulse_audio.pactl("load-module", *USB.split())
    scripted_brain.push({"text": LONG_ANSWER, "chunks": 6})
    try:
        async with Talk(tmp_path, pulse_audio, scripted_brain, hearing, piper_voice, "pulse") as talk:
            await talk.answering_aloud(FIRST_QUESTION)
            echo_before = talk.session.echo.stats()
            await asyncio.to_thread(pulse_audio.pactl, "set-default-sink", "usb_speaker")
            await asyncio.wait_for(talk.session.loop.wait_until_quiet(), 60)
            # She finished her answer (now on the new speaker), and hears the next question there.
            said = await talk.ask_aloud_and_record(NEXT_QUESTION, NEXT_ANSWER, speaker="usb_speaker")
            assert stream_counts(talk.session.sink)["moves"] == 1
            assert talk.session.sink._stream.device == "usb_speaker"
            assert talk.session.echo.stats().xruns > echo_before.xruns  # the canceller re-aligned
            assert talk.seen.lost() == [] and talk.session.sound.attempts == []
    finally:
        pulse_audio.pactl("set-default-sink", "speaker")
        pulse_audio.pactl("unload-module", module)
    assert words(NEXT_ANSWER) in said, said
