"""Settings → Voice → Knowing voices → Learn my voice…: the reading dialog shows the sentence to
read, a live level and progress, keeps the print under the name typed, and the list in Settings
shows it (read aloud, when made); each print is forgotten on its own.

The dialog's microphone is a WAV of piper's Joe reading the sentences, as real frames (the
recorder, Silero VAD and the speaker encoder are the real ones).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from audio_env import speech_wav
from ui_loop import qt_gc_fixture, qt_loop_fixture, signal_future  # noqa: F401 (fixtures)

from companion.config import Paths, Settings
from companion.errors import CompanionError, Stage
from companion.tools.registry import Registry
from companion.ui.settings.dialog import SettingsDialog
from companion.ui.settings.keeper import SettingsKeeper
from companion.ui.settings.learn_voice import LearnVoiceDialog, level_percent
from companion.voice.sound.audio import WavSource
from companion.voice.voiceprint import SpeakerEncoder, VoiceprintStore
from companion.voice.voiceprint.reading import SENTENCES


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def test_the_level_meter_reads_a_quiet_room_low_and_a_voice_high():
    assert level_percent(0.0) == 0 and level_percent(0.001) == 0
    assert 50 < level_percent(0.1) < 80 and level_percent(1.0) == 100


def test_reading_aloud_shows_each_sentence_the_level_and_progress_and_keeps_the_print_by_name(
        qtbot, qt_loop, tmp_path, piper_voice):
    wav = speech_wav(tmp_path / "joe.wav", piper_voice, *[part for s in SENTENCES[:6] for part in (s, 1.2)])
    data_dir = Paths.default(tmp_path).data_dir
    settings = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), Registry())
    qtbot.addWidget(settings)
    settings.show()
    settings.show_tab("voice")
    rows = settings.voice.voices
    dialog = LearnVoiceDialog(VoiceprintStore(data_dir), lambda: WavSource(wav, realtime=False),
                              encoder=SpeakerEncoder(), parent=settings)
    dialog.learned.connect(rows._learned)
    dialog.show()  # (Settings owns it, as in the app: closing Settings closes it)
    sentences, levels, progress = [], [], []

    async def read() -> tuple:
        assert not dialog.start.isEnabled()  # no name yet
        dialog.name.setText("Joe")
        learned = signal_future(dialog.learned)
        dialog.start.click()
        return await learned

    show = dialog._show

    def seen(frame) -> None:
        """What the person sees once each frame's progress has arrived on the Qt thread (read
        there rather than by a loop spinning beside the reading: that cost seconds of processor)."""
        show(frame)
        if dialog.sentence.text() and (not sentences or sentences[-1] != dialog.sentence.text()):
            sentences.append(dialog.sentence.text())
        levels.append(dialog.level.value())
        progress.append(dialog.progress.value())

    dialog._show = seen  # before the start: the reading is handed it when it begins

    assert qt_loop(read(), timeout=120) == ("Joe",)
    assert sentences[:5] == list(SENTENCES[:5])
    assert max(levels) > 40 and progress == sorted(progress) and dialog.progress.value() >= 5
    assert dialog.done_button.isEnabled() and "Joe" in dialog.note.text()
    assert VoiceprintStore(data_dir).get("Joe").source == "reading"
    listed = [rows.prints.item(i).text() for i in range(rows.prints.count())]
    assert len(listed) == 1 and listed[0].startswith("Joe: made ") and "read aloud" in listed[0]
    assert rows.know.isChecked() and settings.voice.values().know_voices == "yes"


def test_a_microphone_that_cannot_open_is_said_in_the_dialog_and_nothing_starts(qtbot, tmp_path):
    def no_microphone():
        raise CompanionError("no_microphone", "I can't find a microphone on this machine.", stage=Stage.AUDIO)

    dialog = LearnVoiceDialog(VoiceprintStore(tmp_path), no_microphone, name="you")
    qtbot.addWidget(dialog)
    dialog.start.click()

    assert "can't find a microphone" in dialog.note.text() and not dialog.running
    assert not dialog.done_button.isEnabled()


def test_several_voices_are_listed_by_name_and_each_is_forgotten_on_its_own(qtbot, tmp_path):
    data_dir = Paths.default(tmp_path).data_dir
    store = VoiceprintStore(data_dir)
    store.replace("Ann", [(np.eye(256, dtype=np.float32)[1], 3.0)] * 5, at=1_765_000_000)
    for _ in range(5):
        store.add("you", np.eye(256, dtype=np.float32)[0], 3.0, at=1_765_100_000)
    dialog = SettingsDialog(SettingsKeeper(Paths.default(tmp_path), Settings()), Registry())
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_tab("voice")
    rows = dialog.voice.voices
    listed = [rows.prints.item(i).text() for i in range(rows.prints.count())]

    assert listed[0].startswith("Ann: made 2025-12-") and "read aloud" in listed[0]
    assert listed[1].startswith("Your voice: made 2025-12-") and "learned from calls" in listed[1]
    rows.prints.setCurrentRow(0)
    rows.forget.click()
    assert VoiceprintStore(data_dir).names() == ["you"] and rows.prints.count() == 1
    assert rows.learn.isEnabled()


class _RoomThenQuestion:
    """Her own microphone in the room: the sentences the person reads to the dialog, then, once
    the reading is over (`over`), a question for her. Real frames from two WAVs."""

    realtime = False

    def __init__(self, reading: WavSource, question: WavSource, over: asyncio.Future) -> None:
        self._reading, self._question, self._over = reading, question, over

    @property
    def position_s(self) -> float:
        return self._reading.position_s + self._question.position_s

    async def read(self) -> np.ndarray | None:
        frame = await self._reading.read()
        if frame is not None:
            return frame
        await self._over
        return await self._question.read()

    def close(self) -> None:
        self._reading.close()
        self._question.close()


def test_sentences_read_to_the_dialog_in_always_answer_start_no_turn_and_she_answers_once_it_is_over(
        qtbot, qt_loop, tmp_path, piper_voice, hearing, scripted_brain):
    from brain_harness import make_config

    from companion.config import VoiceSettings
    from companion.events import EventBus, UserHeard
    from companion.runtime import Companion
    from companion.voice.brain_port import CompanionBrain
    from companion.voice.session import VoiceSession
    from companion.voice.sound.audio import WavSink

    reading = speech_wav(tmp_path / "reading.wav", piper_voice, *[part for s in SENTENCES[:6] for part in (s, 1.2)])
    question = speech_wav(tmp_path / "question.wav", piper_voice, 0.5, "What is the capital of France?", 1.0)
    scripted_brain.push("Paris.")
    heard: list[str] = []

    async def run() -> str:
        companion = Companion(make_config(tmp_path, scripted_brain.url), EventBus())
        companion.bus.subscribe(lambda e: heard.append(e.text) if isinstance(e, UserHeard) else None)
        await companion.start()
        over: asyncio.Future = asyncio.get_running_loop().create_future()
        source = _RoomThenQuestion(WavSource(reading, realtime=False), WavSource(question, realtime=False), over)
        sink = WavSink(lambda: source.position_s, rate=piper_voice.sample_rate, realtime=False)
        session = VoiceSession(brain=CompanionBrain(companion), bus=companion.bus, source=source, sink=sink,
                               transcriber=hearing, synthesizer=piper_voice, voice=VoiceSettings(listening="always"))
        # As Settings hands it on from her running session (VoicesRows.enrolling).
        dialog = LearnVoiceDialog(VoiceprintStore(Paths.default(tmp_path).data_dir),
                                  lambda: WavSource(reading, realtime=False), encoder=SpeakerEncoder(),
                                  enrolling=session.enrolling)
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.learned.connect(lambda name: over.done() or over.set_result(name))
        dialog.name.setText("Ann")
        dialog.start.click()  # the person reads to the dialog while her own microphone hears the room
        try:
            await session.run()
        finally:
            await session.close()
            await companion.close()
        return await over

    assert qt_loop(run(), timeout=180) == "Ann"
    assert len(heard) == 1 and "France" in heard[0], heard  # only the question after the reading
    assert len(scripted_brain.bodies) == 1
