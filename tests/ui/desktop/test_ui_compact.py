"""The compact face: frameless, on top, see-through where she isn't, a click opens the full window,
a drag moves her (kept per screen), and menu, tray and a key switch to it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtTest import QTest
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.settings_file import load_settings
from companion.ui.app import CompanionApp


@pytest.fixture(autouse=True, name="_collect_garbage_on_the_qt_thread")
def collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


@pytest.fixture(name="make_app")
def make_app_fixture(qtbot, qt_loop, tmp_path):
    made: list[CompanionApp] = []

    def make(**ui) -> CompanionApp:
        settings = with_overrides(Settings(), tools={"workspace": str(tmp_path / "workspace")}, ui=ui)
        app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings), with_voice=False)
        qtbot.addWidget(app.window)
        app.show()
        made.append(app)
        return app

    yield make
    for app in made:
        qt_loop(app.close())
        if app.desktop.compact is not None:
            app.desktop.compact.deleteLater()


def _saved(app: CompanionApp):
    return load_settings(app.config.paths).settings.ui


def test_the_compact_face_is_frameless_on_top_and_holds_only_her_face_and_a_caption(make_app, qtbot):
    app = make_app()
    app.desktop.set_compact(True)
    compact = app.desktop.compact
    qtbot.waitExposed(compact)
    flags = compact.windowFlags()
    assert flags & Qt.WindowType.FramelessWindowHint and flags & Qt.WindowType.WindowStaysOnTopHint
    assert compact.testAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
    assert not app.window.isVisible()
    assert compact.caption.text() == app.window.state_label.text()
    assert compact.width() < 260 and compact.height() < 320
    assert _saved(app).compact is True
    # A pixel where nothing is painted is see-through: the mask leaves it out.
    qtbot.waitUntil(lambda: compact.face.frames > 0, timeout=3000)
    face = compact.face.geometry()
    assert compact.mask().contains(face.center())
    assert not compact.mask().contains(QPoint(1, 1))
    assert not compact.mask().contains(QPoint(face.right() - 1, face.top() + 1))
    image = QImage(compact.face.size(), QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    compact.face.render(image)  # what she paints: nothing in the corners, her face in the middle
    assert image.pixelColor(1, 1).alpha() == 0
    assert image.pixelColor(face.center()).alpha() == 255
    # Her face is the big one's: one animator, so the same expression and lip sync.
    app.window.face.set_expression("happy")
    assert compact.face.animator is app.window.face.animator and compact.face.expression == "happy"


def test_a_click_opens_the_full_window_and_a_drag_moves_her_and_is_kept_for_that_screen(make_app, qtbot, qt_loop):
    app = make_app()
    app.desktop.set_compact(True)
    compact = app.desktop.compact
    qtbot.waitExposed(compact)
    start = compact.pos()
    centre = compact.face.geometry().center()

    async def drag():
        moved = signal_future(compact.moved)
        QTest.mousePress(compact, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
        QTest.mouseMove(compact, centre + QPoint(-80, -60))
        QTest.mouseRelease(compact, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                           centre + QPoint(-80, -60))
        return await moved

    screen, rect = qt_loop(drag())
    assert compact.pos() == start + QPoint(-80, -60)
    assert compact.isVisible() and not app.window.isVisible()  # a drag is not a click
    g = compact.geometry()
    assert screen == QGuiApplication.primaryScreen().name() and rect == f"{g.x()},{g.y()},{g.width()},{g.height()}"
    assert _saved(app).compact_geometry == {screen: rect}
    QTest.mouseClick(compact, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    assert app.window.isVisible() and not compact.isVisible()
    assert _saved(app).compact is False
    app.desktop.set_compact(True)  # back where she was put
    assert compact.geometry() == g


def test_the_wheel_resizes_her_within_bounds_and_the_size_is_kept(make_app, qtbot, qt_loop):
    app = make_app()
    app.desktop.set_compact(True)
    compact = app.desktop.compact
    width = compact.width()

    async def bigger():
        moved = signal_future(compact.moved)
        compact.resize_face(1.5)
        return await moved

    _screen, rect = qt_loop(bigger())
    assert compact.width() == round(width * 1.5) and rect.endswith(f",{compact.width()},{compact.height()}")
    for _ in range(20):
        compact.resize_face(2)
    assert compact.width() == 520


def test_menu_tray_and_the_compact_key_switch_modes_and_she_comes_back_compact(make_app, qtbot, qt_loop):
    app = make_app()
    menu_texts = [a.text() for a in app.window.menu_button.menu().actions()]
    tray_texts = [a.text() for a in app.tray.menu.actions()]
    assert "Compact face" in menu_texts and "Compact face" in tray_texts
    app.window.activateWindow()
    qtbot.waitUntil(app.window.isActiveWindow, timeout=2000)
    qtbot.keyClick(app.window.text_box, Qt.Key.Key_F9,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    compact = app.desktop.compact
    assert compact is not None and compact.isVisible() and not app.window.isVisible()
    app.desktop.compact_action.trigger()  # the tray's and the menu's entry
    assert app.window.isVisible() and not compact.isVisible()
    app.desktop.compact_action.trigger()
    assert compact.isVisible()
    place = compact.geometry()
    qt_loop(app.close())

    again = CompanionApp(app.config.__class__(app.config.paths, load_settings(app.config.paths).settings),
                         with_voice=False)
    qtbot.addWidget(again.window)
    again.show()
    qt_loop(again.desktop.start({}))
    try:
        assert again.desktop.compact.isVisible() and not again.window.isVisible()
        assert again.desktop.compact.geometry() == place
    finally:
        qt_loop(again.close())


def test_show_window_in_the_tray_leaves_the_compact_face(make_app):
    app = make_app()
    app.desktop.set_compact(True)
    assert app.tray.show_action.text() == "Show window"
    app.tray.show_action.trigger()
    assert app.window.isVisible() and not app.desktop.compact.isVisible()
    assert not app.desktop.compact_action.isChecked()


def test_without_see_through_windows_she_says_so_plainly(make_app, monkeypatch):
    import companion.ui.desktop.presence as desktop

    # What translucency_available answers on an X11 desktop with no compositor (tested on Xvfb
    # in test_ui_compact_x11); here the offscreen platform would always say yes.
    monkeypatch.setattr(desktop, "translucency_available", lambda _platform: False)
    app = make_app()
    app.desktop.set_compact(True)
    compact = app.desktop.compact
    assert not compact.testAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
    assert compact.mask().isEmpty()  # a square backdrop: no shape that clicks could pass around
    assert compact.caption.toolTip() == "I can't be see-through here: no compositor"  # seen at once
    banner = app.window.banners.banner("compact")  # the whole story, in her window
    assert banner is not None and "can't show see-through windows" in banner.text()
