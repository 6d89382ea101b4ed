"""Which of her model threads yield to the window: her voice does, what ends a turn does not."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np


def _nice(native_id: int) -> int:
    stat = (Path("/proc/self/task") / str(native_id) / "stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[16])  # stat field 19: nice


async def test_her_hearing_and_turn_model_run_at_the_windows_priority_while_her_voice_runs_below(
    hearing, turn_model, piper_voice
):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    quiet = np.zeros(16_000, dtype=np.float32)
    await hearing.transcribe(quiet)
    await turn_model.guess(quiet)
    await piper_voice.synthesize("Hello.")
    assert _nice(hearing._thread.native_id) == base
    assert _nice(turn_model._thread.native_id) == base
    assert _nice(piper_voice._thread.native_id) > base


async def test_the_first_words_of_a_reply_are_synthesized_at_the_windows_priority_the_rest_below(
    piper_voice, monkeypatch
):
    from companion.voice.speaking import tts

    monkeypatch.setattr(tts, "QUIET_BEFORE_S", -1.0)  # she has been quiet: nothing is in flight
    base = os.getpriority(os.PRIO_PROCESS, 0)
    before = piper_voice.first_count
    await asyncio.gather(piper_voice.synthesize("Sure,"), piper_voice.synthesize("the rest of my answer."))
    assert piper_voice.first_count == before + 1
    assert _nice(piper_voice._first.native_id) == base
    assert _nice(piper_voice._thread.native_id) > base
