"""End to end, as a user meets her: a spoken question through the virtual microphone, the real
window (offscreen), real Whisper and piper, a real tool, the scripted brain over HTTP; what she
says is recorded from the virtual speaker and heard back with Whisper. The barge-in test records
her voice and the user's on one two-channel witness, so her stop time is measured as heard."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from datetime import datetime, timedelta

import pytest
from audio_env import speech_wav
from e2e_support import (
    FaceFilm,
    SpeakerRecording,
    Stage,
    find_in_order,
    flush_speaker,
    heard_parts,
    personality_with_tool_lines,
    read_stereo,
    voiced_spans,
    window_app,
    words,
)
from scripted_brain import user_texts
from ui_loop import qt_loop_fixture, signal_future  # noqa: F401 (the qt_loop fixture)

BARGE_IN_STOP_BOUND_S = 1.0
"""From the user's first sound to her last, both as they were heard (the witness recording).
The design: ~250 ms of sustained speech (8 of the last 12 VAD frames of 32 ms), ~60 ms for
Silero's probability to rise, the virtual audio path in and out (~80 ms), one 32 ms input and
one 20 ms output block: ~420 ms. The bound leaves ~0.6 s for a loaded two-core machine."""


@pytest.fixture
def stage(pulse_audio):
    """The private PulseAudio with her devices on a two-channel witness (see e2e_support.Stage)."""
    witness = Stage(pulse_audio).start()
    yield witness
    witness.stop()


def tool_names(body: dict) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools") or []]


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def clock_readings(start: datetime, end: datetime) -> set[str]:
    """How get_time describes each minute from start to end (the test can't know which one)."""
    readings, moment = set(), start.replace(second=0, microsecond=0)
    while moment <= end:
        readings.add(f"{moment:%A}, {moment.day} {moment:%B %Y}, {moment:%H:%M}")
        moment += timedelta(minutes=1)
    return readings


def ask_aloud(app, pulse_audio, question, tmp_path, qt_loop):
    """Start the window, play `question` into the mic, record her whole answer; closes the app.

    Returns the speaker recording and when the turn started (after the question was heard).
    """
    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None and app.voice.listening, app.window.banners.shown_keys()
        recording = SpeakerRecording(pulse_audio, tmp_path / "said.wav")
        heard_at = signal_future(app.bridge.heard)
        finished = signal_future(app.bridge.turn_finished)
        player = pulse_audio.play_into_mic(question)
        try:
            await heard_at
            turn_started = time.monotonic()
            await finished
            await app.voice.loop.wait_until_quiet()  # she has said all of it
            await flush_speaker(app)
        finally:
            recording.stop()
            await asyncio.to_thread(player.wait, 10)
        await app.close()
        return recording, turn_started

    try:
        return qt_loop(scenario(), timeout=90)
    finally:
        qt_loop(app.close())


def test_a_spoken_question_runs_get_time_and_she_announces_it_then_answers_aloud_while_her_face_follows(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, hearing, qt_loop):
    announce = "One moment, I am looking at my clock."
    personality_with_tool_lines(tmp_path / "config" / "personality.md", "get_time", announce=announce)
    scripted_brain.push(
        {"tool_calls": [{"name": "get_time", "arguments": {}}]},
        # A model takes a moment to read the tool's result: her face shows focus meanwhile.
        {"delay": 2.5, "text": "[happy] It is a lovely time for a cup of tea."},
    )
    app = window_app(tmp_path, scripted_brain.url)
    qtbot.addWidget(app.window)
    app.show()
    film = FaceFilm(app.window.face)
    question = speech_wav(tmp_path / "question.wav", piper_voice, "What time is it?", tail_s=0.3)
    asked_at = datetime.now().astimezone()

    try:
        recording, turn_started = ask_aloud(app, pulse_audio, question, tmp_path, qt_loop)
    finally:
        film.stop()
    answered_at = datetime.now().astimezone()

    # She heard the question, and the brain was offered get_time and called it.
    assert words(app.voice.loop.heard[0]) == ["what", "time", "is", "it"]
    first, second = scripted_brain.bodies[:2]
    assert first["messages"][-1]["role"] == "user" and user_texts(first)[-1] == app.voice.loop.heard[0]
    assert "get_time" in tool_names(first)
    # The tool really ran: its result, the real local time, went back to the brain.
    [result] = tool_results(second)
    assert any(reading in result for reading in clock_readings(asked_at, answered_at)), result

    # Out of the speaker: the personality's announce line, the tool's COMPLETE line, then the reply.
    said = recording.heard(hearing)
    find_in_order(said, announce, "Here's the time.", "It is a lovely time for a cup of tea.")

    # The face painted the tool's focus expression while she spoke, then the reply's tag.
    assert film.expressions(since=turn_started)[-2:] == ["thinking", "happy"]
    assert any(f.expression == "thinking" and f.speech_level > 0.1 for f in film.frames)
    assert app.window.face.expression == "happy"


def test_a_failing_tool_is_announced_then_she_says_its_fail_line_and_her_face_shows_the_fail_expression(
        qtbot, tmp_path, scripted_brain, pulse_audio, piper_voice, hearing, qt_loop):
    # read_file outside her workspace really fails: the path jail refuses it, the tool ctx.fail()s.
    scripted_brain.push(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "/etc/passwd"}}]},
        {"delay": 1.5, "text": "[embarrassed] That file is outside my workspace."},
    )
    app = window_app(tmp_path, scripted_brain.url)
    qtbot.addWidget(app.window)
    app.show()
    film = FaceFilm(app.window.face)
    outcomes: list[tuple[str, str]] = []
    app.bridge.tool_finished.connect(lambda name, outcome, _detail: outcomes.append((name, outcome)))
    question = speech_wav(tmp_path / "question.wav", piper_voice, "Please read my password file.", tail_s=0.3)

    try:
        recording, turn_started = ask_aloud(app, pulse_audio, question, tmp_path, qt_loop)
    finally:
        film.stop()

    first, second = scripted_brain.bodies[:2]
    # read_file runs though the first request did not list it; from then on the file tools are listed.
    assert "read_file" not in tool_names(first) and "read_file" in tool_names(second)
    assert outcomes == [("read_file", "failed")]
    [result] = tool_results(second)
    assert result.startswith("read_file failed:") and "workspace" in result
    # Her shipped personality's announce for read_file, the module's FAIL line, then the reply.
    said = recording.heard(hearing)
    find_in_order(said, "Opening that file.", "I couldn't read that file.", "That file is outside my workspace.")
    complete = " ".join(words("Here's what it says."))  # read_file's COMPLETE line
    assert complete not in " ".join(words(said))  # never said for a failure
    faces = film.expressions(since=turn_started)
    assert faces[-2:] == ["confused", "embarrassed"]  # read_file's fail face, then the reply's tag


STORY = [
    "Here is a short story for you.",
    "A little robot lived in a lighthouse by the sea and counted every ship that sailed past "
    "her window all night long.",
    "In winter a storm broke the great lamp and she climbed the tower with a lantern to guide "
    "the fishing boats home.",
    "The sailors still sing about her every spring.",
]


def test_talking_over_her_stops_her_voice_within_the_bound_and_the_history_keeps_only_what_she_said(
        qtbot, tmp_path, scripted_brain, stage, piper_voice, hearing, qt_loop, record_property):
    scripted_brain.push({"text": "[happy] " + " ".join(STORY)}, {"text": "[neutral] I will be quiet now."})
    app = window_app(tmp_path, scripted_brain.url)  # her devices: the stage's speaker and microphone
    qtbot.addWidget(app.window)
    app.show()
    question = speech_wav(tmp_path / "question.wav", piper_voice, "Tell me a story.", tail_s=0.3)
    # One breath, no pause: "Wait, ..." would add its comma's pause to the measured time.
    interruption = speech_wav(tmp_path / "stop.wav", piper_voice, "Please stop talking now.", lead_s=1.0)

    async def scenario():
        await app.start()
        await app.voice_started.wait()
        assert app.voice is not None and app.voice.listening, app.window.banners.shown_keys()
        lines_started = 0
        second_line = asyncio.Event()

        def started(_when: float) -> None:
            nonlocal lines_started
            lines_started += 1
            if lines_started == 2:
                second_line.set()

        app.voice.session.sink.add_start_listener(started)
        recording = stage.record(tmp_path / "stage.wav")
        players = [stage.say(question)]
        try:
            # Once her first sentence has played to the end, the user talks over the second.
            await asyncio.wait_for(second_line.wait(), 60)
            answered = signal_future(app.bridge.turn_finished)
            players.append(stage.say(interruption))
            await answered
            await app.voice.loop.wait_until_quiet()
            await flush_speaker(app)
        finally:
            recording.send_signal(signal.SIGINT)
            await asyncio.to_thread(recording.wait, 10)
            for player in players:
                await asyncio.to_thread(player.wait, 10)
        await app.close()

    try:
        qt_loop(scenario(), timeout=90)
    finally:
        qt_loop(app.close())

    loop = app.voice.loop
    assert loop.barge_ins == 1
    assert "stop" in words(loop.heard[1])
    # On the witness recording: the user's voice starts; hers, already going, stops soon after.
    hers, users = read_stereo(tmp_path / "stage.wav")
    asked, interrupted = voiced_spans(users)
    story = [span for span in voiced_spans(hers) if span[0] < interrupted[0]]
    answer = [span for span in voiced_spans(hers) if span[0] > interrupted[0]]
    stop_s = story[-1][1] - interrupted[0]
    assert stop_s > 0  # she was speaking when the user began
    record_property("barge_in_stop_s", round(stop_s, 3))
    print(json.dumps({"barge_in_stop_s": round(stop_s, 3), "bound_s": BARGE_IN_STOP_BOUND_S}))
    assert stop_s <= BARGE_IN_STOP_BOUND_S
    assert answer[0][0] > interrupted[1]  # she answered once the user had finished

    # The history (and so the brain's next request) keeps only the lines she finished saying:
    # her first sentence, and a first fragment of the second if it played to its end.
    kept = [m["content"] for m in app.companion.conversation.history if m["role"] == "assistant"]
    assert kept[1:] == ["[neutral] I will be quiet now."]
    assert kept[0].startswith(STORY[0]) and " ".join(STORY).startswith(kept[0]), kept[0]
    assert len(kept[0]) < len(STORY[0] + STORY[1])
    second = scripted_brain.bodies[1]["messages"]
    assert [m["content"] for m in second if m["role"] == "assistant"] == [kept[0]]
    # What she said: her first sentence, perhaps the start of the second, never the rest; her answer.
    said = heard_parts(hearing, hers, min_gap_s=0.25)  # each sentence a clip of its own
    find_in_order(said, STORY[0], "I will be quiet now.")
    assert not re.search(r"storm|lantern|sailors|spring", said.lower()), said
