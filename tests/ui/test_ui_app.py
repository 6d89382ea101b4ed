"""The whole window against the scripted brain over real HTTP: typing, faces, trouble banners."""

from __future__ import annotations

import asyncio

import pytest
from app_support import app_config, type_into
from scripted_brain import user_texts
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.config import Paths, RunConfig, with_overrides
from companion.settings_file import load_settings
from companion.tools.context import ToolContext
from companion.tools.registry import Registry, ToolSpec, builtin_modules
from companion.ui.app import CompanionApp


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _expression(app: CompanionApp, name: str) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()

    def seen(expression: str, _reason: str) -> None:
        if expression == name and not future.done():
            future.set_result(expression)

    app.bridge.expression.connect(seen)
    return future


def test_a_typed_question_runs_a_turn_and_the_captions_show_her_reply(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    scripted_brain.push({"text": "[happy] Hello there! Nice to see you."})
    app = make_app(app_config(tmp_path, scripted_brain.url))

    async def scenario():
        await app.start()
        finished = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "hi Mira")
        await finished

    qt_loop(scenario())
    assert app.window.captions.entries() == [("heard", "hi Mira"), ("said", "Hello there! Nice to see you.")]
    assert app.window.face.expression == "happy"
    assert user_texts(scripted_brain.bodies[-1])[-1] == "hi Mira"
    assert app.window.banners.shown_keys() == []


def test_the_face_shows_a_tools_focus_while_it_runs_its_fail_face_then_the_replys_tag(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    running, release = asyncio.Event(), asyncio.Event()

    async def execute(args: dict, ctx: ToolContext) -> str:
        running.set()
        await release.wait()
        return ctx.fail("The flux capacitor is unplugged.")

    registry = Registry()
    registry.register_modules(builtin_modules())
    registry.register(ToolSpec(
        name="flux_check", execute=execute, announce="Checking the flux.",
        schema={"type": "function", "name": "flux_check", "description": "check the flux",
                "parameters": {"type": "object", "properties": {}}},
        expressions={"focus": "determined", "fail": "crying"}))
    scripted_brain.push({"tool_calls": [{"name": "flux_check", "arguments": {}}]},
                        {"text": "[embarrassed] Sorry, the flux check failed."})
    app = make_app(app_config(tmp_path, scripted_brain.url), registry=registry)
    faces: list[str] = []
    app.bridge.expression.connect(lambda name, _reason: faces.append(name))

    async def scenario():
        await app.start()
        focused = _expression(app, "determined")
        type_into(qtbot, app, "check the flux")
        await running.wait()
        await focused
        assert app.window.face.expression == "determined"
        assert app.window.state_label.text() == "Working: flux_check"
        failed = _expression(app, "crying")
        release.set()
        await failed
        assert app.window.face.expression == "crying"
        await signal_future(app.bridge.turn_finished)

    qt_loop(scenario())
    assert faces[-3:] == ["determined", "crying", "embarrassed"]
    assert app.window.face.expression == "embarrassed"
    assert ("activity", "flux_check: Checking the flux.") in app.window.captions.entries()


def test_an_unreachable_brain_shows_what_to_do_and_a_confused_face_without_crashing(
        qtbot, tmp_path, make_app, qt_loop):
    app = make_app(app_config(tmp_path, "http://127.0.0.1:9/v1"))

    async def scenario():
        banner_shown = _expression(app, "confused")
        await app.start()
        finished = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "are you there?")
        await finished
        await banner_shown

    qt_loop(scenario())
    banner = app.window.banners.banner("brain")
    assert banner is not None and "127.0.0.1:9" in banner.text() and "Settings" in banner.text()
    assert app.window.face.expression == "confused"
    assert any(kind == "said" and "can't reach my brain" in text
               for kind, text in app.window.captions.entries())


def test_a_broken_settings_file_shows_a_notice_and_she_starts_with_defaults(qtbot, tmp_path, make_app):
    paths = Paths.default(tmp_path / "config")
    paths.config_dir.mkdir(parents=True)
    paths.settings_file.write_text("[brain\nbase_url = nope", encoding="utf-8")
    loaded = load_settings(paths)
    app = make_app(RunConfig(paths, loaded.settings, loaded.notice))
    banner = app.window.banners.banner("settings")
    assert banner is not None and "set it aside" in banner.text()
    assert list(paths.config_dir.glob("settings.broken-*.toml"))


def test_closing_remembers_the_window_size_and_the_mute_switch(qtbot, tmp_path, scripted_brain, make_app,
                                                                qt_loop):
    config = app_config(tmp_path, scripted_brain.url)
    app = make_app(config)
    app.window.resize(520, 610)
    app.window.mute_button.click()
    qt_loop(app.close())
    saved = load_settings(config.paths).settings
    assert saved.voice.muted is True
    again = make_app(RunConfig(config.paths, saved))
    assert (again.window.width(), again.window.height()) == (520, 610)
    assert again.window.mute_button.isChecked()


def test_missing_models_are_offered_for_download_and_typing_still_works(
        qtbot, tmp_path, scripted_brain, qt_loop):
    config = app_config(tmp_path, scripted_brain.url)
    config = RunConfig(config.paths, with_overrides(config.settings, voice={"hearing_model": "base.en"}))
    app = CompanionApp(config, with_voice=True)
    qtbot.addWidget(app.window)
    app.show()
    scripted_brain.push({"text": "[neutral] I can read you fine."})

    async def scenario():
        await app.start()
        finished = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "can you read me?")
        await finished

    try:
        qt_loop(scenario())
    finally:
        qt_loop(app.close())
    banner = app.window.banners.banner("models")
    assert banner is not None and "hearing model (base.en)" in banner.text()
    assert "Download" in banner.buttons
    assert app.voice is None  # nothing was fetched without asking
    assert ("said", "I can read you fine.") in app.window.captions.entries()


def test_a_model_download_shows_its_progress_from_the_worker_thread(qtbot, tmp_path, make_app):
    import threading

    app = make_app(app_config(tmp_path, "http://127.0.0.1:9/v1"))
    with qtbot.waitSignal(app.bridge.download_progress, timeout=2000):
        worker = threading.Thread(target=app.bridge.deliver_progress, args=("model.bin", 30, 120))
        worker.start()
        worker.join()
    banner = app.window.banners.banner("download")
    assert banner is not None and "model.bin" in banner.text()
    assert (banner.progress.value(), banner.progress.maximum()) == (30, 120)


def test_a_typed_yes_answers_the_open_approval_card_instead_of_starting_a_turn(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    async def execute(args: dict, ctx: ToolContext) -> str:
        verdict = await ctx.services["gate"].review("touch notes.txt", channel=str(ctx.channel))
        return "Touched notes.txt." if verdict.allowed else ctx.fail(verdict.sentence)

    registry = Registry()
    registry.register(ToolSpec(
        name="touch_notes", execute=execute, risk="exec",
        schema={"type": "function", "name": "touch_notes", "description": "create notes.txt",
                "parameters": {"type": "object", "properties": {}}}))
    scripted_brain.push({"tool_calls": [{"name": "touch_notes", "arguments": {}}]},
                        {"text": "[happy] Done: notes.txt is there."})
    app = make_app(app_config(tmp_path, scripted_brain.url), registry=registry)

    async def scenario():
        await app.start()
        card_shown = signal_future(app.bridge.approval_needed)
        finished = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "make me a notes file")
        (request,) = await card_shown
        card = app.window.approvals.cards[request.request_id]
        if not card.is_armed():  # a new card takes no answer in its first second
            await signal_future(card.armed)
        type_into(qtbot, app, "yes")
        await finished

    qt_loop(scenario())
    entries = app.window.captions.entries()
    assert ("heard", "yes") in entries and ("said", "Done: notes.txt is there.") in entries
    assert user_texts(scripted_brain.bodies[-1]) == ["make me a notes file"]
    assert [e["decision"] for e in app.gate.audit.entries()] == ["approved"]


def test_always_on_top_is_remembered(qtbot, tmp_path, scripted_brain, make_app):
    config = app_config(tmp_path, scripted_brain.url)
    app = make_app(config)
    app.window.on_top_action.trigger()
    assert load_settings(config.paths).settings.ui.always_on_top is True
    again = make_app(RunConfig(config.paths, load_settings(config.paths).settings))
    assert again.window.on_top_action.isChecked()


def test_saving_the_personality_in_the_editor_changes_her_next_announce(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    scripted_brain.push({"tool_calls": [{"name": "get_time", "arguments": {}}]},
                        {"text": "[happy] Half past nine."})
    app = make_app(app_config(tmp_path, scripted_brain.url))

    async def scenario():
        await app.start()
        app.open_personality_editor()
        editor = app.dialogs.editor
        text = editor.text().replace("get_time:\n  announce: Let me check the clock.",
                                     "get_time:\n  announce: Consulting my pocket watch.")
        editor.editor.setPlainText(text)
        assert editor.save()
        finished = signal_future(app.bridge.turn_finished)
        type_into(qtbot, app, "what time is it?")
        await finished

    qt_loop(scenario())
    assert ("activity", "get_time: Consulting my pocket watch.") in app.window.captions.entries()


def test_closing_while_the_brain_probe_still_waits_ends_the_probe_with_her(
        qtbot, tmp_path, make_app, qt_loop):
    # A brain that accepts the connection and never answers: her start-up probe hangs.
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        app = make_app(app_config(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}/v1"))

        async def scenario():
            await app.start()
            probes = [t for t in app.tasks.running if "probe" in repr(t.get_coro())]
            assert probes and not probes[0].done()
            await app.close()
            return probes[0]

        probe = qt_loop(scenario())
    assert probe.cancelled()


def test_her_window_asks_once_whether_to_know_voices_when_a_call_opens_her_window_and_saves_the_answer(
        qtbot, tmp_path, scripted_brain, make_app, qt_loop):
    from companion import events as ev
    from companion.ui.banner import KNOW_VOICES_KEY

    config = app_config(tmp_path, scripted_brain.url)
    app = make_app(config)
    qt_loop(app.start())
    app.bus.emit(ev.AttentionChanged("attentive", "her name"))
    qtbot.waitUntil(lambda: app.window.banners.banner(KNOW_VOICES_KEY) is not None, timeout=3000)
    app.window.banners.banner(KNOW_VOICES_KEY).buttons["Yes"].click()
    assert load_settings(config.paths).settings.voice.know_voices == "yes"
    with qtbot.waitSignal(app.bridge.attention, timeout=3000):  # delivered: and not asked again
        app.bus.emit(ev.AttentionChanged("attentive", "her name"))
    assert app.window.banners.banner(KNOW_VOICES_KEY) is None
