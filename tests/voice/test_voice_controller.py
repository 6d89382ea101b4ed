"""Restarting her voice for new settings is one step: it completes (and passes a self-test) or
goes back to the settings that worked, and a caller cancelled meanwhile never stops it half-way."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest
from brain_harness import make_config

from companion.config import VoiceSettings
from companion.errors import CompanionError
from companion.events import EventBus
from companion.runtime import Companion
from companion.voice.brain_port import CompanionBrain
from companion.voice.controller import VoiceController
from companion.voice.session import VoiceSession
from companion.voice.sound.audio import NullSink, NullSource

GOOD = VoiceSettings()
DAMAGED = replace(GOOD, hearing_model="damaged")
"""A hearing model that loads but hears nothing (a file that opens, with broken weights)."""


class DeafWhisper:
    async def transcribe(self, audio: np.ndarray) -> str:
        return ""


@pytest.fixture
async def companion(tmp_path, scripted_brain):
    companion = Companion(make_config(tmp_path, scripted_brain.url), EventBus())
    await companion.start()
    yield companion
    await companion.close()


class Sessions:
    """Opens real voice sessions (no devices: a text front-end's) on her real engines, except
    that the "damaged" hearing model is deaf; remembers every session and which were closed."""

    def __init__(self, companion, hearing, piper_voice) -> None:
        self.companion, self.hearing, self.piper_voice = companion, hearing, piper_voice
        self.opened: list[VoiceSession] = []
        self.closed: list[VoiceSession] = []
        self.gate: asyncio.Event | None = None
        self.opening = asyncio.Event()

    async def open(self, voice: VoiceSettings) -> VoiceSession:
        self.opening.set()
        if self.gate is not None:
            await self.gate.wait()  # loading her models: the moment a caller may be cancelled
        transcriber = DeafWhisper() if voice.hearing_model == "damaged" else self.hearing
        session = VoiceSession(brain=CompanionBrain(self.companion), bus=self.companion.bus, source=NullSource(),
                               sink=NullSink(), transcriber=transcriber, synthesizer=self.piper_voice, voice=voice)
        self.opened.append(session)
        close = session.close

        async def closing() -> None:
            self.closed.append(session)
            await close()
        session.close = closing
        return session


async def test_new_settings_whose_hearing_fails_its_test_go_back_to_the_settings_that_worked(
        companion, hearing, piper_voice):
    sessions = Sessions(companion, hearing, piper_voice)
    failures: list[BaseException] = []
    controller = VoiceController(sessions.open, failed=failures.append)
    await controller.start(GOOD)
    first = controller.session
    await controller.start(DAMAGED)  # Settings: a hearing model that turns out deaf
    try:
        assert controller.session is not None and controller.session.voice == GOOD
        assert controller.voice == GOOD and controller.rolled_back == 1
        assert sessions.closed == sessions.opened[:2] and first is sessions.opened[0]
        assert [type(f) for f in failures] == [CompanionError]
        assert failures[0].sentence == "My hearing heard nothing in a test word: it can't hear."
        assert controller.session.notices == [
            "My new voice settings didn't work (My hearing heard nothing in a test word: it can't hear), "
            "so I went back to the ones before."]
        # And she hears: the session she went back to passes the same test.
        await controller.session.self_test()
    finally:
        await controller.close()


async def test_new_settings_that_work_are_kept_after_the_test(companion, hearing, piper_voice):
    sessions = Sessions(companion, hearing, piper_voice)
    controller = VoiceController(sessions.open)
    await controller.start(GOOD)
    faster = replace(GOOD, speed=1.3)
    await controller.start(faster)
    try:
        assert controller.session.voice == faster and controller.rolled_back == 0
        assert controller.session.notices == [] and len(sessions.opened) == 2
    finally:
        await controller.close()


async def test_a_caller_cancelled_while_her_voice_restarts_leaves_the_restart_to_finish(
        companion, hearing, piper_voice):
    sessions = Sessions(companion, hearing, piper_voice)
    controller = VoiceController(sessions.open)
    await controller.start(GOOD)
    sessions.gate, sessions.opening = asyncio.Event(), asyncio.Event()
    faster = replace(GOOD, speed=1.3)

    async def save_settings() -> None:  # e.g. Settings saved from a task that is then cancelled
        await controller.start(faster)
    caller = asyncio.create_task(save_settings())
    await sessions.opening.wait()  # the old session is closed, the new one is loading
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    sessions.gate.set()
    try:
        await asyncio.wait_for(controller.settled.wait(), 60)
        assert controller.session is not None and controller.session.voice == faster
        assert sessions.closed == sessions.opened[:1]
    finally:
        await controller.close()
