"""The window's fixtures: `make_app` builds CompanionApps (no voice) and closes them after the test."""

from __future__ import annotations

import pytest
from ui_loop import qt_loop_fixture  # noqa: F401 (fixture)

from companion.config import RunConfig
from companion.ui.app import CompanionApp


@pytest.fixture
def make_app(qtbot, qt_loop):
    """`make(config, **kwargs)`: a shown CompanionApp without voice, closed when the test ends."""
    made: list[CompanionApp] = []

    def make(config: RunConfig, **kwargs) -> CompanionApp:
        app = CompanionApp(config, with_voice=False, **kwargs)
        qtbot.addWidget(app.window)
        app.show()
        made.append(app)
        return app

    yield make
    for app in made:
        qt_loop(app.close())
