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


def test_a_spoken_yes_approves_the_card_without_cancelling_her_turn(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, qt_loop):
    from companion.tools.context import ToolContext
    from companion.tools.registry import Registry, ToolSpec

    async def execute(args: dict, ctx: ToolContext) -> str:
        verdict = await ctx.services["gate"].review("touch notes.txt", channel=str(ctx.channel))
        return "Touched notes.txt." if verdict.allowed else ctx.fail(verdict.sentence)

    registry = Registry()
    registry.register(ToolSpec(
        name="touch_notes", execute=execute, risk="exec", announce="One moment.",
        schema={"type": "function", "name": "touch_notes", "description": "create notes.txt",
                "parameters": {"type": "object", "properties": {}}}))
    scripted_brain.push({"tool_calls": [{"name": "touch_notes", "arguments": {}}]},
                        {"text": "[happy] Done."})
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), registry=registry)
    qtbot.addWidget(app.window)
    app.show()
    request = speech_wav(tmp_path / "request.wav", piper_voice, "Please make me a notes file.")
    answer = speech_wav(tmp_path / "yes.wav", piper_voice, "Yes.")

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        card_shown = signal_future(app.bridge.approval_needed)
        finished = signal_future(app.bridge.turn_finished)
        await asyncio.to_thread(pulse_audio.play_into_mic(request).wait)
        await card_shown
        await app.voice.session.speaker.idle.wait()  # she has finished saying "One moment."
        await asyncio.to_thread(pulse_audio.play_into_mic(answer).wait)
        await finished
        await app.close()

    try:
        qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
    heard = [text.lower() for kind, text in app.window.captions.entries() if kind == "heard"]
    assert len(heard) == 2 and heard[1].startswith("yes")
    assert ("said", "Done.") in app.window.captions.entries()
    assert [e["decision"] for e in app.gate.audit.entries()] == ["approved"]
    user_turns = [m for m in scripted_brain.bodies[-1]["messages"] if m["role"] == "user"]
    assert len(user_turns) == 1  # the "yes" answered the card; it was not a new question
