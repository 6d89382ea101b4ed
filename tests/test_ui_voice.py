"""The window with her real voice: a spoken question through a virtual microphone, real
Whisper and piper, the scripted brain over HTTP; captions, face and lip sync follow."""

from __future__ import annotations

import asyncio

from audio_env import speech_wav
from ui_loop import qt_loop_fixture, signal_future  # noqa: F401 (the qt_loop fixture)

from companion.cli import RunConfig
from companion.config import Paths, Settings, with_overrides
from companion.ui.app import CompanionApp


def test_a_spoken_question_is_captioned_answered_aloud_and_moves_her_mouth(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, qt_loop):
    scripted_brain.push({"text": "[happy] It's a lovely day for a walk."})
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings))
    qtbot.addWidget(app.window)
    app.show()
    question = speech_wav(tmp_path / "question.wav", piper_voice, "What is the weather like today?")
    levels: list[float] = []
    app.bridge.speech_level.connect(levels.append)
    states: list[str] = []
    app.bridge.state.connect(states.append)

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None and app.voice.listening, app.window.banners.shown_keys()
        finished = signal_future(app.bridge.turn_finished)
        player = pulse_audio.play_into_mic(question)
        await finished
        await asyncio.to_thread(player.wait)
        await app.voice.loop.wait_until_quiet()  # she has said all of it
        await app.close()

    try:
        qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
    heard = [text for kind, text in app.window.captions.entries() if kind == "heard"]
    assert len(heard) == 1 and "weather" in heard[0].lower()
    assert ("said", "It's a lovely day for a walk.") in app.window.captions.entries()
    assert app.window.face.expression == "happy"
    assert "listening" in states and "speaking" in states
    # Her output level reached the face: the mouth opened while she spoke, and closed after.
    assert max(levels) > 0.3
    assert app.window.face.animator.frame(1e6).speech_level < 0.05
