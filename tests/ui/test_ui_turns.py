"""The window with her real voice (private PulseAudio, real piper and Whisper, the scripted
brain over HTTP): every kind of turn speaks through one mouth and obeys one interruption."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from e2e_support import SpeakerRecording, find_in_order, flush_speaker, window_app, words
from ui_loop import qt_gc_fixture, qt_loop_fixture  # noqa: F401 (fixtures)

from companion import events as ev
from companion.reminders import local_now

STORY = ("Once upon a time there was a small red fox. The fox lived in a deep green forest beside a "
         "wide river. Every morning it ran down to the water to drink and to watch the fish. One day "
         "it met a very old turtle who knew the secrets of the whole valley. The turtle told it many stories.")


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread(qt_gc):
    """As in the app: no widget is ever collected in the middle of Qt's work."""


def event_future(app, wanted) -> asyncio.Future:
    """The next core event (through the window's bridge) for which `wanted(event)` is true."""
    future = asyncio.get_running_loop().create_future()

    def seen(event) -> None:
        if wanted(event) and not future.done():
            future.set_result(event)

    app.bridge.event.connect(seen)
    future.add_done_callback(lambda _f: app.bridge.event.disconnect(seen))
    return future


def test_after_esc_on_a_typed_reply_the_next_reply_a_reminder_and_a_background_result_are_all_spoken(
        qtbot, tmp_path, scripted_brain, pulse_audio, hearing, qt_loop):
    scripted_brain.push({"text": STORY}, {"text": "The second answer is ready."},
                        {"text": "The notes are about the garden."})
    app = window_app(tmp_path, scripted_brain.url)
    qtbot.addWidget(app.window)
    app.show()
    recording = SpeakerRecording(pulse_audio, tmp_path / "said.wav")

    async def quiet() -> None:
        await app.voice.session.speaker.idle.wait()

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None, app.window.banners.shown_keys()
        app.voice.set_muted(True)  # typed turns only: her microphone hears nothing here
        loop = asyncio.get_running_loop()
        second_sentence = loop.create_future()
        starts: list[float] = []

        def line_started(when: float) -> None:
            starts.append(when)
            if len(starts) == 2 and not second_sentence.done():
                loop.call_soon_threadsafe(second_sentence.set_result, None)

        app.voice.session.sink.add_start_listener(line_started)
        app.send_text("Tell me a story.")
        await second_sentence  # her first sentence has been played whole
        interrupted = event_future(app, lambda e: isinstance(e, ev.TurnInterrupted))
        app.window.stop_requested.emit()  # Esc, while she speaks
        await interrupted
        await quiet()
        answered = event_future(app, lambda e: isinstance(e, ev.TurnFinished) and "ready" in e.text)
        app.send_text("And the second question?")
        await answered
        await quiet()
        reminded = event_future(app, lambda e: isinstance(e, ev.TurnStarted)
                                and e.source is ev.TurnSource.REMINDER)
        app.companion.reminders.add("stretch your legs", local_now() - timedelta(seconds=1))
        await reminded
        await quiet()
        told = event_future(app, lambda e: isinstance(e, ev.TurnStarted) and e.source is ev.TurnSource.NOTICE)
        app.companion.work.start("summarise my notes")
        await told
        await quiet()
        await flush_speaker(app)
        history = list(app.companion.conversation.history)
        await app.close()
        return history

    try:
        history = qt_loop(scenario(), timeout=120)
    finally:
        qt_loop(app.close())
        recording.stop()
    said = recording.heard(hearing)
    find_in_order(said, "Once upon a time there", "The second answer is ready",
                  "Reminder: stretch your legs", "My background job is done")
    assert "turtle" not in words(said)  # nothing of the story after Esc, ever
    story_reply = next(m["content"] for m in history if m["role"] == "assistant")
    # The history keeps only the sentences she finished saying before Esc.
    assert story_reply and STORY.startswith(story_reply) and len(story_reply) < len(STORY)


class FailingOnce:
    """The real VAD, except that one frame, mid-stream, raises (a broken model, a bad frame)."""

    def __init__(self, vad, at_frame: int) -> None:
        self.vad = vad
        self.frames = 0
        self.at_frame = at_frame

    def probability(self, frame) -> float:
        self.frames += 1
        if self.frames == self.at_frame:
            raise RuntimeError("the VAD model broke")
        return self.vad.probability(frame)

    def reset(self) -> None:
        self.vad.reset()


def test_a_vad_that_raises_mid_stream_shows_a_banner_and_she_listens_again(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, qt_loop):
    from audio_env import speech_wav

    scripted_brain.push({"text": "I hear you again."})
    app = window_app(tmp_path, scripted_brain.url)
    qtbot.addWidget(app.window)
    app.show()
    question = speech_wav(tmp_path / "question.wav", piper_voice, "Can you still hear me?")

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        ear = app.voice.loop.ear
        failed = event_future(app, lambda e: isinstance(e, ev.ErrorOccurred) and e.stage == "hearing")
        ear.vad = FailingOnce(ear.vad, at_frame=5)  # ~160 ms from now
        await failed
        banner = app.window.banners.banner("hearing")
        assert banner is not None and "the VAD model broke" in banner.text()
        answered = event_future(app, lambda e: isinstance(e, ev.TurnFinished))
        await asyncio.to_thread(pulse_audio.play_into_mic(question).wait)
        finished = await answered
        heard = list(app.voice.loop.heard)
        await app.close()
        return finished, heard

    try:
        finished, heard = qt_loop(scenario(), timeout=60)
    finally:
        qt_loop(app.close())
    assert finished.text == "I hear you again."
    assert len(heard) == 1 and "hear me" in heard[0].lower()
