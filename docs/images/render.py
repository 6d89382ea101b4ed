"""Re-render the pictures in the README and docs/ (every expression, a contact sheet, window
and Settings screenshots) and the app icon file assets/companion.png.

    .venv/bin/python docs/images/render.py

The screenshot is a real window (offscreen) talking to the scripted test brain over HTTP.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "helpers"))


def faces() -> None:
    from companion.events import EXPRESSIONS
    from companion.ui.face.pictures import app_icon, contact_sheet
    from companion.ui.face.widget import render_expression

    for name in EXPRESSIONS:
        render_expression(name, 256, 256).save(str(HERE / "faces" / f"{name}.png"))
    contact_sheet(1400).save(str(HERE / "expressions.png"))
    for character in ("jeeves", "pip"):
        contact_sheet(1400, character).save(str(HERE / f"expressions-{character}.png"))
    # The app icon as a file too, for desktop launchers (the app itself draws it live).
    app_icon().pixmap(256, 256).save(str(ROOT / "assets" / "companion.png"))


def characters() -> None:
    """Mira, Jeeves and Pip side by side, each grabbed from a real face widget."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    from companion.ui.face.widget import FaceWidget

    size, label = 320, 36
    sheet = QImage(size * 3, size + label, QImage.Format.Format_ARGB32_Premultiplied)
    sheet.fill(QColor("#2f3454"))
    painter = QPainter(sheet)
    font = QFont()
    font.setPixelSize(20)
    painter.setFont(font)
    painter.setPen(QColor("#f3eefe"))
    for index, (character, expression, who) in enumerate((
            ("mira", "happy", "Mira (default.md)"), ("jeeves", "neutral", "Jeeves (butler.md)"),
            ("pip", "excited", "Pip (gremlin.md)"))):
        face = FaceWidget()
        face.resize(size, size)
        face.set_character(character)
        face.animator.set_expression(expression, 0.0)  # already there: no transition in the picture
        painter.drawPixmap(index * size, 0, face.grab())
        painter.drawText(QRectF(index * size, size, size, label), Qt.AlignmentFlag.AlignCenter, who)
        face.deleteLater()
    painter.end()
    sheet.save(str(HERE / "characters.png"))


async def window_shot() -> None:
    from scripted_brain import ScriptedBrain

    from companion.cli import RunConfig
    from companion.config import Paths, Settings, with_overrides
    from companion.ui.app import CompanionApp

    with tempfile.TemporaryDirectory() as tmp, ScriptedBrain() as brain:
        # A real turn: the scripted brain calls get_time, the tool runs, then she answers.
        brain.push({"tool_calls": [{"name": "get_time", "arguments": {}}]},
                   {"text": "[happy] Good morning! It's 9:14 on Monday. Shall I put anything "
                            "on today's to-do list?"},
                   {"text": "[happy] Sure! In **Python**, `pathlib` does it:\n\n"
                            "```python\nfrom pathlib import Path\nfor f in Path('.').iterdir():\n    print(f)\n```\n\n"
                            "- `iterdir()` lists one folder\n- `rglob('*')` goes into every folder\n\n"
                            "More in the [pathlib docs](https://docs.python.org/3/library/pathlib.html) 📚"})
        settings = with_overrides(Settings(), brain={"base_url": brain.url},
                                  tools={"workspace": str(Path(tmp) / "workspace")})
        # Her own folders apart from the workspace: she refuses a workspace inside them.
        app = CompanionApp(RunConfig(Paths.default(Path(tmp) / "home"), settings), with_voice=False)
        app.window.resize(460, 720)
        app.show()
        await app.start()
        done = asyncio.get_running_loop().create_future()
        app.bridge.turn_finished.connect(lambda *a: done.done() or done.set_result(a))
        app.send_text("Good morning! What time is it?")
        await done
        done = asyncio.get_running_loop().create_future()
        app.send_text("How do I list the files in a folder in Python?")
        await done
        app.window.face.animator.set_expression("happy", 0.0)
        app.window.set_voice("ready")  # as her window looks with a microphone (this run has none)
        app.window.show_state("listening")
        await asyncio.sleep(0.5)  # let the face settle into its new expression for the picture
        app.window.grab().save(str(HERE / "window.png"))
        app.window.resize(460, 900)
        app.window.face.parentWidget().setSizes([300, 560])  # the splitter: more room for the transcript
        await asyncio.sleep(0.3)
        app.window.captions.verticalScrollBar().setValue(app.window.captions.verticalScrollBar().maximum())
        app.window.grab().save(str(HERE / "window-transcript.png"))
        app.window.resize(460, 720)
        await approval_and_settings_shots(app)
        await editor_shot(app)
        await app.close()


async def approval_and_settings_shots(app) -> None:
    """A real approval card from the gate, and the Settings dialog as ☰ → Settings… opens it."""
    shown = asyncio.get_running_loop().create_future()
    app.bridge.approval_needed.connect(lambda request: shown.done() or shown.set_result(request))
    verdict = asyncio.ensure_future(app.gate.review("git push origin main", channel="text"))
    request = await shown
    card = app.window.approvals.cards[request.request_id]
    armed = asyncio.get_running_loop().create_future()
    card.armed.connect(lambda: armed.done() or armed.set_result(None))
    await armed  # its buttons take clicks after its first second
    await asyncio.sleep(0.3)  # the face eases into its pleading look
    app.window.grab().save(str(HERE / "window-approval.png"))
    app.gate.answer(request.request_id, "declined")
    await verdict
    app.open_settings()
    dialog = app.settings_dialog
    dialog.brain.url.setText(app.companion.settings.brain.base_url)
    await dialog.brain.test()
    await asyncio.sleep(0.1)
    dialog.grab().save(str(HERE / "settings-brain.png"))
    titles = [dialog.tabs.tabText(index) for index in range(dialog.tabs.count())]
    for name in ("voice", "toolsets"):  # by title: the toolsets tab is a page that holds dialog.toolsets
        dialog.tabs.setCurrentIndex(titles.index(name.capitalize()))
        await asyncio.sleep(0.1)
        dialog.grab().save(str(HERE / f"settings-{name}.png"))
    dialog.reject()


async def editor_shot(app) -> None:
    """The personality editor with an unsaved mistake: underlined, numbered, explained."""
    app.open_personality_editor()
    editor = app.dialogs.editor
    editor.resize(760, 560)
    text = editor.text().replace("  announce: Let me check the clock.",
                                 "  announce: Time: let me check the clock.", 1)
    editor.editor.setPlainText(text)
    problems = editor.check()
    if problems:
        editor.editor.go_to_line(problems[0].line)
    await asyncio.sleep(0.2)
    editor.grab().save(str(HERE / "personality-editor.png"))
    editor.ask_to_close()
    if editor._asking is not None:
        editor._asking.button(editor._asking.StandardButton.Discard).click()


def main() -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    from companion.ui.theme import apply_theme

    app = QApplication(sys.argv)
    apply_theme(app)
    (HERE / "faces").mkdir(exist_ok=True)
    faces()
    characters()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        loop.run_until_complete(window_shot())
    print(f"wrote pictures to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
