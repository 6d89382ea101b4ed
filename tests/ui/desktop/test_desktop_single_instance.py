"""One companion at a time: a second launch shows the first and exits; quitting (the tray's Quit,
or a signal) really ends her; Settings → Desktop turns start-at-login and the compact face on and off."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from dataclasses import replace

import pytest
from PySide6.QtNetwork import QLocalServer
from test_ui_compact import collect_garbage_on_the_qt_thread, make_app_fixture  # noqa: F401 (fixtures)
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401

from companion.desktop_entry import Places
from companion.ui.desktop.single_instance import SingleInstance, server_name


@pytest.fixture
def instance_name(tmp_path):
    name = server_name(tmp_path / "config")
    yield name
    QLocalServer.removeServer(name)


def test_a_second_launch_asks_the_first_to_show_herself(qtbot, instance_name):
    first = SingleInstance(instance_name)
    assert first.listen()
    with qtbot.waitSignal(first.raise_requested, timeout=5000):
        assert SingleInstance(instance_name).hand_over()
    first.close()
    assert not SingleInstance(instance_name).hand_over()  # nobody there: she starts


def test_a_socket_left_by_a_crash_does_not_stop_her_starting(qtbot, instance_name):
    probe = QLocalServer()
    assert probe.listen(instance_name)
    path = probe.fullServerName()
    probe.close()
    # A killed companion leaves its socket file with no one accepting on it.
    with socket.socket(socket.AF_UNIX) as leftover:
        leftover.bind(path)
        assert not SingleInstance(instance_name).hand_over()
        again = SingleInstance(instance_name)
        assert again.listen()
        with qtbot.waitSignal(again.raise_requested, timeout=5000):
            assert SingleInstance(instance_name).hand_over()
        again.close()


def test_the_real_command_hands_over_and_exits_at_once(qtbot, instance_name, tmp_path):
    first = SingleInstance(instance_name)
    assert first.listen()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    with qtbot.waitSignal(first.raise_requested, timeout=30000):
        done = subprocess.run([sys.executable, "-m", "companion.cli", "--config-dir", str(tmp_path / "config"),
                               "--no-voice"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "already running" in done.stderr
    first.close()


def test_a_hand_over_shows_her_window_or_her_small_face(make_app, qtbot):
    app = make_app()
    instance = SingleInstance(server_name(app.config.paths.config_dir))
    app.desktop.take_handovers(instance)  # listens
    app.window.hide()
    with qtbot.waitSignal(instance.raise_requested, timeout=5000):
        SingleInstance(instance.name).hand_over()
    assert app.window.isVisible()
    app.desktop.set_compact(True)
    app.desktop.compact.hide()
    with qtbot.waitSignal(instance.raise_requested, timeout=5000):
        SingleInstance(instance.name).hand_over()
    assert app.desktop.compact.isVisible() and not app.window.isVisible()
    instance.close()


def test_quit_in_the_tray_closes_her_and_the_process_ends(make_app, qt_loop, qtbot, tmp_path):
    app = make_app()
    quit_action = next(a for a in app.tray.menu.actions() if a.text() == "Quit")
    quit_action.trigger()
    qt_loop(app.closed.wait())
    assert not app.window.isVisible() and not app.tray.icon.isVisible()
    # The whole process: a real launch ends within seconds of Quit (here SIGTERM, which runs the
    # same request_quit as the tray), with no thread of hers left holding it open.
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "DBUS_SESSION_BUS_ADDRESS": "", "DISPLAY": ""}
    process = subprocess.Popen([sys.executable, "-m", "companion.cli", "--config-dir", str(tmp_path / "other"),
                                "--no-voice", "--brain-url", "http://127.0.0.1:9"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        probe = SingleInstance(server_name(tmp_path / "other"))
        # She answers on her socket once her window is up.
        qtbot.waitUntil(lambda: process.poll() is not None or probe.hand_over(), timeout=60000)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_settings_desktop_tab_writes_and_removes_the_autostart_entry(make_app, tmp_path):
    app = make_app()
    app.desktop.places = Places.for_user({"HOME": str(tmp_path / "home")})
    app.open_settings("desktop")
    dialog = app.settings_dialog
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Desktop"
    dialog.desktop.start_at_login.setChecked(True)
    dialog.accept()
    entry = app.desktop.places.autostart_entry
    assert entry.exists() and f"--config-dir {app.config.paths.config_dir}" in entry.read_text()
    settings = app.keeper.settings
    app.keeper.apply(replace(settings, ui=replace(settings.ui, start_at_login=False)))
    assert not entry.exists()
