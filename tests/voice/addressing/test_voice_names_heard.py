"""When a personality loads, the voice session tells the window how her hearing writes her
names (real piper, espeak-ng and Whisper, as tests/voice/addressing/test_voice_names.py learns
them): one it does not reliably catch is told as such, one it catches as heard well."""

from __future__ import annotations

from calling_support import CALLED, conversation, personality, session_over, started

from companion.config import VoiceSettings
from companion.events import NamesHeard
from companion.voice.addressing.learning import RELIABLE_SHARE

WELL = "Mira"
"""Whisper writes it "Mirror" in every voice: learned, it calls her."""
POORLY = "Aoife"
"""espeak-ng says it so that Whisper, even told the name, writes "even" or "if" (and Zoltan,
written a new way nearly every time untold, is heard once told)."""


async def test_learning_her_names_tells_the_window_which_one_she_may_not_wake_to_and_which_she_hears_well(
        tmp_path, scripted_brain, piper_voice, hearing):
    companion = await started(tmp_path, scripted_brain, personality(tmp_path, WELL, f"[{POORLY}]"))
    told: list[NamesHeard] = []
    companion.bus.subscribe(lambda event: told.append(event) if isinstance(event, NamesHeard) else None)
    session = session_over(companion, conversation(tmp_path / "quiet.wav", 0.5), piper_voice, hearing, CALLED)
    try:
        session.loop.calling.learn()  # as run() does when her voice starts
        await session.loop.calling.learning.wait((WELL, POORLY), timeout=120)
        learned = session.loop.calling.learning.learned
    finally:
        await session.close()
        await companion.close()

    assert len(told) == 1, told  # once both names are known, not once a name
    heard = {n.name: n for n in told[0].names}
    assert set(heard) == {WELL, POORLY}
    assert heard[WELL].reliable and not heard[POORLY].reliable and len(heard[POORLY].heard) >= 7
    poorly = learned[POORLY.lower()]
    assert poorly.share < RELIABLE_SHARE
    assert (heard[POORLY].caught, heard[POORLY].heard) == (poorly.caught, poorly.heard)


async def test_in_always_answer_her_hearing_is_not_told_her_names_nor_learns_them_and_when_called_it_does(
        tmp_path, scripted_brain, piper_voice, hearing):
    # Told, Whisper decodes every utterance that does not start with a name twice: a cost Always
    # answer would pay on every turn, where no name calls her.
    companion = await started(tmp_path, scripted_brain, personality(tmp_path, WELL, "[]"))
    told_names = {}
    try:
        for listening in ("always", "called"):
            session = session_over(companion, conversation(tmp_path / f"{listening}.wav", 0.5), piper_voice,
                                   hearing, VoiceSettings(listening=listening))
            try:
                session.loop.calling.learn()  # as run() does when her voice starts
                learning = session.loop.calling.learning
                told_names[listening] = (learning.transcriber.call_names, learning.pending((WELL,)))
            finally:
                await session.close()
    finally:
        await companion.close()
    # Always answer learns nothing (a calling mode learns at its first utterance).
    assert told_names == {"always": ((), False), "called": ((WELL,), True)}
