"""Real people talking on, past Whisper's 30 s window and while she answers, through her whole pipeline.

The voices are not synthetic: a reader of Shakespeare's Sonnet 1 (53 s, aeneas-ng's example) and
Montreal Forced Aligner's author talking freely (fillers, restarts, pauses inside sentences),
fetched from the package index at set-up (tests/helpers/human_clips.py). The file is read in its
own time.
The VAD, the endpointer, Smart Turn, Whisper tiny.en and piper are the real ones; the brain is
the scripted one on loopback.

What they lost before (issue 51): the reader's "too cruel" and Michael's "Thanks.", which
Whisper hears as nothing alone, right after a turn ended; the start of Michael's quieter second
recording, to which the VAD stayed deaf after the 0.3 s of digital silence joining the two; and
his "the recording environment", a fragment heard as nothing with more words 0.6 s after it.
"""

from __future__ import annotations

import pytest
from file_talk import converse
from human_clips import hearing_alone, lost_words, michael_talking, sonnet_read

from companion.voice.sound.audio import write_wav

pytestmark = pytest.mark.timeout(600)


async def words_lost(tmp_path, scripted_brain, hearing, piper_voice, turn_model, clip) -> tuple[list, list, list]:
    """(lost through her, lost by her hearing alone, the turns that reached the brain)."""
    alone = lost_words(clip.text, hearing_alone(hearing, clip))
    scripted_brain.push(*[{"text": "Mm-hm."}] * 20)
    wav = tmp_path / "human.wav"
    write_wav(wav, clip.audio, 16_000)
    session = await converse(tmp_path, scripted_brain, hearing, piper_voice, wav, turn_model, tail_s=3.0)
    turns = list(session.loop.heard)
    return lost_words(clip.text, " ".join(turns)), alone, turns


async def test_a_person_reading_on_past_whispers_30_s_window_reaches_the_brain_word_for_word(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model):
    through_her, alone, turns = await words_lost(tmp_path, scripted_brain, hearing, piper_voice, turn_model,
                                                 sonnet_read())
    assert turns, "nothing reached the brain"
    assert len(through_her) <= len(alone), (
        f"lost through her: {' '.join(through_her)!r}; by hearing alone: {' '.join(alone)!r}; turns: {turns}")


async def test_a_person_talking_freely_on_while_she_answers_reaches_the_brain_word_for_word(
        tmp_path, scripted_brain, hearing, piper_voice, turn_model):
    through_her, alone, turns = await words_lost(tmp_path, scripted_brain, hearing, piper_voice, turn_model,
                                                 michael_talking(2))
    assert turns, "nothing reached the brain"
    assert len(through_her) <= len(alone), (
        f"lost through her: {' '.join(through_her)!r}; by hearing alone: {' '.join(alone)!r}; turns: {turns}")
