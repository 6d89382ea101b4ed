"""The window's rough edges from issue 28, each as the user met it: long code in a reply, Tab from
the text box, the face after Stop, the pill and banner after fixing the brain, the face at start."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401

from companion import events as ev
from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.persona.store import shipped_templates
from companion.ui.app import CompanionApp
from companion.ui.bridge import EventBridge
from companion.ui.transcript import TranscriptView
from companion.ui.window import CompanionWindow


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def window(qtbot, qapp):
    window = CompanionWindow()
    qtbot.addWidget(window)
    bridge = EventBridge()
    bus = ev.EventBus()
    bridge.attach(bus)
    window.connect_bridge(bridge)
    window.install_push_to_talk(qapp)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    window.bus, window.bridge = bus, bridge
    return window


def _emit(qtbot, window, *events) -> None:
    with qtbot.waitSignal(window.bridge.event, timeout=2000, check_params_cb=lambda e: e is events[-1]):
        for event in events:
            window.bus.emit(event)


def test_a_long_code_line_wraps_inside_the_bubble_and_copy_keeps_it_whole(qtbot):
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(320, 400)
    view.show()
    code = "print('" + "word " * 40 + "')\n" + "path = '/" + "x" * 160 + "'"
    view.finish_reply(f"Here it is:\n\n```python\n{code}\n```")
    qtbot.waitUntil(lambda: view.document().size().width() > 0, timeout=2000)
    assert view.document().size().width() <= view.viewport().width() + 1  # nothing runs past the edge
    assert "x" * 160 in view.toPlainText().replace("\u2028", "").replace("\n", "")
    assert list(view._page.code.values()) == [code]  # Copy gives the lines as written


def test_tab_from_the_text_box_never_lands_on_a_banner_and_space_keeps_typing(window, qtbot):
    opened: list[str] = []
    window.settings_requested.connect(opened.append)
    window.show_error("brain", "unreachable", "I can't reach my brain.")
    banner = window.banners.banner("brain")
    assert banner is not None and banner.buttons
    qtbot.keyClicks(window.text_box, "hello")
    qtbot.keyClick(window.text_box, Qt.Key.Key_Tab)
    focused = window.focusWidget()
    assert focused not in (*banner.buttons.values(), *banner.findChildren(type(banner.buttons["Open Settings"])))
    qtbot.keyClick(focused, Qt.Key.Key_Space)
    assert opened == []
    assert window.text_box.text().startswith("hello")


def test_after_stop_her_face_leaves_the_turn_look(window, qtbot):
    _emit(qtbot, window, ev.StateChanged("thinking"))
    assert window.face.expression == "thinking"
    _emit(qtbot, window, ev.TurnFinished("", "", interrupted=True), ev.StateChanged("idle"))
    assert window.face.expression == "neutral"


def _app(qtbot, tmp_path, **settings) -> CompanionApp:
    base = with_overrides(Settings(), tools={"workspace": str(tmp_path / "workspace")},
                          **{k: v for k, v in settings.items() if k != "personality"})
    if "personality" in settings:
        base = replace(base, personality=settings["personality"])
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), base), with_voice=False)
    qtbot.addWidget(app.window)
    app.show()
    return app


def test_a_brain_fixed_in_settings_clears_offline_and_the_old_banner_at_once(qtbot, qt_loop, tmp_path,
                                                                              scripted_brain, unused_port):
    app = _app(qtbot, tmp_path, brain={"base_url": f"http://127.0.0.1:{unused_port}/v1"})
    window = app.window

    async def scenario():
        await app.start()
        await _background_work(app)  # the start-up probe of the brain
        assert window.state_label.text().startswith("Offline")
        assert str(unused_port) in window.banners.banner("brain").text()
        settings = app.keeper.settings
        app.keeper.apply(replace(settings, brain=replace(settings.brain, base_url=scripted_brain.url)))
        # At once: the old address's banner and the Offline pill go with the save...
        assert window.banners.banner("brain") is None
        assert not window.state_label.text().startswith("Offline")
        await _background_work(app)  # ...and the new brain is asked (key lookup, probe)
        assert window.state_label.text() == "Ready" and window.banners.banner("brain") is None

    try:
        qt_loop(scenario())
    finally:
        qt_loop(app.close())


async def _background_work(app: CompanionApp) -> None:
    while pending := [t for t in app.tasks.running if not t.done()]:
        await asyncio.gather(*pending, return_exceptions=True)


def test_her_face_at_start_is_the_chosen_personalitys(qtbot, qt_loop, tmp_path, scripted_brain):
    pip = tmp_path / "pip.md"
    shutil.copy(shipped_templates()["gremlin"], pip)
    app = _app(qtbot, tmp_path, brain={"base_url": scripted_brain.url}, personality=str(pip))
    try:
        qt_loop(app.start())
        assert app.window.face.character.name == "pip"
    finally:
        qt_loop(app.close())


def test_after_a_card_is_approved_the_pill_names_the_tool_again(window, qtbot):
    _emit(qtbot, window, ev.StateChanged("thinking"), ev.ToolStarted("run_command", "c1", {}),
          ev.StateChanged("working"))
    assert window.state_label.text() == "Working: run_command"
    _emit(qtbot, window, ev.StateChanged("waiting"))
    assert window.state_label.text() == "Waiting for your OK"
    _emit(qtbot, window, ev.StateChanged("working"))  # the yes: the command runs
    assert window.state_label.text() == "Working: run_command"


def test_the_template_list_shows_who_each_template_is(qtbot, tmp_path):
    from companion.config import Paths
    from companion.tools.registry import Registry
    from companion.ui.settings.dialog import SettingsDialog
    from companion.ui.settings.keeper import SettingsKeeper

    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), Registry(),
                            templates=shipped_templates())
    qtbot.addWidget(dialog)
    box = dialog.personality.template
    shown = {box.itemData(i): box.itemText(i) for i in range(box.count())}
    assert shown == {"butler": "Jeeves (butler)", "default": "Mira (default)", "gremlin": "Pip (gremlin)"}
    assert box.currentData() == "default"


@pytest.mark.parametrize("text_scale", [1.0, 1.25])
def test_no_setting_is_clipped_at_the_default_size_and_at_125_percent_text(qtbot, qapp, tmp_path, text_scale):
    from PySide6.QtWidgets import QAbstractButton, QLabel

    from companion.config import Paths
    from companion.tools.registry import discover
    from companion.ui.settings.dialog import SettingsDialog
    from companion.ui.settings.keeper import SettingsKeeper

    font = qapp.font()
    bigger = qapp.font()
    bigger.setPointSizeF(font.pointSizeF() * text_scale)  # as a desktop set to 125 % text
    qapp.setFont(bigger)
    try:
        dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), discover(),
                                templates=shipped_templates(), devices=[])
        qtbot.addWidget(dialog)
        dialog.show()  # at its own default size
        clipped = []
        for index in range(dialog.tabs.count()):
            dialog.tabs.setCurrentIndex(index)
            page = dialog.tabs.widget(index)
            qtbot.waitExposed(dialog)
            for widget in (*page.findChildren(QLabel), *page.findChildren(QAbstractButton)):
                if not widget.isVisible() or (isinstance(widget, QLabel) and widget.wordWrap()):
                    continue
                if widget.width() < widget.sizeHint().width():
                    clipped.append((dialog.tabs.tabText(index), widget.text(), widget.width(), widget.sizeHint().width()))
        assert clipped == []
        assert dialog.height() <= 720  # fits a laptop screen: the Voice tab scrolls instead
        tree = dialog.toolsets
        for column in (0, 2):  # names and risks whole; what a tool does wraps
            assert tree.columnWidth(column) >= tree.sizeHintForColumn(column)
        assert tree.wordWrap()
    finally:
        qapp.setFont(font)


def test_approved_and_declined_lines_are_still_there_after_a_restart(qtbot, tmp_path):
    from companion.conversations.recorder import TurnRecorder
    from companion.conversations.store import ConversationStore

    store = ConversationStore(tmp_path / "conversations.sqlite3")
    conversation = store.new_conversation()
    recorder = TurnRecorder(store, conversation)
    for event in (ev.UserHeard("tidy my notes", spoken=False),
                  ev.ApprovalNeeded("r1", "rm -r notes_copy", "deletes files", False, 60.0),
                  ev.ApprovalResolved("r1", "approved"),
                  ev.ApprovalNeeded("r2", "rm -r notes", "deletes files", False, 60.0),
                  ev.ApprovalResolved("r2", "declined"),
                  ev.TurnFinished("tidy my notes", "", interrupted=False)):
        recorder(event)
    store.close()
    reopened = ConversationStore(tmp_path / "conversations.sqlite3")  # her next start
    entries = [entry for turn in reopened.turns(conversation) for entry in turn.entries]
    view = TranscriptView()
    qtbot.addWidget(view)
    view.load(entries)
    assert ("notice", "Approved `rm -r notes_copy`") in view.entries()
    assert ("notice", "Declined `rm -r notes`") in view.entries()
    reopened.close()


def test_loading_her_voice_reports_how_far_it_has_got_and_the_pill_shows_it(tmp_path, window):
    from audio_env import espeak_wav

    from companion.config import VoiceSettings
    from companion.voice.factory import build_voice
    from companion.voice.sound.audio import NullSink, WavSource

    fractions: list[float] = []

    def loaded(fraction: float) -> None:
        fractions.append(fraction)
        window.set_voice("loading", fraction)  # as app.py does
        pills.append(window.state_label.text())

    pills: list[str] = []
    source = WavSource(espeak_wav(tmp_path / "hi.wav", "hello"), realtime=False)
    asyncio.run(build_voice(VoiceSettings(), tmp_path / "models", source=source,
                            make_sink=lambda _rate: NullSink(), loaded=loaded))  # the installed models
    assert fractions == sorted(fractions) and fractions[0] < 0.5 and fractions[-1] == 1.0 and len(fractions) >= 4
    assert pills[0] == "Loading my voice… 5 %" and "Loading my voice… 70 %" in pills
