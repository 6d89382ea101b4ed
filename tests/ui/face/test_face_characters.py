"""Her characters: each personality's own face, all 14 expressions distinct at tray size, the
personality's voice used, speaking mouth shapes, and a hidden face that stops painting."""

from __future__ import annotations

import itertools
import shutil
from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtGui import QImage
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion import cli
from companion.config import Paths, RunConfig, Settings, with_overrides
from companion.events import EXPRESSIONS
from companion.paths import resource_dir
from companion.persona import FACES, parse_personality
from companion.ui.face.widget import FaceWidget, render_expression

TRAY = 64


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def _pixels(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    data = np.frombuffer(image.constBits(), dtype=np.uint8)
    rows = data.reshape(image.height(), image.bytesPerLine())[:, : image.width() * 4].astype(int)
    return rows.reshape(image.height(), image.width(), 4)


def _changed(a: np.ndarray, b: np.ndarray) -> float:
    """The share of pixels that visibly differ (any channel by more than 24 of 255)."""
    return float((np.abs(a - b) > 24).any(axis=-1).mean())


@pytest.mark.parametrize("character", FACES)
def test_all_fourteen_expressions_stay_distinct_at_64_px(qapp, character):
    faces = {name: _pixels(render_expression(name, TRAY, TRAY, character=character)) for name in EXPRESSIONS}
    closest = min((_changed(faces[a], faces[b]), a, b) for a, b in itertools.combinations(EXPRESSIONS, 2))
    # A clear margin: at least 3 % of the tray icon (about 120 pixels) changes between any two.
    assert closest[0] >= 0.03, f"{character}: {closest[1]} and {closest[2]} look alike at {TRAY} px ({closest[0]:.4f})"


def test_each_shipped_personality_names_its_own_character_and_they_look_different(qapp):
    folder = resource_dir("personality")
    named = {path.name: parse_personality(path.read_text(encoding="utf-8"))[0].face
             for path in folder.glob("*.md")}
    assert named == {"default.md": "mira", "butler.md": "jeeves", "gremlin.md": "pip"}
    looks = {face: _pixels(render_expression("neutral", 160, 160, character=face)) for face in FACES}
    for a, b in itertools.combinations(FACES, 2):
        assert _changed(looks[a], looks[b]) > 0.08, f"{a} and {b} have the same silhouette"


def test_an_unknown_face_in_the_front_matter_is_a_gentle_problem_and_she_stays_mira():
    text = (resource_dir("personality") / "default.md").read_text(encoding="utf-8")
    personality, problems = parse_personality(text.replace("face: mira", "face: dragon"))
    assert personality.face == "mira"
    assert any("unknown face 'dragon'" in str(p) and not p.fatal for p in problems)


def test_speaking_opens_her_mouth_in_more_than_one_shape(qapp):
    shut = _pixels(render_expression("neutral", 160, 160))
    shapes = [_pixels(render_expression("neutral", 160, 160, phase=phase, speech_level=0.8))
              for phase in (0.0, 0.21, 0.43)]
    for shape in shapes:
        assert _changed(shut, shape) > 0.01  # the mouth really opens
    assert max(_changed(a, b) for a, b in itertools.combinations(shapes, 2)) > 0.004  # "ee" is not "oo"


def test_the_face_command_draws_the_character_a_personality_file_names(tmp_path, qapp):
    out = tmp_path / "jeeves.png"
    code = cli.main(["face", "--config-dir", str(tmp_path), "--expression", "happy", "--size", "160x160",
                     "--personality", str(resource_dir("personality") / "butler.md"), "--out", str(out)])
    assert code == 0
    drawn = _pixels(QImage(str(out)))
    assert _changed(drawn, _pixels(render_expression("happy", 160, 160, character="jeeves"))) < 0.001
    assert _changed(drawn, _pixels(render_expression("happy", 160, 160, character="mira"))) > 0.05


def test_the_face_command_says_when_the_personality_file_is_missing(tmp_path, capsys):
    code = cli.main(["face", "--config-dir", str(tmp_path), "--personality", str(tmp_path / "nobody.md"),
                     "--out", str(tmp_path / "x.png")])
    assert code == 2
    assert "can't read the personality file" in capsys.readouterr().err


def test_a_hidden_or_minimised_face_stops_painting(qtbot):
    from PySide6.QtWidgets import QApplication, QMainWindow

    window = QMainWindow()
    face = FaceWidget()
    window.setCentralWidget(face)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: face.frames >= 3, timeout=3000)
    window.hide()
    QApplication.processEvents()  # a repaint asked for before the hide may still land
    hidden_at = face.frames
    qtbot.wait(300)  # ten frames' worth of time: none may be painted
    assert face.frames == hidden_at and not face._timer.isActive()
    window.show()
    qtbot.waitUntil(lambda: face.frames > hidden_at + 2, timeout=3000)
    window.showMinimized()
    qtbot.waitUntil(lambda: not face._timer.isActive(), timeout=3000)
    QApplication.processEvents()
    minimised_at = face.frames
    qtbot.wait(300)
    assert face.frames == minimised_at


def test_a_jeeves_personality_gets_his_face_and_his_voice(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, qt_loop):
    from companion.ui.app import CompanionApp

    # His own voice file (a copy of the installed piper voice under his name), named in his front matter.
    voice_dir = tmp_path / "voices"
    voice_dir.mkdir()
    installed = piper_voice.model_info
    his_voice = voice_dir / "jeeves-voice.onnx"
    shutil.copyfile(installed.onnx, his_voice)
    shutil.copyfile(installed.config, voice_dir / "jeeves-voice.onnx.json")
    butler = (resource_dir("personality") / "butler.md").read_text(encoding="utf-8")
    personality = tmp_path / "jeeves.md"
    personality.write_text(butler.replace("voice: en_US-joe-medium", f"voice: {his_voice}"), encoding="utf-8")
    scripted_brain.push({"text": "Very good, sir."})
    settings = replace(with_overrides(Settings(), brain={"base_url": scripted_brain.url},
                                      tools={"workspace": str(tmp_path / "workspace")}),
                       personality=str(personality))
    app = CompanionApp(RunConfig(Paths.default(tmp_path / "config"), settings))
    qtbot.addWidget(app.window)
    app.show()

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None, app.window.banners.shown_keys()
        await app.close()

    try:
        qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
    assert app.window.face.character.name == "jeeves"
    assert app.voice.session.synthesizer.model_info.onnx == his_voice
