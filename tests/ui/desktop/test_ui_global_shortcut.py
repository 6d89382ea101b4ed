"""The global push-to-talk key: the desktop portal on a private session bus, an X11 grab on a real
X server (Xvfb) while another window has focus, and a plain sentence where neither exists."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest
from desktop_env import fake_portal, portal_call, session_bus, xdotool, xvfb
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.shortcuts import ONLY_FOCUSED, start_global_key
from companion.ui.app import CompanionApp


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture
def make_app(qtbot, qt_loop, tmp_path):
    made: list[CompanionApp] = []

    def make(**ui) -> CompanionApp:
        settings = with_overrides(Settings(), tools={"workspace": str(tmp_path / "workspace")}, ui=ui)
        app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), with_voice=False)
        qtbot.addWidget(app.window)
        app.show()
        app.window.set_voice("ready")
        made.append(app)
        return app

    yield make
    for app in made:
        qt_loop(app.close())


async def _apply_and_wait(app: CompanionApp, **ui):
    """Save UI settings as the Settings dialog does; the global key's new status."""
    changed = signal_future(app.desktop.global_keys.status_changed)
    settings = app.keeper.settings
    app.keeper.apply(replace(settings, ui=replace(settings.ui, **ui)))
    return await changed


def _other_window(display: str):
    """A plain X window of another client, mapped; returns (connection, window)."""
    from Xlib import X
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    screen = conn.screen()
    window = screen.root.create_window(20, 20, 300, 200, 0, screen.root_depth,
                                       event_mask=X.KeyPressMask | X.KeyReleaseMask | X.StructureNotifyMask)
    window.map()
    conn.sync()
    while conn.next_event().type != X.MapNotify:
        pass
    return conn, window


def test_the_portal_binds_push_to_talk_and_its_activation_starts_listening(make_app, qt_loop, qtbot):
    app = make_app(push_to_talk_key="Ctrl+F9")
    with session_bus() as address, fake_portal(address):
        status = qt_loop(app.desktop.start({"DBUS_SESSION_BUS_ADDRESS": address}))
        assert status == "from any window (desktop portal)"
        binds = {b["shortcuts"][0]["id"]: b for b in json.loads(portal_call(address, "Bound"))}
        bound = binds["push-to-talk"]
        assert bound["shortcuts"] == [{"id": "push-to-talk", "description": "Push to talk (hold while you speak)",
                                       "preferred_trigger": "CTRL+F9"}]
        assert binds["compact-face"]["shortcuts"][0]["preferred_trigger"] == "CTRL+SHIFT+F9"

        async def press(member: str):
            heard = signal_future(app.window.push_to_talk)
            portal_call(address, member, "push-to-talk")
            return await heard

        assert qt_loop(press("Press")) == (True,)
        assert app.window.state_label.text() == "Listening (push-to-talk)"
        assert app.window.presence.look().face_state == "listening"
        assert qt_loop(press("Release")) == (False,)
        assert app.window.state_label.text() != "Listening (push-to-talk)"
        app.open_settings("voice")
        assert app.settings_dialog.voice.shortcuts.status.text() == "from any window (desktop portal)"
        app.settings_dialog.reject()
        # The compact-face key from any window: she becomes the small face, and back.
        portal_call(address, "Press", "compact-face")
        qtbot.waitUntil(lambda: app.desktop.compact is not None and app.desktop.compact.isVisible(), timeout=5000)
        portal_call(address, "Release", "compact-face")
        portal_call(address, "Press", "compact-face")
        qtbot.waitUntil(app.window.isVisible, timeout=5000)
        assert not app.desktop.compact.isVisible()
        app.desktop.close()
        assert sorted(json.loads(portal_call(address, "Closed"))) == sorted(b["session"] for b in binds.values())


def test_a_new_key_saved_in_settings_is_bound_again_on_the_portal(make_app, qt_loop):
    app = make_app()
    with session_bus() as address, fake_portal(address):
        qt_loop(app.desktop.start({"DBUS_SESSION_BUS_ADDRESS": address}))
        qt_loop(_apply_and_wait(app, push_to_talk_key="Alt+F10"))
        talk = [b for b in json.loads(portal_call(address, "Bound")) if b["shortcuts"][0]["id"] == "push-to-talk"]
        first, second = talk
        assert [first["shortcuts"][0]["preferred_trigger"], second["shortcuts"][0]["preferred_trigger"]] == \
            ["F9", "ALT+F10"]
        assert json.loads(portal_call(address, "Closed")) == [first["session"]]


def test_a_declined_portal_with_no_display_says_plainly_where_push_to_talk_works(make_app, qt_loop):
    app = make_app()
    with session_bus() as address, fake_portal(address, "--decline"):
        status = qt_loop(app.desktop.start({"DBUS_SESSION_BUS_ADDRESS": address}))
    assert status.startswith(f"{ONLY_FOCUSED}: ")
    assert "declined" in status and "no X11 display" in status
    assert not app.desktop.global_keys.active


def test_with_no_portal_service_and_on_wayland_the_sentence_names_both_reasons():
    with session_bus() as address:
        outcome = start_global_key("F9", lambda _down: None,
                                   environ={"DBUS_SESSION_BUS_ADDRESS": address, "WAYLAND_DISPLAY": "wayland-0",
                                            "DISPLAY": ":0"})
    assert outcome.key is None
    assert outcome.status == (f"{ONLY_FOCUSED}: this desktop has no portal service; "
                              "on Wayland an X11 key grab would hear only X11 windows.")


def test_the_x11_grab_starts_listening_while_another_window_has_focus(make_app, qt_loop, qtbot):
    app = make_app()
    with xvfb() as display:
        status = qt_loop(app.desktop.start({"DISPLAY": display}))
        assert status == "from any window (X11 key grab)"
        conn, other = _other_window(display)
        xdotool(display, "windowfocus", "--sync", str(other.id))
        assert xdotool(display, "getwindowfocus") == str(other.id)

        async def key(action: str):
            heard = signal_future(app.window.push_to_talk)
            xdotool(display, action, "F9")
            return await heard

        assert qt_loop(key("keydown")) == (True,)
        assert app.window.state_label.text() == "Listening (push-to-talk)"
        assert qt_loop(key("keyup")) == (False,)
        xdotool(display, "key", "ctrl+shift+F9")  # the compact-face key, still from the other window
        qtbot.waitUntil(lambda: app.desktop.compact is not None and app.desktop.compact.isVisible(), timeout=5000)
        # The grabs take the keys: the focused window never saw them.
        from Xlib import XK, X

        conn.sync()
        seen = [conn.next_event() for _ in range(conn.pending_events())]
        f9 = conn.keysym_to_keycode(XK.string_to_keysym("F9"))
        assert not [e for e in seen if e.type in (X.KeyPress, X.KeyRelease) and e.detail == f9]
        conn.close()


def test_switching_the_global_key_off_lets_another_program_take_it(make_app, qt_loop):
    app = make_app(push_to_talk_key="Ctrl+F9")
    with xvfb() as display:
        qt_loop(app.desktop.start({"DISPLAY": display}))
        taken = start_global_key("Ctrl+F9", lambda _down: None, environ={"DISPLAY": display})
        assert taken.key is None and "another program already holds that key" in taken.status
        assert qt_loop(_apply_and_wait(app, global_push_to_talk=False)) == \
            (f"{ONLY_FOCUSED}: the global shortcut is switched off in Settings",)
        free = start_global_key("Ctrl+F9", lambda _down: None, environ={"DISPLAY": display})
        assert free.status == "from any window (X11 key grab)"
        free.key.close()


def test_a_held_key_that_auto_repeats_is_one_press_and_one_release():
    with xvfb() as display:
        changes: list[bool] = []
        released = threading.Event()

        def on_change(down: bool) -> None:
            changes.append(down)
            if not down:
                released.set()

        outcome = start_global_key("F9", on_change, environ={"DISPLAY": display})
        xdotool(display, "keydown", "F9")
        # X auto-repeat sends release+press pairs with one timestamp while a key is held;
        # xdotool --repeat reproduces the pairs through XTEST.
        xdotool(display, "key", "--delay", "0", "--repeat", "3", "F9")
        xdotool(display, "keyup", "F9")
        assert released.wait(5)
        outcome.key.close()
    assert changes[0] is True and changes[-1] is False


def test_doctor_says_where_push_to_talk_works_without_binding_anything():
    from companion.doctor.voice import check_push_to_talk

    with session_bus() as address, fake_portal(address), pytest.MonkeyPatch.context() as env:
        env.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        env.delenv("DISPLAY", raising=False)
        check = check_push_to_talk(Settings())
        assert check.ok and check.detail == "F9 works from any window (desktop portal)"
        assert json.loads(portal_call(address, "Bound")) == []  # no dialog on the desktop for a check
    with pytest.MonkeyPatch.context() as env:
        env.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
        env.delenv("DISPLAY", raising=False)
        env.delenv("WAYLAND_DISPLAY", raising=False)
        check = check_push_to_talk(Settings())
    assert not check.ok and not check.essential
    assert check.detail.startswith("F9 works only while her window is focused: there is no desktop session bus")
