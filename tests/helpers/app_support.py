"""The window as tests drive it: a run config against a brain URL, and typing a line."""

from __future__ import annotations

from PySide6.QtCore import Qt

from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.ui.app import CompanionApp


def app_config(tmp_path, url: str) -> RunConfig:
    """Settings in tmp_path: the brain at `url`, the workspace in tmp_path/workspace."""
    paths = Paths.default(tmp_path / "config")
    settings = with_overrides(Settings(), brain={"base_url": url},
                              tools={"workspace": str(tmp_path / "workspace")})
    return RunConfig(paths, settings)


def type_into(qtbot, app: CompanionApp, text: str) -> None:
    """Types `text` into the window's text box and presses Return."""
    qtbot.keyClicks(app.window.text_box, text)
    qtbot.keyClick(app.window.text_box, Qt.Key.Key_Return)
